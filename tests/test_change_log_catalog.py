"""The change log's back-fill (migration 0042) names, by hand, the history tables whose changes it logs,
while each commit derives them from the list catalog (`warehouse.changes`): the two lists must agree, or
a table added to the catalog would be logged from its next commit on with its earlier history missing."""

from __future__ import annotations

import re
from pathlib import Path

import warehouse
from warehouse.catalog import FAMILIES

BACKFILL = Path(warehouse.__file__).parent / "migrations" / "0042_change_log.sql"


def _backfilled_calls() -> set[tuple[str, ...]]:
    """Each ``INSERT INTO change_log SELECT * FROM <macro>(<names>, NULL, NULL)`` of the back-fill."""
    text = " ".join(BACKFILL.read_text(encoding="utf-8").split())
    pattern = r"INSERT INTO change_log SELECT \* FROM (\w+)\(([^()]*), NULL, NULL\)"
    return {(macro, *re.findall(r"'([^']*)'", names)) for macro, names in re.findall(pattern, text)}


def _catalog_calls() -> set[tuple[str, ...]]:
    """The same calls as `warehouse.changes.record_changes` makes them from the catalog."""
    calls: set[tuple[str, ...]] = set()
    for family in FAMILIES.values():
        calls |= {(macro, family.root, family.history) for macro in ("record_changes", "raw_changes")}
        for child in family.children:
            names = (child.table, child.history, child.parent_column, child.reference, family.history)
            calls.add(("item_changes", *names))
    return calls


def test_the_change_log_backfill_covers_every_table_the_commits_log() -> None:
    assert _backfilled_calls() == _catalog_calls()
