"""Groups (spec 2.8) and the body of E3, update group."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from models.base import PRINTABLE, Count, RequestModel, ServiceModel, Timestamp, UuidStr


class GroupStatus(StrEnum):
    """Group states (spec section 3)."""

    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"


class DisableOption(StrEnum):
    """What happens to a group's associations when it is disabled (spec section 3)."""

    KEEP_ASSOCIATIONS = "KEEP_ASSOCIATIONS"
    REMOVE_ASSOCIATIONS = "REMOVE_ASSOCIATIONS"
    NA = "NA"


class TenantGroupType(ServiceModel):
    """A group's type (spec 2.8 ``tenantGroupType``)."""

    id: str
    group_type_name: str
    should_allow_enable_disable: bool
    is_default: bool


class GroupTypeSummary(ServiceModel):
    """The short group type inside a parent group: ``{id, groupTypeName}``."""

    id: str
    group_type_name: str


class GroupAddress(ServiceModel):
    """A group's address (spec 2.8 ``address``)."""

    id: str
    group_id: str
    street1: str
    street2: str
    city: str
    state: str
    state_code: str
    zip_code: str
    country: str
    country_code: str
    created_on: Timestamp
    updated_on: Timestamp


class ParentGroupSummary(ServiceModel):
    """The parent group inside a parent link (spec 2.8 ``parentGroups[].parentGroup``)."""

    id: str
    tenant_id: str
    group_id: str
    group_name: str
    display_name: str
    legal_name: str
    tenant_group_type: GroupTypeSummary


class GroupParent(ServiceModel):
    """A link from a group to one of its parents (spec 2.8 ``parentGroups[]``)."""

    id: str
    parent_id: str
    created_at: Timestamp
    parent_group: ParentGroupSummary


class Group(ServiceModel):
    """A group (spec 2.8). ``baseCurrency`` may be an empty string.

    ``status`` is not in the 2.8 table: public-reference.md says the group record carries it (ACTIVE or
    INACTIVE), so it is read when present and None otherwise.
    """

    id: str
    tenant_id: str
    group_id: str
    group_name: str
    created_on: Timestamp
    updated_on: Timestamp
    is_synced: bool
    tenant_group_type: TenantGroupType
    is_deleted: bool
    disable_option: DisableOption
    base_currency: str
    display_name: str
    legal_name: str
    external_id: str
    instance_id: str
    address: GroupAddress
    parent_groups: list[GroupParent]
    decisions_count: Count
    delegations_count: Count
    status: GroupStatus | None = None


class AddressUpdate(RequestModel):
    """The address in E3's body; every part is optional."""

    street1: str | None = None
    street2: str | None = None
    city: str | None = None
    state: str | None = None
    state_code: str | None = None
    zip_code: str | None = None
    country: str | None = None
    country_code: str | None = None


class UpdateGroup(RequestModel):
    """Body of E3, ``PATCH /settings/v1/groups/{id}``. Nothing is required: send only what changes.

    The status key is ``status`` (public-reference.md; the spec labels it only "Status").
    """

    group_name: Annotated[str, Field(max_length=100), PRINTABLE] | None = None
    display_name: Annotated[str, Field(max_length=100), PRINTABLE] | None = None
    legal_name: Annotated[str, Field(max_length=100), PRINTABLE] | None = None
    status: GroupStatus | None = None
    is_deleted: bool | None = None
    add_parent_group_ids: list[UuidStr] | None = None
    remove_parent_group_ids: list[UuidStr] | None = None
    disable_option: DisableOption | None = None
    address: AddressUpdate | None = None
