"""A tenant's users as the HR sync plans against them, held column by column rather than one dict a user.

At 50,000 users, one dict of comparable values per user (its hash table, its lists of ids, its own
strings) held about 88 MB. Here each field is one column: the texts that differ from user to user (the
employee id, email, names, phone) in NumPy arrays of its variable-width string type (``StringDType``: a
short text lives inside its 16-byte slot, a longer one in the array's own arena), 6 MB for 50,000 users
where Python strings take 23 MB; the values users share (statuses, types, dates, the ids of managers,
positions, groups and roles) as one Python object each, referenced from a list. A user's values are
assembled when asked for (`UserColumns.__getitem__`, `UserColumns.value`), so the planner still sees the
same `models.hr.fields.Values` the applier compares with.

Not Arrow: building an Arrow array from Python values (``pyarrow.array``) imports pandas, 33 MB of a
plan that must fit in 400 MB and never uses it.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.dtypes import StringDType

from models.hr.fields import Value, Values

TEXTS = ("employee_id", "email", "first_name", "last_name", "display_name", "mobile_phone", "name")
"""Texts of a user's own, held in NumPy (``name`` is the full name people recognise, no compared field)."""
_TEXT = StringDType(na_object=None)
"""Variable-width text, None where the user has none."""
_CHUNK = 2_000
"""Texts gathered before they become a NumPy chunk (the Python strings are then freed)."""


class UserColumns(Mapping[str, Values]):
    """Comparable values of every user, by id (a read-only mapping once `seal` ed)."""

    def __init__(self) -> None:
        self._at: dict[str, int] = {}
        self._fields: tuple[str, ...] = ()
        self._shared: dict[str, list[Any]] = defaultdict(list)
        self._pending: dict[str, list[Value]] = defaultdict(list)
        self._chunks: dict[str, list[npt.NDArray[Any]]] = defaultdict(list)
        self._texts: dict[str, npt.NDArray[Any]] = {}
        self._updated: list[datetime] = []
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    def append(self, user_id: str, values: Values, name: str | None, updated_on: datetime) -> None:
        """Add one user's values (every user has the same fields)."""
        self._fields = self._fields or tuple(values)
        self._at[sys.intern(user_id)] = len(self._at)
        self._updated.append(updated_on)
        own = {**values, "name": name}
        for field in TEXTS:
            self._pending[field].append(own[field])
        for field, value in values.items():
            if field not in TEXTS:
                self._shared[field].append(self._share(value))
        if len(self._pending["name"]) >= _CHUNK:
            self._flush()

    def seal(self) -> UserColumns:
        """Finish the columns (one NumPy array each); returns self."""
        self._flush()
        self._texts = {
            field: np.concatenate(self._chunks[field]) if self._chunks[field] else np.array([], _TEXT)
            for field in TEXTS
        }
        self._chunks.clear()
        self._tuples.clear()
        return self

    def value(self, user_id: str, field: str) -> Value:
        """One field of one user (``KeyError`` for an unknown user)."""
        return self._value(self._at[user_id], field)

    def column(self, field: str) -> Iterator[Value]:
        """One field of every user, in the users' order."""
        if field in self._texts:
            yield from self._texts[field].tolist()
        else:
            yield from (_listed(value) for value in self._shared[field])

    def name(self, user_id: str) -> str | None:
        """The user's full name."""
        return self._text(self._at[user_id], "name")

    def changed_on(self, user_id: str) -> datetime | None:
        """When the service last changed the user (None for an unknown user)."""
        at = self._at.get(user_id)
        return None if at is None else self._updated[at]

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
        if field in self._texts:
            return self._text(at, field)
        return _listed(self._shared[field][at])

    def _text(self, at: int, field: str) -> str | None:
        text: str | None = self._texts[field][at]
        return text

    def _share(self, value: Value) -> Any:
        """One object for equal values: strings interned, lists as one shared tuple."""
        if isinstance(value, list):
            items = tuple(sys.intern(item) for item in value)
            return self._tuples.setdefault(items, items)
        return sys.intern(value) if value is not None else None

    def _flush(self) -> None:
        for field, texts in self._pending.items():
            if texts:
                self._chunks[field].append(np.array(texts, _TEXT))
        self._pending.clear()


def _listed(value: Any) -> Value:
    """A shared value as `Values` hold it (a tuple of ids is a list there)."""
    return list(value) if isinstance(value, tuple) else value
