"""Two lists of one endpoint, side by side: ``groups`` and ``group_directory`` both read GET
/settings/v1/groups (served by the independent stand-in), each keyed by its own name in everything: its
contract mode, its rejections and deviations, its checks, its tables and their history, ``v_changes`` and
its as-of macro.

Before, the contract keyed modes, rejections and deviations by endpoint: ``group_directory=strict`` made
``groups`` strict too, and each list's checks counted the other's records. The lists differ in what they
see: ``groups`` is read whole on every run (its records change unseen by their cursor), the directory
incrementally, so a record stamped before the cursor reaches ``groups`` alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from resources.catalog import GROUP_DIRECTORY, GROUPS
from resources.contract import RecordContract
from resources.contract_modes import ContractMode
from resources.errors import ResponseFormatError
from tests import samples
from tests.sync_support import query as rows
from tests.test_sync_quirks import check, group, run, tenant, ts

OLD = "2023-01-01T00:00:00Z"
"""An updated-at stamp long before any cursor: a group stamped so reaches only a whole read."""
LISTS = ("groups", "group_directory")


def spec_group(n: int, **fields: Any) -> dict[str, Any]:
    """A group with every field the spec shows (2.8), of the stand-in's tenant, without parents."""
    return samples.group() | group(n) | {"parentGroups": []} | fields


@pytest.fixture
def warehouse(migrated: Path) -> Path:
    """A new warehouse: a copy of the migrated template."""
    return migrated


def test_strict_mode_on_one_list_of_an_endpoint_leaves_the_other_tolerant(warehouse: Path) -> None:
    served = tenant(groups=[spec_group(1), spec_group(2)])
    run(served, warehouse, full_refresh=True)
    # A group without its name, stamped long ago: the whole read of groups sees it, the directory's
    # incremental read does not.
    served.lists["groups"].append(spec_group(3, groupName=None, updatedOn=OLD))

    nightly, _ = run(served, warehouse, full_refresh=False, schema_contract="tolerant,group_directory=strict")

    assert nightly.record.status == "succeeded", nightly.record.error
    assert {(d["list"], d["field"], d["kind"]) for d in nightly.record.deviations} == {
        ("groups", "groupName", "null")
    }
    assert rows(warehouse, "SELECT count(*) FROM groups") == [(3,)]
    # The mode is the named list's: strict groups fail on the record, a strict directory that reads it too.
    for strict, full_refresh in (("groups", False), ("group_directory", True)):
        with pytest.raises(ResponseFormatError, match=f"page 1 of the {strict} list"):
            run(served, warehouse, full_refresh=full_refresh, schema_contract=f"tolerant,{strict}=strict")


def test_each_list_of_an_endpoint_counts_only_its_own_rejections_and_deviations(warehouse: Path) -> None:
    served = tenant(groups=[spec_group(1), spec_group(2)])
    run(served, warehouse, full_refresh=True)
    served.lists["groups"] += [
        spec_group(3, id="", updatedOn=OLD),
        spec_group(4, groupName=None, updatedOn=OLD),
    ]

    nightly, _ = run(served, warehouse, full_refresh=False, reject_max_share=1.0)

    assert nightly.record.status == "succeeded", nightly.record.error
    recorded = rows(warehouse, "SELECT list_name, endpoint, field FROM rejected_records")
    assert recorded == [("groups", "groups", "id")]
    outcomes = {name: _outcomes(nightly.record.checks, name) for name in LISTS}
    assert outcomes["groups"]["rejected_within_threshold"].startswith("1 record(s) rejected")
    assert outcomes["group_directory"]["rejected_within_threshold"].startswith("0 record(s) rejected")
    # Each list adds its own rejections to its row count (before, the directory: staged 2 + 1 rejected).
    assert outcomes["groups"]["row_count_matches_service_total"] == "staged 3 + 1 rejected, service total 4"
    assert outcomes["group_directory"]["row_count_matches_service_total"] == "staged 2, service total 2"
    assert check(nightly, "group_directory", "records_conform_to_spec")["passed"]
    assert not check(nightly, "groups", "records_conform_to_spec")["passed"]


def _outcomes(checks: list[dict[str, Any]], table: str) -> dict[str, str]:
    return {c["check"]: c["description"] for c in checks if c["table"] == table}


def test_both_lists_of_an_endpoint_have_history_changes_and_an_as_of_macro(warehouse: Path) -> None:
    served = tenant(groups=[group(1, groupName="Sales", address={"city": "Oslo"})])
    first, _ = run(served, warehouse, full_refresh=True)
    served.lists["groups"][0] |= {"groupName": "Sales EMEA", "updatedOn": ts(60)}
    renamed, _ = run(served, warehouse, full_refresh=False)
    # A field the directory does not show: a version of groups only.
    served.lists["groups"][0] |= {"address": {"city": "Bergen"}, "updatedOn": ts(120)}
    moved, _ = run(served, warehouse, full_refresh=False)

    for outcome in (first, renamed, moved):
        assert outcome.record.status == "succeeded", outcome.record.error
    versions = {name: rows(warehouse, f"SELECT count(*) FROM {name}_history")[0][0] for name in LISTS}  # noqa: S608
    assert versions == {"groups": 3, "group_directory": 2}
    changes = rows(
        warehouse,
        "SELECT entity, before, after, run_id FROM v_changes WHERE field = 'group_name' ORDER BY entity",
    )
    assert changes == [
        ("group_directory", "Sales", "Sales EMEA", renamed.record.run_id),
        ("groups", "Sales", "Sales EMEA", renamed.record.run_id),
    ]
    (committed,) = rows(
        warehouse, "SELECT finished_at FROM sync_runs WHERE run_id = ?", [first.record.run_id]
    )
    for name in LISTS:
        assert rows(warehouse, f"SELECT group_name FROM {name}_as_of(?)", [committed[0]]) == [("Sales",)]  # noqa: S608
        assert rows(warehouse, f"SELECT group_name FROM {name}") == [("Sales EMEA",)]  # noqa: S608


def test_the_contract_keeps_each_lists_mode_rejections_and_deviations_by_its_name() -> None:
    records = [spec_group(1, groupName=None), spec_group(2, id="")]
    page = {"page": 1, "limit": 100, "total": len(records), "data": records}
    body = json.dumps({"statusCode": 200, "timestamp": ts(0), "message": "Success", "data": page}).encode()
    contract = RecordContract(modes={GROUP_DIRECTORY.name: ContractMode.STRICT})

    kept = contract.read_page(GROUPS, 1, body).data.data
    with pytest.raises(ResponseFormatError, match="page 1 of the group_directory list"):
        contract.read_page(GROUP_DIRECTORY, 1, body)

    assert [group.id for group in kept] == [records[0]["id"]]
    assert [row["list"] for row in contract.log.summary()] == ["groups"]
    assert [r.list_name for r in contract.log.rejections] == ["groups"]
    # Tolerant, the same record rejected by each list is one rejection of each (before: one of the endpoint).
    RecordContract(log=contract.log).read_page(GROUP_DIRECTORY, 1, body)
    assert [len(contract.log.rejected_from(name)) for name in LISTS] == [1, 1]
