"""The list catalog, the service's side: each paged list the sync reads, named once.

An entry says how a list is read: its endpoint (a row of `resources.endpoints`), its record and query
models, the record's updated-at field (the incremental cursor) and its immutable creation order (what the
paging sorts by, `resources.paging`). The client pages by it, the record contract takes per-list modes by
its names (``ADM_SCHEMA_CONTRACT=tolerant,users=strict``), and the warehouse's side of the catalog
(`warehouse.catalog`) says, keyed by these very entries, which tables each list feeds. Adding a list:
docs/sync.md, "Adding a list".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from models import (
    Decision,
    DecisionQuery,
    DecisionSortBy,
    Delegation,
    DelegationQuery,
    DelegationSortBy,
    Envelope,
    Group,
    GroupQuery,
    GroupSortBy,
    Page,
    PageQuery,
    Position,
    PositionQuery,
    User,
    UserQuery,
    UserSortBy,
)
from models.queries import UpdatedRange
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
    updated_of: Callable[[T], datetime | None] | None = None
    """The record's updated-at field, which the incremental cursor follows (None: always read whole)."""
    creation_sort: str | None = None
    """The ``sort_by`` value of the record's immutable creation order (None: the list has none)."""
    creation_key: Callable[[T], tuple[datetime | None, str]] | None = None
    """A record's place in that order: its creation time, then its id."""

    def __post_init__(self) -> None:
        # A list is read incrementally when its query filters on updated-at and its records say when they
        # were updated: one without the other would be a cursor that never moves, or one never applied.
        if (self.updated_of is not None) != issubclass(self.query, UpdatedRange):
            raise TypeError(f"list {self.name}: an updated-at cursor needs an updated-at filter, and back")
        if (self.creation_sort is None) != (self.creation_key is None):
            raise TypeError(f"list {self.name}: a creation order needs both its sort value and its key")
        if ENDPOINTS[self.endpoint].method != "GET":
            raise TypeError(f"list {self.name}: {self.endpoint} is not a read")

    @cached_property
    def envelope(self) -> type[Envelope[Page[T]]]:
        """The response model of one page."""
        # Parametrized at run time, by the entry's record: mypy cannot see a type in an attribute.
        return Envelope[Page[self.record]]  # type: ignore[name-defined]

    @property
    def incremental(self) -> bool:
        """Whether a run asks only for the records updated since its cursor."""
        return self.updated_of is not None

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
    "decisions",
    "E8",
    Decision,
    DecisionQuery,
    lambda d: d.updated_at,
    DecisionSortBy.CREATED_AT,
    lambda d: (d.created_at, d.id),
)
DELEGATIONS = PagedList[Delegation](
    "delegations",
    "delegations",
    Delegation,
    DelegationQuery,
    lambda d: d.updated_at,
    DelegationSortBy.CREATED_AT,
    lambda d: (d.created_at, d.id),
)
USERS = PagedList[User](
    "users",
    "users",
    User,
    UserQuery,
    lambda u: u.updated_on,
    UserSortBy.CREATED_ON,
    lambda u: (u.created_on, u.id),
)
GROUPS = PagedList[Group](
    "groups",
    "groups",
    Group,
    GroupQuery,
    lambda g: g.updated_on,
    GroupSortBy.CREATED_ON,
    lambda g: (g.created_on, g.id),
)
# Positions have no updated-at filter and no creation order, and are few: always read whole.
POSITIONS = PagedList[Position]("positions", "positions", Position, PositionQuery)


def _by_name(*lists: PagedList[Any]) -> Mapping[str, PagedList[Any]]:
    return MappingProxyType({paged.name: paged for paged in lists})


PAGED_LISTS = _by_name(DECISIONS, DELEGATIONS, USERS, GROUPS, POSITIONS)
"""Every paged list the sync reads, by name, in the order a run reads, checks and reports them."""

_BY_QUERY = {paged.query: paged for paged in PAGED_LISTS.values()}


def paged_list_of(query: PageQuery) -> PagedList[Any]:
    """The list ``query`` reads (by its query model)."""
    try:
        return _BY_QUERY[type(query)]
    except KeyError:
        raise TypeError(f"{type(query).__name__} is the query of no paged list") from None
