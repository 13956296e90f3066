"""The nightly sync against services drawn from what the protocol allows (tests/fuzz_service.py), serving
tenants generated from the spec's tables (tests/spec_generators.py) through an independent stand-in
(tests/standin.py), over a sequence of runs: full, incremental, full (so the cursors are used).

Property, after every run: either the run committed, and the warehouse holds every record the service
holds at the run's consistent point, each under its id, each stored value exactly as the service sent it
(``raw`` compared field by field, numbers by their JSON text), every nested item as a row of its parent,
every revision list as served; or the run failed loudly naming the list it could not prove (one whose
order changed between requests, that changed while it was read, or whose total says more records than it
serves) and left the warehouse as it was.
A record changed while its list was read may be stored as any copy it had during the read; the next
(incremental) run must then store its latest; a record removed while paged may still be live, and one
inserted while another list of its endpoint was read may be missing, until the next run (`_touched_late`).
A run holds the records the service removed marked deleted once it read their list whole. Each run
commits as a small commit does (staging copied, one thread) or as a larger one (read in place), drawn.

CI runs ``ADM_GENERATIVE_EXAMPLES`` examples (default 4, three runs each); `make generative` runs 300.
``ADM_GENERATIVE_DUMP=<file>`` writes each example as JSON (the last one is the failing one).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from models.base import canonical_id
from pipelines.sync import SyncOutcome
from resources.catalog import CALLER_POSITIONS, PAGED_LISTS
from resources.contract import Source
from resources.endpoints import ENDPOINTS
from tests.conftest import example_warehouse
from tests.fuzz_service import Service, apply, services
from tests.spec_generators import Drawn, embedded, record
from tests.standin import SPEC, JsonText, StandIn, Tenant, encode
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN, stale_digests, sync_standin
from tests.test_merge import committed_in_place
from warehouse.reads import read_only

TENANT_ID, TOKEN = STANDIN_TENANT_ID, STANDIN_TOKEN
FOREIGN_TENANT_ID = "f0f0f0f0-0000-4000-8000-0000000f0e19"
EXAMPLES = int(os.environ.get("ADM_GENERATIVE_EXAMPLES", "4"))
DEADLINE_S = 1.0
"""The client's deadline per request in these runs: a stalled answer costs this, not the 120 s default."""

CHILDREN = {
    "decisions": {
        "decisionGroups": "decision_groups",
        "decisionAuthorities": "decision_authorities",
        "decisionDocuments": "decision_documents",
    },
    "users": {"userRoles": "user_roles", "userPositions": "user_positions", "userGroups": "user_groups"},
    "groups": {"parentGroups": "group_parents"},
}
"""List -> its records' nested lists -> the table holding one row per item (the spec's embedded records)."""
PARENT_COLUMN = {"decisions": "decision_id", "users": "user_id", "groups": "group_id"}
CHILD_VALUES = {
    "decision_groups": {
        "group_id": "groupId",
        "tenant_group_type_id": "tenantGroupTypeId",
        "group_name": "groupName",
        "display_name": "displayName",
    },
    "decision_authorities": {
        "authority_type_id": "authorityTypeId",
        "authority_type": "authorityType",
        "authority_limit": "authorityLimit",
        "value_type": "authorityLimitValueType",
        "operator": "authorityLimitOperator",
        "limit_value": "authorityLimitValue",
        "limit_unit": "authorityLimitValueUnit",
    },
    "decision_documents": {
        "document_id": "documentId",
        "document_display_id": "documentDisplayId",
        "document_name": "documentName",
        "document_type_name": "documentTypeName",
        "document_status": "documentStatus",
        "document_file_type": "documentFileType",
        "document_url": "documentUrl",
        "is_pinned": "isPinned",
    },
    "user_roles": {"tenant_role_id": "tenantRoleId", "role_name": "roleName"},
    "user_positions": {"position_id": "positionsId", "position_name": "positionName"},
    "user_groups": {
        "group_id": "groupId",
        "group_name": "groupName",
        "group_type_name": "groupTypeName",
        "display_name": "displayName",
    },
    "group_parents": {"parent_id": "parentId"},
}
"""Child table -> its columns holding a text or boolean field of the item as sent -> that field."""
CHILD_RAW = {"decision_groups", "decision_authorities", "decision_documents"}
"""Child tables keeping each item's JSON (``raw``)."""
NULL_WHEN_EMPTY = {"limit_unit"}
ENDPOINT_NAMES = {"decisions": ("E8", "decisions"), "delegations": ("delegations",), "users": ("users",)}
ENDPOINT_NAMES |= {"groups": ("groups",), "positions": ("positions",)}
"""How a failure names each list: its endpoint's name or the list's."""
READ_WHOLE_NIGHTLY = {"users", "groups", "positions"}
"""Lists an incremental run reads whole all the same (positions have no cursor; users and groups change
unseen by theirs): they show removals at every run."""


@dataclass
class Served:
    """A generated tenant, the service drawn to serve it, and what the sync must make of it."""

    service: Service
    rejected: int = 0
    """Records served without a usable id, or naming another tenant."""
    deviations: int = 0

    @property
    def tenant(self) -> Tenant:
        """The tenant as the service holds it now."""
        return self.service.tenant

    def __repr__(self) -> str:
        return f"Served({self.service!r}, rejected={self.rejected})"


@st.composite
def root_id(draw: st.DrawFn) -> Any:
    """A root record's id: a fresh uuid in either case, now and then one that is not usable."""
    kind = draw(st.sampled_from(["uuid"] * 30 + ["other"] * 3 + ["missing", "empty", "number", "null"]))
    fresh = str(draw(st.uuids()))
    return {
        "uuid": fresh.upper() if draw(st.booleans()) else fresh,
        "other": f"rec-{fresh[:8]}",
        "missing": None,
        "empty": "",
        "number": draw(st.integers(1, 10**6)),
        "null": None,
    }[kind], kind


@st.composite
def tenants(draw: st.DrawFn) -> Served:
    """A tenant of every list, generated from the spec, and the service serving it."""
    tenant = Tenant(TENANT_ID, TOKEN)
    served = Served(draw(services(tenant)))
    for name, spec in SPEC["lists"].items():
        for _ in range(draw(st.integers(0, 9))):
            tenant.lists[name].append(_root(draw, served, spec["record"]))
    tenant.current_user_positions = [
        {**link, "tenantId": TENANT_ID} if isinstance(link.get("tenantId"), str) else link
        for link in draw(st.lists(embedded("UserPosition", 0), max_size=3))
    ]
    _revisions(draw, served)
    return served


def _root(draw: st.DrawFn, served: Served, record_name: str) -> dict[str, Any]:
    drawn: Drawn = draw(record(record_name))
    value, kind = draw(root_id())
    item = drawn.record
    if kind != "missing":
        item["id"] = value
    if isinstance(item.get("tenantId"), str):
        item["tenantId"] = TENANT_ID
    foreign = draw(st.integers(0, 30)) == 0
    if foreign:
        item["tenantId"] = FOREIGN_TENANT_ID
    if kind in {"missing", "empty", "null"} or foreign:
        served.rejected += 1
    elif SPEC[record_name].get("specified", True):
        served.deviations += len([d for d in drawn.deviations if d.kind == "other_type"])
    return item


def _revision_parents(tenant: Tenant) -> dict[str, set[str]]:
    """The delegations and the documents of decisions the tenant lists (ids in lower case)."""
    return {
        "delegations": {_key(d).lower() for d in tenant.lists["delegations"] if _usable(d)},
        "documents": {
            document["documentId"].lower()
            for decision in tenant.lists["decisions"]
            if _usable(decision) and isinstance(decision.get("decisionDocuments"), list)
            for document in decision["decisionDocuments"]
            if isinstance(document, dict) and isinstance(document.get("documentId"), str)
        },
    }


def _revisions(draw: st.DrawFn, served: Served) -> None:
    """Each delegation's and each cited document's revision list: ids (maybe repeated), empty, or 404."""
    tenant = served.tenant
    for kind, parents in _revision_parents(tenant).items():
        for parent in sorted(parents):
            answer = draw(st.sampled_from(["listed"] * 4 + ["empty", "gone"]))
            revisions = draw(st.lists(st.sampled_from(["1", "2", "3", "10"]), min_size=1, max_size=4))
            tenant.revisions[kind][parent] = {"listed": revisions, "empty": [], "gone": None}[answer]


def _usable(item: dict[str, Any]) -> bool:
    """Whether the record has an id (a non-empty string, or a number: an id sent as a number is an id) and
    names no other tenant."""
    value = item.get("id")
    usable = (isinstance(value, str) and bool(value.strip())) or (type(value) is int)
    return usable and item.get("tenantId") != FOREIGN_TENANT_ID


def _key(item: dict[str, Any]) -> str:
    """The id the warehouse keys a usable record by."""
    return canonical_id(str(item["id"]))


# A failing example's generated tenant is large; its summary (Served.__repr__) is what the report shows.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@pytest.mark.timeout(max(600, 10 * EXAMPLES))  # a few seconds an example, far more on a busy machine
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate]
)
@given(served=tenants(), in_place=st.tuples(st.booleans(), st.booleans(), st.booleans()), reuse=st.booleans())
def test_any_service_the_protocol_allows_leaves_every_value_exact_or_fails_naming_the_list(
    served: Served, in_place: tuple[bool, bool, bool], reuse: bool, template: Path, folder: Path
) -> None:
    warehouse = example_warehouse(template, folder)
    removed: set[tuple[str, str]] = set()
    first, second, third = in_place
    # Reusing, the runs after the first stage the stored rows of the records read unchanged in lists read
    # whole (warehouse/unchanged.py) instead of deriving them: the property is the same.
    run = partial(_run, reuse_min_records=0 if reuse else 10**9)
    with StandIn(served.tenant, served.service.quirks) as standin:
        # Run 1, full, while the service changes lists as they are read.
        full = partial(run, served, standin, warehouse, "full", full_refresh=True, in_place=first)
        removed |= _removed_by(served, full)
        served.service.while_paged = []
        for change in served.service.between:
            removed |= _removed_by(served, partial(apply, change, served.tenant))
        run(served, standin, warehouse, "incremental", full_refresh=False, removed=removed, in_place=second)
        run(served, standin, warehouse, "full again", full_refresh=True, removed=removed, in_place=third)
    # RFC 6265 lets any answer set a cookie; the client sends only the credentials it was configured with.
    assert standin.requests["with a cookie"] == 0, "a request sent back a cookie the service set"


def _removed_by(served: Served, action: Callable[[], object]) -> set[tuple[str, str]]:
    """The (list, id) of the usable records ``action`` removed from the service."""
    before = _usable_ids(served.tenant)
    action()
    return before - _usable_ids(served.tenant)


def _usable_ids(tenant: Tenant) -> set[tuple[str, str]]:
    return {(name, _key(item)) for name, item in _records(tenant) if _usable(item)}


def _records(tenant: Tenant) -> list[tuple[str, dict[str, Any]]]:
    return [(name, item) for name, records in tenant.lists.items() for item in records]


def _run(
    served: Served,
    standin: StandIn,
    warehouse: Path,
    label: str,
    *,
    full_refresh: bool,
    removed: set[tuple[str, str]] | None = None,
    in_place: bool = False,
    reuse_min_records: int,
) -> None:
    """One run of the sequence and the property after it; ``in_place``: committed as a larger commit is
    (`tests.test_merge.as_larger_commit`); ``reuse_min_records``: ``ADM_REUSE_MIN_RECORDS``."""
    before = _stored(warehouse)
    try:
        with committed_in_place(in_place):
            outcome = sync_standin(
                standin,
                warehouse,
                full_refresh=full_refresh,
                reject_max_count=1_000,
                reject_max_share=1.0,
                request_deadline_s=DEADLINE_S,
                reuse_min_records=reuse_min_records,
            )
    except Exception as error:  # the run failed: it must say which list, and leave the warehouse as it was
        _dump(served, label, [str(error)])
        named = [name for name, names in ENDPOINT_NAMES.items() if any(n in str(error) for n in names)]
        unprovable = [name for name in named if _unprovable(served, name, str(error))]
        assert unprovable, f"{label}: the run failed naming no list it could not prove: {error}"
        assert _stored(warehouse) == before, f"{label}: a failed run changed the warehouse"
        event(f"a run failed naming {unprovable[0]} (order {served.service.orders[unprovable[0]]})")
        return
    _dump(served, label, outcome.record.warnings)
    assert outcome.record.status == "succeeded", outcome.record.error
    if outcome.record.records_reused:
        event(f"{label}: records read unchanged staged from the warehouse")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        earlier = served.service.earlier if served.service.while_paged else {}
        late = _touched_late(served.service, earlier)
        _every_record_as_served(con, served, label, full_refresh, removed or set(), earlier, late)
        _every_item_a_row_of_its_parent(con, served, label, earlier, late)
        _every_revision_list_as_served(con, served)
        if full_refresh:
            _every_unusable_record_rejected(con, served, outcome, earlier)
        # What the next run takes as unchanged rests on these: each must be its row's.
        assert stale_digests(con) == {}, f"{label}: a stored row_digest is not its row's"


SHARED_ENDPOINT = frozenset(
    name
    for name, paged in PAGED_LISTS.items()
    if sum(other.endpoint == paged.endpoint for other in PAGED_LISTS.values()) > 1
)
"""The lists whose endpoint another list of the catalog reads too (``groups`` and ``group_directory``)."""


def _touched_late(service: Service, earlier: dict[tuple[str, str], Any]) -> set[tuple[str, str]]:
    """(list, id) of the records a change while paged touched after the run's consistent point may have
    passed; the run may have them as they were before the change, and the next run must have them right:

    - a record removed: the pass the run accepted may have read the removed record's page before the
      removal and the later pages (which the removal leaves as they were) after it; nothing served tells
      the two apart, so the record may still be live;
    - a record inserted into a list of `SHARED_ENDPOINT`: the stand-in counts a path's requests, not a
      list's, so a change due at the path's n-th request may come after this list's read ended (in the
      other list's): the record may be missing.
    """
    inserted = {
        (change.list_name, _key(change.new))
        for change in service.while_paged
        if change.done and change.kind == "insert" and change.new is not None
    }
    held = _usable_ids(service.tenant)
    removed = {(name, canonical_id(record_id)) for name, record_id in earlier} - held
    return removed | {(name, record_id) for name, record_id in inserted if name in SHARED_ENDPOINT}


def _unprovable(served: Served, name: str, error: str) -> bool:
    """Whether a run may fail naming list ``name``: its order changed between requests, it changed while
    it was read, its total says more records than it serves (a list known to be short), or it holds two
    unusable records alike to the byte (with no id, one served on two pages is a move or a repeat, and
    nothing tells which)."""
    quirks, service = served.service.quirks, served.service
    overcounted = quirks.total_skew.get(name, 0) > 0 and name not in quirks.no_total
    unusable = [encode(item) for item in served.tenant.lists[name] if not _usable(item)]
    return (
        service.orders[name] == "shuffled"
        or service.changed_while_paged(name)
        or (overcounted and "its total says" in error)
        or len(set(unusable)) < len(unusable)
    )


def _stored(warehouse: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every root table's rows (id, deleted, raw), to see that a failed run changed nothing."""
    with read_only(warehouse) as con:
        assert con is not None
        return {
            name: con.execute(f"SELECT id, is_deleted, raw FROM {name} ORDER BY id").fetchall()  # noqa: S608
            for name in SPEC["lists"]
        }


def _every_record_as_served(
    con: duckdb.DuckDBPyConnection,
    served: Served,
    label: str,
    full_refresh: bool,
    removed: set[tuple[str, str]],
    earlier: dict[tuple[str, str], list[dict[str, Any]]],
    late: set[tuple[str, str]],
) -> None:
    """Every usable record the service holds is stored live under its id, every field of ``raw`` as the
    service wrote it (a record changed while paged: as one of its copies); no other record is live, but
    for those removed from a list the run did not read whole. A record touched late (`_touched_late`)
    may be missing (inserted) or still live (removed)."""
    for name in SPEC["lists"]:
        held = {_key(item): item for item in served.tenant.lists[name] if _usable(item)}
        rows = con.execute(f"SELECT id, is_deleted, raw FROM {name}").fetchall()  # noqa: S608
        ids_ = [row[0] for row in rows]
        assert len(ids_) == len(set(ids_)), (label, name, "an id twice")
        stored = {row[0]: row[2] for row in rows}
        live = {row[0] for row in rows if not row[1]}  # a record the service says is deleted is stored so
        read_whole = full_refresh or name in READ_WHOLE_NIGHTLY
        stale = (
            set() if read_whole else {record_id for (list_name, record_id) in removed if list_name == name}
        )
        stale |= {record_id for (list_name, record_id) in late if list_name == name}
        missing = set(held) - set(stored) - stale
        assert not missing, (label, name, "missing", sorted(missing))
        assert live - set(held) <= stale, (label, name, "not removed", sorted(live - set(held) - stale))
        for record_id, item in held.items():
            if record_id not in stored:  # inserted late (asserted above)
                continue
            copies = [item, *earlier.get((name, str(item["id"])), [])]
            _one_of(
                json_fields(stored[record_id]),
                [json_fields(encode(copy).decode()) for copy in copies],
                (label, name, record_id),
            )


def json_fields(text: str) -> Any:
    """A JSON text parsed with every number kept as its own text: two values compare as the texts do."""
    return json.loads(text, parse_float=lambda n: ("number", n), parse_int=lambda n: ("number", n))


def _one_of(stored: Any, copies: list[Any], where: tuple[str, ...]) -> None:
    """``stored`` is one of ``copies``; else the first field by which it differs from the latest."""
    if stored in copies:
        return
    latest = copies[0]
    differs = sorted(key for key in set(stored) | set(latest) if stored.get(key) != latest.get(key))
    if not differs:
        raise AssertionError(f"{where}: stored {stored!r}, the service holds {copies!r}")
    field_name = differs[0]
    raise AssertionError(
        f"{where}: field {field_name} stored {stored.get(field_name)!r}, the service holds "
        f"{latest.get(field_name)!r}"
    )


def _every_item_a_row_of_its_parent(
    con: duckdb.DuckDBPyConnection,
    served: Served,
    label: str,
    earlier: dict[tuple[str, str], Any],
    late: set[tuple[str, str]],
) -> None:
    """Every object of a record's nested list is a row of its parent, in order, each column holding the
    text or boolean the service sent for it and ``raw`` the item's JSON as sent (numbers by their text)."""
    for name, nested in CHILDREN.items():
        for item in served.tenant.lists[name]:
            if not _usable(item) or (name, str(item["id"])) in earlier or (name, _key(item)) in late:
                continue
            parent = _key(item)
            for field_name, table in nested.items():
                value = item.get(field_name)
                items = (
                    [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []
                )
                columns = ["id", *CHILD_VALUES[table], *(["raw"] if table in CHILD_RAW else [])]
                found = con.execute(
                    f"SELECT {', '.join(columns)} FROM {table} WHERE {PARENT_COLUMN[name]} = ? "  # noqa: S608
                    f"ORDER BY {'group_order' if table == 'user_groups' else 'item_order'}",
                    [parent],
                ).fetchall()
                where = (label, name, parent, field_name)
                assert len(found) == len(items), (*where, "rows", len(found), "items sent", len(items))
                for order, (row, entry) in enumerate(zip(found, items, strict=True), start=1):
                    stored = dict(zip(columns, row, strict=True))
                    for column, wire in {"id": "id", **CHILD_VALUES[table]}.items():
                        sent = _sent_value(column, entry.get(wire))
                        if sent is not _NOT_COMPARED:
                            assert stored[column] == sent, (*where, order, column, stored[column], sent)
                    if table in CHILD_RAW:
                        _one_of(json_fields(stored["raw"]), [json_fields(encode(entry).decode())], where)


_NOT_COMPARED = object()
"""A sent value the property does not compare with a column: a number or an instant (their columns
convert them; ``raw`` is compared for them)."""


def _sent_value(column: str, value: Any) -> Any:
    """What a child column must hold for the value the service sent: a text as sent (an id as the
    warehouse keys it, an empty unit as NULL: the dictionary's "NULL when the service sends none"), a
    boolean as sent, NULL for null or a missing field."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and not isinstance(value, JsonText):
        if column == "id" or column.endswith("_id"):
            return canonical_id(value)
        return None if column in NULL_WHEN_EMPTY and not value else value
    return _NOT_COMPARED


def _every_revision_list_as_served(con: duckdb.DuckDBPyConnection, served: Served) -> None:
    listed = _revision_parents(served.tenant)
    for kind, table, column in (
        ("delegations", "delegation_revisions", "delegation_id"),
        ("documents", "document_revisions", "document_id"),
    ):
        for parent, revisions in served.tenant.revisions[kind].items():
            if parent not in listed[kind]:
                continue  # its owner was removed: whether it was read first is the race's
            found = con.execute(
                f"SELECT revision_id FROM {table} WHERE {column} = ? ORDER BY revision_order",  # noqa: S608
                [parent],
            ).fetchall()
            assert [row[0] for row in found] == (revisions or []), (kind, parent)
            (outcome,) = con.execute(
                "SELECT outcome FROM revision_checks WHERE parent_id = ?", [parent]
            ).fetchone() or (None,)
            assert outcome == ("not_found" if revisions is None else "listed" if revisions else "empty")


def _every_unusable_record_rejected(
    con: duckdb.DuckDBPyConnection,
    served: Served,
    outcome: SyncOutcome,
    earlier: dict[tuple[str, str], list[dict[str, Any]]],
) -> None:
    """Each list of the catalog (and E9's read) rejects exactly the unusable records its endpoint serves,
    each once (two records alike to the byte are one), and the run recorded exactly those: two lists of
    one endpoint each reject its records, and neither counts the other's. An unusable record changed while
    its list was read may have been served as two different records: the run rejects one or both."""
    recorded = dict(
        con.execute(
            "SELECT list_name, count(*) FROM rejected_records WHERE run_id = ? GROUP BY ALL",
            [outcome.record.run_id],
        ).fetchall()
    )
    list_at = {spec["path"]: name for name, spec in SPEC["lists"].items()}
    reads: list[Source] = [*PAGED_LISTS.values(), CALLER_POSITIONS]
    assert set(recorded) <= {read.name for read in reads}, recorded
    for read in reads:
        path = ENDPOINTS[read.endpoint].path
        list_name = list_at.get(path)
        now = served.tenant.lists[list_name] if list_name else served.tenant.current_user_positions
        copies = [copy for (name, _), found in earlier.items() if name == list_name for copy in found]
        held = {encode(item) for item in now if not _usable(item)}
        ever = held | {encode(copy) for copy in copies if not _usable(copy)}
        count = recorded.get(read.name, 0)
        assert len(held) <= count <= len(ever), (read.name, count, len(held), len(ever), served.rejected)
    counted = sum(row["records"] for row in outcome.record.deviations)
    assert counted >= served.deviations


def _dump(served: Served, label: str, warnings: list[str]) -> None:
    """With ``ADM_GENERATIVE_DUMP=<file>``, write the example as the service holds it after the run, and
    the run's warnings, to see a failing example whole."""
    target = os.environ.get("ADM_GENERATIVE_DUMP")
    if target:
        example: dict[str, Any] = {"run": label, "service": repr(served.service), "warnings": warnings}
        example |= {"lists": served.tenant.lists, "revisions": served.tenant.revisions}
        Path(target).write_text(json.dumps(example, default=str, indent=1), encoding="utf-8")


def test_the_generators_draw_from_the_spec_not_from_the_product() -> None:
    # The generators, the drawn service and the stand-in import nothing of the product (only the test
    # itself uses it): both sides of the property never share a mistake.
    product = {"models", "resources", "emulator", "pipelines", "warehouse"}
    for module in ("spec_generators.py", "standin.py", "fuzz_service.py"):
        tree = ast.parse(Path(__file__).with_name(module).read_text(encoding="utf-8"))
        imported = {name.split(".")[0] for node in ast.walk(tree) for name in _imports(node)}
        assert not imported & product, (module, imported & product)


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []
