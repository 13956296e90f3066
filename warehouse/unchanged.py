"""Records read again unchanged: their stored rows are staged in place of rows derived again.

A list read whole (every full refresh; a small list whose changes its cursor cannot see, every night) brings
back mostly records the warehouse holds already, and turning each into rows is most of the Python a read
costs (validation aside). A record is not derived again when all of this is proven:

- **its text is the one stored**: the MD5 of the text read equals the MD5 of the current row's ``raw``;
- **the same derivation wrote the stored rows**: the run that last wrote or compared them ran with this
  process's `derivation` (the code and schema that turn texts into rows, and the schema contract's modes),
  so the rows are what this release derives from that text;
- **the row is live** (a record the warehouse marked deleted is derived again when it returns).

Such a record is not offered to the revision reads either; that changes no list asked for (see `_DIGESTS`).

The extract then only notes the record's id and MD5; before the checks, `stage_unchanged` appends the current
rows of the noted records to the staged files, after checking that each still has the noted MD5 (it fails
naming the list when one does not). From there on the run is the run without reuse: the checks read the
same staged rows, and the merge compares them as it compares any staged row (tests/test_unchanged.py holds
the two ways to the same warehouse, field by field).
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa

from models.errors import AuthoritySyncError
from warehouse.catalog import LISTS
from warehouse.reads import LIVE, read_only
from warehouse.schema import staging_schema
from warehouse.staging import BATCH_ROWS, append_staged

DERIVING_PACKAGES = ("models", "resources", "warehouse")
"""The packages whose code and schema decide what rows a record's text becomes: any change to one of their
files (a release, an upgrade) makes every stored row unproven, so the next read of each list derives all."""
DigestsByList = Mapping[str, Mapping[str, str]]
"""Per list: record id -> MD5 of its text (of the stored row, or of the text read)."""


class UnchangedRowsError(AuthoritySyncError):
    """The stored rows of records read unchanged no longer have the text the run read."""


def _code_fingerprint() -> str:
    """A digest of every Python and SQL file of `DERIVING_PACKAGES`."""
    digest = hashlib.sha256()
    for package in DERIVING_PACKAGES:
        folder = Path(str(importlib.import_module(package).__file__)).parent
        for path in sorted(folder.rglob("*")):
            if path.suffix in {".py", ".sql"} and path.is_file():
                digest.update(f"{path.relative_to(folder.parent).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


CODE_FINGERPRINT = _code_fingerprint()
"""The files' digest as this module is imported (11 ms), with the code the process runs: files replaced under
a long-running process later (a deployment) do not pass for what it derives."""


def derivation(schema_contract: str) -> str:
    """What derives this run's rows, as a short digest (``sync_runs.derivation``): the code and schema
    (`CODE_FINGERPRINT`) and the schema contract's modes (``ADM_SCHEMA_CONTRACT``, as configured: how a
    value off the spec is read)."""
    text = f"{CODE_FINGERPRINT}\0{schema_contract}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# A record staged again is not offered to the revision reads, which asks for no list a deriving run would
# have asked for: a list it names that was checked is asked for only when due, as a deriving run's offer of
# an unchanged record does (`pipelines.extract.RevisionScope.offer`), and one never checked is due anyway,
# since this very row names it (`warehouse.reads.revision_plans`).
_DIGESTS = f"""
SELECT id, md5(raw) FROM {{list}}
WHERE tenant_id = $tenant AND {LIVE}
  AND run_id IN (SELECT run_id FROM sync_runs WHERE tenant_id = $tenant AND derivation = $derivation)
"""  # noqa: S608 - the catalog's names


def stored_digests(
    con: duckdb.DuckDBPyConnection, tenant_id: str, derivation_now: str, lists: frozenset[str]
) -> dict[str, dict[str, str]]:
    """For each list of ``lists``, the tenant's records whose stored rows a read may stage again: id -> MD5
    of the stored text (see the module's conditions)."""
    found: dict[str, dict[str, str]] = {}
    for name in sorted(lists):
        query = _DIGESTS.format(list=name)
        rows = con.execute(query, {"tenant": tenant_id, "derivation": derivation_now}).fetchall()
        if rows:
            found[name] = {str(record_id): str(digest) for record_id, digest in rows}
    return found


def text_digest(text: str) -> str:
    """The MD5 of a record's text, as DuckDB's ``md5(raw)`` writes it."""
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def stage_unchanged(
    warehouse: Path, wait_s: float, staging: Path, tenant_id: str, noted: DigestsByList
) -> dict[str, int]:
    """Append to the staged files the current rows of the records each list noted unchanged (id -> MD5 of
    the text read), after checking in the same read that each still holds that text; returns the rows added
    per table. Raises `UnchangedRowsError` naming the list when a row changed or went (another writer since
    the run started), so nothing is committed from rows the run did not read."""
    added: dict[str, int] = {}
    if not any(noted.values()):
        return added
    with read_only(warehouse, wait_s) as con:
        if con is None:
            raise UnchangedRowsError(f"{warehouse} is gone: the unchanged records' rows cannot be staged")
        for name, digests in noted.items():
            if digests:
                added.update(_stage_list(con, staging, tenant_id, name, digests))
    return added


def _stage_list(
    con: duckdb.DuckDBPyConnection, staging: Path, tenant_id: str, name: str, digests: Mapping[str, str]
) -> dict[str, int]:
    family = LISTS[name].family
    # As list parameters: registering an Arrow table makes DuckDB import pandas (0.6 s).
    con.execute(
        "CREATE OR REPLACE TEMP TABLE noted AS SELECT unnest($ids) AS id, unnest($digests) AS digest",
        {"ids": list(digests), "digests": list(digests.values())},
    )
    try:
        # The roots are read only where their text still has the noted MD5 (the proof, in the same pass
        # that reads them): fewer than noted fail the run, whose staging is then discarded.
        added = {name: append_staged(staging, name, _stored_rows(con, tenant_id, name, _ROOTS))}
        if added[name] != len(digests):
            raise UnchangedRowsError(
                f"{name}: {len(digests) - added[name]} of the {len(digests)} records read unchanged no "
                "longer have that text in the warehouse (another writer changed it since the run started); "
                "nothing committed: run again"
            )
        for child in family.children:
            scope = f"{child.parent_column} IN (SELECT id FROM noted)"  # noqa: S608 - the catalog's column
            added[child.table] = append_staged(
                staging, child.table, _stored_rows(con, tenant_id, child.table, scope)
            )
        return added
    finally:
        con.execute("DROP TABLE noted")


_ROOTS = f"{LIVE} AND (id, md5(raw)) IN (SELECT id, digest FROM noted)"  # noqa: S608 - constants
"""The noted records' live roots whose text is still the one read."""


def _stored_rows(
    con: duckdb.DuckDBPyConnection, tenant_id: str, table: str, scope: str
) -> Iterator[pa.RecordBatch]:
    """The tenant's current rows of ``table`` within ``scope`` (SQL), in its staged columns, by batches."""
    schema = staging_schema(table)
    columns = ", ".join(f'"{column}"' for column in schema.names)
    reader = con.sql(
        f"SELECT {columns} FROM {table} WHERE tenant_id = $tenant AND {scope}",  # noqa: S608 - catalog names
        params={"tenant": tenant_id},
    ).to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        yield batch.cast(schema)
