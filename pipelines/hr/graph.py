"""Org-graph rules: manager cycles, group-parent cycles, inactive managers; and the parents-first order.

The graph checked is the one the service would hold after the upload: the file's valid rows on top of the
warehouse's current managers and parents for everyone else. A row found invalid leaves the graph (its
record keeps the warehouse's edges), which can expose a new problem, so the checks repeat until nothing
new is found. Cycles made only of the warehouse's edges are the service's business, not the file's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import date
from graphlib import CycleError, TopologicalSorter

from pipelines.hr.mapping import EntityMapping
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import Snapshot

INACTIVE = frozenset({"INACTIVE", "DELETED"})


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every cycle of a directed graph, as the nodes of its strongly connected component (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root not in index:
            _strong_connect(root, edges, index, low, stack, on_stack, found)
    return found


def _strong_connect(
    root: str,
    edges: Mapping[str, Iterable[str]],
    index: dict[str, int],
    low: dict[str, int],
    stack: list[str],
    on_stack: set[str],
    found: list[list[str]],
) -> None:
    """Tarjan's algorithm without recursion (a 10,000-deep management chain would overflow Python's)."""
    work = [(root, iter(edges.get(root, ())))]
    index[root] = low[root] = len(index)
    stack.append(root)
    on_stack.add(root)
    while work:
        node, successors = work[-1]
        child = next(successors, None)
        if child is not None:
            if child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges.get(child, ()))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
            component = _pop_component(node, stack, on_stack)
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(component)


def _pop_component(node: str, stack: list[str], on_stack: set[str]) -> list[str]:
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
            return component


def depths(parents: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Each node's distance from a root (a node without parents), so that sorting by it puts parents
    before children. A cycle (only the service's own data could hold one: the file's are refused) leaves
    every node at depth 0, where order does not matter."""
    try:
        order = list(TopologicalSorter(parents).static_order())
    except CycleError:
        return {}
    depth: dict[str, int] = {}
    for node in order:
        depth[node] = 1 + max((depth[parent] for parent in parents.get(node, ())), default=-1)
    return depth


def check_org_graph(
    users: list[HrRow],
    groups: list[HrRow],
    mappings: tuple[EntityMapping, EntityMapping],
    snapshot: Snapshot,
    today: date,
) -> None:
    """Add manager-cycle, inactive-manager and group-cycle problems until no new one appears."""
    user_mapping, group_mapping = mappings
    while True:
        found = _manager_cycles(users, user_mapping, snapshot)
        found += _inactive_managers(users, user_mapping, snapshot, today)
        found += _group_cycles(groups, group_mapping, snapshot)
        if not found:
            return


def _file_edges(rows: list[HrRow], name: str) -> dict[str, HrRow]:
    return {row.entity_id: row for row in rows if row.valid and row.entity_id and name in row.desired}


def _manager_cycles(users: list[HrRow], mapping: EntityMapping, snapshot: Snapshot) -> list[HrRow]:
    from_file = _file_edges(users, "manager")
    current = snapshot.user_values
    edges = {key: [str(manager)] for key, manager in zip(current, current.column("manager"), strict=True)}
    edges |= {key: [str(row.desired["manager"])] for key, row in from_file.items()}
    edges = {key: [boss for boss in bosses if boss != key] for key, bosses in edges.items()}
    return _report_cycles(edges, from_file, mapping, "manager", "manager_cycle", snapshot.user_label)


def _group_cycles(groups: list[HrRow], mapping: EntityMapping, snapshot: Snapshot) -> list[HrRow]:
    from_file = _file_edges(groups, "parent")
    edges: dict[str, list[str]] = {
        key: list(values["parent"] or []) for key, values in snapshot.group_values.items()
    }
    edges |= {key: list(row.desired["parent"] or []) for key, row in from_file.items()}
    return _report_cycles(edges, from_file, mapping, "parent", "group_cycle", snapshot.group_label)


def _report_cycles(
    edges: dict[str, list[str]],
    from_file: dict[str, HrRow],
    mapping: EntityMapping,
    name: str,
    rule: str,
    label: Callable[[str], str],
) -> list[HrRow]:
    flagged = []
    for cycle in cycles(edges):
        rows = [from_file[node] for node in cycle if node in from_file]
        described = " -> ".join(label(node) for node in reversed(cycle))
        for row in rows:
            row.problem(mapping, name, rule, f"would make a cycle: {described}")
        flagged += rows
    return flagged


def _inactive_managers(
    users: list[HrRow], mapping: EntityMapping, snapshot: Snapshot, today: date
) -> list[HrRow]:
    """Rows that would leave an active employee reporting to an inactive or terminated manager, where the
    service does not already show that (the file must not create it; it may be the file's fix). The row
    to blame is the one that makes the change: a manager's termination while reports stay active (whether
    or not their rows are in the file), or an employee's own move to a manager the service shows unfit."""
    after = {row.entity_id: row.desired for row in users if row.valid and row.entity_id}
    rows = [row for row in users if row.valid and row.entity_id]
    return _leaving_managers(rows, after, mapping, snapshot, today) + _joining_unfit(
        rows, after, mapping, snapshot, today
    )


def _leaving_managers(
    rows: list[HrRow],
    after: Mapping[str, Mapping[str, object]],
    mapping: EntityMapping,
    snapshot: Snapshot,
    today: date,
) -> list[HrRow]:
    """Rows that make a manager inactive or terminated while active employees still report to them."""
    reports = _reports_after(after, snapshot)
    flagged = []
    for row in rows:
        assert row.entity_id is not None
        unfit = _unfit(row.entity_id, after, snapshot, today)
        if not unfit or _unfit(row.entity_id, {}, snapshot, today):
            continue
        active = [user for user in reports.get(row.entity_id, []) if _active(user, after, snapshot)]
        if active:
            # The column that makes the manager unfit: the status when it is inactive, else the date.
            inactive = _state(row.entity_id, "status", after, snapshot) in INACTIVE
            field = "status" if inactive else "termination_date"
            row.problem(mapping, field, "inactive_manager", _orphans(active, unfit, snapshot))
            flagged.append(row)
    return flagged


def _orphans(active: list[str], unfit: str, snapshot: Snapshot) -> str:
    """The message of a manager's row that leaves ``active`` reports with an unfit manager."""
    named = ", ".join(snapshot.user_label(user) for user in active[:3])
    more = f" and {len(active) - 3} more" if len(active) > 3 else ""
    return f"{len(active)} active report(s) would report to a manager who is {unfit}: {named}{more}"


def _joining_unfit(
    rows: list[HrRow],
    after: Mapping[str, Mapping[str, object]],
    mapping: EntityMapping,
    snapshot: Snapshot,
    today: date,
) -> list[HrRow]:
    """Rows of active employees that take (or keep, when reactivated) a manager the service shows
    inactive or terminated."""
    flagged = []
    for row in rows:
        assert row.entity_id is not None
        manager = _manager_of(row.entity_id, after, snapshot)
        unfit = _unfit(manager, {}, snapshot, today) if _active(row.entity_id, after, snapshot) else None
        before = str(snapshot.user_values.value(row.entity_id, "manager"))
        was_unfit = _active(row.entity_id, {}, snapshot) and _unfit(before, {}, snapshot, today)
        if unfit and manager != row.entity_id and not was_unfit:
            row.problem(mapping, "manager", "inactive_manager", f"{snapshot.user_label(manager)} is {unfit}")
            flagged.append(row)
    return flagged


def _reports_after(after: Mapping[str, Mapping[str, object]], snapshot: Snapshot) -> dict[str, list[str]]:
    """Each manager's direct reports once the upload is applied."""
    reports: dict[str, list[str]] = {}
    for user in snapshot.user_values:
        manager = _manager_of(user, after, snapshot)
        if manager != user:
            reports.setdefault(manager, []).append(user)
    return reports


def _manager_of(user_id: str, after: Mapping[str, Mapping[str, object]], snapshot: Snapshot) -> str:
    desired = after.get(user_id, {}).get("manager")
    return str(desired) if desired else str(snapshot.user_values.value(user_id, "manager"))


def _active(user_id: str, after: Mapping[str, Mapping[str, object]], snapshot: Snapshot) -> bool:
    """Whether the user is not inactive (per the upload over the service)."""
    return _state(user_id, "status", after, snapshot) not in INACTIVE


def _unfit(
    manager: str, after: Mapping[str, Mapping[str, object]], snapshot: Snapshot, today: date
) -> str | None:
    """How ``manager`` is unfit to have active reports ("inactive", "terminated"), or None."""
    if _state(manager, "status", after, snapshot) in INACTIVE:
        return "inactive"
    ends = _state(manager, "termination_date", after, snapshot)
    return "terminated" if ends and date.fromisoformat(str(ends)) <= today else None


def _state(user_id: str, name: str, after: Mapping[str, Mapping[str, object]], snapshot: Snapshot) -> object:
    desired = after.get(user_id, {})
    if name in desired:
        return desired[name]
    return snapshot.user_values.value(user_id, name) if user_id in snapshot.user_values else None
