"""Issue 31's question, measured: could DuckDB (or msgspec) parse, check and flatten pages of decisions
set-wise, and what would it cost beside today's per-record Python?

Run ``python -m benchmarks.page_sql``. An emulator process serves ``--pages`` pages of 100 decisions once.
Then, over the same bodies, each the fastest of ``--passes``:

- **today's path** (`RecordContract.read_page`, the list's flatten function, `StagingWriter`), and its
  validation alone;
- **msgspec**: a strict decode (no coercion) of each page into structs derived from the same models (now
  the contract's fast path, `resources.fast_records.fast_page`);
- **DuckDB, typed**: each page's records written one a line (cut out by `page_records`), converted by
  ``json_transform`` to the models' types (DuckDB casts what it can) and written as the four staged tables;
  the lower bound of a set-based path, which checks nothing of the record contract;
- **DuckDB, checked**: the same, after the checks the contract's strict fast path makes, as SQL over each
  record (every declared field with its JSON type, items included; no key given twice; ids non-empty; the
  tenant's own records; statuses and value types from the spec's lists; counts within 32 bits).

Each DuckDB variant runs on one thread and on two; process CPU (DuckDB's threads included) and wall time
per page are printed. Then each DuckDB table is compared with today's, cell by cell on every staged column:
the count of differing cells per column says what a set-based path would have to reproduce (or define
anew: ``content_hash`` is a hash of pydantic's serialisation).

A measurement to choose by, not product code: nothing here is used by a sync.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from collections.abc import Callable
from json import dumps
from pathlib import Path

import duckdb

from benchmarks.harness import OUTPUT, EmulatorProcess, EmulatorSpec
from benchmarks.page_cpu import PAGE_SIZE, bodies
from emulator.scale import DEMO_TENANT_ID
from models.base import UUID_PATTERN
from models.decisions import Decision
from models.queries import AuthorityLimitValueType, DecisionStatus
from resources.catalog import DECISIONS, PagedList
from resources.contract import RecordContract
from resources.fast_records import fast_page
from resources.rawjson import page_records
from warehouse.catalog import LISTS
from warehouse.rows import TableRows
from warehouse.schema import staging_schema
from warehouse.staging import StagingWriter

TABLES = ("decisions", "decision_groups", "decision_authorities", "decision_documents")


def _key(column: str) -> str:
    """An id as the warehouse keys it (`models.base.canonical_id`): a UUID in lower case, anything else as
    sent."""
    return f"(CASE WHEN regexp_full_match({column}, '{UUID_PATTERN}') THEN lower({column}) ELSE {column} END)"


def _enum(values: type[DecisionStatus] | type[AuthorityLimitValueType]) -> str:
    return "[" + ", ".join(f"'{member.value}'" for member in values) + "]"


GROUP = {
    "id": "VARCHAR",
    "groupId": "VARCHAR",
    "tenantGroupTypeId": "VARCHAR",
    "displayName": "VARCHAR",
    "groupName": "VARCHAR",
}
AUTHORITY = {
    "id": "VARCHAR",
    "authorityTypeId": "VARCHAR",
    "authorityType": "VARCHAR",
    "authorityTypeOrder": "INTEGER",
    "authorityLimit": "VARCHAR",
    "authorityLimitValueType": "VARCHAR",
    "authorityLimitOperator": "VARCHAR",
    "authorityLimitValue": "VARCHAR",
    "authorityLimitValueUnit": "VARCHAR",
}
DOCUMENT = {
    "id": "VARCHAR",
    "documentId": "VARCHAR",
    "documentDisplayId": "VARCHAR",
    "documentName": "VARCHAR",
    "documentTypeName": "VARCHAR",
    "documentStatus": "VARCHAR",
    "documentFileType": "VARCHAR",
    "documentUrl": "VARCHAR",
    "isPinned": "BOOLEAN",
}
DECISION = {
    **dict.fromkeys(
        [
            "id",
            "tenantId",
            "decisionDisplayId",
            "name",
            "description",
            "guidance",
            "sectionId",
            "sectionName",
        ],
        "VARCHAR",
    ),
    **dict.fromkeys(
        ["categoryId", "categoryName", "status", "previousStatus", "owner", "ownerUsername"], "VARCHAR"
    ),
    **dict.fromkeys(
        ["createdBy", "createdByUsername", "updatedBy", "updatedByUsername", "copiedFrom"], "VARCHAR"
    ),
    "createdAt": "TIMESTAMPTZ",
    "updatedAt": "TIMESTAMPTZ",
    **dict.fromkeys(["conditionEnabled", "roleEnabled", "delegable"], "BOOLEAN"),
    "delegations": "INTEGER",
    "authorityLimitSortPrecedence": "DOUBLE",
    "delegationPathway": ["VARCHAR"],
    "link": "VARCHAR",
    "decisionGroups": [GROUP],
    "decisionAuthorities": [AUTHORITY],
    "decisionDocuments": [DOCUMENT],
}
"""The fields of a decision the staged tables take, as ``json_transform`` declares a structure."""

# The contract's strict fast path, as columns over records read as JSON (``j``): each declared field with the
# JSON type pydantic's strict mode accepts for it ("NULL" where the model allows None).
_TYPES = {
    "id": "VARCHAR",
    "decisionId": "VARCHAR",
    "tenantId": "VARCHAR",
    "name": "VARCHAR",
    "description": "VARCHAR",
    "guidance": "VARCHAR",
    "sectionId": "VARCHAR",
    "categoryId": "VARCHAR",
    "sectionName": "VARCHAR",
    "categoryName": "VARCHAR",
    "status": "VARCHAR",
    "createdBy": "VARCHAR|NULL",
    "updatedBy": "VARCHAR|NULL",
    "owner": "VARCHAR|NULL",
    "createdByUsername": "VARCHAR|NULL",
    "ownerUsername": "VARCHAR|NULL",
    "updatedByUsername": "VARCHAR|NULL",
    "createdAt": "VARCHAR",
    "updatedAt": "VARCHAR",
    "copiedFrom": "VARCHAR|NULL",
    "conditionEnabled": "BOOLEAN",
    "roleEnabled": "BOOLEAN",
    "delegable": "BOOLEAN",
    "decisionDisplayId": "VARCHAR",
    "delegationPathway": "ARRAY",
    "link": "VARCHAR",
    "decisionGroups": "ARRAY",
    "decisionAuthorities": "ARRAY",
    "decisionDocuments": "ARRAY",
    "delegations": "BIGINT|UBIGINT",
    "ownerUserProfileUrl": "VARCHAR",
    "createdByUserProfileUrl": "VARCHAR",
    "updatedByUserProfileUrl": "VARCHAR",
    "permissions": "ARRAY",
    "createdByDetails": "OBJECT",
    "updatedByDetails": "OBJECT",
    "ownerDetails": "OBJECT",
    "isRequestActionCompleted": "BOOLEAN",
}


_ITEM_TYPES = {
    "decisionGroups": dict.fromkeys(
        ["id", "denormalizedDecisionId", "groupId", "tenantGroupTypeId", "displayName", "groupName"],
        "VARCHAR",
    ),
    "decisionAuthorities": {
        **dict.fromkeys(["id", "denormalizedDecisionId", "authorityTypeId", "authorityType"], "VARCHAR"),
        "authorityTypeOrder": "BIGINT|UBIGINT",
        **dict.fromkeys(["authorityTypeIcon", "authorityLimit", "authorityLimitValueType"], "VARCHAR"),
        **dict.fromkeys(
            ["authorityLimitOperator", "authorityLimitValue", "authorityLimitValueUnit"], "VARCHAR"
        ),
    },
    "decisionDocuments": {
        **dict.fromkeys(
            ["id", "denormalizedDecisionId", "documentId", "documentName", "documentUrl"], "VARCHAR"
        ),
        **dict.fromkeys(
            ["documentTypeName", "documentIcon", "documentDescription", "documentFileType"], "VARCHAR"
        ),
        "isPinned": "BOOLEAN",
        **dict.fromkeys(["documentDisplayId", "documentStatus", "documentFileLink"], "VARCHAR"),
    },
    "permissions": {"relationship_key": "VARCHAR", "allowed": "BOOLEAN"},
}
"""Each item list of a decision -> the JSON types of its items' declared fields."""


def _items_fit(json: str) -> list[str]:
    """The checks of the items of every list of `_ITEM_TYPES`, each item's types as one pattern, plus the
    items' values the contract checks (value types from the spec's list, ranks within 32 bits)."""
    checks = []
    for name, types in _ITEM_TYPES.items():
        paths = ", ".join(f"'$.{field}'" for field in types)
        pattern = ",".join(f"({kinds})" for kinds in types.values())
        checks.append(
            f"list_bool_and(list_transform(json_extract({json}, '$.{name}[*]'), lambda e: "
            f"regexp_full_match(array_to_string(json_type(e, [{paths}]), ','), '{pattern}')))"
        )
    checks += [
        f"list_has_all({_enum(AuthorityLimitValueType)}, "
        f"json_extract_string({json}, '$.decisionAuthorities[*].authorityLimitValueType'))",
        f"list_bool_and(list_transform("
        f"json_extract_string({json}, '$.decisionAuthorities[*].authorityTypeOrder'), "
        "lambda v: TRY_CAST(v AS INTEGER) IS NOT NULL))",
        f"list_bool_and(list_transform(json_type({json}, '$.delegationPathway[*]'), "
        "lambda t: t = 'VARCHAR'))",
    ]
    return [f"coalesce({check}, TRUE)" for check in checks]  # an empty list has no item to fail


_VALUES = ("id", "tenantId", "status", "previousStatus", "createdAt", "updatedAt", "delegations")
"""The fields whose values (not only types) the fast path checks, extracted as text in one call."""


def _checked_columns(json: str) -> str:
    """The select list a record's checks read, each JSON function called once (each parses the text
    again): the JSON type of every declared field, the record's keys, the values `_VALUES` checks."""
    paths = ", ".join(f"'$.{name}'" for name in _TYPES)
    values = ", ".join(f"'$.{name}'" for name in _VALUES)
    return (
        f"{json} AS j, array_to_string(json_type({json}, [{paths}]), ',') AS types, "
        f"json_keys({json}) AS keys, json_extract_string({json}, [{values}]) AS v"
    )


def _fits() -> str:
    """The fast path's checks of one record, over `_checked_columns`, as one boolean expression: the types
    as one pattern over the fields' types in order, then the values."""
    pattern = ",".join(f"({kinds})" for kinds in _TYPES.values())
    value = {name: f"v[{index}]" for index, name in enumerate(_VALUES, start=1)}
    return " AND ".join(
        [
            f"regexp_full_match(types, '{pattern}')",
            "len(keys) = len(list_distinct(keys))",  # no key given twice
            f"length(trim({value['id']})) > 0",
            f"lower({value['tenantId']}) = '{DEMO_TENANT_ID}'",
            f"list_contains({_enum(DecisionStatus)}, {value['status']})",
            f"({value['previousStatus']} IS NULL "
            f"OR list_contains({_enum(DecisionStatus)}, {value['previousStatus']}))",
            f"TRY_CAST({value['createdAt']} AS TIMESTAMPTZ) IS NOT NULL",
            f"TRY_CAST({value['updatedAt']} AS TIMESTAMPTZ) IS NOT NULL",
            f"TRY_CAST({value['delegations']} AS INTEGER) IS NOT NULL",
            *_items_fit("j"),
        ]
    )


def _items(records: str, name: str, alias: str) -> str:
    """A FROM clause of the items of the decisions' list ``name`` (each ``alias``, its place ``o`` and its
    text ``item_raw``, beside its decision ``d``)."""
    texts = f"unnest(json_extract(raw, '$.{name}[*]'))::VARCHAR AS item_raw"
    return (
        f"FROM (SELECT d, unnest(d.{name}) AS {alias}, {texts}, "
        f"generate_subscripts(d.{name}, 1) AS o FROM {records})"
    )


def _tables(records: str) -> dict[str, str]:
    """The four staged tables as queries over ``records`` (a relation with one struct ``d`` of `DECISION`
    and its text ``raw``)."""
    item = (
        f"SELECT '{DEMO_TENANT_ID}' AS tenant_id, {_key('d.id')} AS decision_id, "
        "CAST(o AS INTEGER) AS item_order"
    )
    return {
        "decisions": (
            f"SELECT '{DEMO_TENANT_ID}' AS tenant_id, {_key('d.id')} AS id, "
            "d.decisionDisplayId AS decision_display_id, d.name, d.description, d.guidance, "
            f"{_key('d.sectionId')} AS section_id, d.sectionName AS section_name, "
            f"{_key('d.categoryId')} AS category_id, d.categoryName AS category_name, d.status, "
            f"d.previousStatus AS previous_status, {_key('d.owner')} AS owner_id, "
            "d.ownerUsername AS owner_username, d.createdBy AS created_by, "
            "d.createdByUsername AS created_by_username, d.updatedBy AS updated_by, "
            "d.updatedByUsername AS updated_by_username, d.createdAt AS created_at, "
            "d.updatedAt AS updated_at, d.copiedFrom AS copied_from, "
            "d.conditionEnabled AS condition_enabled, "
            "d.roleEnabled AS role_enabled, d.delegable, d.delegations AS delegations_count, "
            "d.authorityLimitSortPrecedence AS authority_limit_sort_precedence, "
            "d.delegationPathway AS delegation_pathway, d.link, "
            "md5(raw) AS content_hash, raw, d.status = 'DELETED' AS is_deleted "
            f"FROM {records}"
        ),
        "decision_groups": (
            f"{item}, {_key('g.id')} AS id, {_key('g.groupId')} AS group_id, "
            f"{_key('g.tenantGroupTypeId')} AS tenant_group_type_id, g.groupName AS group_name, "
            f"g.displayName AS display_name, item_raw AS raw {_items(records, 'decisionGroups', 'g')}"
        ),
        "decision_authorities": (
            f"{item}, {_key('a.id')} AS id, {_key('a.authorityTypeId')} AS authority_type_id, "
            "a.authorityType AS authority_type, a.authorityTypeOrder AS authority_type_order, "
            "a.authorityLimit AS authority_limit, a.authorityLimitValueType AS value_type, "
            "a.authorityLimitOperator AS operator, a.authorityLimitValue AS limit_value, "
            "TRY_CAST(regexp_replace(a.authorityLimitValue, '[,\\s$€£¥]', '', 'g') AS DECIMAL(38, 6)) "
            "AS limit_number, nullif(a.authorityLimitValueUnit, '') AS limit_unit, "
            "lower(trim(a.authorityLimitValue)) = 'unlimited' AS is_unlimited, "
            f"item_raw AS raw {_items(records, 'decisionAuthorities', 'a')}"
        ),
        "decision_documents": (
            f"{item}, {_key('x.id')} AS id, {_key('x.documentId')} AS document_id, "
            "x.documentDisplayId AS document_display_id, x.documentName AS document_name, "
            "x.documentTypeName AS document_type_name, x.documentStatus AS document_status, "
            "x.documentFileType AS document_file_type, x.documentUrl AS document_url, "
            f"x.isPinned AS is_pinned, item_raw AS raw {_items(records, 'decisionDocuments', 'x')}"
        ),
    }


def records_file(pages: list[bytes], path: Path) -> None:
    """Each page's records, one JSON text a line (cut out of the page by `page_records`, in C): the staging
    a set-based path would write as the pages arrive. A line break between a record's tokens becomes a
    space (inside a JSON string it is escaped, RFC 8259), so each record keeps its values on one line."""
    with path.open("w", encoding="utf-8") as out:
        for body in pages:
            for text in page_records(body.decode("utf-8")):
                out.write(text.replace("\r", " ").replace("\n", " "))
                out.write("\n")


def _transformed(json: str) -> str:
    return f"json_transform({json}, '{dumps(DECISION)}')"


def typed(con: duckdb.DuckDBPyConnection, records: Path, out: Path) -> None:
    """The records converted to `DECISION` structs by ``json_transform`` (DuckDB casts what it can: a
    string ``"1"`` becomes the number 1), written as the four staged tables; nothing of the contract is
    checked: the lower bound of a set-based path."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE records AS SELECT {_transformed('json')} AS d, json::VARCHAR AS raw "
        f"FROM read_ndjson_objects('{records}')"
    )
    _write(con, "records", out)


def checked(con: duckdb.DuckDBPyConnection, records: Path, out: Path) -> None:
    """The records checked as the contract's strict fast path checks them (`_fits`), then converted and
    written as the four staged tables (a record that fails a check would go to today's path)."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE records AS SELECT {_transformed('j')} AS d, j::VARCHAR AS raw "
        f"FROM (SELECT {_checked_columns('json')} FROM read_ndjson_objects('{records}')) WHERE {_fits()}"
    )
    _write(con, "records", out)


def _write(con: duckdb.DuckDBPyConnection, records: str, out: Path) -> None:
    for table, query in _tables(records).items():
        con.execute(f"COPY ({query}) TO '{out / table}.parquet' (FORMAT parquet)")


def python_path(source: PagedList[object], pages: list[bytes], out: Path) -> None:
    """Today's hot path over the pages: the contract, the list's flatten function, the staging writer."""
    contract = RecordContract(tenant_id=DEMO_TENANT_ID)
    flatten = LISTS[source.name].flatten
    with StagingWriter(out) as writer:
        for number, body in enumerate(pages, start=1):
            for record in contract.read_page(source, number, body).data.data:
                rows: TableRows = flatten(DEMO_TENANT_ID, record)
                writer.add(rows)


def timed(passes: int, run: Callable[[], object]) -> tuple[float, float]:
    """The least process CPU and the least wall seconds of ``passes`` runs of ``run``."""
    cpu, wall = [], []
    for _ in range(passes):
        started_cpu, started = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    return min(cpu), min(wall)


def differences(reference: Path, candidate: Path) -> dict[str, dict[str, int]]:
    """Table -> column -> cells of ``candidate``'s staged table that differ from ``reference``'s (rows
    paired by id; a row missing on either side counts in every column)."""
    found: dict[str, dict[str, int]] = {}
    con = duckdb.connect()
    for table in TABLES:
        columns = staging_schema(table).names
        base, other = (
            f"read_parquet('{reference / table}.parquet')",
            f"read_parquet('{candidate / table}.parquet')",
        )
        counts = ", ".join(
            f"count(*) FILTER (WHERE a.{c}::VARCHAR IS DISTINCT FROM b.{c}::VARCHAR) AS {c}" for c in columns
        )
        row = con.execute(f"SELECT {counts} FROM {base} a FULL JOIN {other} b ON a.id = b.id").fetchone()
        found[table] = {c: int(n) for c, n in zip(columns, row or (), strict=True) if n}
    return found


def _report(label: str, spent: tuple[float, float], pages: int) -> None:
    cpu, wall = spent
    print(f"  {label}: {cpu * 1000 / pages:.1f} / {wall * 1000 / pages:.1f}")


def main() -> None:
    """Fetch the pages, time each path over them, compare what they staged."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--passes", type=int, default=3)
    options = parser.parse_args()
    spec = EmulatorSpec(decisions=options.pages * PAGE_SIZE, delegations=100, documents=200, users=500)
    source: PagedList[object] = DECISIONS  # type: ignore[assignment]
    with EmulatorProcess(spec, OUTPUT / "work" / "page_sql_emulator.log") as server:
        pages = bodies(server, source, options.pages)
    count, passes = len(pages), options.passes
    contract = RecordContract(tenant_id=DEMO_TENANT_ID)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        outputs = {name: root / name for name in ("python", "typed", "checked")}
        for path in outputs.values():
            path.mkdir()
        records = root / "records.ndjson"
        print(f"{count} pages of {PAGE_SIZE} decisions; ms per page (CPU / wall), fastest of {passes}")
        _report(
            "today's path (validate, flatten, stage)",
            timed(passes, lambda: python_path(source, pages, outputs["python"])),
            count,
        )
        # Each page's result is dropped before the next, as the extract drops it: kept, every page's
        # objects would stay for the collector to walk again.
        validate = functools.partial(_each, lambda n, b: contract.read_page(source, n, b), pages)
        _report("of which the contract's validation (pydantic, strict)", timed(passes, validate), count)
        decode = functools.partial(_each, lambda _, body: fast_page(Decision, body), pages)
        _report("msgspec's strict decode (resources.fast_records.fast_page)", timed(passes, decode), count)
        for threads in (1, 2):
            con = duckdb.connect(config={"threads": threads})
            for name, run in (("typed", typed), ("checked", checked)):
                staged = functools.partial(_records_then, pages, records, run, con, outputs[name])
                _report(f"DuckDB {name}, {threads} thread(s)", timed(passes, staged), count)
            con.close()
        for name in ("typed", "checked"):
            found = differences(outputs["python"], outputs[name])
            print(f"cells differing from today's, DuckDB {name}: {found}")


def _each(read: Callable[[int, bytes], object], pages: list[bytes]) -> None:
    """``read`` each page (numbered from 1), keeping nothing."""
    for number, body in enumerate(pages, start=1):
        read(number, body)


def _records_then(
    pages: list[bytes],
    records: Path,
    run: Callable[[duckdb.DuckDBPyConnection, Path, Path], None],
    con: duckdb.DuckDBPyConnection,
    out: Path,
) -> None:
    """Write the records file, then run a DuckDB variant over it (both timed)."""
    records_file(pages, records)
    run(con, records, out)


if __name__ == "__main__":
    main()
