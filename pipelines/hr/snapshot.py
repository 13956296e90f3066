"""The warehouse's copy of a tenant's users, groups, positions and roles, as the HR sync plans against it.

Users and groups are rebuilt from the ``raw`` JSON the extract stored, as the same models the client
returns, so `models.hr.fields` reads both the same way. Names (positions, roles, groups) resolve
case-insensitively with runs of spaces collapsed; a name shared by two records is ambiguous, never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

import duckdb

from models.errors import AuthoritySyncError
from models.groups import Group
from models.hr.fields import EntityKind, UserFields, Value, Values, group_values, user_values
from models.users import User
from pipelines.hr.user_columns import UserColumns
from warehouse.hr_snapshot import (
    last_hr_write,
    latest_sync,
    listed_group_records,
    listed_position_names,
    listed_user_records,
    release_cached_pages,
)

BATCH = 2_000
"""Users read from the warehouse at a time: their JSON text is dropped once read."""


class StaleWarehouseError(AuthoritySyncError):
    """The warehouse is too old (or older than the last HR apply) to plan against."""


@dataclass(frozen=True)
class SyncRun:
    """The extract run a snapshot comes from; ``started_at`` bounds what it can have seen."""

    run_id: str
    started_at: datetime
    finished_at: datetime


@dataclass
class Snapshot:
    """One tenant's users and groups as of one extract run, with lookups by HR-side keys and names. Of a
    user it keeps the comparable values, the name people recognise, and when the service last changed it,
    column by column (`pipelines.hr.user_columns`); whole records are not kept (a 50,000-user tenant would
    not fit in memory)."""

    tenant_id: str
    run: SyncRun
    user_values: UserColumns
    """Comparable values of every user, by id."""
    groups: dict[str, Group]
    positions: dict[str, str]
    """Position id -> name."""
    roles: dict[str, str] = field(default_factory=dict)
    """Role id -> name (the tenant's roles as held by its users: the API lists no roles)."""

    @classmethod
    def build(
        cls,
        tenant_id: str,
        run: SyncRun,
        users: Iterable[User | UserFields],
        groups: dict[str, Group],
        positions: dict[str, str],
    ) -> Snapshot:
        """A snapshot of records read one at a time (``users`` may stream from the warehouse)."""
        columns = UserColumns()
        roles: dict[str, str] = {}
        for user in users:
            columns.append(user.id, user_values(user), user.name, user.updated_on)
            roles.update({link.tenant_role_id: link.role_name for link in user.user_roles})
        return cls(tenant_id, run, columns.seal(), groups, positions, roles)

    def changed_on(self, kind: EntityKind, entity_id: str) -> datetime | None:
        """When the service last changed a user or group (None for one it does not hold)."""
        if kind == "user":
            return self.user_values.changed_on(entity_id)
        group = self.groups.get(entity_id)
        return group.updated_on if group else None

    @cached_property
    def group_values(self) -> dict[str, Values]:
        """Comparable values of every group, by id."""
        return {key: group_values(group) for key, group in self.groups.items()}

    @cached_property
    def _user_index(self) -> dict[str, dict[str, list[str]]]:
        return {
            name: _index(zip(self.user_values.column(name), self.user_values, strict=True))
            for name in ("employee_id", "email")
        }

    @cached_property
    def _group_index(self) -> dict[str, dict[str, list[str]]]:
        return {
            "external_id": _index((group.external_id, key) for key, group in self.groups.items()),
            "group_name": _index((group.group_name, key) for key, group in self.groups.items()),
        }

    @cached_property
    def _names(self) -> dict[str, dict[str, list[str]]]:
        return {
            "positions": _index((name, key) for key, name in self.positions.items()),
            "roles": _index((name, key) for key, name in self.roles.items()),
        }

    def find_users(self, key_field: str, value: str) -> list[str]:
        """Ids of the users whose ``employee_id`` or ``email`` is ``value``."""
        return self._user_index[key_field].get(fold(value), [])

    def find_groups(self, key_field: str, value: str) -> list[str]:
        """Ids of the groups whose ``external_id`` or ``group_name`` is ``value``."""
        return self._group_index[key_field].get(fold(value), [])

    def find_named(self, kind: str, name: str) -> list[str]:
        """Ids of the positions or roles (``kind``) called ``name``."""
        return self._names[kind].get(fold(name), [])

    def user_label(self, user_id: str) -> str:
        """A user as people recognise them: name and employee id."""
        if user_id not in self.user_values:
            return user_id
        return f"{self.user_values.name(user_id)} ({self.user_values.value(user_id, 'employee_id')})"

    def group_label(self, group_id: str) -> str:
        """A group as people recognise it: name and external id."""
        group = self.groups.get(group_id)
        return f"{group.group_name} ({group.external_id})" if group else group_id

    @property
    def population(self) -> dict[EntityKind, int]:
        """How many users and groups the tenant has (thresholds' shares are of these)."""
        return {"user": len(self.user_values), "group": len(self.groups)}


def fold(text: str) -> str:
    """A name as compared: case-folded, with runs of whitespace collapsed."""
    return " ".join(text.split()).casefold()


def _index(pairs: Iterable[tuple[Value, str]]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = defaultdict(list)
    for value, key in pairs:
        if value and isinstance(value, str):
            index[fold(value)].append(key)
    return dict(index)


def latest_run(con: duckdb.DuckDBPyConnection, tenant_id: str) -> SyncRun | None:
    """The tenant's latest successful extract, if any."""
    found = latest_sync(con, tenant_id)
    return SyncRun(*found) if found else None


def load_snapshot(con: duckdb.DuckDBPyConnection, tenant_id: str, run: SyncRun) -> Snapshot:
    """The tenant's current users, groups and positions from the warehouse: those the service still lists
    (a record it says is deleted included, one it stopped listing not). Users are read in batches and
    kept as `models.hr.fields.UserFields` values, never whole; the pages read are then dropped from DuckDB's
    buffer (`warehouse.hr_snapshot.release_cached_pages`), which nothing reads again while planning."""
    groups = (Group.model_validate_json(raw) for raw in listed_group_records(con, tenant_id))
    snapshot = Snapshot.build(
        tenant_id,
        run,
        _users(con, tenant_id),
        {group.id: group for group in groups},
        listed_position_names(con, tenant_id),
    )
    release_cached_pages(con)
    return snapshot


def _users(con: duckdb.DuckDBPyConnection, tenant_id: str) -> Iterator[UserFields]:
    """The tenant's current users, read `BATCH` records at a time."""
    for batch in listed_user_records(con, tenant_id, BATCH):
        yield from (UserFields.model_validate_json(raw) for raw in batch)


def fresh_run(con: duckdb.DuckDBPyConnection, tenant_id: str, max_age: timedelta, now: datetime) -> SyncRun:
    """The run to plan against; `StaleWarehouseError` when there is none, it is older than ``max_age``, or it
    started before the tenant's last HR write (it cannot show what that write changed)."""
    run = latest_run(con, tenant_id)
    if run is None:
        raise StaleWarehouseError(
            f"the warehouse holds no extract of tenant {tenant_id}: run the extract first"
        )
    age = now - run.finished_at
    if age > max_age:
        raise StaleWarehouseError(
            f"the warehouse's last extract of tenant {tenant_id} finished {_hours(age)} ago, more than "
            f"the {_hours(max_age)} allowed: refresh it (--refresh, or `authority-sync extract`)"
        )
    last_write = last_hr_write(con, tenant_id)
    if last_write is not None and last_write >= run.started_at:
        raise StaleWarehouseError(
            f"the warehouse's last extract started before the HR writes of {last_write:%Y-%m-%d %H:%M:%S} "
            "UTC and does not show them: refresh it (--refresh, or `authority-sync extract`)"
        )
    return run


def _hours(span: timedelta) -> str:
    return f"{span / timedelta(hours=1):.1f} h"
