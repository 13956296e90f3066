"""Each quirk of a real service that used to stop a tenant, served by the independent stand-in
(tests/standin.py) over real HTTP, and what the nightly sync now makes of it (issue 16).

The records are written here by hand in the spec's shape (section 2), minimal: what a field the spec
promises but a record leaves out does is the contract's business, counted as a deviation.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.sync import SyncOutcome
from resources.catalog import PAGED_LISTS
from resources.settings import RatePlan
from tests.conftest import copy_of
from tests.standin import JsonText, Quirks, StandIn, Tenant
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN, sync_standin
from tests.sync_support import query as rows

T = STANDIN_TENANT_ID
START = datetime(2024, 1, 1, tzinfo=UTC)


def uid(kind: str, n: int) -> str:
    """A stable uuid per kind and number."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{n}"))


def ts(n: int) -> str:
    return (START + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")


def decision(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": uid("decision", n),
        "tenantId": T,
        "name": f"Decision {n}",
        "status": "PUBLISHED",
        "decisionDisplayId": str(1000 + n),
        "createdAt": ts(n),
        "updatedAt": ts(n),
        "decisionGroups": [],
        "decisionAuthorities": [],
        "decisionDocuments": [],
        **fields,
    }


def user(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": uid("user", n),
        "userId": str(n),
        "status": "ACTIVE",
        "createdOn": ts(n),
        "updatedOn": ts(n),
        "manager": {"id": uid("user", 1)},
        "userRoles": [],
        "userPositions": [],
        "userGroups": [],
        **fields,
    }


def group(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": uid("group", n),
        "tenantId": T,
        "groupName": f"G{n}",
        "createdOn": ts(n),
        "updatedOn": ts(n),
        **fields,
    }


def delegation(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": uid("delegation", n),
        "tenantId": T,
        "status": "ISSUED",
        "decisionId": uid("decision", 1),
        "createdAt": ts(n),
        "updatedAt": ts(n),
        **fields,
    }


def position(n: int) -> dict[str, Any]:
    return {"id": uid("position", n), "tenantId": T, "positionName": f"Position {n}"}


def tenant(**lists: list[dict[str, Any]]) -> Tenant:
    served = Tenant(T, STANDIN_TOKEN)
    for name, records in lists.items():
        served.lists[name] = records
    for item in served.lists["delegations"]:
        served.revisions["delegations"].setdefault(item["id"].lower(), ["1"])
    return served


def run(
    served: Tenant, warehouse: Path, quirks: Quirks | None = None, **settings: Any
) -> tuple[SyncOutcome, StandIn]:
    with StandIn(served, quirks) as standin:
        outcome = sync_standin(standin, warehouse, **settings)
    return outcome, standin


def check(outcome: SyncOutcome, table: str, name: str) -> dict[str, Any]:
    (found,) = [c for c in outcome.record.checks if (c["table"], c["check"]) == (table, name)]
    return found


@pytest.fixture
def warehouse(migrated: Path) -> Path:
    """A new warehouse: a copy of the migrated template (these tests are about the sync, not migrating)."""
    return migrated


def test_delegations_without_the_fields_the_spec_never_promised_load(warehouse: Path) -> None:
    # Before: every delegation rejected (createdAt was strict), the threshold blocked the whole tenant.
    bare = [{"id": uid("delegation", n), "status": "ISSUED"} for n in range(1, 6)]

    outcome, _ = run(tenant(delegations=bare), warehouse)

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM delegations") == [(5,)]
    assert rows(warehouse, "SELECT count(*) FROM rejected_records") == [(0,)]
    assert any("lack the updated-at field" in warning for warning in outcome.record.warnings)


def test_an_embedded_id_shared_by_two_parents_or_repeated_in_one_loads(warehouse: Path) -> None:
    # Before: "PRIMARY KEY or UNIQUE constraint violation", naming neither table nor record, every night.
    shared = uid("position", 7)
    link = {"id": shared, "positionsId": shared, "positionName": "Buyer"}  # the position's own id
    limit = {"id": "limit-1", "authorityLimitValue": "100"}
    parent = {"id": "link-1", "parentId": uid("group", 1)}
    served = tenant(
        users=[user(1, userPositions=[link]), user(2, userPositions=[link, link])],
        decisions=[decision(1, decisionAuthorities=[limit]), decision(2, decisionAuthorities=[limit])],
        groups=[group(1), group(2, parentGroups=[parent]), group(3, parentGroups=[parent])],
    )

    outcome, _ = run(served, warehouse)

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT id, count(*) FROM user_positions GROUP BY id") == [(shared, 3)]
    assert rows(warehouse, "SELECT count(*) FROM decision_authorities WHERE id = 'limit-1'") == [(2,)]
    assert rows(warehouse, "SELECT count(*) FROM group_parents WHERE id = 'link-1'") == [(2,)]


def test_a_page_size_capped_by_the_service_is_followed(warehouse: Path) -> None:
    # Before: "limit 50 when asked for 100", every night.
    outcome, standin = run(
        tenant(decisions=[decision(n) for n in range(120)]), warehouse, Quirks(page_cap=50)
    )

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM decisions") == [(120,)]
    assert standin.requests["decisions"] == 3  # 50 + 50 + a short page of 20 that proves the end


def test_a_list_short_of_its_total_in_two_identical_reads_fails_naming_the_list(warehouse: Path) -> None:
    # Before: positions served 11 twice with total 12 committed the 11 with a warning; a set the service's
    # own count says is short is never committed (the operator's way on: docs/sync.md, "Totals").
    positions = [position(n) for n in range(11)]
    served = tenant(positions=positions, decisions=[decision(1)])

    with pytest.raises(Exception) as failed:
        run(served, warehouse, Quirks(total_skew={"positions": 1}))

    assert "positions: read to its end twice" in str(failed.value)
    assert "(11 ids read) but its total says 12" in str(failed.value)
    assert rows(warehouse, "SELECT count(*) FROM positions UNION ALL SELECT count(*) FROM decisions") == [
        (0,),
        (0,),
    ]


def test_a_list_whose_total_counts_a_record_served_twice_commits_with_a_warning(warehouse: Path) -> None:
    # The service lists one position twice on page 1 and counts it twice: 11 served, 10 ids, total 11.
    # (Listed on two pages, it is not told from a record that moved: see test_sync_evidence.py.)
    positions = [position(n) for n in range(10)]
    served = tenant(positions=[*positions[:4], positions[0], *positions[4:]])

    outcome, _ = run(served, warehouse, Quirks(page_cap=5))

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM positions") == [(10,)]
    found = check(outcome, "positions", "row_count_matches_service_total")
    assert "read to its end twice and listed the same records" in found["description"]


def test_a_document_with_an_empty_revision_list_is_checked_not_missing(warehouse: Path) -> None:
    # Before: documents_have_revisions blocked the tenant forever, naming no document.
    document = uid("document", 1)
    cites = decision(1, decisionDocuments=[{"id": "att-1", "documentId": document}])
    # A later decision moves the cursor an hour on, so the second run's window leaves the first one out.
    served = tenant(decisions=[cites, decision(60)])
    served.revisions["documents"][document] = []

    outcome, standin = run(served, warehouse)
    again, standin_again = run(served, warehouse, full_refresh=False)

    assert outcome.record.status == again.record.status == "succeeded"
    assert check(outcome, "document_revisions", "documents_have_revisions")["passed"]
    assert rows(warehouse, "SELECT parent_id, outcome, revisions FROM revision_checks") == [
        (document, "empty", 0)
    ]
    assert standin.requests["revisions of documents"] == 1
    assert standin_again.requests["revisions of documents"] == 0  # checked once: not asked again every night


def test_a_decision_deleted_while_paged_converges_and_is_marked_deleted(warehouse: Path) -> None:
    # Before: the last page read 20 times (26 requests for a 3-page list), then a blocked count check.
    decisions = [decision(n) for n in range(250)]
    victim = decisions[5]

    def delete_after_page_1(name: str, before: int, served: Tenant) -> None:
        if name == "decisions" and before == 1:
            served.lists["decisions"].remove(victim)

    outcome, standin = run(
        tenant(decisions=decisions), warehouse, Quirks(on_list_request=delete_after_page_1)
    )

    assert outcome.record.status == "succeeded"
    # Pass 1: 3 pages and the last read again (the list shrank); pass 2: 3 pages.
    assert standin.requests["decisions"] == 7
    assert rows(warehouse, "SELECT count(*) FROM decisions WHERE NOT is_deleted") == [(249,)]
    assert rows(warehouse, "SELECT is_deleted FROM decisions WHERE id = ?", [victim["id"]]) == [(True,)]
    assert check(outcome, "decisions", "row_count_matches_service_total")["passed"]


def by_updated(name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A service that orders a list by when its records were updated, whatever sort was asked for."""
    return sorted(records, key=lambda item: (item.get("updatedAt") or "", item["id"]))


def test_a_record_that_moves_while_paged_loses_no_other_and_keeps_its_newest_copy(warehouse: Path) -> None:
    # Before: E8 ordered by updatedAt; decision 5, changed after page 1 was read, moved to page 3: the
    # record that slid onto page 1 was missing (259 of 260) and the old copy of the moved one was kept, a
    # warning the only trace, and the next incremental run was still missing it.
    decisions = [decision(n) for n in range(260)]
    moved = decisions[5]

    def change_after_page_1(name: str, before: int, served: Tenant) -> None:
        if name == "decisions" and before == 1:
            moved.update(name="Decision 5, renamed while paged", updatedAt=ts(500))

    served = tenant(decisions=decisions)
    outcome, standin = run(served, warehouse, Quirks(on_list_request=change_after_page_1, order=by_updated))
    again, _ = run(served, warehouse, Quirks(order=by_updated), full_refresh=False)

    assert outcome.record.status == again.record.status == "succeeded"
    expected = sorted((item["id"], item["name"]) for item in decisions)
    assert rows(warehouse, "SELECT id, name FROM decisions WHERE NOT is_deleted ORDER BY id") == expected
    assert check(outcome, "decisions", "row_count_matches_service_total")["passed"]
    assert standin.requests["decisions"] == 6  # pass 1 listed 259 ids for a total of 260: read again


def test_a_list_that_keeps_changing_under_a_foreign_order_fails_naming_it(warehouse: Path) -> None:
    # Every request moves another record to the end: no two reads agree, so no set is proven whole.
    decisions = [decision(n) for n in range(260)]

    def touch_one(name: str, before: int, served: Tenant) -> None:
        if name == "decisions":
            decisions[before].update(updatedAt=ts(1000 + before))

    with pytest.raises(Exception, match=r"E8: the list changed during each of 3 passes"):
        run(tenant(decisions=decisions), warehouse, Quirks(on_list_request=touch_one, order=by_updated))
    assert rows(warehouse, "SELECT count(*) FROM decisions") == [(0,)]


def test_after_an_hr_apply_the_next_run_reads_users_and_groups_whole_whatever_their_size(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An HR apply writes memberships (E3 REMOVE_ASSOCIATIONS) whose removal moves no member's updatedOn:
    # the refresh after it must read users and groups whole, even when they are too large to every night.
    monkeypatch.setattr("pipelines.extract.WHOLE_READ_MAX_RECORDS", 0)
    served = tenant(users=[user(n) for n in range(1, 4)], groups=[group(1)], decisions=[decision(1)])
    run(served, warehouse)

    def modes() -> dict[str, str]:
        outcome, _ = run(served, warehouse, full_refresh=False)
        assert outcome.extract is not None
        return {name: outcome.extract.reports[name].mode for name in ("users", "groups", "decisions")}

    assert modes() == {"users": "incremental", "groups": "incremental", "decisions": "incremental"}
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            "INSERT INTO hr_plans (plan_id, tenant_id, created_at, source_files, snapshot_run_id, "
            "snapshot_at, status, allowed_kinds, blocked_kinds, counts, apply_started_at) VALUES "
            "('plan-1', ?, now(), '[]', 'run', now(), 'applied', '{}', '[]', '{}', now())",
            [T],
        )
    assert modes() == {"users": "full", "groups": "full", "decisions": "incremental"}
    assert modes() == {"users": "incremental", "groups": "incremental", "decisions": "incremental"}


def test_a_rejected_record_read_twice_hides_no_record(warehouse: Path) -> None:
    # Found by the protocol fuzzer (a list shuffled anew for every request): a record without an id, kept
    # out by the contract, was served on pages 1 and 2 of the first pass and counted twice, so 3 ids and 2
    # rejections matched the total of 5: the pass was accepted, group 4 was missing and group 1, absent
    # from that pass, was marked deleted.
    groups = {n: group(n) for n in range(1, 5)}
    nameless = {key: value for key, value in group(9).items() if key != "id"}
    first_pass = [
        [nameless, groups[4], groups[3], groups[2], groups[1]],
        [groups[3], groups[2], nameless, groups[1], groups[4]],
        [groups[4], groups[2], groups[1], groups[1], groups[3]],
    ]
    requests = iter(first_pass)

    def lying_once(name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if name != "groups":
            return records
        return next(requests, [nameless, groups[4], groups[3], groups[2], groups[1]])

    quirks = Quirks(page_cap=2, order=lying_once)
    served = tenant(groups=list(groups.values()))
    outcome, _ = run(served, warehouse, quirks, concurrency=1, reject_max_share=1.0)

    assert outcome.record.status == "succeeded"
    # Every list of the endpoint (groups, group_directory: the catalog's) holds every group, whichever of
    # them the lying pages reached: their reads interleave, so which list gets which lie varies by run.
    for name in (name for name, paged in PAGED_LISTS.items() if paged.endpoint == "groups"):
        assert rows(warehouse, f"SELECT id FROM {name} WHERE NOT is_deleted ORDER BY id") == sorted(  # noqa: S608
            (item["id"],) for item in groups.values()
        )


def test_a_count_beyond_32_bits_is_an_invalid_value_not_a_stopped_run(warehouse: Path) -> None:
    # Found by the protocol fuzzer: JSON allows any number; a decisionsCount of 10^20 stopped the run with
    # "Python int too large to convert to C long", naming neither the list, the record nor the field.
    huge = group(1, decisionsCount=JsonText("100000000000000000000"), delegationsCount=3)

    outcome, _ = run(tenant(groups=[huge]), warehouse)

    assert outcome.record.status == "succeeded"
    ((count, delegations, raw),) = rows(
        warehouse, "SELECT decisions_count, delegations_count, raw FROM groups"
    )
    assert (count, delegations) == (None, 3)
    assert '"decisionsCount": 100000000000000000000' in raw
    invalid = [d for d in outcome.record.deviations if d["field"] == "decisionsCount"]
    assert invalid and invalid[0]["kind"] == "invalid", outcome.record.deviations


def test_a_position_keeps_in_raw_the_json_the_service_sent(warehouse: Path) -> None:
    # Found by the protocol fuzzer: a position's raw was its validated model written again, so a
    # positionName sent as false was kept as null and a number's text was rewritten.
    odd = {**position(1), "positionName": False, "rank": JsonText("1500.00")}

    outcome, _ = run(tenant(positions=[odd]), warehouse)

    assert outcome.record.status == "succeeded"
    ((raw,),) = rows(warehouse, "SELECT raw FROM positions")
    assert '"positionName": false' in raw and '"rank": 1500.00' in raw


def test_a_delegation_gone_before_its_revisions_are_read_is_noted(warehouse: Path) -> None:
    # Before: NotFoundError 404 failed the whole tenant.
    served = tenant(delegations=[delegation(1), delegation(2)])
    gone = uid("delegation", 2)
    served.revisions["delegations"][gone] = None

    outcome, _ = run(served, warehouse)

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT parent_id, outcome FROM revision_checks ORDER BY outcome") == sorted(
        [(uid("delegation", 1), "listed"), (gone, "not_found")], key=lambda row: row[1]
    )
    assert any(gone in warning and "404" in warning for warning in outcome.record.warnings)


def test_an_error_status_inside_a_200_is_that_status(warehouse: Path) -> None:
    # Before: not retried, and the message hid the service's words behind "data: Input should be an object".
    served = tenant(decisions=[decision(1)])
    outcome, _ = run(served, warehouse, Quirks(envelope_errors=1))
    assert outcome.record.status == "succeeded" and outcome.record.retries == 1

    with pytest.raises(Exception, match="statusCode 500: Internal error") as failed:
        run(served, tmp := warehouse.with_name("failing.duckdb"), Quirks(envelope_errors=1_000))
    assert "Input should be" not in str(failed.value)
    assert rows(tmp, "SELECT status FROM sync_runs") == [("failed",)]


def test_a_display_id_sent_as_a_number_is_kept_as_its_text(warehouse: Path) -> None:
    # Before: stored NULL, although "12345" loses nothing.
    outcome, _ = run(tenant(decisions=[decision(1, decisionDisplayId=12345)]), warehouse)

    assert rows(warehouse, "SELECT decision_display_id FROM decisions") == [("12345",)]
    (counted,) = [d for d in outcome.record.deviations if d["field"] == "decisionDisplayId"]
    assert counted["kind"] == "number_as_text" and counted["records"] == 1


def test_a_document_cited_in_two_cases_is_one_document(warehouse: Path) -> None:
    # Before: fetched twice and stored twice.
    document = uid("document", 9)
    served = tenant(
        decisions=[
            decision(1, decisionDocuments=[{"id": "a", "documentId": document.upper()}]),
            decision(2, decisionDocuments=[{"id": "b", "documentId": document}]),
        ]
    )
    served.revisions["documents"][document] = ["1", "2"]

    _, standin = run(served, warehouse)

    assert standin.requests["revisions of documents"] == 1
    assert rows(warehouse, "SELECT DISTINCT document_id FROM decision_documents") == [(document,)]
    assert rows(warehouse, "SELECT document_id, count(*) FROM document_revisions GROUP BY 1") == [
        (document, 2)
    ]


def in_seconds(seconds: int) -> Callable[[], str]:
    """A Retry-After given as an HTTP date, ``seconds`` from the moment the 429 is sent."""
    return lambda: format_datetime(datetime.now(UTC) + timedelta(seconds=seconds), usegmt=True)


@pytest.mark.parametrize("plan", list(RatePlan))
def test_a_lone_429_costs_about_the_second_it_asks_for_on_every_plan(
    warehouse: Path, template: Path, plan: RatePlan
) -> None:
    # Before: one 429 emptied the bucket and halved the rate: 45 calls on Essential took 65-115 s (7.6 s
    # on Enterprise). Measured against the same run without the 429, so that a busy machine slows both.
    served = tenant(delegations=[delegation(n) for n in range(40)])

    def timed(quirks: Quirks, folder: Path) -> tuple[float, SyncOutcome, StandIn]:
        path = copy_of(template, folder / "warehouse.duckdb")
        started = time.monotonic()
        outcome, standin = run(served, path, quirks, rate_plan=plan, rate_per_minute=None)
        return time.monotonic() - started, outcome, standin

    baseline, _, _ = timed(Quirks(), warehouse.parent / "baseline")
    elapsed, outcome, standin = timed(Quirks(rate_limited=1), warehouse.parent / "limited")

    assert outcome.record.status == "succeeded" and outcome.record.rate_limited == 1
    assert sum(standin.requests.values()) >= 45
    # The pause itself is honoured (test_a_retry_after_given_as_an_http_date_is_honoured_...); here, only
    # that nothing else is lost: the second asked for, 2 s of margin, and as much again as the baseline (a
    # busy machine slows both runs; the lost rate of before does not scale with the machine).
    assert elapsed < 2 * baseline + 3.0, (elapsed, baseline)


def test_a_retry_after_given_as_an_http_date_is_honoured_and_the_real_wait_logged(
    warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served = tenant(decisions=[decision(1)])
    started = time.monotonic()
    outcome, _ = run(served, warehouse, Quirks(rate_limited=1, retry_after=in_seconds(4)))
    elapsed = time.monotonic() - started

    assert outcome.record.status == "succeeded"
    # The date has whole seconds, so the pause is between 3 and 4 seconds less the time from the stand-in
    # writing the date to the client reading it (under load it reached 0.03 s, and a date 3 s ahead was
    # logged as 1.97 s); "absent" would have been 1.
    assert elapsed >= 2.0, elapsed
    # Before: "try 2 in 0.00 s", while the real wait happened in the limiter.
    assert re.search(r"429: Too Many Requests; try 2 in [23]\.\d\d s", caplog.text), caplog.text


def test_the_quirks_leave_their_figures_in_the_run_row(warehouse: Path) -> None:
    outcome, _ = run(tenant(decisions=[decision(n) for n in range(7)]), warehouse, Quirks(page_cap=3))
    (warnings,) = rows(warehouse, "SELECT warnings FROM sync_runs WHERE run_id = ?", [outcome.record.run_id])[
        0
    ]
    assert "decisions: the service serves 3 records a page (asked for 100)" in json.loads(warnings)


def test_a_long_extract_says_how_far_it_got_in_the_log(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: the run log was silent for minutes during an extract (retries and 429s reached only stderr).
    monkeypatch.setattr("pipelines.sync.LOG_EVERY_S", 0.1)  # a log line every 0.1 s instead of 10 s
    caplog.set_level(logging.INFO, logger="pipelines.sync")
    outcome, _ = run(tenant(positions=[position(n) for n in range(30)]), warehouse, Quirks(latency_s=0.3))
    assert outcome.record.status == "succeeded"
    progress = [record.getMessage() for record in caplog.records if "extracting:" in record.getMessage()]
    line = (
        r"extracting: [1-9]\d* calls so far \((\w+ \d+, )*\w+ \d+\); \d+ x 429, \d+ retries, "
        r"\d+\.\d s waiting for the rate limit"
    )
    assert any(re.fullmatch(line, message) for message in progress), progress
