"""Matching rows to service records, and HR-side references to ids.

A row matches a service record by the first match key that finds exactly one (employee id, then email;
external id, then name). References resolve through the file first (a manager who is also in the file, a
department renamed in the same upload) and then the warehouse: managers by employee id, positions and
roles by name, groups and parents by external id, then name. A key that finds nothing, finds only a row
that needs creation, or finds several records is a problem of the referring row, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable

from models.hr.fields import primary_first
from pipelines.hr.mapping import EntityMapping
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import Snapshot, fold

Finder = Callable[[str], list[str]]


def match_rows(rows: list[HrRow], mapping: EntityMapping, snapshot: Snapshot) -> None:
    """Set each row's ``entity_id`` to the service record it matches, if any; rows matching the same
    record are each reported (`duplicate_targets`)."""
    find = snapshot.find_users if mapping.kind == "user" else snapshot.find_groups
    for row in rows:
        for key_field in mapping.match_keys:
            value = row.cells.get(key_field)
            ids = find(key_field, value) if value else []
            if len(ids) > 1:
                row.problem(mapping, key_field, "ambiguous_match", f"{value!r} matches {len(ids)} records")
            if ids:
                row.entity_id = ids[0] if len(ids) == 1 else None
                row.matched_by = key_field
                break
    duplicate_targets(rows, mapping)


def duplicate_targets(rows: list[HrRow], mapping: EntityMapping) -> None:
    """Rows that match one record through different keys (one by employee id, another by email): which
    one HR meant cannot be known, so each is reported at the key it matched by. Rows that share a key are
    already ``duplicate_key`` problems and are not reported twice."""
    by_record: dict[str, list[HrRow]] = {}
    for row in rows:
        if row.entity_id:
            by_record.setdefault(row.entity_id, []).append(row)
    for same in (group for group in by_record.values() if len(group) > 1):
        for row in same:
            if any(problem.rule == "duplicate_key" for problem in row.problems):
                continue
            lines = ", ".join(str(other.line) for other in same if other is not row)
            message = f"line {lines} matches the same {mapping.kind} record"
            row.problem(mapping, row.matched_by or mapping.match_keys[0], "duplicate_target", message)


class References:
    """Resolves the references of every row of one upload."""

    def __init__(self, snapshot: Snapshot, users: list[HrRow], groups: list[HrRow]) -> None:
        self.snapshot = snapshot
        self._file_users = _by_cell(users, "employee_id")
        self._file_groups = _by_cell(groups, "group_name")
        self._renamed = {row.entity_id for row in groups if row.entity_id and row.cells.get("group_name")}

    def resolve_user(self, row: HrRow, mapping: EntityMapping) -> None:
        """Turn a user row's manager, positions, groups and roles into ids (or problems)."""
        find_position = _named(self.snapshot, "positions")
        find_role = _named(self.snapshot, "roles")
        for name, find, what in (
            ("manager", self._user, "manager"),
            ("positions", find_position, "position"),
            ("groups", self._group, "group"),
            ("roles", find_role, "role"),
        ):
            ids = self._resolve(row, mapping, name, find, what)
            if ids is not None:
                row.desired[name] = _shape(name, ids)
        if row.entity_id and row.desired.get("manager") == row.entity_id:
            row.problem(mapping, "manager", "self_manager", "a user cannot be their own manager")

    def resolve_group(self, row: HrRow, mapping: EntityMapping) -> None:
        """Turn a group row's parent into an id (or a problem)."""
        ids = self._resolve(row, mapping, "parent", self._group, "parent")
        if ids is not None:
            row.desired["parent"] = ids
        if row.entity_id and row.entity_id in (ids or []):
            row.problem(mapping, "parent", "self_parent", "a group cannot be its own parent")

    def _resolve(
        self, row: HrRow, mapping: EntityMapping, name: str, find: Finder, what: str
    ) -> list[str] | None:
        """Ids of every key of one reference field; None when the field is blank or a key fails. The keys
        are consumed (the row holds the ids from now on: a large upload keeps one copy)."""
        keys = row.references.pop(name, None)
        if not keys:
            return None
        ids = []
        for key in keys:
            found = find(key)
            if len(found) != 1:
                problem = "ambiguous" if found else "unknown"
                detail = f"matches {len(found)} records" if found else "is not a record of the service"
                row.problem(mapping, name, f"{problem}_{what}", f"{key!r} {detail}")
                return None
            ids.append(found[0])
        return ids

    def _user(self, key: str) -> list[str]:
        """By employee id in the service, else a file row matched by email that brings the new id."""
        found = self.snapshot.find_users("employee_id", key)
        return found or [row.entity_id for row in self._file_users.get(fold(key), []) if row.entity_id]

    def _group(self, key: str) -> list[str]:
        """By external id, else by name: the service's names, except those the file renames, plus the
        file's names."""
        found = self.snapshot.find_groups("external_id", key)
        if found:
            return found
        kept = [
            group_id
            for group_id in self.snapshot.find_groups("group_name", key)
            if group_id not in self._renamed
        ]
        named = [row.entity_id for row in self._file_groups.get(fold(key), []) if row.entity_id]
        return sorted({*kept, *named})


def _by_cell(rows: list[HrRow], name: str) -> dict[str, list[HrRow]]:
    """Rows by the folded value of their ``name`` cell."""
    index: dict[str, list[HrRow]] = {}
    for row in rows:
        if row.cells.get(name):
            index.setdefault(fold(row.cells[name]), []).append(row)
    return index


def _named(snapshot: Snapshot, kind: str) -> Finder:
    return lambda name: snapshot.find_named(kind, name)


def _shape(name: str, ids: list[str]) -> str | list[str]:
    """The comparable form of a resolved reference (see `models.hr.fields.user_values`)."""
    if name == "manager":
        return ids[0]
    return primary_first(ids) if name == "groups" else sorted(ids)
