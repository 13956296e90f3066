"""The list catalog, the service's side: each paged list the sync reads, named once.

An entry says how a list is read: its endpoint (a row of `resources.endpoints`), its record and query
models, the record's updated-at field (the incremental cursor) and its immutable creation order (what the
paging sorts by, `resources.paging`). Everything about a list is keyed by its name, never by its endpoint
or its query model, so that two lists of one endpoint (``groups`` and ``group_directory``) stay apart: the
client pages a list by its entry or name (`AdmClient.iter_pages`), the record contract keeps modes,
rejections and deviations per list name (``ADM_SCHEMA_CONTRACT=tolerant,users=strict``), and the
warehouse's side of the catalog (`warehouse.catalog`) says, keyed by these very entries, which tables each
list feeds. Adding a list: docs/sync.md, "Adding a list".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from pydantic.fields import FieldInfo

from models.base import Envelope, Page
from models.decisions import Decision
from models.delegations import Delegation
from models.groups import Group
from models.positions import Position
from models.queries import (
    DecisionQuery,
    DecisionSortBy,
    DelegationQuery,
    DelegationSortBy,
    GroupQuery,
    GroupSortBy,
    PageQuery,
    PositionQuery,
    UpdatedRange,
    UserQuery,
    UserSortBy,
)
from models.users import User, UserPosition
from resources.endpoints import ENDPOINTS, EndpointName

T = TypeVar("T")


@dataclass(frozen=True)
class PagedList(Generic[T]):
    """How one paged list is read. ``name`` is the list's name everywhere: in the settings, as the
    extract's entity and cursor, and as the root table it feeds."""

    name: str
    endpoint: EndpointName
    record: type[T]
    query: type[PageQuery]
    updated: str | None = None
    """The record's updated-at field (its wire name), which the incremental cursor follows (None: the list
    is always read whole)."""
    created: str | None = None
    """The record's creation time (its wire name), the ``sort_by`` value of the list's immutable creation
    order (None: the list has none)."""

    def __post_init__(self) -> None:
        # A list is read incrementally when its query filters on updated-at and its records say when they
        # were updated: one without the other would be a cursor that never moves, or one never applied.
        if (self.updated is not None) != issubclass(self.query, UpdatedRange):
            raise TypeError(f"list {self.name}: an updated-at cursor needs an updated-at filter, and back")
        if ENDPOINTS[self.endpoint].method != "GET":
            raise TypeError(f"list {self.name}: {self.endpoint} is not a read")
        for wire_name in (self.updated, self.created):
            if wire_name is not None:
                self._field(wire_name)  # a field the record does not have fails at import

    def _field(self, wire_name: str) -> str:
        """The record's attribute sent as ``wire_name``."""
        fields: dict[str, FieldInfo] = getattr(self.record, "model_fields", {})
        found = next((name for name, info in fields.items() if (info.alias or name) == wire_name), None)
        if found is None:
            raise TypeError(f"list {self.name}: {self.record.__name__} has no field {wire_name}")
        return found

    @cached_property
    def _updated_field(self) -> str | None:
        return None if self.updated is None else self._field(self.updated)

    @cached_property
    def _created_field(self) -> str | None:
        return None if self.created is None else self._field(self.created)

    @cached_property
    def envelope(self) -> type[Envelope[Page[T]]]:
        """The response model of one page."""
        # Parametrized at run time, by the entry's record: mypy cannot see a type in an attribute.
        return Envelope[Page[self.record]]  # type: ignore[name-defined]

    @property
    def incremental(self) -> bool:
        """Whether a run asks only for the records updated since its cursor."""
        return self.updated is not None

    def updated_of(self, record: T) -> datetime | None:
        """When ``record`` was last updated (None: the list has no cursor, or the record did not say)."""
        if self._updated_field is None:
            return None
        updated: datetime | None = getattr(record, self._updated_field)
        return updated

    def creation_key(self, record: T) -> tuple[datetime | None, str]:
        """``record``'s place in the creation order: its creation time, then its id."""
        if self._created_field is None:
            raise TypeError(f"list {self.name} has no creation order")
        created: datetime | None = getattr(record, self._created_field)
        return created, getattr(record, "id")  # noqa: B009 - records are typed by their model, not by a protocol

    def whole_read(self, tenant_id: str, limit: int, updated_since: datetime | None = None) -> PageQuery:
        """The query of a sync's read of the tenant's list, ``limit`` records a page: every record, or
        those updated since ``updated_since`` (only for an incremental list)."""
        values: dict[str, Any] = {"limit": limit}
        if "tenant_id" in self.query.model_fields:
            values["tenant_id"] = tenant_id
        if updated_since is not None:
            values["updated_at_start"] = updated_since
        return self.query(**values)


DECISIONS = PagedList[Decision](
    "decisions", "E8", Decision, DecisionQuery, "updatedAt", DecisionSortBy.CREATED_AT
)
DELEGATIONS = PagedList[Delegation](
    "delegations", "delegations", Delegation, DelegationQuery, "updatedAt", DelegationSortBy.CREATED_AT
)
USERS = PagedList[User]("users", "users", User, UserQuery, "updatedOn", UserSortBy.CREATED_ON)
GROUPS = PagedList[Group]("groups", "groups", Group, GroupQuery, "updatedOn", GroupSortBy.CREATED_ON)
# Positions have no updated-at filter and no creation order, and are few: always read whole.
POSITIONS = PagedList[Position]("positions", "positions", Position, PositionQuery)
# A second list of GET /settings/v1/groups, read on its own cursor: the same records, of which its table keeps
# a slim directory (warehouse/catalog.py).
GROUP_DIRECTORY = PagedList[Group](
    "group_directory", "groups", Group, GroupQuery, "updatedOn", GroupSortBy.CREATED_ON
)


def _by_name(*lists: PagedList[Any]) -> Mapping[str, PagedList[Any]]:
    return MappingProxyType({paged.name: paged for paged in lists})


PAGED_LISTS = _by_name(DECISIONS, DELEGATIONS, USERS, GROUPS, POSITIONS, GROUP_DIRECTORY)
"""Every paged list the sync reads, by name, in the order a run reads, checks and reports them."""


def paged_list(name: str) -> PagedList[Any]:
    """The list called ``name``; a name of no list raises KeyError naming the lists."""
    try:
        return PAGED_LISTS[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a list ({', '.join(PAGED_LISTS)})") from None


@dataclass(frozen=True)
class ArrayRead(Generic[T]):
    """A read of one enveloped array of records, not paged: its name (the table it feeds, the key of its
    rejections and deviations), its endpoint and its record model."""

    name: str
    endpoint: EndpointName
    record: type[T]


CALLER_POSITIONS = ArrayRead[UserPosition]("current_user_positions", "E9", UserPosition)
"""E9: the positions of the user the credentials stand for."""
