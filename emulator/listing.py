"""The paged list extensions (users, groups, delegations): one way to filter, order and serve them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from fastapi import Response

from emulator.http import page, sliced
from emulator.service import Emulator
from emulator.state import Record, TenantState
from models.base import format_timestamp
from models.queries import PageQuery


@dataclass(frozen=True)
class Selection:
    """Which records a list query keeps and in which order.

    Statuses match any listed; the updated range is inclusive at both ends; ``search`` is a
    case-insensitive substring of the ``search_keys``; ties sort by ``id`` in the same direction."""

    updated_key: str
    sort: Callable[[Record], Any]
    descending: bool = False
    statuses: frozenset[str] = frozenset()
    start: datetime | None = None
    end: datetime | None = None
    search: str | None = None
    search_keys: tuple[str, ...] = ()
    keep: Callable[[Record], bool] | None = None

    def select(self, records: Iterable[Record]) -> list[str]:
        """Ids of the kept records, in order."""
        low = format_timestamp(self.start) if self.start else None
        high = format_timestamp(self.end) if self.end else None
        needle = self.search.lower() if self.search else None
        kept = [
            record
            for record in records
            if (not self.statuses or record["status"] in self.statuses)
            # ISO strings of one format (UTC, milliseconds, Z) order as the instants they name.
            and (low is None or record[self.updated_key] >= low)
            and (high is None or record[self.updated_key] <= high)
            and (needle is None or needle in " ".join(str(record[k]) for k in self.search_keys).lower())
            and (self.keep is None or self.keep(record))
        ]
        kept.sort(key=lambda record: (self.sort(record), record["id"]), reverse=self.descending)
        return [record["id"] for record in kept]


def serve(
    emulator: Emulator,
    state: TenantState,
    kind: str,
    query: PageQuery,
    selection: Selection,
    render: Callable[[TenantState, str], Record],
) -> Response:
    """One page of a list; the selection is computed once per tenant version and query."""
    ids = emulator.cached_ids(
        state,
        (kind, query.model_dump_json(exclude={"page", "limit"})),
        lambda: selection.select(getattr(state, kind).values()),
    )
    items = [
        emulator.encoded(state, kind, key, partial(render, state, key))
        for key in sliced(ids, query.page, query.limit)
    ]
    return page(items, query.page, query.limit, len(ids) + emulator.faults.total_skew)
