"""Actions area (``/actions``): E2 delete actions, E5 validate action, E6 update action."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from emulator import render
from emulator.http import CallerDep, EmulatorDep, body_fields, envelope
from emulator.service import Caller, Emulator, ServiceError
from emulator.state import Record, now
from models.actions import Action, DeleteActions, UpdateAction, ValidateAction, ValidateActionResult
from models.base import Envelope, format_timestamp

router = APIRouter(prefix="/actions/v1", tags=["actions"])

_REFERENCES = {
    "actionTypeId": ("action_types", "action type"),
    "actionTemplateId": ("action_templates", "action template"),
    "actionPriorityId": ("action_priorities", "action priority"),
    "actionStatusId": ("action_statuses", "status"),
    "decisionId": ("decisions", "decision"),
    "delegationId": ("delegations", "delegation"),
    "documentId": ("documents", "document"),
    "ownerId": ("users", "user"),
}
_SCALARS = ("actionName", "description", *_REFERENCES)


@router.delete("/actions", name="E2", response_model=Envelope[list[Action]])
async def delete_actions(body: DeleteActions, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E2: soft-delete several actions; all ids must be live actions of the caller's tenant."""
    actions = [live_action(emulator, caller, action_id) for action_id in dict.fromkeys(body.ids)]
    stamp, who = now(), caller.state.users[caller.user_id]["name"]
    for action in actions:
        action.update(isDeleted=True, deletedOn=stamp, deletedBy=who, updatedAt=stamp, updatedBy=who)
        emulator.count_write("action", action["id"])
    caller.state.touch()
    return envelope([render.action(caller.state, action["id"]) for action in actions])


@router.patch("/actions/validate-action", name="E5", response_model=Envelope[ValidateActionResult])
async def validate_action(body: ValidateAction, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E5: whether a live action exists for the given decision and/or delegation (both must match)."""
    emulator.require_tenant(caller, body.tenant_id)
    match = next(
        (
            action
            for action in caller.state.actions.values()
            if not action["isDeleted"]
            and (body.decision_id is None or action["decisionId"] == body.decision_id)
            and (body.delegation_id is None or action["delegationId"] == body.delegation_id)
            and (body.decision_id or body.delegation_id)
        ),
        None,
    )
    if match is None:
        return envelope({"actionName": "", "isExist": False, "userId": ""})
    return envelope({"actionName": match["actionName"], "isExist": True, "userId": match["ownerId"]})


@router.patch("/actions/{id}", name="E6", response_model=Envelope[Action])
async def update_action(id: str, body: UpdateAction, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E6: update an action's fields; referenced ids must exist in the tenant."""
    action = live_action(emulator, caller, id)
    wire = body_fields(body)
    _check_references(caller, wire)
    for key in _SCALARS:
        if key in wire:
            action[key] = wire[key]
    _link_displays(caller, action, wire)
    if "dueDate" in wire:
        action["dueDate"] = format_timestamp(body.due_date) if body.due_date else action["dueDate"]
    if "assigneeIds" in wire:
        action["assigneeIds"] = list(dict.fromkeys(wire["assigneeIds"]))
    stamp = now()
    if "files" in wire:
        action["files"] = [{"id": emulator.new_id(), **item, "createdAt": stamp} for item in wire["files"]]
    action["updatedAt"], action["updatedBy"] = stamp, caller.state.users[caller.user_id]["name"]
    emulator.count_write("action", id)
    caller.state.touch()
    return envelope(render.action(caller.state, id))


def live_action(emulator: Emulator, caller: Caller, action_id: str) -> Record:
    """An action of the caller's tenant that is not deleted (a deleted one is 404)."""
    action = emulator.lookup(caller, "actions", action_id, "Action")
    if action["isDeleted"]:
        raise ServiceError(404, f"Action {action_id} not found")
    return action


def _check_references(caller: Caller, wire: dict[str, Any]) -> None:
    for key, (collection, what) in _REFERENCES.items():
        if key in wire and wire[key] not in getattr(caller.state, collection):
            raise ServiceError(400, f"{key}: unknown {what} {wire[key]}", key)
    for index, user_id in enumerate(wire.get("assigneeIds", [])):
        if user_id not in caller.state.users:
            raise ServiceError(400, f"assigneeIds.{index}: unknown user {user_id}", f"assigneeIds.{index}")


def _link_displays(caller: Caller, action: Record, wire: dict[str, Any]) -> None:
    """Keep the display ids in step with the linked decision, delegation and document."""
    state = caller.state
    if "decisionId" in wire:
        action["decisionDisplayId"] = state.decisions[wire["decisionId"]]["decisionDisplayId"]
    if "delegationId" in wire:
        action["delegationDisplayId"] = state.delegations[wire["delegationId"]]["delegationDisplayId"]
    if "documentId" in wire:
        action["documentDisplayId"] = state.documents[wire["documentId"]]["documentDisplayId"]
