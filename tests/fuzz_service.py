"""The adversary of the generative sync test (tests/test_sync_generative.py): a service drawn from what the
protocol allows rather than from a list of quirks we know, and the state it holds at each point.

A drawn service holds a tenant generated from the spec's field tables (tests/spec_generators.py) and
misbehaves along every dimension the spec, HTTP (RFC 9110) and JSON (RFC 8259) leave open:

- **order**: each list is served in the order asked for, reversed, by when its records were updated
  (records that change move), or shuffled anew for every request;
- **changes while paged**: records inserted, updated (their updated-at moved to the service's clock, written
  in any form an instant takes: ISO 8601 at any offset and precision, a date alone, epoch seconds or
  milliseconds) or removed at any request of a list's read;
- **changes between runs**: the same, between the runs of a sequence (full, incremental, full), so the
  incremental run's cursor filters records stamped in every form;
- **values**: every JSON form a field can take (spec_generators: another type, null, missing, huge and
  tiny numbers and numbers written with more digits than a float holds, instants past and future, date
  alone, epoch seconds and milliseconds);
- **paging**: page sizes capped (reported or not), totals off (too low, or too high: the run must then
  fail naming the list) or missing, pages past the end answered ``[]``, 404 or 400;
- **transport** (`tests.standin.TRANSPORT`): resets, bodies cut off, 5xx with and without bodies, HTML
  error pages, closes, chunked, BOM, same-origin 307/308, trickled and stalled bodies, and 429s.

Like the stand-in and the generators, this module imports nothing of the product.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from tests.spec_generators import INSTANT_FORMS, OFFSETS, PRECISIONS, Drawn, record, written
from tests.standin import SPEC, TRANSPORT, Quirks, Record, Tenant

ORDERS = ("asked", "reversed", "by_updated", "shuffled")
"""How a list is served: as asked (creation order), reversed, by updated-at, shuffled per request."""
UPDATED = {"decisions": "updatedAt", "delegations": "updatedAt", "users": "updatedOn", "groups": "updatedOn"}
"""The updated-at field of each list's records (positions have none)."""
CHANGE_KINDS = ("update", "insert", "remove")


@dataclass
class Change:
    """One change of a list: at the list's ``at``-th request (while paged) or between two runs."""

    list_name: str
    kind: str
    target: int
    """Which record (an index into the list's records, modulo their number), for an update or a removal."""
    at: int = 0
    new: Record | None = None
    """The record an insert adds."""
    stamp: Stamp = field(default_factory=lambda: Stamp("iso", timedelta(0), "milliseconds", True))
    """How the service writes the updated-at it gives the record it changes or adds."""
    done: bool = False


@dataclass
class Service:
    """A drawn service: its tenant, its quirks and the changes it makes during and between runs."""

    tenant: Tenant
    quirks: Quirks
    orders: dict[str, str]
    while_paged: list[Change]
    between: list[Change]
    counter: int = 0
    earlier: dict[tuple[str, str], list[Record]] = field(default_factory=dict)
    """(list, id) -> the copies a record had before it changed while paged (a run may store any)."""

    def __repr__(self) -> str:
        sizes = {name: len(records) for name, records in self.tenant.lists.items()}
        paging: dict[str, object] = {"cap": self.quirks.page_cap, "reported": self.quirks.cap_reported}
        paging |= {"skew": self.quirks.total_skew, "no_total": sorted(self.quirks.no_total)}
        return (
            f"Service(lists={sizes}, orders={self.orders}, paging={paging}, past_end={self.quirks.past_end}, "
            f"transport={self.quirks.transport}, 429s={self.quirks.rate_limited}, "
            f"while_paged={[(c.list_name, c.kind, c.at, c.stamp.form) for c in self.while_paged]}, "
            f"between={[(c.list_name, c.kind, c.stamp.form) for c in self.between]})"
        )

    def order(self, name: str, records: list[Record]) -> list[Record]:
        """The records of ``name`` in the order this request serves them (`Quirks.order`)."""
        kind = self.orders.get(name, "asked")
        if kind == "reversed":
            return records[::-1]
        if kind == "by_updated":
            return sorted(
                records, key=lambda item: (str(item.get(UPDATED.get(name, ""), "")), str(item.get("id")))
            )
        if kind == "shuffled":
            self.counter += 1
            shuffled = list(records)
            random.Random(self.counter).shuffle(shuffled)
            return shuffled
        return records

    def on_list_request(self, name: str, before: int, tenant: Tenant) -> None:
        """Make the changes due at this request of list ``name`` (`Quirks.on_list_request`)."""
        for change in self.while_paged:
            if change.list_name == name and change.at == before and not change.done:
                copy = apply(change, tenant)
                if copy is not None:
                    self.earlier.setdefault((name, str(copy["id"])), []).append(copy)

    def changed_while_paged(self, name: str) -> bool:
        """Whether the list changed while a run read it."""
        return any(change.done and change.list_name == name for change in self.while_paged)


@dataclass(frozen=True)
class Stamp:
    """A form the service writes an updated-at in (`tests.spec_generators.written`)."""

    form: str
    offset: timedelta
    precision: str
    zulu: bool

    def now(self) -> str | int:
        """The service's clock, written in this form."""
        return written(datetime.now(UTC), self.form, self.offset, self.precision, self.zulu)


STAMPS = st.builds(Stamp, st.sampled_from(INSTANT_FORMS), OFFSETS, PRECISIONS, st.booleans())


def apply(change: Change, tenant: Tenant) -> Record | None:
    """Make ``change`` to the tenant's list; the record changed or removed as it was before (None: an
    insert, or a list without a record to change)."""
    change.done = True
    records = tenant.lists[change.list_name]
    if change.kind == "insert" and change.new is not None:
        records.append({**change.new, **stamped(change)})
        return None
    usable = [item for item in records if isinstance(item.get("id"), str) and item["id"].strip()]
    if not usable:
        return None
    target = usable[change.target % len(usable)]
    before = copy.deepcopy(target)
    if change.kind == "remove":
        records.remove(target)
    else:
        target.update({"xChanged": change.target, **stamped(change)})
    return before


def stamped(change: Change) -> dict[str, str | int]:
    """The updated-at field of the record ``change`` makes, stamped now in its form (nothing for
    positions)."""
    return {UPDATED[change.list_name]: change.stamp.now()} if change.list_name in UPDATED else {}


@st.composite
def changes(draw: st.DrawFn, tenant_id: str, while_paged: bool) -> list[Change]:
    """A few changes of any list: while paged, each at one of the first requests of its list's read."""
    found = []
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(list(SPEC["lists"])))
        kind = draw(st.sampled_from(CHANGE_KINDS))
        change = Change(name, kind, draw(st.integers(0, 50)), draw(st.integers(1, 6)) if while_paged else 0)
        change.stamp = draw(STAMPS)
        if kind == "insert":
            drawn: Drawn = draw(record(SPEC["lists"][name]["record"], clean=True))
            change.new = {**drawn.record, "id": str(draw(st.uuids()))}
            if "tenantId" in change.new:
                change.new["tenantId"] = tenant_id
        found.append(change)
    return found


@st.composite
def services(draw: st.DrawFn, tenant: Tenant) -> Service:
    """The quirks of a service serving ``tenant``, drawn from every dimension of the module docstring."""
    lists = list(SPEC["lists"])
    quirks = Quirks()
    service = Service(
        tenant,
        quirks,
        {name: draw(st.sampled_from(ORDERS)) for name in lists},
        draw(changes(tenant.tenant_id, while_paged=True)),
        draw(changes(tenant.tenant_id, while_paged=False)),
    )
    quirks.page_cap = draw(st.sampled_from([None, None, 2, 3, 5]))
    quirks.cap_reported = draw(st.booleans())
    # A cap the page does not report together with a total too low is the one combination nothing the
    # service sends can reveal (page 1 then looks like the whole list): docs/sync.md, "What the sync
    # cannot see".
    skews = [0, 0, 0] + ([-1] if quirks.page_cap is None or quirks.cap_reported else [])
    quirks.total_skew = {name: draw(st.sampled_from(skews)) for name in lists}
    # A total too high fails every run (a list known to be short is never committed): one list at most,
    # now and then, so that most sequences of runs get to be judged by their values.
    if draw(st.integers(0, 9)) == 0:
        quirks.total_skew[draw(st.sampled_from(lists))] = 1
    quirks.no_total = set(draw(st.lists(st.sampled_from(lists), max_size=2)))
    quirks.past_end = draw(st.sampled_from([None, None, 404, 400]))
    quirks.rate_limited = draw(st.sampled_from([0, 0, 0, 1]))
    quirks.retry_after = lambda: "0"
    quirks.transport = draw(
        st.dictionaries(st.integers(0, 40), st.sampled_from(sorted(TRANSPORT)), max_size=3)
    )
    quirks.order = service.order
    quirks.on_list_request = service.on_list_request
    return service
