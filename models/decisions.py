"""Decisions (spec 2.10): the full record and the projection E8 returns when ``fields`` is used."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from models.base import Count, ServiceModel, Timestamp
from models.queries import AuthorityLimitValueType, DecisionStatus


class Permission(ServiceModel):
    """A permission entry on actions, decisions and matrices; its semantics are not described (spec 5.5).

    The wire key ``relationship_key`` is snake_case, unlike every other key.
    """

    relationship_key: str = Field(alias="relationship_key")
    allowed: bool


class DecisionGroup(ServiceModel):
    """A group a decision applies to (spec 2.10 ``decisionGroups[]``)."""

    id: str
    denormalized_decision_id: str
    group_id: str
    tenant_group_type_id: str
    display_name: str
    group_name: str


class DecisionAuthority(ServiceModel):
    """An authority limit of a decision (spec 2.10 ``decisionAuthorities[]``).

    ``authorityLimitValueType`` takes the authority value types E8 lists.
    """

    id: str
    denormalized_decision_id: str
    authority_type_id: str
    authority_type: str
    authority_type_order: Count
    authority_type_icon: str
    authority_limit: str
    authority_limit_value_type: AuthorityLimitValueType
    authority_limit_operator: str
    authority_limit_value: str
    authority_limit_value_unit: str


class DecisionDocument(ServiceModel):
    """A document attached to a decision (spec 2.10 ``decisionDocuments[]``)."""

    id: str
    denormalized_decision_id: str
    document_id: str
    document_name: str
    document_url: str
    document_type_name: str
    document_icon: str
    document_description: str
    document_file_type: str
    is_pinned: bool
    document_display_id: str
    document_status: str
    document_file_link: str


class Decision(ServiceModel):
    """A decision (spec 2.10); ``id`` and ``decisionId`` hold the same identifier.

    ``previousStatus`` and ``authorityLimitSortPrecedence`` are absent from the 2.10 table but selectable
    through E8's ``fields`` (PREVIOUS_STATUS, AUTHORITY_LIMIT_SORT_PRECEDENCE), so they are read when
    present and None otherwise. ``delegations`` is the delegation count. The ``*Details`` objects are
    free-form because their contents are not shown.
    """

    id: str
    decision_id: str
    tenant_id: str
    name: str
    description: str
    guidance: str
    section_id: str
    category_id: str
    section_name: str
    category_name: str
    status: DecisionStatus
    created_by: str | None
    updated_by: str | None
    owner: str | None
    created_by_username: str | None
    owner_username: str | None
    updated_by_username: str | None
    created_at: Timestamp
    updated_at: Timestamp
    copied_from: str | None
    condition_enabled: bool
    role_enabled: bool
    delegable: bool
    decision_display_id: str
    delegation_pathway: list[str]
    link: str
    decision_groups: list[DecisionGroup]
    decision_authorities: list[DecisionAuthority]
    decision_documents: list[DecisionDocument]
    delegations: Count
    owner_user_profile_url: str
    created_by_user_profile_url: str
    updated_by_user_profile_url: str
    permissions: list[Permission]
    created_by_details: dict[str, Any]
    updated_by_details: dict[str, Any]
    owner_details: dict[str, Any]
    is_request_action_completed: bool
    previous_status: DecisionStatus | None = None
    authority_limit_sort_precedence: float | None = None


class DecisionProjection(ServiceModel):
    """A decision as E8 returns it when the ``fields`` projection is used: only the selected fields are
    present, so every field of `Decision` is optional here (None when not selected or null)."""

    id: str | None = None
    decision_id: str | None = None
    tenant_id: str | None = None
    name: str | None = None
    description: str | None = None
    guidance: str | None = None
    section_id: str | None = None
    category_id: str | None = None
    section_name: str | None = None
    category_name: str | None = None
    status: DecisionStatus | None = None
    created_by: str | None = None
    updated_by: str | None = None
    owner: str | None = None
    created_by_username: str | None = None
    owner_username: str | None = None
    updated_by_username: str | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    copied_from: str | None = None
    condition_enabled: bool | None = None
    role_enabled: bool | None = None
    delegable: bool | None = None
    decision_display_id: str | None = None
    delegation_pathway: list[str] | None = None
    link: str | None = None
    decision_groups: list[DecisionGroup] | None = None
    decision_authorities: list[DecisionAuthority] | None = None
    decision_documents: list[DecisionDocument] | None = None
    delegations: Count | None = None
    owner_user_profile_url: str | None = None
    created_by_user_profile_url: str | None = None
    updated_by_user_profile_url: str | None = None
    permissions: list[Permission] | None = None
    created_by_details: dict[str, Any] | None = None
    updated_by_details: dict[str, Any] | None = None
    owner_details: dict[str, Any] | None = None
    is_request_action_completed: bool | None = None
    previous_status: DecisionStatus | None = None
    authority_limit_sort_precedence: float | None = None
