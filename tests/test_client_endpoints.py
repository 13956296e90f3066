"""Every endpoint round-trips through the client against the emulator; each write is seen by a later read."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState
from models.actions import DeleteActions, UpdateAction, ValidateAction
from models.groups import UpdateGroup
from models.matrices import UpdateMatrix
from models.notifications import NotificationStatus, ToggleNotificationStatus
from models.queries import DecisionField, DecisionQuery, GroupQuery, RevisionQuery, SortOrder, UserQuery
from models.reports import ReportOperation, ReportStatus, UpdateReportStatuses
from models.users import UpdateUserEntities
from resources.client import AdmClient
from resources.errors import NotFoundError, PermissionDeniedError, ValidationError
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, shared_http


@pytest.fixture
def state(emulator: Emulator) -> TenantState:
    return emulator.tenants[DEMO_TENANT_ID]


def admin_record(server: EmulatorServer, kind: str, record_id: str) -> dict[str, Any]:
    """A stored record read through the emulator's admin route (for records no endpoint of the 14 reads)."""
    response = shared_http().get(f"{server.base_url}/_admin/records/{kind}/{record_id}")
    response.raise_for_status()
    record: dict[str, Any] = response.json()
    return record


def test_e1_update_user_entities_is_seen_by_the_user_list(client: AdmClient, state: TenantState) -> None:
    user_id = list(state.users)[5]
    body = UpdateUserEntities(tenant_id=DEMO_TENANT_ID, display_name="Zed Quux-Client", employee_id="EMP-42")
    user = client.update_user_entities(user_id, body)
    assert (user.id, user.display_name) == (user_id, "Zed Quux-Client")
    page = client.list_users(UserQuery(search="EMP-42"))
    assert [(u.id, u.display_name) for u in page.data] == [(user_id, "Zed Quux-Client")]


def test_e2_deleted_actions_can_no_longer_be_updated(client: AdmClient, state: TenantState) -> None:
    live = [key for key, action in state.actions.items() if not action["isDeleted"]][:2]
    deleted = client.delete_actions(DeleteActions(ids=live))
    assert sorted(action.id for action in deleted) == sorted(live)
    assert all(action.is_deleted for action in deleted)
    with pytest.raises(NotFoundError) as caught:
        client.update_action(live[0], UpdateAction(action_name="too late"))
    assert caught.value.status == 404
    assert caught.value.path == f"/actions/v1/actions/{live[0]}"


def test_e3_update_group_is_seen_by_the_group_list(client: AdmClient, state: TenantState) -> None:
    group_id = list(state.groups)[3]
    group = client.update_group(group_id, UpdateGroup(display_name="Renamed by the client"))
    assert group.display_name == "Renamed by the client"
    page = client.list_groups(GroupQuery(tenant_id=DEMO_TENANT_ID, search="Renamed by the client"))
    assert [g.id for g in page.data] == [group_id]


def test_e4_update_report_statuses(client: AdmClient, server: EmulatorServer, state: TenantState) -> None:
    report_ids = list(state.reports)[:2]
    body = UpdateReportStatuses(
        report_ids=report_ids, status=ReportStatus.ARCHIVED, operation=ReportOperation.UPDATE
    )
    result = client.update_report_statuses(body)
    assert (result.success, result.updated_count, result.failed_ids) == (True, 2, [])
    assert {admin_record(server, "reports", key)["status"] for key in report_ids} == {"ARCHIVED"}


def test_e5_validate_action(client: AdmClient, state: TenantState) -> None:
    action = next(action for action in state.actions.values() if not action["isDeleted"])
    body = ValidateAction(tenant_id=DEMO_TENANT_ID, decision_id=action["decisionId"])
    result = client.validate_action(body)
    assert result.is_exist


def test_e6_update_action(client: AdmClient, server: EmulatorServer, state: TenantState) -> None:
    action_id = next(key for key, action in state.actions.items() if not action["isDeleted"])
    action = client.update_action(action_id, UpdateAction(action_name="Sign the lease"))
    assert action.action_name == "Sign the lease"
    assert admin_record(server, "actions", action_id)["actionName"] == "Sign the lease"


def test_e7_update_matrix(client: AdmClient, server: EmulatorServer, state: TenantState) -> None:
    matrix_id = next(iter(state.matrices))
    matrix = client.update_matrix(matrix_id, UpdateMatrix(matrix_name="Signing authorities 2026"))
    assert matrix.matrix_name == "Signing authorities 2026"
    assert admin_record(server, "matrices", matrix_id)["matrixName"] == "Signing authorities 2026"


def test_e8_one_page_of_decisions_and_projections(client: AdmClient) -> None:
    page = client.list_decisions(DecisionQuery(limit=5, sort_by="name", sort_order=SortOrder.ASC))
    assert (page.page, page.limit, page.total, len(page.data)) == (1, 5, 1000, 5)
    assert [d.name for d in page.data] == sorted(d.name for d in page.data)
    projected = client.list_decision_projections(DecisionQuery(limit=3, fields=[DecisionField.NAME]))
    assert all(item.name and item.description is None for item in projected.data)
    with pytest.raises(ValueError, match="list_decision_projections"):
        client.list_decisions(DecisionQuery(fields=[DecisionField.NAME]))


def test_e9_current_user_positions(client: AdmClient, state: TenantState) -> None:
    positions = client.current_user_positions()
    expected = [item["id"] for item in state.users[state.current_user_id]["userPositions"]]
    assert [position.id for position in positions] == expected


def test_e10_get_action_template(client: AdmClient, state: TenantState) -> None:
    template_id = next(iter(state.action_templates))
    assert client.get_action_template(template_id).id == template_id


def test_e11_e12_revision_ids_in_both_orders(client: AdmClient, state: TenantState) -> None:
    delegation_id, document_id = next(iter(state.delegation_revisions)), next(iter(state.document_revisions))
    ascending = client.delegation_revision_ids(delegation_id)
    assert ascending == sorted(state.delegation_revisions[delegation_id], key=int)
    descending = client.document_revision_ids(document_id, RevisionQuery(sort_order=SortOrder.DESC))
    assert descending == sorted(state.document_revisions[document_id], key=int, reverse=True)


def test_e13_toggle_and_e14_mark_all_read(
    client: AdmClient, server: EmulatorServer, state: TenantState
) -> None:
    notification_id = next(key for key, item in state.notifications.items() if item["status"] == "READ")
    toggled = client.toggle_notification_status(notification_id, ToggleNotificationStatus())
    assert toggled.status is NotificationStatus.UNREAD
    unread = sum(item["status"] == "UNREAD" for item in state.notifications.values())
    assert client.mark_all_notifications_read().count == unread
    assert admin_record(server, "notifications", notification_id)["status"] == "READ"


def test_service_refusals_map_to_typed_errors(client: AdmClient, state: TenantState) -> None:
    with pytest.raises(NotFoundError):
        client.get_action_template("00000000-0000-4000-8000-000000000000")
    with pytest.raises(ValidationError) as invalid:
        client.update_user_entities(
            list(state.users)[1], UpdateUserEntities(tenant_id=DEMO_TENANT_ID, manager_id=OTHER_TENANT_ID)
        )
    assert invalid.value.field == "managerId"
    with pytest.raises(PermissionDeniedError):
        client.list_groups(GroupQuery(tenant_id=OTHER_TENANT_ID))


def test_metrics_are_a_serialisable_snapshot(client: AdmClient, state: TenantState) -> None:
    client.current_user_positions()
    client.get_action_template(next(iter(state.action_templates)))
    snapshot = client.metrics
    client.current_user_positions()
    assert snapshot.calls == {"E9": 1, "E10": 1}
    assert snapshot.bytes_received > 0 and snapshot.api_calls == 2
    assert json.loads(json.dumps(snapshot.as_dict()))["api_calls"] == 2
    with pytest.raises(FrozenInstanceError):
        snapshot.retries = 1  # type: ignore[misc]
