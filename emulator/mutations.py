"""Changes made behind a client's back: drift while it pages, and the admin route's bulk mutations that
tests and benchmarks use to make "1% of records changed" happen between two syncs.

Every change stamps the wall clock, so it lands after every seeded ``updatedAt``/``updatedOn``. A delegation
that changes gains a changelog revision; a document revision also moves ``updatedAt`` of the decisions that
embed that document (assumption: the service denormalises document data into decisions).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from emulator.state import TenantState, now, random_uuid

if TYPE_CHECKING:
    from emulator.service import Emulator


class Mutation(BaseModel):
    """Counts of records to change in one tenant (``POST /_admin/mutate``)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )

    tenant_id: str | None = Field(None, description="Tenant to change; default the demo tenant.")
    decisions_updated: int = Field(0, ge=0)
    decisions_inserted: int = Field(0, ge=0)
    decisions_deleted: int = Field(0, ge=0)
    delegations_updated: int = Field(0, ge=0)
    delegations_inserted: int = Field(0, ge=0)
    users_updated: int = Field(0, ge=0)
    groups_updated: int = Field(0, ge=0)
    document_revisions: int = Field(0, ge=0, description="Documents that gain one revision each.")
    unknown_field: str | None = Field(
        None,
        description="Add this field to every decision, delegation, user and group, as a service would that "
        "gained a field.",
    )


def apply_mutation(emulator: Emulator, mutation: Mutation) -> dict[str, list[str]]:
    """Apply a mutation; returns the ids touched per kind of change."""
    state = emulator.tenants[mutation.tenant_id or emulator.options.tenant_id]
    return {
        "decisionsUpdated": [
            update_decision(emulator, state, pick(emulator, state.decisions))
            for _ in range(mutation.decisions_updated)
        ],
        "decisionsInserted": [insert_decision(emulator, state) for _ in range(mutation.decisions_inserted)],
        "decisionsDeleted": [delete_decision(emulator, state) for _ in range(mutation.decisions_deleted)],
        "delegationsUpdated": [
            update_delegation(emulator, state, pick(emulator, state.delegations))
            for _ in range(mutation.delegations_updated)
        ],
        "delegationsInserted": [
            insert_delegation(emulator, state) for _ in range(mutation.delegations_inserted)
        ],
        "usersUpdated": [update_user(emulator, state) for _ in range(mutation.users_updated)],
        "groupsUpdated": [update_group(emulator, state) for _ in range(mutation.groups_updated)],
        "documentRevisions": [
            add_document_revision(emulator, state) for _ in range(mutation.document_revisions)
        ],
        "unknownField": add_unknown_field(emulator, state, mutation.unknown_field)
        if mutation.unknown_field
        else [],
    }


def drift(emulator: Emulator, state: TenantState, kind: str) -> None:
    """One insert and one update of ``kind`` (decisions or delegations) while a client pages."""
    if kind == "decisions":
        insert_decision(emulator, state)
        update_decision(emulator, state, pick(emulator, state.decisions))
    else:
        insert_delegation(emulator, state)
        update_delegation(emulator, state, pick(emulator, state.delegations))


def pick(emulator: Emulator, records: dict[str, dict[str, object]]) -> str:
    """A random existing id (records are few enough that indexing a list is fine)."""
    return emulator.rng.choice(list(records))


def update_decision(emulator: Emulator, state: TenantState, decision_id: str) -> str:
    """Rename a decision and move its ``updatedAt``."""
    decision = state.decisions[decision_id]
    decision["name"] = f"{decision['name'].split(' (rev')[0]} (rev {state.new_revision_id()})"
    decision["updatedAt"] = now()
    emulator.changed(state, "decisions", decision_id)
    return decision_id


def insert_decision(emulator: Emulator, state: TenantState) -> str:
    """A new decision copied from an existing one, with fresh ids."""
    source = state.decisions[pick(emulator, state.decisions)]
    decision = copy.deepcopy(source)
    decision_id = random_uuid(emulator.rng)
    stamp = now()
    decision.update(
        id=decision_id,
        decisionId=decision_id,
        decisionDisplayId=state.new_display_id(),
        createdAt=stamp,
        updatedAt=stamp,
        copiedFrom=source["id"],
        delegations=0,
        name=f"{source['name']} (copy)",
    )
    for key in ("decisionGroups", "decisionAuthorities", "decisionDocuments"):
        for item in decision[key]:
            item.update(id=random_uuid(emulator.rng), denormalizedDecisionId=decision_id)
    state.decisions[decision_id] = decision
    emulator.changed(state, "decisions", decision_id)
    return decision_id


def delete_decision(emulator: Emulator, state: TenantState) -> str:
    """Remove a decision that no delegation refers to (the list stops returning it)."""
    referenced = {delegation["decisionId"] for delegation in state.delegations.values()}
    candidates = [key for key in state.decisions if key not in referenced] or list(state.decisions)
    decision_id = emulator.rng.choice(candidates)
    del state.decisions[decision_id]
    emulator.changed(state, "decisions", decision_id)
    return decision_id


def update_delegation(emulator: Emulator, state: TenantState, delegation_id: str) -> str:
    """Move a delegation to another status, with a new changelog revision."""
    delegation = state.delegations[delegation_id]
    delegation["status"] = "SUSPENDED" if delegation["status"] != "SUSPENDED" else "ISSUED"
    delegation["updatedAt"] = now()
    state.delegation_revisions[delegation_id].append(state.new_revision_id())
    emulator.changed(state, "delegations", delegation_id)
    return delegation_id


def insert_delegation(emulator: Emulator, state: TenantState) -> str:
    """A new issued delegation of an existing decision, with its first revision."""
    source = state.delegations[pick(emulator, state.delegations)]
    delegation_id = random_uuid(emulator.rng)
    stamp = now()
    state.delegations[delegation_id] = {
        **source,
        "id": delegation_id,
        "delegationDisplayId": state.new_display_id(),
        "status": "ISSUED",
        "createdAt": stamp,
        "updatedAt": stamp,
    }
    state.delegation_revisions[delegation_id] = [state.new_revision_id()]
    emulator.changed(state, "delegations", delegation_id)
    return delegation_id


def update_user(emulator: Emulator, state: TenantState) -> str:
    """Change a user's display name and move ``updatedOn``."""
    user_id = emulator.rng.choice(list(state.users)[1:] or list(state.users))
    user = state.users[user_id]
    user["displayName"] = f"{user['firstName']} {user['lastName']} ({state.new_revision_id()})"[:50]
    user["updatedOn"] = now()
    emulator.changed(state, "users")
    return user_id


def update_group(emulator: Emulator, state: TenantState) -> str:
    """Change a group's display name and move ``updatedOn``."""
    group_id = pick(emulator, state.groups)
    group = state.groups[group_id]
    group["displayName"] = f"{group['groupName']} ({state.new_revision_id()})"[:100]
    group["updatedOn"] = now()
    emulator.changed(state, "groups")
    return group_id


def add_document_revision(emulator: Emulator, state: TenantState) -> str:
    """A new revision of a document; decisions embedding it move ``updatedAt``."""
    document_id = pick(emulator, state.documents)
    state.document_revisions[document_id].append(state.new_revision_id())
    stamp = now()
    for decision in state.decisions.values():
        if any(item["documentId"] == document_id for item in decision["decisionDocuments"]):
            decision["updatedAt"] = stamp
    emulator.changed(state, "decisions")
    return document_id


def add_unknown_field(emulator: Emulator, state: TenantState, name: str) -> list[str]:
    """Give every decision, delegation, user and group a field the models do not know."""
    for kind in ("decisions", "delegations", "users", "groups"):
        for record in getattr(state, kind).values():
            record[name] = {"addedBy": "emulator", "kind": kind}
        emulator.changed(state, kind)
    return [name]
