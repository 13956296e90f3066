"""Actions (spec 2.6, 2.7), action templates (2.12) and the bodies of E2, E5 and E6."""

from __future__ import annotations

from pydantic import Field

from models.base import RequestModel, ServiceModel, Timestamp, UuidStr
from models.decisions import Permission


class ActionTypeRef(ServiceModel):
    """An action's type (spec 2.7 ``actionType``)."""

    id: str
    tenant_id: str
    type: str
    name: str
    type_icon: str
    status: bool
    is_custom: bool


class ActionTemplateRef(ServiceModel):
    """The template an action was made from (spec 2.7 ``actionTemplate``)."""

    id: str
    tenant_id: str
    name: str
    description: str
    status: bool
    type: ActionTypeRef


class PositionSummary(ServiceModel):
    """A position inside a person summary: ``{id, positionName, autoProvisioned}``."""

    id: str
    position_name: str
    auto_provisioned: bool


class OrganizationSummary(ServiceModel):
    """A person's primary organization (spec 2.6 ``primaryOrganization``)."""

    id: str
    group_name: str
    display_name: str
    tenant_group_type_id: str
    tenant_group_type_name: str
    legal_name: str
    base_currency: str


class ManagerSummary(ServiceModel):
    """A person's manager: ``{id, name, displayName, profileImageUrl}``."""

    id: str
    name: str
    display_name: str
    profile_image_url: str


class PersonSummary(ServiceModel):
    """A person as actions show them: owner and assignees (spec 2.6)."""

    id: str
    email: str
    name: str
    display_name: str
    profile_image_url: str
    mobile_phone: str
    primary_organization_id: str
    positions: list[PositionSummary]
    primary_organization: OrganizationSummary
    manager: ManagerSummary


class ActionAssignee(ServiceModel):
    """An assignee of an action and where they stand (spec 2.7 ``assignees[]``)."""

    id: str
    assignee_id: str
    assignee: PersonSummary
    action_status_id: str
    action_status_name: str
    action_taken_date: Timestamp


class ActionFile(ServiceModel):
    """A file attached to an action (spec 2.7 ``files[]``)."""

    id: str
    file_url: str
    file_type: str
    file_name: str
    created_at: Timestamp


class ActionPriority(ServiceModel):
    """An action's priority record (spec 2.7 ``priority``)."""

    id: str
    action_priority_name: str
    is_enabled: bool
    color_name: str


class ActionStatus(ServiceModel):
    """An action's tenant-defined status record (spec 2.7 ``status``)."""

    id: str
    action_status_name: str
    is_enabled: bool


class Action(ServiceModel):
    """An action (spec 2.7). ``createdBy``, ``updatedBy`` and ``deletedBy`` are names, not ids."""

    id: str
    action_id: str
    tenant_id: str
    action_name: str
    description: str
    action_type_id: str
    action_type: ActionTypeRef
    action_template_id: str
    action_template: ActionTemplateRef
    action_priority_id: str
    action_status_id: str
    decision_id: str
    decision_display_id: str
    delegation_id: str
    delegation_display_id: str
    document_id: str
    document_display_id: str
    role_id: str
    link: str
    owner_id: str
    owner: PersonSummary
    due_date: Timestamp
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str
    deleted_by: str
    deleted_on: Timestamp
    copied_from: str
    is_deleted: bool
    is_system_generated: bool
    assignees: list[ActionAssignee]
    files: list[ActionFile]
    priority: ActionPriority
    status: ActionStatus
    permissions: list[Permission]


class ActionTemplateType(ServiceModel):
    """The type inside an action template (spec 2.12 ``type``)."""

    id: str
    tenant_id: str
    type: str
    type_icon: str
    status: bool
    is_custom: bool
    is_deleted: bool
    deleted_at: Timestamp
    created_at: Timestamp
    updated_at: Timestamp


class ActionTemplate(ServiceModel):
    """An action template (spec 2.12), the data of E10."""

    id: str
    tenant_id: str
    name: str
    description: str
    source: str
    type: ActionTemplateType
    status: bool
    is_deleted: bool
    deleted_at: Timestamp
    created_at: Timestamp
    updated_at: Timestamp


class DeleteActions(RequestModel):
    """Body of E2, ``DELETE /actions/v1/actions``: at least one action id."""

    ids: list[str] = Field(min_length=1)


class ValidateAction(RequestModel):
    """Body of E5, ``PATCH /actions/v1/actions/validate-action``.

    The spec does not say which fields are required; public-reference.md: ``tenantId`` is required,
    ``delegationId`` and ``decisionId`` are optional.
    """

    tenant_id: UuidStr
    delegation_id: UuidStr | None = None
    decision_id: UuidStr | None = None


class ValidateActionResult(ServiceModel):
    """The data of E5: ``{actionName, isExist, userId}``."""

    action_name: str
    is_exist: bool
    user_id: str


class ActionFileInput(RequestModel):
    """A file in E6's body. Assumption: all three parts are required (the spec does not say)."""

    file_url: str
    file_type: str
    file_name: str


class UpdateAction(RequestModel):
    """Body of E6, ``PATCH /actions/v1/actions/{id}``. The spec shows neither required fields nor length
    limits: every field is optional and unbounded."""

    action_name: str | None = None
    description: str | None = None
    action_type_id: UuidStr | None = None
    action_template_id: UuidStr | None = None
    action_priority_id: UuidStr | None = None
    action_status_id: UuidStr | None = None
    decision_id: UuidStr | None = None
    delegation_id: UuidStr | None = None
    document_id: UuidStr | None = None
    owner_id: UuidStr | None = None
    due_date: Timestamp | None = None
    assignee_ids: list[UuidStr] | None = None
    files: list[ActionFileInput] | None = None
