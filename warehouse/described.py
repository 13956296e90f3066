"""What each warehouse table and column is, as `warehouse.dictionary_page` generated it into
``described_schema.json`` (descriptions from the data dictionary, types from the migrated schema, what each
view reads): read without a database, for the Dagster assets' descriptions, column schemas and lineage."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

DESCRIBED_SCHEMA = "described_schema.json"


@dataclass(frozen=True)
class DescribedColumn:
    """A column of a warehouse table: its name, its DuckDB type and its description."""

    name: str
    data_type: str
    description: str


@dataclass(frozen=True)
class DescribedTable:
    """A warehouse table or view: its description, its columns in order, and for a view the tables and
    views it reads."""

    description: str
    columns: tuple[DescribedColumn, ...]
    reads: tuple[str, ...] = ()


@cache
def _described() -> dict[str, tuple[str, DescribedTable]]:
    """Every table and view of the warehouse, described, with its kind (read once per process)."""
    text = resources.files("warehouse").joinpath(DESCRIBED_SCHEMA).read_text(encoding="utf-8")
    return {
        name: (
            relation["kind"],
            DescribedTable(
                relation["description"],
                tuple(DescribedColumn(*column) for column in relation["columns"]),
                tuple(relation.get("reads", ())),
            ),
        )
        for name, relation in json.loads(text).items()
    }


def described_tables() -> dict[str, DescribedTable]:
    """Every table of the warehouse, described."""
    return {name: table for name, (kind, table) in _described().items() if kind == "table"}


def described_views() -> dict[str, DescribedTable]:
    """Every view of the warehouse, described, with what it reads."""
    return {name: view for name, (kind, view) in _described().items() if kind == "view"}
