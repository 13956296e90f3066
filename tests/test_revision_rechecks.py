"""Revision lists are asked for only where they can have changed, and verified again on a rolling window
(issue 20): a revision the service adds to a delegation or a document without touching any record is found
within ``ADM_REVISION_RECHECK_DAYS`` runs, nightly or full, whichever runs come, and each of those runs
asks for no more than its share of the lists.

The end-to-end test generates a tenant from the spec's tables (tests/spec_generators.py), served by the
independent stand-in (tests/standin.py) over loopback HTTP, into a real DuckDB file: one example a run, since
a sync costs about a second. The schedule itself (`warehouse.reads.revision_plans`, read by `run_start`) is
checked on more cases against a real DuckDB file whose runs are written by hand: a plan costs milliseconds.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import example_warehouse
from tests.spec_generators import record
from tests.standin import SPEC, StandIn, Tenant
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN, sync_standin
from warehouse.reads import read_only, run_start

NEW_REVISION = "added-without-touching-its-owner"


def _root(draw: st.DrawFn, name: str, **fields: Any) -> dict[str, Any]:
    """A conforming record of list ``name`` with a fresh id, the stand-in's tenant and ``fields``."""
    item = draw(record(SPEC["lists"][name]["record"], clean=True)).record
    return {**item, "id": str(draw(st.uuids())), "tenantId": STANDIN_TENANT_ID, **fields}


@st.composite
def tenants(draw: st.DrawFn) -> Tenant:
    """Delegations, and decisions citing documents of a small pool, each list with its revision ids."""
    tenant = Tenant(STANDIN_TENANT_ID, STANDIN_TOKEN)
    pool = [str(draw(st.uuids())) for _ in range(draw(st.integers(1, 5)))]
    tenant.lists["delegations"] = [_root(draw, "delegations") for _ in range(draw(st.integers(1, 7)))]
    citations = st.lists(st.sampled_from(pool), min_size=1, max_size=3)
    tenant.lists["decisions"] = [
        _root(
            draw,
            "decisions",
            decisionDocuments=[{"id": f"a{n}", "documentId": d} for n, d in enumerate(cited)],
        )
        for cited in draw(st.lists(citations, min_size=1, max_size=5))
    ]
    revision_ids = st.lists(st.sampled_from(["1", "2", "3"]), max_size=3)
    for delegation in tenant.lists["delegations"]:
        tenant.revisions["delegations"][delegation["id"]] = draw(revision_ids)
    for document in {
        d["documentId"] for item in tenant.lists["decisions"] for d in item["decisionDocuments"]
    }:
        tenant.revisions["documents"][document] = draw(revision_ids)
    return tenant


@pytest.mark.timeout(120)
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(
    tenant=tenants(),
    days=st.integers(1, 2),
    target=st.sampled_from(["delegations", "documents"]),
    pick=st.integers(0, 10),
    modes=st.lists(st.booleans(), min_size=2, max_size=2),
)
def test_a_revision_added_to_an_unchanged_record_is_found_within_the_window(
    tenant: Tenant, days: int, target: str, pick: int, modes: list[bool], template: Path, folder: Path
) -> None:
    warehouse = example_warehouse(template, folder)
    lists = {kind: len(revisions) for kind, revisions in tenant.revisions.items()}
    parents = sorted(_live(tenant)[target])
    assume(parents)
    parent = parents[pick % len(parents)]
    with StandIn(tenant) as standin:
        sync_standin(standin, warehouse, revision_recheck_days=days)
        tenant.revisions[target][parent] = [*(tenant.revisions[target][parent] or []), NEW_REVISION]
        asked = []
        for full_refresh in modes[:days]:
            before = _revision_calls(standin)
            outcome = sync_standin(standin, warehouse, full_refresh=full_refresh, revision_recheck_days=days)
            asked.append(_revision_calls(standin) - before)
            assert outcome.record.status == "succeeded", outcome.record.error

    # Nothing changed but the one list: each run asked for its share of the lists and no more.
    assert all(calls <= sum(math.ceil(count / days) for count in lists.values()) for calls in asked)
    column = "delegation_id" if target == "delegations" else "document_id"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        held = con.execute(
            f"SELECT revision_id FROM {target[:-1]}_revisions WHERE {column} = ?",  # noqa: S608 - test names
            [parent],
        ).fetchall()
        found = con.execute(
            "SELECT parent_id, new_revisions FROM revision_rechecks WHERE new_revisions > 0"
        ).fetchall()
        counted = con.execute("SELECT sum(rechecks_found_new) FROM sync_runs").fetchone()
    assert (NEW_REVISION,) in held
    assert found == [(parent, 1)]
    assert counted == (1,)


def _live(tenant: Tenant) -> dict[str, set[str]]:
    """The revision lists worth verifying again: of delegations, and of documents that decisions cite, that
    the service does not say are deleted (spec: status DELETED)."""
    live = {kind: [r for r in tenant.lists[kind] if r.get("status") != "DELETED"] for kind in SPEC["lists"]}
    cited = {d["documentId"] for decision in live["decisions"] for d in decision["decisionDocuments"]}
    return {"delegations": {d["id"] for d in live["delegations"]}, "documents": cited}


def _revision_calls(standin: StandIn) -> int:
    return sum(standin.requests[f"revisions of {kind}"] for kind in SPEC["revisions"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lists=st.sets(st.uuids().map(str), min_size=1, max_size=40),
    days=st.integers(1, 5),
    runs_before=st.integers(0, 12),
    changed=st.lists(st.sets(st.integers(0, 39)), min_size=5, max_size=5),
)
def test_every_list_is_re_verified_within_n_runs(
    lists: set[str], days: int, runs_before: int, changed: list[set[int]], template: Path, folder: Path
) -> None:
    """Whatever the number of lists, N, the runs before, and the lists checked in between because their
    owner changed: N runs in a row (an hour apart: no list is overdue) re-verify every list, each run no
    more than its share."""
    warehouse = example_warehouse(template, folder)
    ordered, now = sorted(lists), datetime(2026, 1, 1, tzinfo=UTC)
    with duckdb.connect(str(warehouse)) as con:
        con.executemany(
            "INSERT INTO delegations (tenant_id, id, content_hash, raw) VALUES (?, ?, 'h', '{}')",
            [[STANDIN_TENANT_ID, parent] for parent in ordered],
        )
        con.executemany(
            "INSERT INTO revision_checks (tenant_id, parent_kind, parent_id, outcome, revisions, synced_at) "
            "VALUES (?, 'delegation', ?, 'empty', 0, ?)",
            [[STANDIN_TENANT_ID, parent, now] for parent in ordered],
        )
        for _ in range(runs_before):
            _succeeded_run(con)
    verified: set[str] = set()
    for run in range(days):
        now += timedelta(hours=1)
        with read_only(warehouse) as con:
            assert con is not None
            recheck = run_start(con, STANDIN_TENANT_ID, days, now).revision_plans["delegation"].recheck
        assert len(recheck) <= math.ceil(len(ordered) / days)
        owner_changed = {ordered[index] for index in changed[run] if index < len(ordered)}
        verified |= recheck | owner_changed
        with duckdb.connect(str(warehouse)) as con:
            con.execute(
                "UPDATE revision_checks SET synced_at = ? WHERE list_contains(?, parent_id)",
                [now, sorted(recheck | owner_changed)],
            )
            _succeeded_run(con)
    assert verified == lists


def _succeeded_run(con: duckdb.DuckDBPyConnection) -> None:
    """A committed run's row, as `revision_plans` counts them to turn the re-verification."""
    con.execute(
        "INSERT INTO sync_runs (run_id, tenant_id, mode, status, started_at, api_calls_total, api_calls, "
        "rate_limited_429, retries, row_counts, warnings) "
        "VALUES (?, ?, 'incremental', 'succeeded', now(), 0, '{}', 0, 0, '{}', '[]')",
        [str(uuid.uuid4()), STANDIN_TENANT_ID],
    )
