"""What each warehouse table and column is, as `warehouse.dictionary_page` generated it into
``described_schema.json`` (descriptions from the data dictionary, types from the migrated schema): read
without a database, for the Dagster assets' descriptions and column schemas."""

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
    """A warehouse table: its description and its columns in order."""

    description: str
    columns: tuple[DescribedColumn, ...]


@cache
def described_tables() -> dict[str, DescribedTable]:
    """Every table of the warehouse, described (read once per process)."""
    text = resources.files("warehouse").joinpath(DESCRIBED_SCHEMA).read_text(encoding="utf-8")
    return {
        name: DescribedTable(
            table["description"], tuple(DescribedColumn(*column) for column in table["columns"])
        )
        for name, table in json.loads(text).items()
    }
