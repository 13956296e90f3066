"""Matrices (spec 2.11) and the body of E7, update matrix."""

from __future__ import annotations

from pydantic import Field

from models.actions import ManagerSummary, PositionSummary
from models.base import RequestModel, ServiceModel, Timestamp, UuidStr
from models.decisions import Permission


class MatrixStatus(ServiceModel):
    """A matrix's tenant-defined status record."""

    id: str
    status_name: str
    is_active: bool


class UserDetailsOrganization(ServiceModel):
    """The primary organization inside ``userDetails``."""

    group_name: str
    display_name: str
    tenant_group_type_id: str
    tenant_group_type_name: str


class UserDetailsRole(ServiceModel):
    """A role inside ``userDetails``: ``{tenantRoleId, roleName}``."""

    tenant_role_id: str
    role_name: str


class UserDetailsGroup(ServiceModel):
    """A group inside ``userDetails``: ``{groupId, groupTypeId}``."""

    group_id: str
    group_type_id: str


class UserDetails(ServiceModel):
    """A user as matrices show them (spec 2.11 ``userDetails``)."""

    id: str
    email: str
    name: str
    display_name: str
    first_name: str
    last_name: str
    mobile_phone: str
    is_active: bool
    profile_image_url: str
    positions: list[PositionSummary]
    primary_organization: UserDetailsOrganization
    position_ids: list[str]
    primary_organization_id: str
    manager: ManagerSummary
    roles: list[UserDetailsRole]
    groups: list[UserDetailsGroup]


class GroupDetails(ServiceModel):
    """A group as matrices show it (spec 2.11 ``groupDetails``)."""

    id: str
    group_name: str
    display_name: str
    legal_name: str
    tenant_id: str
    group_type_name: str
    group_type_id: str
    status: str
    parent_group_ids: list[str]
    is_synced: bool


class PositionDetails(ServiceModel):
    """A position as matrices show it (spec 2.11 ``positionDetails``)."""

    id: str
    tenant_id: str
    position_name: str
    is_scim_provisioned: bool
    status: str
    group_ids: list[str]


class MatrixSharingUser(ServiceModel):
    """A user a matrix is shared with."""

    id: str
    user_id: str
    user_details: UserDetails


class MatrixSharingGroup(ServiceModel):
    """A group a matrix is shared with."""

    id: str
    group_id: str
    group_details: GroupDetails


class MatrixSharing(ServiceModel):
    """How a matrix is shared. The allowed values of ``type`` and ``sharingOption`` are not shown."""

    id: str
    type: str
    sharing_option: str
    link: bool
    viewer_adjustable_filters: bool
    external_sharing: bool
    users: list[MatrixSharingUser]
    groups: list[MatrixSharingGroup]


class MatrixAuthorityRole(ServiceModel):
    """An authority role shown by a matrix."""

    id: str
    authority_role_id: str
    is_enabled: bool


class MatrixGroup(ServiceModel):
    """A group shown by a matrix."""

    id: str
    tenant_groups_mapping_id: str
    group_details: GroupDetails


class MatrixPosition(ServiceModel):
    """A position shown by a matrix."""

    id: str
    position_id: str
    position_details: PositionDetails


class MatrixUser(ServiceModel):
    """A user shown by a matrix."""

    id: str
    user_id: str
    user_details: UserDetails


class MatrixDecision(ServiceModel):
    """A decision shown by a matrix, possibly disabled."""

    id: str
    decision_id: str
    is_disabled: bool
    disabled_on: Timestamp | None


class MatrixSection(ServiceModel):
    """A decision section shown by a matrix."""

    section_id: str
    name: str


class MatrixCategory(ServiceModel):
    """A decision category shown by a matrix."""

    category_id: str
    name: str


class LimitRange(ServiceModel):
    """A ``{min, max}`` range of a primary limit type."""

    min: float
    max: float


class PrimaryLimitTypes(ServiceModel):
    """The primary limit types of a matrix's delegation view; the wire keys contain spaces and brackets."""

    value_currency: LimitRange = Field(alias="Value (Currency)")
    time_months: LimitRange = Field(alias="Time (Months)")
    time_years: LimitRange = Field(alias="Time (Years)")
    authority: bool = Field(alias="Authority")


class MatrixDelegation(ServiceModel):
    """What a matrix's delegation view shows (spec 2.11 ``matrixDelegation``)."""

    delegation_role: bool
    delegation_data_details: bool
    delegation_data_groups: bool
    delegation_data_documents: bool
    delegation_data_conditions: bool
    delegation_data_authorities: bool
    delegation_data_roles: bool
    authority_type_ids: list[str]
    role_ids: list[str]
    issuance_status_names: list[str]
    primary_limit_types: PrimaryLimitTypes


class MatrixAuthorityFormatting(ServiceModel):
    """How a matrix formats authority values; ``valueAbbrevations`` is spelled as the spec spells it."""

    value_abbrevations: str
    value_rounding: str
    time_unit: str
    time_rounding: str
    delegation_identification: str
    display_currency_code: str


class MatrixExternalSharing(ServiceModel):
    """A matrix's external sharing link (spec 2.11 ``matrixExternalSharing``)."""

    id: str
    link: str
    is_expiration_enabled: bool
    expiration_date: Timestamp
    is_password_required: bool
    matrix_sharing_id: str
    matrix_id: str
    created_on: Timestamp
    updated_on: Timestamp
    password: str = Field(repr=False)


class Matrix(ServiceModel):
    """A matrix (spec 2.11), the data of E7."""

    id: str
    matrix_id: str
    matrix_name: str
    matrix_description: str
    link: str
    tenant_id: str
    owner_id: str
    copied_from_matrix: str
    role_matrix: bool
    authority_matrix: bool
    is_favorite: bool
    is_user_saved_personal_view: bool
    decision_count: int
    delegation_count: int
    suspended_delegations_count: int
    pending_delegations_count: int
    created_on: Timestamp
    updated_on: Timestamp
    current_tab: str
    matrix_status: MatrixStatus
    matrix_sharing: MatrixSharing
    matrix_authority_roles: list[MatrixAuthorityRole]
    matrix_groups: list[MatrixGroup]
    matrix_positions: list[MatrixPosition]
    matrix_users: list[MatrixUser]
    matrix_decisions: list[MatrixDecision]
    matrix_sections: list[MatrixSection]
    matrix_categories: list[MatrixCategory]
    owner_details: UserDetails
    matrix_delegation: MatrixDelegation
    matrix_authority_formatting: MatrixAuthorityFormatting
    permissions: list[Permission]
    matrix_external_sharing: MatrixExternalSharing


class MatrixExternalSharingUpdate(RequestModel):
    """The external sharing settings in E7's body; every part is optional."""

    is_enabled: bool | None = None
    is_expiration_enabled: bool | None = None
    expiration_date: Timestamp | None = None
    is_password_required: bool | None = None
    password: str | None = Field(default=None, repr=False)


class UpdateMatrix(RequestModel):
    """Body of E7, ``PUT /matrix/v1/matrix/{id}``. The spec does not say which fields are required, so none
    is; nor does it say whether a field left out of this PUT is cleared or kept.

    ``tenantId``, ``ownerId`` and ``matrixStatusId`` are plain strings, as the spec types them; the id
    arrays are UUIDs.
    """

    matrix_name: str | None = None
    matrix_description: str | None = None
    matrix_status_id: str | None = None
    tenant_id: str | None = None
    owner_id: str | None = None
    current_tab: str | None = None
    authority_matrix: bool | None = None
    role_matrix: bool | None = None
    authority_role_ids: list[UuidStr] | None = None
    group_ids: list[UuidStr] | None = None
    position_ids: list[UuidStr] | None = None
    user_ids: list[UuidStr] | None = None
    decision_ids: list[UuidStr] | None = None
    matrix_external_sharing: MatrixExternalSharingUpdate | None = None
