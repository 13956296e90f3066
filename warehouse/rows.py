"""Flatten service records into warehouse rows, one dict per row keyed by column name.

Each function returns the rows of every table a record feeds (a decision feeds ``decisions`` and its three
child tables). ``raw`` is the record's JSON exactly as the service sent it (an embedded item's: its own
text out of its parent's), unknown fields kept; ``content_hash`` covers the record's own content only
(`OwnContent`), so history gains a version only for a real change of the record.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Context, Decimal
from enum import Enum
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import msgspec

from models.base import ServiceModel, canonical_id
from models.decisions import Decision, DecisionAuthority
from models.delegations import Delegation
from models.groups import Group
from models.positions import Position
from models.users import User, UserPosition
from resources.fast_records import RecordStruct, built_once
from resources.rawjson import member_objects

Row = dict[str, Any]
TableRows = dict[str, list[Row]]
R = TypeVar("R")


def keyed(flatten: Callable[[str, R], TableRows]) -> Callable[[str, R], TableRows]:
    """``flatten`` with every id column of its rows (``id`` and ``*_id``) in the form the warehouse keys
    by (`canonical_id`): a UUID the service cites in upper case in one place and lower case in another is
    one record, fetched once and stored once. ``raw`` keeps what the service sent."""

    @functools.wraps(flatten)
    def flattened(tenant_id: str, record: R) -> TableRows:
        rows = flatten(tenant_id, record)
        for table, table_rows in rows.items():
            columns = _id_columns(table, table_rows)
            for row in table_rows:
                for column in columns:
                    value = row[column]
                    if isinstance(value, str):
                        row[column] = canonical_id(value)
        return rows

    return flattened


def _id_columns(table: str, rows: list[Row]) -> tuple[str, ...]:
    """The id columns of ``table``'s rows, found in its first row once a process: every row of a table has
    the same keys, its staged columns (tests/test_catalog.py)."""
    found = _ID_COLUMNS.get(table)
    if found is None and rows:
        found = _ID_COLUMNS.setdefault(
            table, tuple(name for name in rows[0] if name == "id" or name.endswith("_id"))
        )
    return found or ()


_ID_COLUMNS: dict[str, tuple[str, ...]] = {}
"""A table -> the columns of its rows that hold ids."""


@dataclass(frozen=True, eq=False)  # hashed by identity: one per list, a key of `_own_decoder`'s cache
class OwnContent:
    """What of a record its content hash covers: the record's own fields, and other records by id only.

    Records embed copies of other records (a user's ``manager`` with its name, a group's parent groups,
    the group names of a user's memberships). Hashing the copies would give every user a new version when
    a group is renamed; a reference counts by id instead, so a new manager is a change and the manager's
    new name is not. Fields that move without the record changing (a user's last login) and counts derived
    from other records (a decision's delegations) are left out too. Names are pydantic field names.
    """

    left_out: frozenset[str] = frozenset()
    """Top-level fields not hashed: volatile fields and counts derived from other records."""
    by_id: frozenset[str] = frozenset()
    """Embedded records hashed by their ``id`` only."""
    item_copies: dict[str, frozenset[str]] = field(default_factory=dict)
    """List field -> the fields of each item that copy another record (the item's own fields and the
    referenced id stay)."""

    @functools.cached_property
    def exclude(self) -> dict[str, Any]:
        """The pydantic ``exclude`` argument that leaves out everything but own content (built once: it was
        built anew for every record)."""
        return {
            **dict.fromkeys(self.left_out | self.by_id, True),
            **{name: {"__all__": set(copies)} for name, copies in self.item_copies.items()},
        }


DECISION_CONTENT = OwnContent(
    left_out=frozenset(
        {
            # copies of the section, category and users the decision points to by id
            "section_name",
            "category_name",
            "created_by_username",
            "owner_username",
            "updated_by_username",
            "owner_user_profile_url",
            "created_by_user_profile_url",
            "updated_by_user_profile_url",
            "created_by_details",
            "updated_by_details",
            "owner_details",
            # about the caller or other records, not the decision
            "permissions",
            "delegations",
            "is_request_action_completed",
        }
    ),
    item_copies={
        "decision_groups": frozenset({"group_name", "display_name", "tenant_group_type_id"}),
        "decision_authorities": frozenset({"authority_type", "authority_type_order", "authority_type_icon"}),
        "decision_documents": frozenset(
            {
                "document_name",
                "document_url",
                "document_type_name",
                "document_icon",
                "document_description",
                "document_file_type",
                "document_display_id",
                "document_status",
                "document_file_link",
            }
        ),
    },
)
DELEGATION_CONTENT = OwnContent(left_out=frozenset({"decision_name", "recipient_name"}))
USER_CONTENT = OwnContent(
    left_out=frozenset(
        {
            # move on every login or UI change
            "last_login_date",
            "search_data",
            "dashboard_data",
            "column_view_settings",
            # counts of other records
            "delegations_received",
            "delegations_issued",
        }
    ),
    by_id=frozenset({"manager"}),
    item_copies={
        "user_groups": frozenset({"group_name", "group_type_name", "display_name", "group_type_id"}),
        "user_positions": frozenset({"position_name"}),
        "user_roles": frozenset({"role_name"}),
    },
)
GROUP_CONTENT = OwnContent(
    left_out=frozenset({"decisions_count", "delegations_count"}),
    by_id=frozenset({"tenant_group_type"}),
    item_copies={"parent_groups": frozenset({"parent_group"})},
)


def text(value: Enum | str | None) -> str | None:
    """An enum's wire value; a value the spec does not list (kept as text by a tolerant read) as is."""
    return value._value_ if isinstance(value, Enum) else value  # `value` is a property: 3x the cost


def calendar_date(value: datetime | None) -> date | None:
    """The calendar date (UTC) of a start or end date. The service sends them as timestamps, at midnight UTC
    (read as UTC by ``Timestamp``); stored as TIMESTAMPTZ, a reader in Los Angeles would see 2026-03-31 as
    2026-03-30, so every ``*_date`` column of the warehouse is the UTC day as a DATE."""
    return value.date() if value is not None else None


CONTENT_HASH_SCHEME = 2
"""The definition of ``content_hash`` in force: bump it whenever an `OwnContent` or `raw_and_hash` changes,
so that warehouses compute their stored hashes again (`warehouse.rehash`) instead of seeing every record
as changed."""


def raw_and_hash(record: ServiceModel | RecordStruct, content: OwnContent) -> tuple[str, str]:
    """The record's JSON as the service sent it (unknown fields kept) and a hash of its own content (over
    the validated record, so a change of number format is not a change): pydantic's serialisation of the
    record without what ``content`` leaves out, or for a record read by the fast path
    (`resources.fast_records`) the same text written by msgspec (tests/test_fast_records.py)."""
    raw = record.raw_json()
    if isinstance(record, RecordStruct):
        hashed = _OWN_TEXT.encode(_own_decoder(type(record), content).decode(raw))
    else:
        hashed = record.model_dump_json(by_alias=True, exclude=content.exclude).encode()
    references = "".join(
        f"|{name}={getattr(getattr(record, name), 'id', None)}" for name in sorted(content.by_id)
    )
    return raw, hashlib.blake2b(hashed + references.encode(), digest_size=16).hexdigest()


_OWN_TEXT = msgspec.json.Encoder()


@built_once
def _own_decoder(struct: type[RecordStruct], content: OwnContent) -> msgspec.json.Decoder[Any]:
    """A decoder of a record's text into ``struct`` without the fields ``content`` leaves out. Instants stay
    the text received: the fast path takes only the service's own form, which is also the form pydantic
    writes them in (`models.base.format_timestamp`)."""
    return msgspec.json.Decoder(_without(struct, content.exclude))


def _without(struct: type[msgspec.Struct], exclude: dict[str, Any]) -> type[msgspec.Struct]:
    """``struct`` without the fields ``exclude`` names, in pydantic's form (True: the field; ``{"__all__":
    names}``: those fields of each item of a list); other keys ignored."""
    fields: list[tuple[str, Any, Any]] = []
    for found in msgspec.structs.fields(struct):
        left_out = exclude.get(found.name)
        if left_out is True:
            continue
        kind = found.type
        if isinstance(left_out, dict):
            kind = _items_without(kind, dict.fromkeys(left_out["__all__"], True))
        default = msgspec.NODEFAULT if found.required else found.default
        fields.append((found.name, kind, msgspec.field(name=found.encode_name, default=default)))
    return msgspec.defstruct(f"Own{struct.__name__}", fields, kw_only=True)


def _items_without(kind: Any, exclude: dict[str, Any]) -> Any:
    """The type of a list of structs (or of null) with each item's struct `_without` ``exclude``."""
    if get_origin(kind) is list:
        return list[_without(get_args(kind)[0], exclude)]  # type: ignore[misc]
    if get_origin(kind) in (Union, UnionType):
        return Union[tuple(_items_without(option, exclude) for option in get_args(kind))]  # noqa: UP007
    return kind


def item_texts(parent: ServiceModel | RecordStruct, field_names: tuple[str, ...]) -> dict[str, list[str]]:
    """For each of the parent's lists ``field_names``, the JSON text of each item as the service sent it
    (cut out of the parent's own text, decoded once for all the lists, so ``1500.00`` stays ``1500.00``);
    re-serialised only when the parent's text is not known (a record built here, not read) or does not
    show the list under its wire name."""
    if isinstance(parent, RecordStruct):
        # Read by the fast path: every item is an object and each list is under its wire name.
        lists = _item_lists(type(parent), field_names).decode(parent.raw_json())
        return {
            name: [bytes(text).decode("utf-8") for text in getattr(lists, name) or ()] for name in field_names
        }
    fields = type(parent).model_fields
    aliases = {name: fields[name].alias or name for name in field_names}
    sent = member_objects(parent.raw_json(), aliases.values())
    texts: dict[str, list[str]] = {}
    for name, alias in aliases.items():
        items: list[ServiceModel] = getattr(parent, name) or []
        found = sent[alias]
        if found is None or len(found) != len(items):
            found = [item.model_dump_json(by_alias=True) for item in items]
        texts[name] = found
    return texts


@built_once
def _item_lists(struct: type[RecordStruct], field_names: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a record's text into the lists ``field_names`` of ``struct`` (None where one is null),
    each item left as its text (`msgspec.Raw`); the record's other keys skipped."""
    wire = {found.name: found.encode_name for found in msgspec.structs.fields(struct)}
    fields: list[tuple[str, Any, Any]] = [
        (name, list[msgspec.Raw] | None, msgspec.field(default=None, name=wire[name])) for name in field_names
    ]
    return msgspec.json.Decoder(msgspec.defstruct("ItemTexts", fields))


@keyed
def decision_rows(tenant_id: str, decision: Decision) -> TableRows:
    """Rows of ``decisions``, ``decision_groups``, ``decision_authorities`` and ``decision_documents``."""
    raw, content_hash = raw_and_hash(decision, DECISION_CONTENT)
    sent = item_texts(decision, ("decision_groups", "decision_authorities", "decision_documents"))
    root = {
        "tenant_id": tenant_id,
        "id": decision.id,
        "decision_display_id": decision.decision_display_id,
        "name": decision.name,
        "description": decision.description,
        "guidance": decision.guidance,
        "section_id": decision.section_id,
        "section_name": decision.section_name,
        "category_id": decision.category_id,
        "category_name": decision.category_name,
        "status": text(decision.status),
        "previous_status": text(decision.previous_status),
        "owner_id": decision.owner,
        "owner_username": decision.owner_username,
        "created_by": decision.created_by,
        "created_by_username": decision.created_by_username,
        "updated_by": decision.updated_by,
        "updated_by_username": decision.updated_by_username,
        "created_at": decision.created_at,
        "updated_at": decision.updated_at,
        "copied_from": decision.copied_from,
        "condition_enabled": decision.condition_enabled,
        "role_enabled": decision.role_enabled,
        "delegable": decision.delegable,
        "delegations_count": decision.delegations,
        "authority_limit_sort_precedence": decision.authority_limit_sort_precedence,
        "delegation_pathway": decision.delegation_pathway,
        "link": decision.link,
        "is_deleted": text(decision.status) == "DELETED",
        "content_hash": content_hash,
        "raw": raw,
    }
    return {
        "decisions": [root],
        "decision_groups": [
            {
                "tenant_id": tenant_id,
                "id": g.id,
                "decision_id": decision.id,
                "item_order": order,
                "group_id": g.group_id,
                "tenant_group_type_id": g.tenant_group_type_id,
                "group_name": g.group_name,
                "display_name": g.display_name,
                "raw": raw_item,
            }
            for order, (g, raw_item) in enumerate(
                zip(decision.decision_groups or [], sent["decision_groups"], strict=True),
                start=1,
            )
        ],
        "decision_authorities": [
            authority_row(tenant_id, decision.id, order, a, raw_item)
            for order, (a, raw_item) in enumerate(
                zip(
                    decision.decision_authorities or [],
                    sent["decision_authorities"],
                    strict=True,
                ),
                start=1,
            )
        ],
        "decision_documents": [
            {
                "tenant_id": tenant_id,
                "id": d.id,
                "decision_id": decision.id,
                "item_order": order,
                "document_id": d.document_id,
                "document_display_id": d.document_display_id,
                "document_name": d.document_name,
                "document_type_name": d.document_type_name,
                "document_status": d.document_status,
                "document_file_type": d.document_file_type,
                "document_url": d.document_url,
                "is_pinned": d.is_pinned,
                "raw": raw_item,
            }
            for order, (d, raw_item) in enumerate(
                zip(
                    decision.decision_documents or [],
                    sent["decision_documents"],
                    strict=True,
                ),
                start=1,
            )
        ],
    }


def authority_row(
    tenant_id: str, decision_id: str, order: int, authority: DecisionAuthority, raw: str
) -> Row:
    """One authority limit, the ``order``-th of its decision (``raw``: its JSON as sent), its value parsed to
    a number where it is one (``Unlimited`` is flagged)."""
    value = authority.authority_limit_value
    return {
        "tenant_id": tenant_id,
        "id": authority.id,
        "decision_id": decision_id,
        "item_order": order,
        "authority_type_id": authority.authority_type_id,
        "authority_type": authority.authority_type,
        "authority_type_order": authority.authority_type_order,
        "authority_limit": authority.authority_limit,
        "value_type": text(authority.authority_limit_value_type),
        "operator": authority.authority_limit_operator,
        "limit_value": value,
        "limit_number": parse_number(value) if value is not None else None,
        "limit_unit": authority.authority_limit_value_unit or None,
        "is_unlimited": value is not None and value.strip().lower() == "unlimited",
        "raw": raw,
    }


_AMOUNT = re.compile(
    r"^(?:[A-Z]{3}\s*)?(?P<sign>-)?[$€£¥]?\s*(?P<number>\d[\d,\s]*(?:\.\d+)?)\s*(?P<scale>k|m|mn|b|bn)?\s*(?:[A-Z]{3})?$",
    re.IGNORECASE,
)
_SCALES = {"k": 3, "m": 6, "mn": 6, "b": 9, "bn": 9}
"""A scale word -> the power of ten it multiplies by."""


@functools.lru_cache(maxsize=4_096)  # a tenant's limits repeat a few amounts; a Decimal is immutable
def parse_number(value: str) -> Decimal | None:
    """A limit value as the exact number it writes, or None when it is not one or does not fit the
    column (`limit_digits`): ``250,000``, ``$1,000,000``, ``1 000 000`` (any space as a group separator),
    ``1M``, ``2.5bn``, ``USD 5,000``, ``5,000 EUR``, ``1500.00``."""
    found = _AMOUNT.match(" ".join(value.split()))
    if found is None:
        return None
    number = Decimal(re.sub(r"[,\s]", "", found["number"]))  # exact: no context rounds a constructor
    if found["scale"]:
        number = number.scaleb(_SCALES[found["scale"].lower()], context=_WIDE)
    digits, places = limit_digits()
    if number.adjusted() >= digits - places:
        return None  # more integer digits than the column holds
    exact = number.quantize(Decimal(1).scaleb(-places), context=Context(prec=digits))
    if exact != number:
        return None  # more decimals than the column holds: not rounded
    return exact.copy_negate() if found["sign"] else exact


_WIDE = Context(prec=1_000)
"""Wide enough that scaling a limit value's digits never rounds them (the default keeps 28)."""


@functools.cache
def limit_digits() -> tuple[int, int]:
    """The precision and scale of ``decision_authorities.limit_number`` (a DECIMAL: the migrations say
    which)."""
    # Imported here: the schema is read by migrating, and migrating renders the catalog, which holds
    # this module's flatten functions; a top-level import would be a cycle.
    from warehouse.schema import arrow_schema

    column = arrow_schema("decision_authorities").field("limit_number").type
    return column.precision, column.scale


@keyed
def delegation_rows(tenant_id: str, delegation: Delegation) -> TableRows:
    """Rows of ``delegations``."""
    raw, content_hash = raw_and_hash(delegation, DELEGATION_CONTENT)
    return {
        "delegations": [
            {
                "tenant_id": tenant_id,
                "id": delegation.id,
                "delegation_display_id": delegation.delegation_display_id,
                "decision_id": delegation.decision_id,
                "decision_name": delegation.decision_name,
                "status": text(delegation.status),
                "issuer_type": delegation.issuer_type,
                "issuer_id": delegation.issuer_id,
                "recipient_id": delegation.recipient_id,
                "recipient_name": delegation.recipient_name,
                "starts_at": delegation.start_date,
                "ends_at": delegation.end_date,
                "start_date": calendar_date(delegation.start_date),
                "end_date": calendar_date(delegation.end_date),
                "created_at": delegation.created_at,
                "updated_at": delegation.updated_at,
                "is_deleted": text(delegation.status) == "DELETED",
                "content_hash": content_hash,
                "raw": raw,
            }
        ]
    }


@keyed
def user_rows(tenant_id: str, user: User) -> TableRows:
    """Rows of ``users``, ``user_roles``, ``user_positions`` and ``user_groups``."""
    raw, content_hash = raw_and_hash(user, USER_CONTENT)
    root = {
        "tenant_id": tenant_id,
        "id": user.id,
        "user_display_id": user.user_id,
        "email": user.email,
        "name": user.name,
        "display_name": user.display_name,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "status": text(user.status),
        "employee_id": user.employee_id,
        "employee_number": user.employee_number,
        "employee_type": user.employee_type,
        "employment_type": user.employment_type,
        "account_type": user.account_type,
        "user_type": user.user_type,
        "external_id": user.external_id,
        "mobile_phone": user.mobile_phone,
        "manager_id": user.manager.id if user.manager else None,
        "start_date": calendar_date(user.start_date),
        "termination_date": calendar_date(user.termination_date),
        # One meaning of deleted (migration 0008): the flag, or a status of DELETED (the service can send
        # either alone); the merge adds a record a full refresh no longer finds.
        "is_deleted": bool(user.is_deleted) or text(user.status) == "DELETED",
        "created_on": user.created_on,
        "updated_on": user.updated_on,
        "content_hash": content_hash,
        "raw": raw,
    }
    return {
        "users": [root],
        "user_roles": [
            {
                "tenant_id": tenant_id,
                "id": r.id,
                "user_id": user.id,
                "item_order": order,
                "tenant_role_id": r.tenant_role_id,
                "role_name": r.role_name,
            }
            for order, r in enumerate(user.user_roles or [], start=1)
        ],
        "user_positions": [
            position_link_row(tenant_id, user.id, order, p)
            for order, p in enumerate(user.user_positions or [], start=1)
        ],
        "user_groups": [
            {
                "tenant_id": tenant_id,
                "id": g.id,
                "user_id": user.id,
                "group_id": g.group_id,
                "group_name": g.group_name,
                "group_type_name": g.group_type_name,
                "display_name": g.display_name,
                "group_order": order,
                "is_primary": order == 1,
            }
            for order, g in enumerate(user.user_groups or [], start=1)
        ],
    }


def position_link_row(tenant_id: str, user_id: str, order: int, link: UserPosition) -> Row:
    """A user's position link, the ``order``-th of the user's list."""
    return {
        "tenant_id": tenant_id,
        "id": link.id,
        "user_id": user_id,
        "item_order": order,
        "position_id": link.positions_id,
        "position_name": link.position_name,
    }


@keyed
def group_rows(tenant_id: str, group: Group) -> TableRows:
    """Rows of ``groups`` (address flattened to columns) and ``group_parents``."""
    raw, content_hash = raw_and_hash(group, GROUP_CONTENT)
    address, group_type = group.address, group.tenant_group_type
    root = {
        "tenant_id": tenant_id,
        "id": group.id,
        "group_display_id": group.group_id,
        "group_name": group.group_name,
        "display_name": group.display_name,
        "legal_name": group.legal_name,
        "status": text(group.status),
        "is_deleted": bool(group.is_deleted),
        "group_type_id": group_type.id if group_type else None,
        "group_type_name": group_type.group_type_name if group_type else None,
        "base_currency": group.base_currency or None,
        "external_id": group.external_id,
        **{f"address_{field}": getattr(address, field, None) for field in _ADDRESS_FIELDS},
        "decisions_count": group.decisions_count,
        "delegations_count": group.delegations_count,
        "created_on": group.created_on,
        "updated_on": group.updated_on,
        "content_hash": content_hash,
        "raw": raw,
    }
    parents = [
        {
            "tenant_id": tenant_id,
            "id": p.id,
            "group_id": group.id,
            "item_order": order,
            "parent_id": p.parent_id,
            "created_at": p.created_at,
        }
        for order, p in enumerate(group.parent_groups or [], start=1)
    ]
    return {"groups": [root], "group_parents": parents}


_ADDRESS_FIELDS = ("street1", "street2", "city", "state", "state_code", "zip_code", "country", "country_code")


@keyed
def position_rows(tenant_id: str, position: Position) -> TableRows:
    """Rows of ``positions``."""
    return {
        "positions": [
            {
                "tenant_id": tenant_id,
                "id": position.id,
                "position_name": position.position_name,
                "status": position.status,
                "is_scim_provisioned": position.is_scim_provisioned,
                "group_ids": position.group_ids,
                # The record has no deleted state of its own: only a full refresh that no longer finds it.
                "is_deleted": False,
                "raw": position.raw_json(),
            }
        ]
    }


@keyed
def current_user_position_rows(tenant_id: str, link: UserPosition) -> TableRows:
    """Rows of ``current_user_positions`` (E9)."""
    return {
        "current_user_positions": [
            {
                "tenant_id": tenant_id,
                "id": link.id,
                "user_id": link.user_id,
                "position_id": link.positions_id,
                "position_name": link.position_name,
                "is_deleted": bool(link.is_deleted),
                "raw": link.raw_json(),
            }
        ]
    }


def revision_rows(tenant_id: str, parent_column: str, parent_id: str, revision_ids: list[str]) -> list[Row]:
    """Rows of a revision list (``delegation_revisions`` or ``document_revisions``), in the order given;
    ``first_seen_at`` is filled at merge time."""
    return [
        {
            "tenant_id": tenant_id,
            parent_column: parent_id,
            "revision_id": revision_id,
            "revision_order": order,
            "first_seen_at": None,
        }
        for order, revision_id in enumerate(revision_ids, start=1)
    ]


def check_row(
    tenant_id: str, parent_kind: str, parent_id: str, outcome: str, revisions: int, reason: str
) -> Row:
    """A row of ``revision_checks``: what this run's check of one revision list found, how many revision
    ids it listed, and why it was made."""
    return {
        "tenant_id": tenant_id,
        "parent_kind": parent_kind,
        "parent_id": parent_id,
        "outcome": outcome,
        "revisions": revisions,
        "reason": reason,
    }


def projection(table: str, columns: dict[str, str]) -> Callable[[str, Any], TableRows]:
    """The flatten function of a slim table declared by its columns alone (the list catalog's entry says
    them): ``columns`` maps each column to the record's attribute, a dotted path for an embedded record's
    (``tenant_group_type.group_type_name``). The row holds the tenant, the record's id, those columns (an
    enum as its wire value), ``is_deleted`` (the record's flag, False without one), ``raw`` (the record as
    the service sent it) and a content hash over those columns only: the table's history gains a version
    when one of them changes, not when a field it does not show does."""

    @keyed
    def flatten(tenant_id: str, record: ServiceModel) -> TableRows:
        values = {column: _attribute(record, path) for column, path in columns.items()}
        content = json.dumps(values, sort_keys=True, default=str)
        root = {
            "tenant_id": tenant_id,
            "id": getattr(record, "id"),  # noqa: B009 - records are typed by their model, not by a protocol
            **values,
            "is_deleted": bool(getattr(record, "is_deleted", False)),
            "content_hash": hashlib.blake2b(content.encode(), digest_size=16).hexdigest(),
            "raw": record.raw_json(),
        }
        return {table: [root]}

    return flatten


def _attribute(record: Any, path: str) -> Any:
    """The value at the dotted attribute ``path`` of ``record`` (None where an embedded record is missing),
    an enum as its wire value."""
    value = record
    for name in path.split("."):
        value = getattr(value, name, None)
    return text(value) if isinstance(value, Enum) else value
