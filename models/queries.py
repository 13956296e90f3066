"""Query models of the paged lists and revision-id lists.

The spec names the *meaning* of E8's query parameters but not their names. The names used here are the
aliases below: those documented on sibling endpoints of the service (public-reference.md) and, where none
is documented, our assumptions (``decisionIds``, ``status``, ``fields``, ``ownerUserIds``, ``issuerType``,
``createdAtStart``/``createdAtEnd``, ``updatedAtStart``/``updatedAtEnd``). The aliases are the single
place that holds the wire names; the client can override any of them (``param_names``).

Lists travel comma-separated (``status=DRAFT,PUBLISHED``); repeated parameters are accepted as well.
``authorityLimitValueFilters`` travels as a JSON array (assumption: the reference shows its items but not
how a GET carries them).
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from models.base import RequestModel, Timestamp, UuidStr, format_timestamp

DEFAULT_PAGE = 1
DEFAULT_LIMIT = 10
MAX_LIMIT = 100


def _split_commas(value: Any) -> Any:
    """Accept ``"a,b"``, ``["a,b"]`` and ``["a", "b"]`` alike; blanks are dropped."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return value
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


def _parse_json_list(value: Any) -> Any:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be a JSON array: {exc.msg}") from exc
    return value


def _single(value: Any) -> Any:
    # A repeated scalar parameter (?page=1&page=2) arrives as a list: the last one wins, as in most servers.
    return value[-1] if isinstance(value, list) and value else value


CsvList = Annotated[list[str], BeforeValidator(_split_commas)]
"""A list sent as one comma-separated parameter."""


class SortOrder(StrEnum):
    """Sort direction of every sortable list."""

    ASC = "asc"
    DESC = "desc"


class DecisionStatus(StrEnum):
    """Decision states (spec section 3)."""

    DRAFT = "DRAFT"
    PUBLISHED = "PUBLISHED"
    ARCHIVED = "ARCHIVED"
    DELETED = "DELETED"


class DecisionSortBy(StrEnum):
    """E8 sort criteria."""

    NAME = "name"
    SECTION_NAME = "sectionName"
    CATEGORY_NAME = "categoryName"
    STATUS = "status"
    UPDATED_AT = "updatedAt"
    CREATED_AT = "createdAt"
    DELEGATIONS_COUNT = "delegationsCount"
    AUTHORITY_LIMIT_SORT_PRECEDENCE = "authorityLimitSortPrecedence"
    DECISION_DISPLAY_ID = "decisionDisplayId"
    RANK = "rank"


class AuthorityLimitValueType(StrEnum):
    """E8 authority value types."""

    CURRENCY = "Currency"
    NUMBER = "Number"
    DAYS = "Days"
    MONTHS = "Months"
    YEARS = "Years"
    AUTHORIZED = "Authorized"
    PERCENTAGE = "Percentage"


class DecisionField(StrEnum):
    """Names E8's ``fields`` projection accepts, mapped to the decision's JSON key by `json_key`."""

    DECISION_ID = "DECISION_ID"
    NAME = "NAME"
    DECISION_DISPLAY_ID = "DECISION_DISPLAY_ID"
    DESCRIPTION = "DESCRIPTION"
    GUIDANCE = "GUIDANCE"
    SECTION_ID = "SECTION_ID"
    SECTION_NAME = "SECTION_NAME"
    CATEGORY_ID = "CATEGORY_ID"
    CATEGORY_NAME = "CATEGORY_NAME"
    STATUS = "STATUS"
    PREVIOUS_STATUS = "PREVIOUS_STATUS"
    CREATED_BY = "CREATED_BY"
    CREATED_BY_USERNAME = "CREATED_BY_USERNAME"
    UPDATED_BY = "UPDATED_BY"
    UPDATED_BY_USERNAME = "UPDATED_BY_USERNAME"
    CREATED_AT = "CREATED_AT"
    UPDATED_AT = "UPDATED_AT"
    OWNER = "OWNER"
    OWNER_USERNAME = "OWNER_USERNAME"
    COPIED_FROM = "COPIED_FROM"
    CONDITION_ENABLED = "CONDITION_ENABLED"
    ROLE_ENABLED = "ROLE_ENABLED"
    DELEGABLE = "DELEGABLE"
    DELEGATION_PATHWAY = "DELEGATION_PATHWAY"
    LINK = "LINK"
    DELEGATIONS_COUNT = "DELEGATIONS_COUNT"
    AUTHORITY_LIMIT_SORT_PRECEDENCE = "AUTHORITY_LIMIT_SORT_PRECEDENCE"
    DECISION_AUTHORITIES = "DECISION_AUTHORITIES"
    DECISION_GROUPS = "DECISION_GROUPS"
    DECISION_DOCUMENTS = "DECISION_DOCUMENTS"

    @property
    def json_key(self) -> str:
        """The decision record's JSON key this name selects (DELEGATIONS_COUNT is ``delegations``)."""
        return _FIELD_KEYS.get(self, _camel(self.value))


def _camel(upper_snake: str) -> str:
    head, *rest = upper_snake.lower().split("_")
    return head + "".join(word.capitalize() for word in rest)


_FIELD_KEYS = {
    DecisionField.DELEGATIONS_COUNT: "delegations",
    DecisionField.OWNER: "owner",
}


class AuthorityLimitValueFilter(RequestModel):
    """One item of E8's authority limit value filters (public-reference.md): values are strings and
    ``maxValue`` may be ``Unlimited``."""

    authority_limit_value_type: AuthorityLimitValueType
    min_value: str | None = None
    max_value: str | None = None


class PageQuery(RequestModel):
    """Paging shared by every paged list: ``page >= 1`` (default 1), ``limit`` 1..100 (default 10)."""

    page: Annotated[int, Field(ge=1), BeforeValidator(_single)] = DEFAULT_PAGE
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT), BeforeValidator(_single)] = DEFAULT_LIMIT

    def to_params(self, names: dict[str, str] | None = None) -> dict[str, str]:
        """Query parameters for the wire; ``names`` overrides a field's default wire name."""
        names = names or {}
        params: dict[str, str] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is not None:
                params[names.get(name) or field.alias or name] = _encode(value)
        return params


def _encode(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, list) and value and isinstance(value[0], RequestModel):
        return json.dumps([item.to_wire() for item in value], separators=(",", ":"))
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


class UpdatedRange(PageQuery):
    """Paged list filterable by an updated-at range (assumed names ``updatedAtStart``/``updatedAtEnd``)."""

    updated_at_start: Annotated[Timestamp | None, BeforeValidator(_single)] = None
    updated_at_end: Annotated[Timestamp | None, BeforeValidator(_single)] = None


class DecisionQuery(UpdatedRange):
    """Every filter of E8 (spec table "List decisions"), by meaning; see the module docstring for names."""

    tenant_id: Annotated[UuidStr | None, BeforeValidator(_single)] = None
    decision_ids: CsvList | None = None
    status: Annotated[list[DecisionStatus] | None, BeforeValidator(_split_commas)] = None
    search: Annotated[str | None, BeforeValidator(_single)] = None
    section_ids: CsvList | None = None
    category_ids: CsvList | None = None
    sort_by: Annotated[DecisionSortBy | None, BeforeValidator(_single)] = None
    sort_order: Annotated[SortOrder | None, BeforeValidator(_single)] = None
    group_ids: CsvList | None = None
    delegable: Annotated[bool | None, BeforeValidator(_single)] = None
    delegations: Annotated[bool | None, BeforeValidator(_single)] = None
    authority_type_ids: CsvList | None = None
    authority_limit_value_types: Annotated[
        list[AuthorityLimitValueType] | None, BeforeValidator(_split_commas)
    ] = None
    authority_limit_value_filters: Annotated[
        list[AuthorityLimitValueFilter] | None, BeforeValidator(_parse_json_list)
    ] = None
    fields: Annotated[list[DecisionField] | None, BeforeValidator(_split_commas)] = None
    issuer_type: Annotated[str | None, BeforeValidator(_single)] = None
    owner_user_ids: CsvList | None = None
    created_at_start: Annotated[Timestamp | None, BeforeValidator(_single)] = None
    created_at_end: Annotated[Timestamp | None, BeforeValidator(_single)] = None


class UserSortBy(StrEnum):
    """Sort criteria of the user list extension (assumption: the reference documents none)."""

    UPDATED_ON = "updatedOn"
    CREATED_ON = "createdOn"
    NAME = "name"
    EMAIL = "email"


class UserQuery(UpdatedRange):
    """``GET /auth/v1/user`` (extension). Filter names are undocumented: ``search``, ``status``, the
    updated range (applied to ``updatedOn``) and the sort are assumptions."""

    search: Annotated[str | None, BeforeValidator(_single)] = None
    status: Annotated[
        list[Literal["ACTIVE", "INACTIVE", "INVITED", "DELETED"]] | None, BeforeValidator(_split_commas)
    ] = None
    sort_by: Annotated[UserSortBy | None, BeforeValidator(_single)] = None
    sort_order: Annotated[SortOrder | None, BeforeValidator(_single)] = None


class GroupSortBy(StrEnum):
    """Sort criteria of the group list extension (public-reference.md)."""

    GROUP_ID = "groupId"
    GROUP_NAME = "groupName"
    STATUS = "status"
    CREATED_ON = "createdOn"
    UPDATED_ON = "updatedOn"


class GroupQuery(UpdatedRange):
    """``GET /settings/v1/groups`` (extension): ``tenantId`` is required by the service."""

    tenant_id: Annotated[UuidStr, BeforeValidator(_single)]
    status: Annotated[list[Literal["ACTIVE", "INACTIVE"]] | None, BeforeValidator(_split_commas)] = None
    search: Annotated[str | None, BeforeValidator(_single)] = None
    sort_by: Annotated[GroupSortBy | None, BeforeValidator(_single)] = None
    sort_order: Annotated[SortOrder | None, BeforeValidator(_single)] = None


class PositionQuery(PageQuery):
    """``GET /settings/v1/positions`` (extension): ``tenantId`` is required by the service."""

    tenant_id: Annotated[UuidStr, BeforeValidator(_single)]


class DelegationStatus(StrEnum):
    """Delegation states listed by the reference for the delegation list."""

    DRAFT = "DRAFT"
    PENDING = "PENDING"
    ISSUED = "ISSUED"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"
    SUSPENDED = "SUSPENDED"
    REVOKED = "REVOKED"
    EXPIRED = "EXPIRED"
    ARCHIVED = "ARCHIVED"
    DELETED = "DELETED"


class DelegationSortBy(StrEnum):
    """Sort criteria of the delegation list (the reference says they include ``updatedAt``)."""

    UPDATED_AT = "updatedAt"
    CREATED_AT = "createdAt"
    DELEGATION_DISPLAY_ID = "delegationDisplayId"


class DelegationQuery(UpdatedRange):
    """``GET /decision/v1/delegations`` (extension). Filter names are assumptions, shared with E8."""

    tenant_id: Annotated[UuidStr | None, BeforeValidator(_single)] = None
    status: Annotated[list[DelegationStatus] | None, BeforeValidator(_split_commas)] = None
    decision_ids: CsvList | None = None
    sort_by: Annotated[DelegationSortBy | None, BeforeValidator(_single)] = None
    sort_order: Annotated[SortOrder | None, BeforeValidator(_single)] = None


class RevisionQuery(RequestModel):
    """E11/E12: the one query parameter, sort order of revision ids (name assumed ``sortOrder``)."""

    sort_order: Annotated[SortOrder | None, BeforeValidator(_single)] = None

    def to_params(self, names: dict[str, str] | None = None) -> dict[str, str]:
        """Query parameters for the wire."""
        if self.sort_order is None:
            return {}
        return {(names or {}).get("sort_order", "sortOrder"): self.sort_order.value}
