"""E8's filters, sorts and projection over a tenant's decisions.

Semantics where the spec gives only a meaning (each an assumption of the emulator):

- list filters (ids, statuses, sections, categories, groups, authority types, value types, owners) match a
  decision that has *any* of the listed values; different filters combine with AND;
- ``search`` is a case-insensitive substring of name, description or display id; ``rank`` orders by how
  many of those it matches (name counts twice), 0 for all without a search;
- ``delegations=true`` keeps decisions with at least one delegation, ``false`` those with none;
- ``issuerType`` keeps decisions that have a delegation issued by that issuer type (USER, POSITION, GROUP);
- each authority limit value filter keeps decisions with an authority of that value type whose numeric
  value lies in [minValue, maxValue] (``Unlimited`` is above every number); filters combine with AND;
- created and updated ranges are inclusive at both ends;
- every sort breaks ties by ``id`` in the same direction, so paging is stable; the default is
  ``createdAt`` descending;
- a projection (``fields``) always keeps ``id``, so records stay identifiable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from emulator.state import Record, TenantState
from models.base import format_timestamp
from models.queries import AuthorityLimitValueFilter, DecisionField, DecisionQuery, DecisionSortBy

Predicate = Callable[[Record], bool]
UNLIMITED = float("inf")


def select(state: TenantState, query: DecisionQuery) -> list[str]:
    """Ids of the decisions the query keeps, in the query's order."""
    predicates = _predicates(state, query)
    selected = [record for record in state.decisions.values() if all(test(record) for test in predicates)]
    key = _sort_key(query)
    selected.sort(key=lambda record: (key(record), record["id"]), reverse=_descending(query))
    return [record["id"] for record in selected]


def _descending(query: DecisionQuery) -> bool:
    # An explicit criterion sorts ascending unless told otherwise; the default (createdAt) newest first.
    if query.sort_order is not None:
        return query.sort_order == "desc"
    return query.sort_by is None


def project(record: Record, fields: list[DecisionField]) -> Record:
    """Only the requested fields of a decision, plus ``id``."""
    projected = {"id": record["id"]}
    for name in fields:
        key = name.json_key
        if key in record:
            projected[key] = record[key]
    return projected


def _predicates(state: TenantState, query: DecisionQuery) -> list[Predicate]:
    tests: list[Predicate] = []
    members: list[tuple[Sequence[object] | None, str]] = [
        (query.decision_ids, "id"),
        (query.status, "status"),
        (query.section_ids, "sectionId"),
        (query.category_ids, "categoryId"),
        (query.owner_user_ids, "owner"),
    ]
    for values, key in members:
        if values:
            tests.append(_member(key, {str(value) for value in values}))
    nested_members: list[tuple[Sequence[object] | None, str, str]] = [
        (query.group_ids, "decisionGroups", "groupId"),
        (query.authority_type_ids, "decisionAuthorities", "authorityTypeId"),
        (query.authority_limit_value_types, "decisionAuthorities", "authorityLimitValueType"),
    ]
    for values, nested, key in nested_members:
        if values:
            tests.append(_nested_member(nested, key, {str(value) for value in values}))
    if query.search:
        needle = query.search.lower()
        tests.append(lambda r: _rank(r, needle) > 0)
    if query.delegable is not None:
        tests.append(lambda r: r["delegable"] is query.delegable)
    if query.delegations is not None:
        tests.append(lambda r: (r["delegations"] > 0) is query.delegations)
    if query.issuer_type:
        issued = {d["decisionId"] for d in state.delegations.values() if d["issuerType"] == query.issuer_type}
        tests.append(lambda r: r["id"] in issued)
    tests += [_limit_filter(item) for item in query.authority_limit_value_filters or []]
    tests += _ranges(query)
    return tests


def _member(key: str, values: set[str]) -> Predicate:
    return lambda record: record[key] in values


def _nested_member(nested: str, key: str, values: set[str]) -> Predicate:
    return lambda record: any(item[key] in values for item in record[nested])


def _ranges(query: DecisionQuery) -> list[Predicate]:
    tests: list[Predicate] = []
    for start, end, key in (
        (query.created_at_start, query.created_at_end, "createdAt"),
        (query.updated_at_start, query.updated_at_end, "updatedAt"),
    ):
        # ISO strings of one format (UTC, milliseconds, Z) order as the instants they name.
        if start is not None:
            low = format_timestamp(start)
            tests.append(lambda r, low=low, key=key: r[key] >= low)  # type: ignore[misc]
        if end is not None:
            high = format_timestamp(end)
            tests.append(lambda r, high=high, key=key: r[key] <= high)  # type: ignore[misc]
    return tests


def _limit_filter(item: AuthorityLimitValueFilter) -> Predicate:
    low = _number(item.min_value) if item.min_value is not None else float("-inf")
    high = _number(item.max_value) if item.max_value is not None else UNLIMITED
    kind = item.authority_limit_value_type.value

    def test(record: Record) -> bool:
        return any(
            authority["authorityLimitValueType"] == kind
            and low <= _number(authority["authorityLimitValue"]) <= high
            for authority in record["decisionAuthorities"]
        )

    return test


def _number(value: str) -> float:
    """A limit value as a number: ``Unlimited`` is infinite, ``Authorized`` (a yes/no limit) is 1."""
    if value == "Unlimited":
        return UNLIMITED
    try:
        return float(value)
    except ValueError:
        return 1.0


def _rank(record: Record, needle: str) -> int:
    return (
        2 * (needle in record["name"].lower())
        + (needle in record["description"].lower())
        + (needle in record["decisionDisplayId"])
    )


def _sort_key(query: DecisionQuery) -> Callable[[Record], Any]:
    sort_by = query.sort_by or DecisionSortBy.CREATED_AT
    if sort_by == DecisionSortBy.RANK:
        needle = (query.search or "").lower()
        return lambda record: _rank(record, needle) if needle else 0
    if sort_by == DecisionSortBy.DELEGATIONS_COUNT:
        return lambda record: record["delegations"]
    if sort_by == DecisionSortBy.DECISION_DISPLAY_ID:
        return lambda record: int(record["decisionDisplayId"])
    key = sort_by.value
    return lambda record: record[key]
