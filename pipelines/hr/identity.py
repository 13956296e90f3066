"""Identity evidence: a row that found a service record (a user, an org unit) by one key is about that
record only if it agrees with it on who it is beyond that key.

HR systems number employees and org units alike (``E100011`` and ``ORG-0007`` exist in many tenants), so a
key match alone proves nothing: another company's export would rewrite this tenant's records into its own.
Before a row may change any field of the record it matched, it must agree with the record on one piece of
identity other than the key it matched by (`EVIDENCE`): for a user the email, the employee id, or the
first and last name together with the start date; for an org unit its name, its legal name, or its org
unit id. A name alone is no evidence of a person: names repeat across companies (every tenant may have an
"Integration Admin" numbered ``E100000``), and another company's row naming the same person would take
this tenant's record as its own, roles and all; the day they started is theirs. A legitimate rename keeps
the email (or the legal name); a legitimate email change keeps the name and the start date; a row changing
every piece at once proves nothing and is refused (`IDENTITY_RULE`): change one, let it apply, then the
other. A file where a material share (`FOREIGN_SHARE`) of the matched rows disagrees is about another
tenant's records and is refused whole (`FOREIGN_RULE`).

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

from models.hr.fields import EntityKind, Value, Values, differs
from models.users import UpdateUserEntities
from pipelines.hr.mapping import EntityMapping
from pipelines.hr.problems import Problem
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import fold

IDENTITY_RULE = "identity_mismatch"
FOREIGN_RULE = "foreign_file"
FOREIGN_SHARE = 0.5
"""A file whose matched rows disagree with their records in this share or more (half) is refused whole:
it is about another tenant's records (a few wrong rows among many are refused one by one)."""
_DISPLAY_NAME: TypeAdapter[str | None] = TypeAdapter(
    cast(Any, UpdateUserEntities.model_fields["display_name"].annotation)
)
"""E1's rules of a display name (its length), which a name that follows a rename must keep too."""
EVIDENCE: dict[EntityKind, dict[str, tuple[str, ...]]] = {
    "user": {
        "the email": ("email",),
        "the employee id": ("employee_id",),
        "the first and last name with the start date": ("first_name", "last_name", "start_date"),
    },
    "group": {
        "the name": ("group_name",),
        "the display name": ("display_name",),
        "the legal name": ("legal_name",),
        "the org unit id": ("external_id",),
    },
}
"""Pieces of identity beyond the key, per kind: a row is about the record its key found when it agrees
with it on one piece (every field of it). A piece read from the column the row matched by is that key
again and proves nothing. A group's parent is no piece: it is another org unit's key, which another
tenant's numbering matches as readily as the unit's own."""
_NOUN: dict[EntityKind, str] = {"user": "person", "group": "org unit"}


def check_identity(row: HrRow, mapping: EntityMapping, current: Values, label: str) -> None:
    """Record an `IDENTITY_RULE` problem on a row that would change ``current`` (the record it matched,
    shown to people as ``label``) without agreeing with it on a piece of `EVIDENCE`."""
    if mapping.kind == "user":
        _follow_display_name(row, mapping, current)
    if not _changes(row, mapping.kind, current):
        return
    key = row.matched_by or mapping.match_keys[0]
    pieces = _pieces(mapping, key)
    if any(_agrees(row, fields, current) for fields in pieces.values()):
        return
    claims = [name for fields in pieces.values() for name in fields if row.desired.get(name) is not None]
    shown = ", ".join(f"{_word(name)} {row.desired[name]!r}" for name in claims) or "nothing else"
    labels = list(pieces)
    neither = f"{', '.join(labels[:-1])} nor {labels[-1]}" if len(labels) > 1 else labels[0]
    message = (
        f"{_word(key)} {row.cells.get(key, '')!r} is {label} in the service, but the row names {shown}: "
        f"neither {neither} agrees, so it is not about that {_NOUN[mapping.kind]} (a file of another "
        f"tenant, or {' and '.join(labels)} changed at once: change one, apply it, then the other)"
    )
    row.problem(mapping, key, IDENTITY_RULE, message)


def foreign_files(rows: Iterable[HrRow]) -> list[Problem]:
    """A `FOREIGN_RULE` problem for each file whose matched rows mostly name other records than the
    ones they matched (at least `FOREIGN_SHARE` of them)."""
    matched: Counter[str] = Counter()
    foreign: Counter[str] = Counter()
    kinds: dict[str, EntityKind] = {}
    for row in rows:
        if row.entity_id:
            matched[row.file] += 1
            foreign[row.file] += any(problem.rule == IDENTITY_RULE for problem in row.problems)
            kinds[row.file] = row.kind
    return [
        Problem(
            file,
            0,
            "",
            FOREIGN_RULE,
            f"{foreign[file]} of {count} row(s) that matched a record by key name another "
            f"{_NOUN[kinds[file]]} ({IDENTITY_RULE})",
        )
        for file, count in matched.items()
        if foreign[file] and foreign[file] >= FOREIGN_SHARE * count
    ]


def _pieces(mapping: EntityMapping, key: str) -> dict[str, tuple[str, ...]]:
    """The pieces of `EVIDENCE` the row can offer: mapped, not read from the key's column, and not read
    from the same columns as an earlier piece (a unit's name and display name from one column are one
    piece)."""
    key_column = mapping.columns.get(key)
    pieces: dict[str, tuple[str, ...]] = {}
    seen: set[tuple[str | None, ...]] = set()
    for label, fields in EVIDENCE[mapping.kind].items():
        columns = tuple(mapping.columns.get(name) for name in fields)
        if None in columns or key_column in columns or columns in seen:
            continue
        seen.add(columns)
        pieces[label] = fields
    return pieces


def _changes(row: HrRow, kind: EntityKind, current: Values) -> bool:
    return any(differs(kind, name, current.get(name), after) for name, after in row.desired.items())


def _agrees(row: HrRow, fields: tuple[str, ...], current: Values) -> bool:
    """Whether the row gives every field of one piece and each equals the record's."""
    return all(
        row.desired.get(name) is not None and _same(row.desired[name], current[name]) for name in fields
    )


def _same(mine: Value, theirs: Value) -> bool:
    """Equal as people compare names and addresses: case, runs of spaces and Unicode form aside."""
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return False
    return fold(unicodedata.normalize("NFC", mine)) == fold(unicodedata.normalize("NFC", theirs))


def _word(key: str) -> str:
    return key.replace("_", " ")


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
