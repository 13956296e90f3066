"""What the nightly sync makes of what the service sends, judged against the service's own evidence (issue
28, part A): cursors bounded by the service's clock, values stored exactly as sent, the transport as RFC
9110 and RFC 8259 allow it, and a deadline per request. Each test runs the sync over real HTTP against the
independent stand-in (tests/standin.py), with records written by hand in the spec's shape.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pydantic import SecretStr

from resources.client import AdmClient
from resources.errors import APIConnectionError, PagingDriftError, ServiceError
from resources.settings import ClientSettings
from tests.standin import JsonText, Quirks, StandIn, encode
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN, sync_standin
from tests.sync_support import query as rows
from tests.test_sync_quirks import (
    check,
    decision,
    delegation,
    group,
    position,
    run,
    tenant,
    ts,
    uid,
    user,
)

FUTURE = "2099-06-01T00:00:00Z"


@pytest.fixture
def warehouse(migrated: Path) -> Path:
    """A new warehouse: a copy of the migrated template."""
    return migrated


def cursor_of(warehouse: Path, entity: str) -> list[tuple[Any, ...]]:
    return rows(
        warehouse,
        "SELECT strftime(cursor_value AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') FROM extract_cursors "
        "WHERE entity = ?",
        [entity],
    )


def future_deviations(record: Any) -> list[dict[str, Any]]:
    return [d for d in record.deviations if d["kind"] == "future_instant"]


def test_a_record_stamped_in_the_future_is_loaded_and_moves_no_cursor(warehouse: Path) -> None:
    # Before: the delegations cursor moved to 2099-06-01 and every later incremental run missed every change.
    served = tenant(delegations=[delegation(1), delegation(2), delegation(3, updatedAt=FUTURE)])

    full, _ = run(served, warehouse)
    assert rows(warehouse, "SELECT count(*) FROM delegations") == [(3,)]
    assert cursor_of(warehouse, "delegations") == [(ts(2),)]
    (deviation,) = future_deviations(full.record)
    assert deviation["field"] == "updatedAt" and deviation["sample_ids"] == [uid("delegation", 3)]
    assert any("stamped later than the service's own clock" in w for w in full.record.warnings)

    served.lists["delegations"][1] = delegation(2, status="REVOKED", updatedAt=ts(100))
    changed, _ = run(served, warehouse, full_refresh=False)
    assert changed.record.mode == "incremental"
    assert rows(warehouse, "SELECT status FROM delegations WHERE id = ?", [uid("delegation", 2)]) == [
        ("REVOKED",)
    ]
    assert cursor_of(warehouse, "delegations") == [(ts(100),)]

    again, _ = run(served, warehouse, full_refresh=False)
    assert again.record.status == "succeeded" and len(future_deviations(again.record)) == 1
    assert cursor_of(warehouse, "delegations") == [(ts(100),)]


def poison(warehouse: Path, entity: str) -> None:
    """Store a cursor in the future, as a run before the clock rule did."""
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            "INSERT OR REPLACE INTO extract_cursors VALUES (?, ?, ?, 'an-earlier-run')",
            [STANDIN_TENANT_ID, entity, FUTURE],
        )


def test_a_full_refresh_repairs_a_cursor_stored_in_the_future(warehouse: Path) -> None:
    # Before: a full refresh started from the stored cursor and kept 2099.
    served = tenant(delegations=[delegation(1), delegation(2)])
    poison(warehouse, "delegations")

    run(served, warehouse)

    assert cursor_of(warehouse, "delegations") == [(ts(2),)]


def test_an_incremental_run_clears_a_cursor_stored_in_the_future(warehouse: Path) -> None:
    # Before: kept 2099 for good; every incremental run read nothing.
    served = tenant(delegations=[delegation(1), delegation(2)])
    poison(warehouse, "delegations")

    cleared, _ = run(served, warehouse, full_refresh=False)
    assert any("committed cursor 2099-06-01" in w and "cleared" in w for w in cleared.record.warnings)
    assert cursor_of(warehouse, "delegations") == []

    whole, _ = run(served, warehouse, full_refresh=False)
    assert rows(warehouse, "SELECT count(*) FROM delegations") == [(2,)]
    assert cursor_of(warehouse, "delegations") == [(ts(2),)]
    assert whole.record.status == "succeeded"


@pytest.mark.parametrize("form", ["date", "epoch_milliseconds", "epoch_seconds"])
def test_a_change_stamped_in_another_instant_form_is_read_by_the_next_incremental_run(
    warehouse: Path, form: str
) -> None:
    # Before (date alone): the cursor stood at the time of the first run's latest change, today; a change
    # the service then stamped with today's date alone (midnight UTC) lay before the next incremental
    # window and was missed until the next full refresh.
    now = datetime.now(UTC)
    stamps = {
        "date": now.date().isoformat(),
        "epoch_milliseconds": int(now.timestamp() * 1000),
        "epoch_seconds": int(now.timestamp()),
    }
    earlier = (now - timedelta(seconds=1)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    served = tenant(delegations=[delegation(1, updatedAt=earlier), delegation(2)])
    run(served, warehouse)

    served.lists["delegations"][1] = delegation(2, status="REVOKED", updatedAt=stamps[form])
    changed, _ = run(served, warehouse, full_refresh=False)

    assert changed.record.mode == "incremental"
    assert rows(warehouse, "SELECT status FROM delegations ORDER BY id = ?", [uid("delegation", 2)]) == [
        ("ISSUED",),
        ("REVOKED",),
    ]


def kinds(record: Any) -> dict[tuple[str, str], str]:
    """(list, field) -> the kind of deviation recorded for it."""
    return {(d["list"], d["field"]): d["kind"] for d in record.deviations}


def test_values_are_stored_exactly_as_sent(warehouse: Path) -> None:
    # Before: the big number stored as '1.2345678901234568e+26', 1500.00 as '1500.0', the decision with a
    # numeric id and the revision ids sent as numbers failed, the date-only and epoch instants NULL.
    limits = [
        {"id": "limit-1", "authorityLimitValue": JsonText("123456789012345678901234567.891")},
        {"id": "limit-2", "authorityLimitValue": JsonText("1500.00")},
    ]
    served = tenant(
        decisions=[
            decision(1, decisionAuthorities=limits),
            decision(2, id=JsonText("12345678901234567890123")),
        ],
        delegations=[delegation(1, startDate="2024-03-01")],
        users=[user(1, createdOn=1_700_000_000_000)],
        groups=[group(1, createdOn=1_700_000_000)],
    )
    served.revisions["delegations"][uid("delegation", 1)] = [JsonText("7"), JsonText("80000000000000000001")]

    outcome, _ = run(served, warehouse)

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT id, limit_value FROM decision_authorities ORDER BY id") == [
        ("limit-1", "123456789012345678901234567.891"),
        ("limit-2", "1500.00"),
    ]
    (raw,) = rows(warehouse, "SELECT raw FROM decisions WHERE id = ?", [uid("decision", 1)])[0]
    assert "123456789012345678901234567.891" in raw and "1500.00" in raw
    assert rows(warehouse, "SELECT id FROM decisions ORDER BY id") == sorted(
        [("12345678901234567890123",), (uid("decision", 1),)]
    )
    assert rows(warehouse, "SELECT revision_id FROM delegation_revisions ORDER BY revision_order") == [
        ("7",),
        ("80000000000000000001",),
    ]
    assert rows(warehouse, "SELECT start_date, starts_at FROM delegations") == [
        (date(2024, 3, 1), datetime(2024, 3, 1, tzinfo=UTC))
    ]
    assert rows(warehouse, "SELECT created_on FROM users") == [(datetime.fromtimestamp(1_700_000_000, UTC),)]
    assert rows(warehouse, "SELECT created_on FROM groups") == [(datetime.fromtimestamp(1_700_000_000, UTC),)]
    found = kinds(outcome.record)
    assert found["decisions", "decisionAuthorities.*.authorityLimitValue"] == "number_as_text"
    assert found["decisions", "id"] == "number_as_text"
    assert found["delegations", "startDate"] == "date_only"
    assert found["users", "createdOn"] == "epoch_milliseconds"
    assert found["groups", "createdOn"] == "epoch_seconds"


def test_a_limit_number_holds_the_value_exactly_or_null_with_a_warning(warehouse: Path) -> None:
    # Before: limit_number was a DOUBLE: 123456789012345678901234567.891 came out 1.2345678901234568e+26
    # (123456789012345678152597504 once read back as a decimal), 0.1 + 0.2 summed to 0.30000000000000004.
    values = {
        "big": JsonText("123456789012345678901234567.891"),
        "cents": JsonText("1500.00"),
        "tenth": "0.1",
        "fifth": "0.2",
        "scaled": "2.5bn",
        "too-precise": "1.1234567",
        "too-large": "1" + "0" * 32,
    }
    limits = [
        {"id": key, "authorityLimitValueType": "Currency", "authorityLimitValue": value}
        for key, value in values.items()
    ]
    served = tenant(decisions=[decision(1, decisionAuthorities=limits)])

    outcome, _ = run(served, warehouse)

    assert outcome.record.status == "succeeded"
    stored = dict(rows(warehouse, "SELECT id, limit_number FROM decision_authorities"))
    assert stored == {
        "big": Decimal("123456789012345678901234567.891"),
        "cents": Decimal("1500.00"),
        "tenth": Decimal("0.1"),
        "fifth": Decimal("0.2"),
        "scaled": Decimal("2500000000"),
        "too-precise": None,
        "too-large": None,
    }
    assert dict(rows(warehouse, "SELECT id, limit_value FROM decision_authorities")) == {
        key: str(value) for key, value in values.items()
    }
    assert rows(
        warehouse, "SELECT sum(limit_number) FROM decision_authorities WHERE id IN ('tenth', 'fifth')"
    ) == [(Decimal("0.3"),)]
    limits_check = check(outcome, "decision_authorities", "limit_values_parse")
    assert not limits_check["passed"] and "2 numeric limit value(s)" in limits_check["description"]


def test_an_embedded_item_s_raw_is_its_own_text_as_sent(warehouse: Path) -> None:
    # Before: each decision group, authority and document stored the model re-serialised: 1500.00 as
    # 1500.0, the big number rounded to 1.2345678901234568e+26 or turned into a JSON string, keys reordered.
    big, cents = JsonText("123456789012345678901234567.891"), JsonText("1500.00")
    valid = decision(
        1,
        decisionGroups=[{"id": "link-1", "groupId": uid("group", 1), "xShare": cents}],
        decisionDocuments=[{"xSize": big, "id": "doc-link-1", "isPinned": True}],
    )
    mended = decision(
        2,
        decisionAuthorities=[
            {"id": "limit-1", "authorityLimitValue": big, "xFloor": cents},
            "not an object",
            {"authorityLimitValue": "Unlimited", "id": "limit-2", "authorityTypeOrder": JsonText("2")},
        ],
    )
    served = tenant(decisions=[valid, mended])

    # One decision a page: the first page validates whole, the second is read record by record and mended.
    outcome, _ = run(served, warehouse, Quirks(page_cap=1))

    assert outcome.record.status == "succeeded"
    sent = [
        *valid["decisionGroups"],
        *valid["decisionDocuments"],
        mended["decisionAuthorities"][0],
        mended["decisionAuthorities"][2],
    ]
    assert rows(
        warehouse,
        "SELECT raw FROM (SELECT raw, id FROM decision_groups UNION ALL SELECT raw, id FROM "
        "decision_documents UNION ALL SELECT raw, id FROM decision_authorities) ORDER BY id",
    ) == [(encode(item).decode(),) for item in sorted(sent, key=lambda item: item["id"])]


@pytest.mark.parametrize("status", [404, 400])
def test_a_page_past_the_end_answered_as_no_such_page_ends_the_list(warehouse: Path, status: int) -> None:
    # Before: NotFoundError / ValidationError "page 3 out of range" stopped the tenant every night.
    served = tenant(decisions=[decision(n) for n in range(20)])

    # Pages of 10 (the service's cap): page 3 is past the end of the list.
    outcome, standin = run(served, warehouse, Quirks(past_end=status, page_cap=10))

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM decisions") == [(20,)]
    assert standin.requests["decisions"] >= 3  # page 3 was asked for and answered as no such page


@pytest.mark.parametrize("status", [404, 400])
def test_a_page_past_the_end_after_a_short_page_ends_the_list_and_its_overcount_fails_the_run(
    warehouse: Path, status: int
) -> None:
    # Only a total too high makes a page past a short one worth asking for: the 404/400 ends the list as
    # an empty page would, and the list, twice 15 records for a total of 25, is known to be short.
    served = tenant(decisions=[decision(n) for n in range(15)])

    with pytest.raises(PagingDriftError, match=r"E8: .*\(15 ids read\) but its total says 25"):
        run(served, warehouse, Quirks(past_end=status, total_skew={"decisions": 10}, page_cap=10))

    assert rows(warehouse, "SELECT count(*) FROM decisions") == [(0,)]


def reordered_positions(
    tails: dict[int, list[dict[str, Any]]], inserted: dict[str, Any], *, total: bool = False
) -> Quirks:
    """Positions (without a total unless ``total``), 9 a page, reordered per request: request n (from 0)
    serves ``tails[n]`` last (else the stored order); ``inserted`` is added before request 2 (the third)."""
    asked = [0]

    def insert(name: str, before: int, served: Any) -> None:
        if name == "positions":
            asked[0] = before
            if before == 2:
                served.lists["positions"].append(inserted)

    def order(name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        tail = tails.get(asked[0], []) if name == "positions" else []
        return [item for item in records if item not in tail] + tail

    return Quirks(page_cap=9, no_total=set() if total else {"positions"}, on_list_request=insert, order=order)


def test_two_passes_listing_the_same_records_twice_across_pages_prove_nothing(warehouse: Path) -> None:
    # Found by the protocol fuzzer: positions without a total, reordered for every request, one inserted
    # at the third request. Page 1 served 9 (the page size); each pass's page 2 showed records page 1 had
    # listed, so both passes listed the same 9 ids and the second was accepted: the run committed 9 of 11.
    positions = [position(n) for n in range(10)]
    tails = {1: positions[:1], 3: positions[:2]}  # page 2 of pass 1, then of pass 2: records of page 1

    with pytest.raises(PagingDriftError, match=r"positions: the list changed during each of 3 passes"):
        run(tenant(positions=positions), warehouse, reordered_positions(tails, position(10)), concurrency=1)

    assert rows(warehouse, "SELECT count(*) FROM positions") == [(0,)]


def test_a_record_the_service_lists_on_two_pages_in_every_read_fails_the_run_naming_the_list(
    warehouse: Path,
) -> None:
    # No read can tell the service's own repeat on two pages from a record that moved and hid another one
    # (a reshuffling service can serve the very same pages twice), so the set is not proven: a loud failure.
    positions = [position(n) for n in range(10)]
    served = tenant(positions=[*positions[:5], positions[0], *positions[5:]])

    with pytest.raises(
        PagingDriftError, match=r"positions: .* 10 records, 1 of them twice, 1 of them on two pages"
    ):
        run(served, warehouse, Quirks(page_cap=5))

    assert rows(warehouse, "SELECT count(*) FROM positions") == [(0,)]


def test_with_a_total_a_record_listed_on_two_pages_is_not_taken_for_one_the_total_counts_twice(
    warehouse: Path,
) -> None:
    # The same service with a total: pass 2 listed 9 ids, served 11 records for a total of 11, and equalled
    # pass 1, so it was taken for a list whose total counts a repeated record: 9 of 11 committed.
    positions = [position(n) for n in range(10)]
    tails = {1: positions[:1], 3: positions[:2]}

    outcome, standin = run(
        tenant(positions=positions), warehouse, reordered_positions(tails, position(10), total=True)
    )

    assert outcome.record.status == "succeeded"
    assert standin.requests["positions"] == 6  # pass 3 listed 11 distinct ids for a total of 11
    assert rows(warehouse, "SELECT id FROM positions ORDER BY id") == sorted(
        (item["id"],) for item in positions
    )


def test_a_pass_that_listed_a_record_on_two_pages_is_settled_by_two_clean_passes(warehouse: Path) -> None:
    # Without a total, only pass 1 repeats a record across pages: passes 2 and 3 agree, all 11 stored.
    positions = [position(n) for n in range(10)]

    outcome, standin = run(
        tenant(positions=positions), warehouse, reordered_positions({1: positions[:1]}, position(10))
    )

    assert outcome.record.status == "succeeded"
    assert standin.requests["positions"] == 6
    assert len(positions) == 11  # the stand-in serves this list: the one inserted is in it
    assert rows(warehouse, "SELECT id FROM positions ORDER BY id") == sorted(
        (item["id"],) for item in positions
    )


def test_a_byte_order_mark_before_the_json_is_ignored(warehouse: Path) -> None:
    # Before: "Invalid JSON: expected value at line 1 column 1" on the first page, every list.
    served = tenant(decisions=[decision(1)], delegations=[delegation(1)])

    outcome, _ = run(served, warehouse, Quirks(bom=True))

    assert outcome.record.status == "succeeded"
    assert rows(
        warehouse, "SELECT count(*) FROM decisions UNION ALL SELECT count(*) FROM delegation_revisions"
    ) == [
        (1,),
        (1,),
    ]


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_to_the_same_origin_is_followed(warehouse: Path, status: int) -> None:
    # Before: "-> 308" failed the tenant although the service said where to ask.
    served = tenant(decisions=[decision(1)], delegations=[delegation(1)])

    outcome, standin = run(served, warehouse, Quirks(redirect=(status, "")))

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM delegation_revisions") == [(1,)]
    assert standin.requests["moved"] == sum(
        count for name, count in standin.requests.items() if name not in {"moved"}
    )


def test_a_redirect_redirected_again_is_followed_to_the_end(warehouse: Path) -> None:
    # Two answers in a row sent the request on (the first request to /moved, the next to /moved/moved):
    # each hop is same-origin, within the redirects followed for one request.
    served = tenant(decisions=[decision(1)], delegations=[delegation(1)])

    quirks = Quirks(transport={0: "redirect_307", 1: "redirect_308"})
    outcome, standin = run(served, warehouse, quirks, concurrency=1)  # one request at a time: 0, then 1

    assert outcome.record.status == "succeeded"
    assert rows(warehouse, "SELECT count(*) FROM decisions") == [(1,)]
    assert standin.requests["moved"] >= 1


def test_a_redirect_to_another_origin_is_refused_and_no_credential_crosses(warehouse: Path) -> None:
    served = tenant(decisions=[decision(1)])
    quirks = Quirks()

    with StandIn(served, quirks) as standin, pytest.raises(ServiceError, match="another origin") as refused:
        # The same server under another name: another origin (RFC 6454), which a follow would reach.
        quirks.redirect = (307, standin.base_url.replace("127.0.0.1", "localhost"))
        sync_standin(standin, warehouse)

    assert standin.requests["moved"] == 0
    assert "http://localhost:" in str(refused.value)


def test_a_trickled_answer_is_cut_at_the_request_deadline_and_retried(
    warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: a body trickled 4 bytes at a time held the run for as long as it trickled (287 s for 562 bytes
    # at one step every 2 s); each read came within the 30 s read timeout, so nothing stopped it.
    served = tenant(decisions=[decision(1)])

    outcome, standin = run(served, warehouse, Quirks(trickled=1, trickle_every_s=0.2), request_deadline_s=1.0)

    assert outcome.record.status == "succeeded" and outcome.record.retries == 1
    assert standin.requests["trickled"] == 1
    assert "no complete answer within the deadline of 1 s per request" in caplog.text


def test_a_request_past_its_deadline_fails_as_a_timeout_naming_the_endpoint() -> None:
    served = tenant()
    with StandIn(served, Quirks(trickled=1_000, trickle_every_s=0.2)) as standin:
        settings = ClientSettings(
            base_url=standin.base_url,
            token=SecretStr(STANDIN_TOKEN),
            tenant_id=STANDIN_TENANT_ID,
            request_deadline_s=0.5,
            max_attempts=1,
        )
        started = time.monotonic()
        with AdmClient(settings) as client, pytest.raises(APIConnectionError) as late:
            client.current_user_positions()
        elapsed = time.monotonic() - started

    assert "E9: no complete answer within the deadline of 0.5 s per request" in str(late.value)
    assert late.value.path == "/auth/v1/user/positions"
    # The deadline and one step of the trickle, with seconds of margin for a loaded machine: the answer alone
    # would trickle for 200 s.
    assert elapsed < 0.5 + 0.2 + 4.0, elapsed


def test_a_cookie_the_service_sets_is_never_sent_back(warehouse: Path) -> None:
    # httpx's client kept every Set-Cookie in a jar and sent it with the next request: a cookie set by the
    # service (or by anything on the way) travelled beside the bearer token on every later call.
    served = tenant(decisions=[decision(1)], delegations=[delegation(1)])
    quirks = Quirks(transport=dict.fromkeys(range(4), "cookie"))

    outcome, standin = run(served, warehouse, quirks, concurrency=1)

    assert outcome.record.status == "succeeded"
    assert sum(standin.requests.values()) > 4
    assert standin.requests["with a cookie"] == 0
