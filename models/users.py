"""Users (spec 2.1-2.5) and the body of E1, update user entities.

The length limits of the response tables are the service's own; they are not re-checked when a record is
read, so that one over-long value cannot stop a sync. Request limits (E1) are enforced before sending.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import EmailStr, Field, field_validator

from models.base import (
    PHONE_PATTERN,
    PRINTABLE,
    RequestModel,
    ServiceModel,
    Timestamp,
    UuidStr,
    refuse_null,
)


class UserStatus(StrEnum):
    """User states (spec section 3)."""

    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"
    INVITED = "INVITED"
    DELETED = "DELETED"


class UserPosition(ServiceModel):
    """A position held by a user (spec 2.4); also the item of E9."""

    id: str
    user_id: str
    tenant_id: str
    positions_id: str
    auto_provisioned: bool
    instance_id: str | None
    is_editable: bool
    is_deleted: bool
    deleted_on: Timestamp | None
    created_on: Timestamp
    updated_on: Timestamp
    position_name: str
    is_scim_provisioned: bool = Field(alias="isSCIMProvisioned")
    external_id: str | None


class Manager(ServiceModel):
    """A user's manager (spec 2.2); ``primaryOrganization`` is free-form because its fields are not shown."""

    id: str
    user_id: str
    idp_user_id: str
    name: str | None
    email: str | None
    first_name: str | None
    last_name: str | None
    display_name: str | None
    mobile_phone: str | None
    profile_image_url: str | None
    created_on: Timestamp
    updated_on: Timestamp
    user_positions: list[UserPosition]
    primary_organization: dict[str, Any] | None
    manager_name: str | None
    manager_profile_image_url: str | None


class UserRole(ServiceModel):
    """A role held by a user (spec 2.3)."""

    id: str
    tenant_id: str
    tenant_role_id: str
    role_name: str
    auto_provisioned: bool
    instance_id: str | None
    created_on: Timestamp
    deleted_on: Timestamp | None
    updated_on: Timestamp


class UserGroup(ServiceModel):
    """A group membership of a user (spec 2.5); the fields the spec does not show are kept as extras."""

    id: str
    tenant_id: str
    user_id: str
    group_id: str
    group_type_id: str
    group_name: str
    group_type_name: str
    display_name: str | None


class DashboardItem(ServiceModel):
    """One dashboard grid layout item of a user (spec 2.1 ``dashboardData``)."""

    x: int
    y: int
    w: int
    h: int
    i: str


class User(ServiceModel):
    """A user (spec 2.1). Every field is required except ``status``, ``dateFormat`` and ``isImpersonated``.

    ``status`` may be omitted (then it is None) but is never null on the wire, so an explicit null is refused.
    """

    id: str
    user_id: str
    login_id: str | None
    idp_user_id: str
    active_tenant_id: str | None
    email: str | None
    name: str | None
    display_name: str | None
    is_saml: bool = Field(alias="isSAML")
    mobile_phone: str | None
    first_name: str | None
    last_name: str | None
    profile_image_url: str | None
    currency_name: str | None
    currency_code: str | None
    status: UserStatus | None = None
    account_type: str | None
    auto_provisioned: bool
    employee_id: str | None
    employee_number: str | None
    employee_type: str | None
    employment_type: str | None
    date_format: str = "MM/DD/YYYY"
    user_type: str | None
    source_id: str | None
    actor_type: str | None
    ai_agent_type: str | None
    start_date: Timestamp | None
    termination_date: Timestamp | None
    custom_attributes: dict[str, Any] | None
    external_id: str | None
    instance_id: str | None
    system_integration_id: str | None
    display_language: str | None
    column_view_settings: dict[str, Any] | None
    search_data: list[str]
    manager_sync: bool
    manager: Manager
    is_deleted: bool
    is_expire_password: bool
    created_on: Timestamp
    last_login_date: Timestamp
    created_by: str | None
    updated_on: Timestamp
    updated_by: str | None
    deleted_on: Timestamp | None
    delegations_received: int | None
    delegations_issued: int | None
    dashboard_data: list[DashboardItem] | None
    user_roles: list[UserRole]
    user_positions: list[UserPosition]
    user_groups: list[UserGroup]
    is_impersonated: bool = False

    _status_not_null = field_validator("status", mode="before")(refuse_null)


class UserGroupAssignment(RequestModel):
    """One item of E1's ``groups``: the group and whether it is the user's primary organization."""

    group_id: UuidStr
    is_primary_org: bool | None = None


class UpdateUserEntities(RequestModel):
    """Body of E1, ``PATCH /auth/v1/user/update-entities/{id}``: ``tenantId`` is the only required field.

    Assumption (the spec does not say): ``roleIds``, ``positionIds`` and ``groups`` REPLACE the user's whole
    set of roles, positions and groups; send the complete list, or leave the field unset to keep the set.
    ``name`` is deprecated (spec 9.4); use ``firstName``, ``lastName`` and ``displayName``.
    """

    tenant_id: UuidStr
    manager_id: UuidStr | None = None
    role_ids: list[UuidStr] | None = None
    position_ids: list[UuidStr] | None = None
    groups: list[UserGroupAssignment] | None = None
    email: Annotated[EmailStr, Field(max_length=100)] | None = None
    name: Annotated[str, Field(max_length=50), PRINTABLE] | None = Field(
        default=None, description="Deprecated: use firstName, lastName, displayName."
    )
    display_name: Annotated[str, Field(max_length=50), PRINTABLE] | None = None
    first_name: Annotated[str, Field(max_length=50), PRINTABLE] | None = None
    last_name: Annotated[str, Field(max_length=20), PRINTABLE] | None = None
    account_type: Annotated[str, Field(max_length=20)] | None = None
    user_type: Annotated[str, Field(max_length=20)] | None = None
    employee_id: str | None = None
    employee_number: str | None = None
    employee_type: Annotated[str, Field(max_length=20)] | None = None
    employment_type: Annotated[str, Field(max_length=20)] | None = None
    mobile_phone: Annotated[str, Field(pattern=PHONE_PATTERN, max_length=25)] | None = None
    profile_image_url: Annotated[str, Field(max_length=50)] | None = None
    currency_code: str | None = None
    currency_name: str | None = None
    status: UserStatus | None = None
    date_format: str | None = None
    source_id: Annotated[str, Field(max_length=100)] | None = None
    actor_type: Annotated[str, Field(max_length=50)] | None = None
    ai_agent_type: Annotated[str, Field(max_length=50)] | None = None
    start_date: Timestamp | None = None
    termination_date: Timestamp | None = None
    custom_attributes: dict[str, Any] | None = None
