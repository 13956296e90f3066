"""Where and how the copy for readers is published (`warehouse.publish` writes it), and the checks the
settings make of it when they load: without the publishing itself (Parquet, pyarrow), so loading the
settings does not pay for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from warehouse.db import open_database

DEFAULT_STORAGE_VERSION = "v1.4.0"
"""The storage format of the copy: DuckDB 1.4 and every later version open it (DuckDB names formats by the
release that introduced them: ``v1.4.0``, ``v1.5.0``, …, or ``latest``)."""

MANIFEST = "manifest.json"
"""The file, in the Parquet folder, that names the current publish's folder and files
(`warehouse.parquet`)."""


@dataclass(frozen=True)
class PublishTarget:
    """Where and how the reader copy is published."""

    path: Path
    storage_version: str = DEFAULT_STORAGE_VERSION
    parquet: bool = False
    readers_group: str | None = None
    """The group that may read the copy and its Parquet (else they are as private as the warehouse)."""

    @property
    def parquet_root(self) -> Path:
        """The folder of the Parquet publishes, beside the copy: ``<copy stem>-parquet``."""
        return self.path.with_name(f"{self.path.stem}-parquet")

    @property
    def parquet_manifest(self) -> Path:
        """What Parquet readers read first: the manifest naming the last publish's folder and files."""
        return self.parquet_root / MANIFEST


def same_file_problem(warehouse: Path, published: Path) -> str | None:
    """Why ``published`` cannot be the published copy of ``warehouse`` (it is the warehouse), or None."""
    if warehouse.resolve() == published.resolve():
        return f"{published} is the warehouse itself"
    return None


def storage_version_problem(version: str) -> str | None:
    """Why ``version`` cannot be the copy's storage version (this DuckDB does not know it), or None."""
    with open_database() as con:
        try:
            con.execute("ATTACH ':memory:' AS probe (STORAGE_VERSION ?)", [version])
        except duckdb.Error:
            return f"not a storage version DuckDB {duckdb.__version__} knows"
    return None
