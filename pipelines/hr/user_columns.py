"""A tenant's users as the HR sync plans against them, held column by column rather than one dict a user.

At 50,000 users, one dict of comparable values per user (its hash table, its lists of ids, its own
strings) held about 88 MB. Here each field is one column: the texts that differ from user to user (the
employee id, email, names, phone) in Arrow arrays, a few bytes each; the values users share (statuses,
types, dates, the ids of managers, positions, groups and roles) as one Python object each, referenced from
a list. A user's values are assembled when asked for (`UserColumns.__getitem__`, `UserColumns.value`), so
the planner still sees the same `models.hr.fields.Values` the applier compares with.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa

from models.hr.fields import Value, Values

TEXTS = ("employee_id", "email", "first_name", "last_name", "display_name", "mobile_phone", "name")
"""Texts of a user's own, held in Arrow (``name`` is the full name people recognise, no compared field)."""
_TYPES = {**dict.fromkeys(TEXTS, pa.string()), "updated_on": pa.timestamp("us", tz="UTC")}
"""The Arrow columns: the texts, and when the service last changed the user."""
_CHUNK = 2_000
"""Values gathered before they become an Arrow chunk (the Python strings are then freed)."""


class UserColumns(Mapping[str, Values]):
    """Comparable values of every user, by id (a read-only mapping once `seal` ed)."""

    def __init__(self) -> None:
        self._at: dict[str, int] = {}
        self._fields: tuple[str, ...] = ()
        self._shared: dict[str, list[Any]] = defaultdict(list)
        self._pending: dict[str, list[Any]] = defaultdict(list)
        self._chunks: dict[str, list[pa.Array]] = defaultdict(list)
        self._arrow: dict[str, pa.Array] = {}
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    def append(self, user_id: str, values: Values, name: str | None, updated_on: datetime) -> None:
        """Add one user's values (every user has the same fields)."""
        self._fields = self._fields or tuple(values)
        self._at[sys.intern(user_id)] = len(self._at)
        own = {**values, "name": name, "updated_on": updated_on}
        for field in _TYPES:
            self._pending[field].append(own[field])
        for field, value in values.items():
            if field not in _TYPES:
                self._shared[field].append(self._share(value))
        if len(self._pending["updated_on"]) >= _CHUNK:
            self._flush()

    def seal(self) -> UserColumns:
        """Finish the columns (one Arrow array each); returns self."""
        self._flush()
        self._arrow = {
            field: pa.concat_arrays(self._chunks[field]) if self._chunks[field] else pa.array([], kind)
            for field, kind in _TYPES.items()
        }
        self._chunks.clear()
        self._tuples.clear()
        return self

    def value(self, user_id: str, field: str) -> Value:
        """One field of one user (``KeyError`` for an unknown user)."""
        return self._value(self._at[user_id], field)

    def column(self, field: str) -> Iterator[Value]:
        """One field of every user, in the users' order."""
        if field in self._arrow:
            yield from self._arrow[field].to_pylist()
        else:
            yield from (_listed(value) for value in self._shared[field])

    def name(self, user_id: str) -> str | None:
        """The user's full name."""
        text: str | None = self._arrow["name"][self._at[user_id]].as_py()
        return text

    def changed_on(self, user_id: str) -> datetime | None:
        """When the service last changed the user (None for an unknown user)."""
        at = self._at.get(user_id)
        moment: datetime | None = None if at is None else self._arrow["updated_on"][at].as_py()
        return moment

    def __getitem__(self, user_id: str) -> Values:
        at = self._at[user_id]
        return {field: self._value(at, field) for field in self._fields}

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, user_id: object) -> bool:
        return user_id in self._at

    def _value(self, at: int, field: str) -> Value:
        if field in self._arrow:
            text: str | None = self._arrow[field][at].as_py()
            return text
        return _listed(self._shared[field][at])

    def _share(self, value: Value) -> Any:
        """One object for equal values: strings interned, lists as one shared tuple."""
        if isinstance(value, list):
            items = tuple(sys.intern(item) for item in value)
            return self._tuples.setdefault(items, items)
        return sys.intern(value) if value is not None else None

    def _flush(self) -> None:
        for field, values in self._pending.items():
            if values:
                self._chunks[field].append(pa.array(values, _TYPES[field]))
        self._pending.clear()


def _listed(value: Any) -> Value:
    """A shared value as `Values` hold it (a tuple of ids is a list there)."""
    return list(value) if isinstance(value, tuple) else value
