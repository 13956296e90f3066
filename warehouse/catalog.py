"""The list catalog, the warehouse's side: what each paged list of `resources.catalog` feeds.

Each entry names its list by the service-side entry itself (never by a second spelling of its name) and
says once what the list feeds: the flatten function of its records (`warehouse.rows`), its family of
tables (the root table, named after the list, and the child tables of the lists its records embed, with
the columns that key and version their items), the Dagster asset group the tables show in and whether
they hold personal data. The revision lists (E11 per delegation, E12 per document) say which list names
their parents and through which table and column. The extract, the merge, the commit, the reads of the
committed warehouse, the rehash and the Dagster assets and checks all derive from these entries; what a
table and its columns mean stays in the data dictionary (`warehouse/dictionary.toml`).

A list of one side without its entry on the other, or a revision list whose owner is not a table of the
list it names, fails at import. Adding a list: docs/sync.md, "Adding a list".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from resources.catalog import (
    CALLER_POSITIONS,
    DECISIONS,
    DELEGATIONS,
    GROUP_DIRECTORY,
    GROUPS,
    PAGED_LISTS,
    POSITIONS,
    USERS,
    PagedList,
)
from resources.endpoints import ENDPOINTS, EndpointName
from warehouse.rows import (
    TableRows,
    decision_rows,
    delegation_rows,
    group_rows,
    position_rows,
    projection,
    user_rows,
)


@dataclass(frozen=True)
class Child:
    """A child table: its rows are keyed by their parent's id and their place in the parent's list (the
    service's own id of an embedded record is not promised unique, so it is a column, not the key).

    Its history (``<table>_history``) follows an item, not a place: an item is what its parent cites
    (``reference``: the group of a membership, the authority type of a limit) and, when the parent cites it
    more than once, which of those it is (``occurrence``: 1 for the first in the list). A version changes
    only with the item's own fields (``content``); its place in the list and copies of the cited record's
    names are not content, so a reorder or a group's rename adds no version."""

    table: str
    parent_column: str
    reference: str
    content: tuple[str, ...] = ()
    order_column: str = "item_order"

    @property
    def history(self) -> str:
        """The child's history table."""
        return f"{self.table}_history"


@dataclass(frozen=True)
class Family:
    """A root table, its child tables and its history table."""

    root: str
    children: tuple[Child, ...] = ()

    @property
    def history(self) -> str:
        """The root's history table."""
        return f"{self.root}_history"

    @property
    def tables(self) -> tuple[str, ...]:
        """The root and its children, the tables one record feeds."""
        return (self.root, *(child.table for child in self.children))

    def parent_column(self, table: str) -> str:
        """The column of ``table`` (one of the family's) that holds its root record's id."""
        if table == self.root:
            return "id"
        return next(child.parent_column for child in self.children if child.table == table)


@dataclass(frozen=True)
class Tables:
    """A family of tables one read of the service feeds, the Dagster asset group they show in, and
    whether they hold personal data (their assets are tagged ``pii``)."""

    family: Family
    group: str
    personal: bool = False


@dataclass(frozen=True)
class ListTables:
    """What one paged list feeds: its records flattened by ``flatten`` into the root table named after the
    list and the ``children`` tables."""

    source: PagedList[Any]
    flatten: Callable[[str, Any], TableRows]
    group: str
    children: tuple[Child, ...] = ()
    personal: bool = False
    unseen_changes: bool = False
    """Whether its records change without their updated-at moving (a membership a group's disable removes,
    a manager's details embedded in a report): an incremental read cannot see them, so the extract reads
    the list whole when it can (`pipelines.extract.whole_reads`; docs/sync.md, "Side effects")."""

    @property
    def name(self) -> str:
        """The list's name (`resources.catalog`)."""
        return self.source.name

    @property
    def family(self) -> Family:
        """The root table (the list's name) and its children."""
        return Family(self.name, self.children)

    @property
    def tables(self) -> Tables:
        """The family with its asset group and personal-data flag."""
        return Tables(self.family, self.group, self.personal)


@dataclass(frozen=True)
class RevisionList:
    """A list of revision ids read per parent record. Its ``table`` holds them by ``parent_column``; its
    checks are ``revision_checks`` rows of ``parent_kind`` = ``kind``. The parents are the ids the
    ``named_by`` list's records give in ``owner_column`` of its ``owner`` table, whose rows also keep a
    list alive: a full refresh of that list prunes the lists left orphan."""

    table: str
    endpoint: EndpointName
    parent_column: str
    kind: str
    named_by: PagedList[Any]
    owner: str
    owner_column: str
    group: str


LIMIT_CONTENT = (
    "authority_limit",
    "value_type",
    "operator",
    "limit_value",
    "limit_number",
    "limit_unit",
    "is_unlimited",
)
"""An authority limit's own fields: the name and place of its authority type are copies."""


def _by_name(*entries: ListTables) -> Mapping[str, ListTables]:
    return MappingProxyType({entry.name: entry for entry in entries})


LISTS = _by_name(
    ListTables(
        DECISIONS,
        decision_rows,
        "decisions",
        (
            Child("decision_groups", "decision_id", "group_id"),
            Child("decision_authorities", "decision_id", "authority_type_id", LIMIT_CONTENT),
            Child("decision_documents", "decision_id", "document_id", ("is_pinned",)),
        ),
    ),
    ListTables(DELEGATIONS, delegation_rows, "delegations"),
    ListTables(
        USERS,
        user_rows,
        "org",
        (
            Child("user_roles", "user_id", "tenant_role_id"),
            Child("user_positions", "user_id", "position_id"),
            # The first membership is the primary organisation: that is the one place a membership has.
            Child("user_groups", "user_id", "group_id", ("is_primary",), "group_order"),
        ),
        personal=True,
        # A group disabled with REMOVE_ASSOCIATIONS drops its members' memberships, and a manager's
        # changed details are copied into each report's manager object: neither moves the user's updatedOn.
        unseen_changes=True,
    ),
    ListTables(
        GROUPS,
        group_rows,
        "org",
        (Child("group_parents", "group_id", "parent_id", ("created_at",)),),
        # A parent group's new names are copied into its children's parentGroups, updatedOn unmoved.
        unseen_changes=True,
    ),
    ListTables(POSITIONS, position_rows, "org"),
    # The directory of groups: a version only when one of these columns changes (not an address or a parent).
    ListTables(
        GROUP_DIRECTORY,
        projection(
            GROUP_DIRECTORY.name,
            {
                "group_display_id": "group_id",
                "group_name": "group_name",
                "display_name": "display_name",
                "group_type_name": "tenant_group_type.group_type_name",
                "status": "status",
            },
        ),
        "org",
    ),
)
"""Every paged list's tables, by list name, in the order of `resources.catalog.PAGED_LISTS`."""

CURRENT_USER_POSITIONS = Tables(Family(CALLER_POSITIONS.name), "org", personal=True)
"""E9's table: the positions of the user the credentials stand for (one call, not a paged list)."""


def _by_table(*lists: RevisionList) -> Mapping[str, RevisionList]:
    return MappingProxyType({revisions.table: revisions for revisions in lists})


REVISIONS = _by_table(
    RevisionList(
        "delegation_revisions",
        "E11",
        "delegation_id",
        "delegation",
        named_by=DELEGATIONS,
        owner=DELEGATIONS.name,
        owner_column="id",
        group="delegations",
    ),
    RevisionList(
        "document_revisions",
        "E12",
        "document_id",
        "document",
        named_by=DECISIONS,
        owner="decision_documents",
        owner_column="document_id",
        group="documents",
    ),
)
"""Every revision list, by table, in the order a commit merges them."""


def revisions_named_by(name: str) -> tuple[RevisionList, ...]:
    """The revision lists whose parents the list ``name`` names."""
    return tuple(revisions for revisions in REVISIONS.values() if revisions.named_by.name == name)


def revisions_of_kind(kind: str) -> RevisionList:
    """The revision list of one ``parent_kind`` (``delegation``, ``document``)."""
    return next(revisions for revisions in REVISIONS.values() if revisions.kind == kind)


STAGED: tuple[Tables, ...] = (*(entry.tables for entry in LISTS.values()), CURRENT_USER_POSITIONS)
"""Every family a sync stages, in the order a commit merges them."""

FAMILIES: Mapping[str, Family] = MappingProxyType({tables.family.root: tables.family for tables in STAGED})
"""Every family by its root table, which is also the name of the read that stages it (its mode, cursor and
records removed while read are keyed by it)."""

TABLE_GROUPS: Mapping[str, str] = MappingProxyType(
    {
        **{table: tables.group for tables in STAGED for table in tables.family.tables},
        **{table: revisions.group for table, revisions in REVISIONS.items()},
    }
)
"""Every table a sync stages and commits, in commit order, and its asset group."""

PERSONAL_TABLES = frozenset(table for tables in STAGED if tables.personal for table in tables.family.tables)
"""The tables that hold personal data."""


def check_catalog(
    paged: Mapping[str, PagedList[Any]], lists: Mapping[str, ListTables], revisions: Iterable[RevisionList]
) -> None:
    """Raise TypeError when the two sides of the catalog disagree: a paged list without its tables (or
    tables of no paged list), a revision list named by no list or owned by a table its list does not feed,
    or a revision endpoint that does not take a record id."""
    if list(paged) != list(lists) or any(lists[name].source is not paged[name] for name in paged):
        raise TypeError(
            f"the paged lists ({', '.join(paged)}) and the lists with tables ({', '.join(lists)}) differ: "
            "each list needs one entry in resources/catalog.py and one in warehouse/catalog.py"
        )
    for entry in revisions:
        owner = lists.get(entry.named_by.name)
        if owner is None or entry.owner not in owner.family.tables:
            raise TypeError(f"{entry.table}: {entry.owner} is not a table of the {entry.named_by.name} list")
        if "{id}" not in ENDPOINTS[entry.endpoint].path:
            raise TypeError(f"{entry.table}: {entry.endpoint} does not read one record's revisions")


check_catalog(PAGED_LISTS, LISTS, REVISIONS.values())
