"""Seeding: deterministic per seed, sized by the scale, every record valid against its model, references
consistent, and the data the sync relies on present (all authority value types, DELEGATION_ISSUED)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel

from emulator.scale import OTHER_TENANT_SCALE, SEED_EPOCH, Scale
from emulator.server import EmulatorServer
from emulator.service import Emulator, EmulatorOptions
from emulator.state import TenantState
from models.actions import Action, ActionTemplate
from models.base import format_timestamp
from models.decisions import Decision
from models.delegations import Delegation
from models.groups import Group
from models.matrices import Matrix
from models.notifications import Notification
from models.positions import Position
from models.queries import AuthorityLimitValueType
from models.users import User, UserPosition
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, admin, data_of, fetch_all, loopback, stored

SMALL = Scale(
    users=12,
    decisions=37,
    delegations=9,
    documents=5,
    groups=7,
    actions=4,
    matrices=2,
    reports=3,
    notifications=6,
)


def dump(state: TenantState) -> bytes:
    """Every record and link of a tenant as JSON bytes (dataclasses included)."""
    return orjson.dumps(state, option=orjson.OPT_SORT_KEYS)


def counts(state: TenantState) -> dict[str, int]:
    """How many records of each scaled kind the tenant holds (the scale's fields are collection names)."""
    return {field.name: len(getattr(state, field.name)) for field in dataclasses.fields(Scale)}


def test_the_same_seed_gives_identical_records() -> None:
    """Two emulators with one seed hold byte-identical tenants; a reset re-creates them exactly."""
    first, second = (Emulator(EmulatorOptions(seed=5, scale=SMALL)) for _ in range(2))
    for tenant_id in (DEMO_TENANT_ID, OTHER_TENANT_ID):
        assert dump(first.tenants[tenant_id]) == dump(second.tenants[tenant_id])
    before = dump(first.tenants[DEMO_TENANT_ID])
    first.reset()
    assert dump(first.tenants[DEMO_TENANT_ID]) == before
    # A reset loads a kept copy of the seed: what a test changes in memory must not reach the next reset.
    first.tenants[DEMO_TENANT_ID].decisions.clear()
    first.reset()
    assert dump(first.tenants[DEMO_TENANT_ID]) == before


def test_a_different_seed_gives_different_records() -> None:
    """Another seed: no decision id in common and different names."""
    first, second = (
        Emulator(EmulatorOptions(seed=seed, scale=SMALL)).tenants[DEMO_TENANT_ID] for seed in (5, 6)
    )
    assert not set(first.decisions) & set(second.decisions)
    assert [d["name"] for d in first.decisions.values()] != [d["name"] for d in second.decisions.values()]


def test_reset_over_http_restores_the_same_pages(server: EmulatorServer, http: httpx.Client) -> None:
    """After writes and /_admin/reset, the lists answer exactly what they answered before."""
    paths = {"/decision/v1/decisions": {"limit": 100}, "/auth/v1/user": {"limit": 100}}
    before = {path: data_of(http.get(path, params=params)) for path, params in paths.items()}
    admin(http, "POST", "/mutate", json={"decisions_updated": 5, "users_updated": 5, "decisions_inserted": 2})
    assert {path: data_of(http.get(path, params=params)) for path, params in paths.items()} != before
    admin(http, "POST", "/reset")
    assert {path: data_of(http.get(path, params=params)) for path, params in paths.items()} == before


def test_default_scale(seeded_demo: TenantState, seeded_other: TenantState) -> None:
    """The demo tenant has the default scale's counts and the second tenant its fixed small scale."""
    assert counts(seeded_demo) == dataclasses.asdict(Scale())
    assert counts(seeded_other) == dataclasses.asdict(OTHER_TENANT_SCALE)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/decision/v1/decisions", "decisions"),
        ("/auth/v1/user", "users"),
        ("/decision/v1/delegations", "delegations"),
        ("/settings/v1/groups", "groups"),
    ],
)
def test_list_totals_match_the_scale(seeded_http: httpx.Client, path: str, kind: str) -> None:
    """Each list's total is the scaled count of its kind."""
    total = data_of(seeded_http.get(path, params={"tenantId": DEMO_TENANT_ID}))["total"]
    assert total == getattr(Scale(), kind)


def test_scale_options_are_honoured() -> None:
    """A custom scale gives exactly its counts in the demo tenant, also over HTTP."""
    with (
        EmulatorServer(EmulatorOptions(scale=SMALL)) as server,
        loopback(base_url=server.base_url) as client,
    ):
        assert counts(server.emulator.tenants[DEMO_TENANT_ID]) == dataclasses.asdict(SMALL)
        headers = {"Authorization": f"Bearer {server.emulator.options.token}"}
        assert data_of(client.get("/decision/v1/decisions", headers=headers))["total"] == SMALL.decisions


# -- every record is valid ----------------------------------------------------------------------------------


def listed(path: str, **params: str) -> Callable[[httpx.Client, TenantState], list[dict[str, Any]]]:
    """Records of a kind read through a paged list."""
    return lambda client, _: fetch_all(client, path, params)


def one_by_one(
    kind: str, read: Callable[[httpx.Client, str], Any]
) -> Callable[[httpx.Client, TenantState], list[dict[str, Any]]]:
    """Records of a kind read one id at a time."""
    return lambda client, state: [read(client, record_id) for record_id in getattr(state, kind)]


def admin_read(kind: str) -> Callable[[httpx.Client, TenantState], list[dict[str, Any]]]:
    """Records of a kind read through the admin route (there is no read endpoint for them)."""
    return one_by_one(kind, lambda client, record_id: stored(client, kind, record_id, OTHER_TENANT_ID))


READS: dict[str, tuple[type[BaseModel], Callable[[httpx.Client, TenantState], list[dict[str, Any]]]]] = {
    "users": (User, listed("/auth/v1/user")),
    "groups": (Group, listed("/settings/v1/groups", tenantId=OTHER_TENANT_ID)),
    "decisions": (Decision, listed("/decision/v1/decisions")),
    "delegations": (Delegation, listed("/decision/v1/delegations")),
    "positions": (Position, listed("/settings/v1/positions", tenantId=OTHER_TENANT_ID)),
    "actions": (Action, admin_read("actions")),
    "action_templates": (
        ActionTemplate,
        one_by_one(
            "action_templates",
            lambda client, key: data_of(client.get(f"/settings/v1/action-templates/{key}")),
        ),
    ),
    "matrices": (Matrix, admin_read("matrices")),
    "notifications": (Notification, admin_read("notifications")),
    "current user positions": (
        UserPosition,
        lambda client, _: data_of(client.get("/auth/v1/user/positions")),
    ),
}
"""Each kind of record of the second tenant: its model and how to read every record of it as served."""


@pytest.mark.parametrize("kind", list(READS))
def test_every_seeded_record_validates_against_its_model(
    seeded_other_http: httpx.Client, seeded_other: TenantState, kind: str
) -> None:
    """Every record of the (small) second tenant, as served, validates against its model."""
    model, read = READS[kind]
    records = read(seeded_other_http, seeded_other)
    assert records
    if kind in {field.name for field in dataclasses.fields(Scale)} | {"positions", "action_templates"}:
        assert len(records) == len(getattr(seeded_other, kind))
    for record in records:
        model.model_validate(record)


@pytest.mark.parametrize("model", [User, Decision, Delegation, Group])
def test_a_page_of_the_demo_tenant_validates(seeded_http: httpx.Client, model: type[BaseModel]) -> None:
    """A full page of each big list of the demo tenant validates too."""
    path = {User: "/auth/v1/user", Decision: "/decision/v1/decisions", Delegation: "/decision/v1/delegations"}
    url = path.get(model, "/settings/v1/groups")
    page = data_of(seeded_http.get(url, params={"tenantId": DEMO_TENANT_ID, "limit": 100}))
    for record in page["data"]:
        model.model_validate(record)


# -- the data the sync relies on ----------------------------------------------------------------------------


def test_every_authority_value_type_appears(seeded_demo: TenantState) -> None:
    """Decisions carry authorities of all seven value types, and some currency limits are Unlimited."""
    authorities = [a for d in seeded_demo.decisions.values() for a in d["decisionAuthorities"]]
    assert {a["authorityLimitValueType"] for a in authorities} == {
        kind.value for kind in AuthorityLimitValueType
    }
    assert any(a["authorityLimitValue"] == "Unlimited" for a in authorities)


@pytest.mark.parametrize("tenant", ["demo", "other"])
def test_delegation_issued_notifications_exist(
    seeded_demo: TenantState, seeded_other: TenantState, tenant: str
) -> None:
    """DELEGATION_ISSUED notifications (category Delegations, entity type delegation) refer to delegations of
    their own tenant."""
    state = seeded_demo if tenant == "demo" else seeded_other
    issued = [n for n in state.notifications.values() if n["templateKey"] == "DELEGATION_ISSUED"]
    assert issued
    for notification in issued:
        assert (notification["category"], notification["entityType"]) == ("Delegations", "delegation")
        assert notification["entityId"] in state.delegations


def test_seeded_timestamps_precede_the_seed_epoch(seeded_demo: TenantState) -> None:
    """Every seeded creation and update time is before the seed epoch, so any write moves them forward."""
    epoch = format_timestamp(SEED_EPOCH)
    stamps = [
        record[key]
        for collection, keys in (
            ("decisions", ("createdAt", "updatedAt")),
            ("delegations", ("createdAt", "updatedAt")),
            ("users", ("createdOn", "updatedOn")),
            ("groups", ("createdOn", "updatedOn")),
            ("actions", ("createdAt", "updatedAt")),
            ("reports", ("updatedAt",)),
        )
        for record in getattr(seeded_demo, collection).values()
        for key in keys
    ]
    assert stamps and max(stamps) < epoch


def test_references_are_consistent(seeded_demo: TenantState) -> None:
    """Counts and links agree: delegation counts, managers, parents, decision groups and documents, action
    links, and ids are unique."""
    state = seeded_demo
    per_decision = Counter(d["decisionId"] for d in state.delegations.values())
    assert all(d["delegations"] == per_decision[key] for key, d in state.decisions.items())
    for role, count in (("issuerId", "delegationsIssued"), ("recipientId", "delegationsReceived")):
        per_user = Counter(d[role] for d in state.delegations.values())
        assert all(user[count] == per_user[key] for key, user in state.users.items())
    assert set(state.manager_of) == set(state.users) and set(state.manager_of.values()) <= set(state.users)
    assert all(link.parent_id in state.groups for links in state.group_parents.values() for link in links)
    for decision in state.decisions.values():
        assert {g["groupId"] for g in decision["decisionGroups"]} <= set(state.groups)
        assert {d["documentId"] for d in decision["decisionDocuments"]} <= set(state.documents)
    for action in state.actions.values():
        assert action["decisionId"] in state.decisions and action["ownerId"] in state.users
        assert action["delegationId"] in {"", *state.delegations}
    assert set(state.delegation_revisions) == set(state.delegations)
    assert set(state.document_revisions) == set(state.documents)
    display_ids = [d["decisionDisplayId"] for d in state.decisions.values()]
    assert len(set(display_ids)) == len(display_ids)
    every_id = [key for field in dataclasses.fields(Scale) for key in getattr(state, field.name)]
    assert len(set(every_id)) == len(every_id)
