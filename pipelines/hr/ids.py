"""Ids as a spreadsheet may have changed them, refused before they are matched, referenced or written.

**Leading zeros.** Excel stores an id typed into a General cell as a number: ``00123`` becomes ``123``,
and so does every CSV saved from that sheet. Such a row would match nothing by its id (and be planned
for creation, or match by email and plan ``123`` as a changed employee id), and a manager or parent
reference would name nobody. A cell of digits that is no id the service knows, but whose digits are a
known id's without its leading zeros, is refused (rule ``id_leading_zeros``, naming the id it lost).

**Invisible characters.** An id holding a zero-width or other format character (U+200B, U+FEFF, ...) or
a control character (C0, C1) prints like another id and matches nothing, so a plan would show a change
that looks like none: refused (rule ``invisible_character``, naming the code point).

The id cells are the match keys' and the single references' (employee id, manager; org unit id, parent).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict

from pipelines.hr.mapping import EntityMapping
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import Snapshot

ID_FIELDS = {"user": ("employee_id", "manager"), "group": ("external_id", "parent")}
"""The cells of each kind that hold one id."""
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf"})
"""Unicode categories of characters that print as nothing: controls and format characters."""


def check_ids(rows: list[HrRow], mapping: EntityMapping, snapshot: Snapshot) -> None:
    """Record an ``invisible_character`` or ``id_leading_zeros`` problem on each row whose id cell holds
    one (see the module docstring)."""
    known = _known_ids(mapping, snapshot)
    lost_zeros = _by_digits(known)
    for row in rows:
        for name in ID_FIELDS[mapping.kind]:
            value = row.cells.get(name, "")
            invisible = next(
                (char for char in value if unicodedata.category(char) in INVISIBLE_CATEGORIES), None
            )
            if invisible is not None:
                message = f"holds the invisible character U+{ord(invisible):04X}: type the id again"
                row.problem(mapping, name, "invisible_character", message)
            elif value.isdigit() and value.casefold() not in known and value.lstrip("0") in lost_zeros:
                ids = " or ".join(repr(found) for found in lost_zeros[value.lstrip("0")])
                message = (
                    f"{value!r} is the id {ids} without its leading zeros (Excel stores an id typed as a "
                    "number so): format the column as Text and export again"
                )
                row.problem(mapping, name, "id_leading_zeros", message)


def _known_ids(mapping: EntityMapping, snapshot: Snapshot) -> set[str]:
    if mapping.kind == "user":
        return {str(key).casefold() for key in snapshot.user_values.column("employee_id") if key}
    return {group.external_id.casefold() for group in snapshot.groups.values() if group.external_id}


def _by_digits(known: set[str]) -> dict[str, list[str]]:
    """The known ids of digits with leading zeros, by their digits without them."""
    found: dict[str, list[str]] = defaultdict(list)
    for key in sorted(known):
        if key.isdigit() and key.startswith("0"):
            found[key.lstrip("0")].append(key)
    return found
