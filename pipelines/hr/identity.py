"""Identity evidence: a row that found a service user by one key is about that user only if it agrees with
the user on who they are beyond that key.

HR systems number employees alike (``E100011`` exists in many tenants), so a key match alone proves
nothing: another company's export would rewrite this tenant's people into its own. Before a row may
change any field of the user it matched, it must agree with the user on one piece of identity other than
the key it matched by: the email (matched by employee id), the employee id (matched by email), or the
first and last name together. A legitimate rename keeps the email; a legitimate email change keeps the
name; a row changing both at once proves nothing and is refused (`IDENTITY_RULE`): change one, let it
apply, then the other. A file where a material share (`FOREIGN_SHARE`) of the matched rows disagrees is
about another tenant's people and is refused whole (`FOREIGN_RULE`).

A renamed person's ``displayName`` follows their name when it was their name (``first last``, as the
service shows a user by default); a display name of their own choosing is kept.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from models.hr.fields import Value, Values, differs
from models.users import UpdateUserEntities
from pipelines.hr.mapping import EntityMapping
from pipelines.hr.problems import Problem
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import fold

IDENTITY_RULE = "identity_mismatch"
FOREIGN_RULE = "foreign_file"
FOREIGN_SHARE = 0.5
"""A file whose matched rows disagree with their records in this share or more (half) is refused whole:
it is about another tenant's people (a few wrong rows among many are refused one by one)."""
_DISPLAY_NAME: TypeAdapter[str | None] = TypeAdapter(
    cast(Any, UpdateUserEntities.model_fields["display_name"].annotation)
)
"""E1's rules of a display name (its length), which a name that follows a rename must keep too."""
_KEYS = ("employee_id", "email")
"""Identity a row may prove by agreeing on one of them (besides the key it matched by)."""


def check_identity(row: HrRow, mapping: EntityMapping, current: Values, label: str) -> None:
    """Record an `IDENTITY_RULE` problem on a user row that would change ``current`` (the record it
    matched, shown to people as ``label``) without agreeing with it on identity beyond its key."""
    _follow_display_name(row, mapping, current)
    if not _changes(row, current) or _agrees(row, current):
        return
    key = row.matched_by or mapping.match_keys[0]
    shown = ", ".join(f"{name} {value!r}" for name, value in _claims(row).items()) or "nothing else"
    message = (
        f"{_word(key)} {row.cells.get(key, '')!r} is {label} in the service, but the row names {shown}: "
        f"neither {_evidence(key)} agrees, so it is not about that person (a file of another tenant, or a "
        "rename and an email change at once: change one, apply it, then the other)"
    )
    row.problem(mapping, key, IDENTITY_RULE, message)


def foreign_files(rows: Iterable[HrRow]) -> list[Problem]:
    """A `FOREIGN_RULE` problem for each file whose matched rows mostly name other people than the
    records they matched (at least `FOREIGN_SHARE` of them)."""
    matched: Counter[str] = Counter()
    foreign: Counter[str] = Counter()
    for row in rows:
        if row.kind == "user" and row.entity_id:
            matched[row.file] += 1
            foreign[row.file] += any(problem.rule == IDENTITY_RULE for problem in row.problems)
    return [
        Problem(
            file,
            0,
            "",
            FOREIGN_RULE,
            f"{foreign[file]} of {count} row(s) that matched a user by key name another person "
            f"({IDENTITY_RULE})",
        )
        for file, count in matched.items()
        if foreign[file] and foreign[file] >= FOREIGN_SHARE * count
    ]


def _changes(row: HrRow, current: Values) -> bool:
    return any(differs("user", name, current[name], after) for name, after in row.desired.items())


def _agrees(row: HrRow, current: Values) -> bool:
    """Whether the row agrees with the record on a key other than the one it matched by, or on the
    first and last name together."""
    for key in _KEYS:
        value = row.desired.get(key)
        if key != row.matched_by and value is not None and _same(value, current[key]):
            return True
    names = [(row.desired.get(name), current[name]) for name in ("first_name", "last_name")]
    return all(mine is not None and _same(mine, theirs) for mine, theirs in names)


def _same(mine: Value, theirs: Value) -> bool:
    """Equal as people compare names and addresses: case, runs of spaces and Unicode form aside."""
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return False
    return fold(unicodedata.normalize("NFC", mine)) == fold(unicodedata.normalize("NFC", theirs))


def _claims(row: HrRow) -> dict[str, Value]:
    """What the row says about who it is, beyond its key."""
    names = ("first_name", "last_name", *(key for key in _KEYS if key != row.matched_by))
    return {name: row.desired[name] for name in names if row.desired.get(name) is not None}


def _word(key: str) -> str:
    return key.replace("_", " ")


def _evidence(key: str) -> str:
    other = next(name for name in _KEYS if name != key)
    return f"the {_word(other)} nor the first and last name"


def _follow_display_name(row: HrRow, mapping: EntityMapping, current: Values) -> None:
    """A rename moves the display name along when it showed the old name and the row sets none."""
    renamed = [
        name
        for name in ("first_name", "last_name")
        if name in row.desired and differs("user", name, current[name], row.desired[name])
    ]
    if "display_name" in row.desired or not renamed:
        return
    old = f"{current['first_name'] or ''} {current['last_name'] or ''}".strip()
    if not _same(current["display_name"], old):
        return
    first = row.desired.get("first_name", current["first_name"]) or ""
    last = row.desired.get("last_name", current["last_name"]) or ""
    try:
        row.desired["display_name"] = _DISPLAY_NAME.validate_python(f"{first} {last}".strip())
    except PydanticValidationError as error:
        message = f"the display name that follows the new name: {error.errors()[0]['msg']}"
        row.problem(mapping, renamed[-1], "max_length", message)
