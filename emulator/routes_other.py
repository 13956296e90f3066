"""Reports (E4), matrices (E7), documents (E12) and notifications (E13, E14)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from emulator import render
from emulator.http import CallerDep, EmulatorDep, bare, body_fields, envelope, parse_query, query_docs
from emulator.routes_decisions import ordered
from emulator.service import Caller, ServiceError
from emulator.state import now
from models.base import Envelope, format_timestamp
from models.matrices import Matrix, UpdateMatrix
from models.notifications import MarkAllReadResult, Notification, ToggleNotificationStatus
from models.queries import RevisionQuery
from models.reports import ReportStatusResult, UpdateReportStatuses

router = APIRouter()

_MATRIX_SCALARS = (
    "matrixName",
    "matrixDescription",
    "ownerId",
    "currentTab",
    "authorityMatrix",
    "roleMatrix",
)
_MATRIX_LISTS = {
    "authorityRoleIds": "roles",
    "groupIds": "groups",
    "positionIds": "positions",
    "userIds": "users",
    "decisionIds": "decisions",
}


@router.post(
    "/report/v1/report/bulk-status-update",
    name="E4",
    status_code=201,
    response_model=Envelope[ReportStatusResult],
    tags=["reports"],
)
async def update_report_statuses(
    body: UpdateReportStatuses, caller: CallerDep, emulator: EmulatorDep
) -> Response:
    """E4: set (UPDATE) or restore (RESTORE) the status of several reports. Ids that are unknown, or of
    another tenant, are listed in ``failedIds``. Assumption: RESTORE returns a report to the status it had
    before its last update."""
    updated, failed = 0, []
    for report_id in body.report_ids:
        report = caller.state.reports.get(report_id)
        if report is None:
            failed.append(report_id)
            continue
        if body.operation == "UPDATE":
            report["previousStatus"], report["status"] = report["status"], str(body.status)
        else:
            report["status"], report["previousStatus"] = report["previousStatus"], report["status"]
        report["updatedAt"] = now()
        emulator.count_write("report", report_id)
        updated += 1
    caller.state.touch()
    return envelope({"success": not failed, "updatedCount": updated, "failedIds": failed}, 201)


@router.put("/matrix/v1/matrix/{id}", name="E7", response_model=Envelope[Matrix], tags=["matrices"])
async def update_matrix(id: str, body: UpdateMatrix, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E7: update a matrix. Assumption: a field left out of the PUT is kept, not cleared."""
    matrix = emulator.lookup(caller, "matrices", id, "Matrix")
    wire = body_fields(body)
    emulator.require_tenant(caller, wire.get("tenantId"))
    _check_matrix_references(caller, wire)
    for key in _MATRIX_SCALARS:
        if key in wire:
            matrix[key] = wire[key]
    for key in _MATRIX_LISTS:
        if key in wire:
            matrix[key] = list(dict.fromkeys(wire[key]))
    if "matrixStatusId" in wire:
        matrix["matrixStatusId"] = wire["matrixStatusId"]
    if "matrixExternalSharing" in wire:
        sharing = {**wire["matrixExternalSharing"]}
        if body.matrix_external_sharing and body.matrix_external_sharing.expiration_date:
            sharing["expirationDate"] = format_timestamp(body.matrix_external_sharing.expiration_date)
        matrix["externalSharing"] = {**matrix["externalSharing"], **sharing}
    matrix["updatedOn"] = now()
    emulator.count_write("matrix", id)
    caller.state.touch()
    return envelope(render.matrix(caller.state, id))


@router.get(
    "/document/v1/documents/{id}/changelog/revision-ids",
    name="E12",
    response_model=list[str],
    openapi_extra=query_docs(RevisionQuery),
    tags=["documents"],
)
async def document_revision_ids(
    id: str, request: Request, caller: CallerDep, emulator: EmulatorDep
) -> Response:
    """E12: a document's changelog revision ids, a bare JSON array (ascending by default)."""
    emulator.lookup(caller, "documents", id, "Document")
    query = parse_query(request, RevisionQuery, emulator.faults.ignore_params)
    return bare(ordered(caller.state.document_revisions[id], query))


@router.patch(
    "/notification/v1/notifications/{id}/toggle-status",
    name="E13",
    response_model=Envelope[Notification],
    tags=["notifications"],
)
async def toggle_notification(
    id: str,
    body: ToggleNotificationStatus,
    caller: CallerDep,
    emulator: EmulatorDep,
) -> Response:
    """E13: set a notification READ or UNREAD; without ``status`` it flips (public-reference.md)."""
    notification = _own_notification(caller, emulator.lookup(caller, "notifications", id, "Notification"))
    status = body.status or ("UNREAD" if notification["status"] == "READ" else "READ")
    notification["status"] = str(status)
    if status == "READ":
        notification["readAt"] = now()
    emulator.count_write("notification", id)
    caller.state.touch()
    return envelope(notification)


@router.post(
    "/v1/notifications/mark-all-read",
    name="E14",
    status_code=201,
    response_model=Envelope[MarkAllReadResult],
    tags=["notifications"],
)
async def mark_all_read(caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E14: mark every unread notification of the caller read; ``count`` says how many. The path has no
    area prefix (spec). Answers 201 (the spec's summary; its sample shows 200)."""
    stamp, count = now(), 0
    for notification in caller.state.notifications.values():
        if notification["userId"] == caller.user_id and notification["status"] == "UNREAD":
            notification.update(status="READ", readAt=stamp)
            emulator.count_write("notification", notification["id"])
            count += 1
    caller.state.touch()
    return envelope({"count": count}, 201)


def _own_notification(caller: Caller, notification: dict[str, Any]) -> dict[str, Any]:
    """Notifications are personal: another user's is not found."""
    if notification["userId"] != caller.user_id:
        raise ServiceError(404, f"Notification {notification['id']} not found")
    return notification


def _check_matrix_references(caller: Caller, wire: dict[str, Any]) -> None:
    state = caller.state
    collections = {
        "roles": state.roles,
        "groups": state.groups,
        "positions": state.positions,
        "users": state.users,
        "decisions": state.decisions,
    }
    for key, kind in _MATRIX_LISTS.items():
        for index, record_id in enumerate(wire.get(key, [])):
            if record_id not in collections[kind]:
                raise ServiceError(400, f"{key}.{index}: unknown {kind[:-1]} {record_id}", f"{key}.{index}")
    if "matrixStatusId" in wire and wire["matrixStatusId"] not in state.matrix_statuses:
        raise ServiceError(
            400, f"matrixStatusId: unknown matrix status {wire['matrixStatusId']}", "matrixStatusId"
        )
    if "ownerId" in wire and wire["ownerId"] not in state.users:
        raise ServiceError(400, f"ownerId: unknown user {wire['ownerId']}", "ownerId")
