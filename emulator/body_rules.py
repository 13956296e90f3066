"""The emulator's own check of the E1 and E3 request bodies, written from the spec's field tables.

The client builds these bodies with its request models (`models.users.UpdateUserEntities`,
`models.groups.UpdateGroup`). If the emulator validated them with the same models, a mismatch between the
client and the spec would be invisible in either direction; so it checks them here, from the tables of
``service-interface.md`` (E1, E3) on their own, and its OpenAPI request schemas come from the same tables.

Beyond the tables, as a strict service would: a body is a JSON object; an unknown field, an explicit
``null``, a timestamp without a four-digit year or a name with a control character or line break is
refused with a 400 naming the field and the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from emulator.service import ServiceError

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_PHONE = re.compile(r"^[0-9+().\s-]{7,25}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ADDRESS_KEYS = ("street1", "street2", "city", "state", "stateCode", "zipCode", "country", "countryCode")


@dataclass(frozen=True)
class Rule:
    """One body field: its kind, length limit, allowed values, and whether it is a name."""

    kind: str
    """uuid, string, email, phone, enum, timestamp, bool, object, uuids, groups or address."""
    max_length: int | None = None
    values: tuple[str, ...] = ()
    name: bool = False
    required: bool = False


E1_BODY: dict[str, Rule] = {
    "tenantId": Rule("uuid", required=True),
    "managerId": Rule("uuid"),
    "roleIds": Rule("uuids"),
    "positionIds": Rule("uuids"),
    "groups": Rule("groups"),
    "email": Rule("email", 100),
    "name": Rule("string", 50, name=True),
    "displayName": Rule("string", 50, name=True),
    "firstName": Rule("string", 50, name=True),
    "lastName": Rule("string", 20, name=True),
    "accountType": Rule("string", 20),
    "userType": Rule("string", 20),
    "employeeId": Rule("string"),
    "employeeNumber": Rule("string"),
    "employeeType": Rule("string", 20),
    "employmentType": Rule("string", 20),
    "mobilePhone": Rule("phone", 25),
    "profileImageUrl": Rule("string", 50),
    "currencyCode": Rule("string"),
    "currencyName": Rule("string"),
    "status": Rule("enum", values=("ACTIVE", "INACTIVE", "INVITED", "DELETED")),
    "dateFormat": Rule("string"),
    "sourceId": Rule("string", 100),
    "actorType": Rule("string", 50),
    "aiAgentType": Rule("string", 50),
    "startDate": Rule("timestamp"),
    "terminationDate": Rule("timestamp"),
    "customAttributes": Rule("object"),
}
"""E1, user update-entities: the spec's table."""

E3_BODY: dict[str, Rule] = {
    "groupName": Rule("string", 100, name=True),
    "displayName": Rule("string", 100, name=True),
    "status": Rule("enum", values=("ACTIVE", "INACTIVE")),
    "isDeleted": Rule("bool"),
    "addParentGroupIds": Rule("uuids"),
    "removeParentGroupIds": Rule("uuids"),
    "disableOption": Rule("enum", values=("KEEP_ASSOCIATIONS", "REMOVE_ASSOCIATIONS", "NA")),
    "legalName": Rule("string", 100, name=True),
    "address": Rule("address"),
}
"""E3, group update: the spec's table (no field is shown as required)."""


def checked(rules: dict[str, Rule], body: Any) -> dict[str, Any]:
    """``body`` when it keeps every rule, else a 400 naming the first field and rule it breaks."""
    if not isinstance(body, dict):
        raise ServiceError(400, "body: must be a JSON object", "body")
    for key in (key for key, rule in rules.items() if rule.required and key not in body):
        raise ServiceError(400, f"{key}: is required", key)
    for key, value in body.items():
        if key not in rules:
            raise ServiceError(400, f"{key}: is not a field of this request", key)
        where, problem = _problem(rules[key], value)
        if value is None:
            where, problem = "", "must not be null"
        if problem:
            field = f"{key}.{where}" if where else key
            raise ServiceError(400, f"{field}: {problem}", field)
    return body


def _problem(rule: Rule, value: Any) -> tuple[str, str | None]:
    """Where in the value (a list index, an item's key; "" for the value itself) and what is wrong."""
    if value is None:
        return "", None
    if rule.kind == "uuids":
        return _uuids(value)
    if rule.kind == "groups":
        return _groups(value)
    if rule.kind == "address":
        return _address(value)
    problem = _CHECKS[rule.kind](rule, value)
    too_long = isinstance(value, str) and rule.max_length is not None and len(value) > rule.max_length
    if problem is None and too_long:
        problem = f"must be at most {rule.max_length} characters"
    if problem is None and rule.name and _CONTROL.search(value):
        problem = "must not hold control characters or line breaks"
    return "", problem


def _string(rule: Rule, value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _uuid(rule: Rule, value: Any) -> str | None:
    return None if isinstance(value, str) and _UUID.match(value) else "must be a uuid"


def _email(rule: Rule, value: Any) -> str | None:
    return None if isinstance(value, str) and _EMAIL.match(value) else "must be an email address"


def _phone(rule: Rule, value: Any) -> str | None:
    ok = isinstance(value, str) and _PHONE.match(value)
    return None if ok else "must be 7 to 25 digits, plus, parentheses, dots, spaces or hyphens"


def _enum(rule: Rule, value: Any) -> str | None:
    return None if value in rule.values else f"must be one of {', '.join(rule.values)}"


def _timestamp(rule: Rule, value: Any) -> str | None:
    if isinstance(value, str) and _TIMESTAMP.match(value):
        try:
            datetime.fromisoformat(value)
            return None
        except ValueError:
            pass
    return "must be an ISO 8601 date-time with a four-digit year and an offset (e.g. 2026-05-01T00:00:00Z)"


def _bool(rule: Rule, value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _object(rule: Rule, value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be an object"


def _uuids(value: Any) -> tuple[str, str | None]:
    if not isinstance(value, list):
        return "", "must be an array of uuids"
    for index, item in enumerate(value):
        if not (isinstance(item, str) and _UUID.match(item)):
            return str(index), "must be a uuid"
    return "", None


def _groups(value: Any) -> tuple[str, str | None]:
    if not isinstance(value, list):
        return "", "must be an array of {groupId, isPrimaryOrg}"
    for index, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"groupId", "isPrimaryOrg"}:
            return str(index), "must be {groupId, isPrimaryOrg}"
        if not (isinstance(item.get("groupId"), str) and _UUID.match(item["groupId"])):
            return f"{index}.groupId", "must be a uuid"
        if not isinstance(item.get("isPrimaryOrg", False), bool):
            return f"{index}.isPrimaryOrg", "must be true or false"
    return "", None


def _address(value: Any) -> tuple[str, str | None]:
    if not isinstance(value, dict):
        return "", f"must be an object of {', '.join(_ADDRESS_KEYS)}"
    for key, item in value.items():
        if key not in _ADDRESS_KEYS:
            return str(key), "is not an address field"
        if not isinstance(item, str):
            return str(key), "must be a string"
    return "", None


_CHECKS = {
    "string": _string,
    "uuid": _uuid,
    "email": _email,
    "phone": _phone,
    "enum": _enum,
    "timestamp": _timestamp,
    "bool": _bool,
    "object": _object,
}

_UUID_SCHEMA = {"type": "string", "format": "uuid"}
_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "uuid": _UUID_SCHEMA,
    "email": {"type": "string", "format": "email"},
    "phone": {"type": "string", "pattern": _PHONE.pattern},
    "timestamp": {"type": "string", "format": "date-time"},
    "bool": {"type": "boolean"},
    "object": {"type": "object"},
    "uuids": {"type": "array", "items": _UUID_SCHEMA},
    "groups": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"groupId": _UUID_SCHEMA, "isPrimaryOrg": {"type": "boolean"}},
            "required": ["groupId"],
            "additionalProperties": False,
        },
    },
    "address": {
        "type": "object",
        "properties": {key: {"type": "string"} for key in _ADDRESS_KEYS},
        "additionalProperties": False,
    },
}


def openapi_body(rules: dict[str, Rule]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` the rules describe (for ``openapi_extra``)."""
    properties: dict[str, dict[str, Any]] = {}
    for key, rule in rules.items():
        field: dict[str, Any] = (
            {"type": "string", "enum": list(rule.values)}
            if rule.kind == "enum"
            else dict(_SCHEMAS[rule.kind])
        )
        if rule.max_length is not None:
            field["maxLength"] = rule.max_length
        properties[key] = field
    required = [key for key, rule in rules.items() if rule.required]
    body: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        body["required"] = required
    return {"required": True, "content": {"application/json": {"schema": body}}}
