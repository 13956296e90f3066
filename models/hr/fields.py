"""The fields the HR sync compares and writes, and their comparable values.

One function per entity kind turns a service record (`User`, `Group`) into plain values: the planner diffs
the warehouse's copy with them, and the applier compares the service's current record and each write's
response with them. Using the same function on both sides is what makes "unchanged since planning" and
"the response matches what was sent" exact comparisons.

Values are JSON-ready: a string, a list of ids, or None. Dates compare as ``YYYY-MM-DD`` because HR
exports carry dates while the service stores timestamps; references compare as ids.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from models.base import Timestamp
from models.groups import Group
from models.users import User, UserStatus

EntityKind = Literal["user", "group"]
Value = str | list[str] | None
Values = dict[str, Value]

USER_TEXT_FIELDS = (
    "employee_id",
    "email",
    "first_name",
    "last_name",
    "display_name",
    "mobile_phone",
    "employee_type",
    "employment_type",
)
USER_DATE_FIELDS = ("start_date", "termination_date")
USER_REFERENCE_FIELDS = ("manager", "positions", "groups", "roles")
USER_FIELDS = (*USER_TEXT_FIELDS, "status", *USER_DATE_FIELDS, *USER_REFERENCE_FIELDS)
"""Every user field a mapping may name (besides ``tenant``)."""

GROUP_TEXT_FIELDS = ("external_id", "group_name", "display_name", "legal_name")
GROUP_FIELDS = (*GROUP_TEXT_FIELDS, "status", "parent")
"""Every group field a mapping may name (besides ``tenant``). ``external_id`` identifies; E3 cannot set it."""

READ_ONLY_GROUP_FIELDS = frozenset({"external_id"})
"""Group fields used to match rows but never written (E3 has no such body field)."""


class _Lean(BaseModel):
    """A record as the HR sync reads it: camelCase on the wire, every other field ignored (a user record
    carries dashboards, settings and custom attributes the sync never compares)."""

    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, extra="ignore", frozen=True
    )


class _ManagerRef(_Lean):
    id: str


class _PositionLink(_Lean):
    positions_id: str
    is_deleted: bool


class _GroupLink(_Lean):
    group_id: str


class _RoleLink(_Lean):
    tenant_role_id: str
    role_name: str
    deleted_on: Timestamp | None


class UserFields(_Lean):
    """The fields of a user (spec 2.1) the HR sync plans with, read with `User`'s own types: the planner
    loads a whole tenant of these, a fraction of the memory of whole `User` records."""

    id: str
    name: str | None
    employee_id: str | None
    email: str | None
    first_name: str | None
    last_name: str | None
    display_name: str | None
    mobile_phone: str | None
    employee_type: str | None
    employment_type: str | None
    status: UserStatus | None = None
    start_date: Timestamp | None
    termination_date: Timestamp | None
    manager: _ManagerRef
    user_positions: list[_PositionLink]
    user_groups: list[_GroupLink]
    user_roles: list[_RoleLink]
    updated_on: Timestamp


def user_values(user: User | UserFields) -> Values:
    """The comparable values of a user, one per field of `USER_FIELDS`."""
    return {
        **{name: getattr(user, name) for name in USER_TEXT_FIELDS},
        "status": user.status.value if user.status else None,
        "start_date": _day(user.start_date),
        "termination_date": _day(user.termination_date),
        "manager": user.manager.id,
        "positions": sorted(link.positions_id for link in user.user_positions if not link.is_deleted),
        "groups": primary_first([link.group_id for link in user.user_groups]),
        "roles": sorted(link.tenant_role_id for link in user.user_roles if link.deleted_on is None),
    }


def group_values(group: Group) -> Values:
    """The comparable values of a group: one per field of `GROUP_FIELDS`, and ``disable_option``, which
    the plan sets (from the mapping) alongside a deactivation."""
    return {
        **{name: getattr(group, name) for name in GROUP_TEXT_FIELDS},
        "status": group.status.value if group.status else None,
        "disable_option": group.disable_option.value,
        "parent": sorted(link.parent_id for link in group.parent_groups),
    }


def primary_first(ids: list[str]) -> list[str]:
    """Group ids with the primary organization first and the rest sorted (their order means nothing)."""
    return ids[:1] + sorted(ids[1:])


def differs(kind: EntityKind, name: str, before: Value, after: Value) -> bool:
    """Whether setting field ``name`` from ``before`` to ``after`` is a change to plan. A group's
    external id is never written; an invited user stays invited when HR says active (the service
    activates them at first sign-in); an email differing only in case is the same mailbox (rows match
    emails ignoring case, and mail delivery ignores it)."""
    if kind == "group" and name in READ_ONLY_GROUP_FIELDS:
        return False
    if name == "status" and before == "INVITED" and after == "ACTIVE":
        return False
    if name == "email" and isinstance(before, str) and isinstance(after, str):
        return before.casefold() != after.casefold()
    return not same(before, after)


def same(left: Value, right: Value) -> bool:
    """Whether two values are equal as JSON (lists compare in order), text in Unicode's composed form
    (NFC): ``José`` typed on a Mac (decomposed) is the same name, so it is never planned as a change."""
    # Equal values encode equally: most fields of a plan are unchanged, and encoding both sides of each
    # was a fifth of planning an export.
    if left == right:
        return True
    return unicodedata.normalize("NFC", encode(left)) == unicodedata.normalize("NFC", encode(right))


def encode(value: Value) -> str:
    """A value as canonical JSON text, as stored in the plan."""
    return json.dumps(value, ensure_ascii=False)


def decode(text: str | None) -> Value:
    """A value stored by `encode`."""
    if text is None:
        return None
    value = json.loads(text)
    if value is None or isinstance(value, str):
        return value
    return [str(item) for item in value]


def _day(moment: datetime | None) -> str | None:
    return moment.date().isoformat() if moment else None
