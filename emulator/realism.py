"""The realism profile: list records the way a real service serves some of them, off its documentation.

With ``realism_rate`` set (``PUT /_admin/faults`` or ``authority-sync emulator --realism-rate``), every
``round(1 / rate)``-th record of a list, in id order, is served with one deviation, the deviations taken in
turn from `DEVIATIONS`: nulls where the spec does not say nullable, an omitted field, enum values the spec
does not list, a number sent as a string and a string sent as a number, a renamed key inside
``permissions``, a malformed date, an empty id. The top of the org is served
with ``manager: null`` (the likeliest shape of a real service; the seeded data has him report to
himself). Stored records are not changed: the deviation is applied to the served copy, so turning the
profile off serves the spec again.

Written from the spec's field tables on its own (no client model is imported), so a test run against
it checks the client against the spec, not against itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Record = dict[str, Any]
Deviation = Callable[[Record], None]


def _set(field: str, value: Any) -> Deviation:
    def apply(record: Record) -> None:
        record[field] = value

    return apply


def _drop(field: str) -> Deviation:
    def apply(record: Record) -> None:
        record.pop(field, None)

    return apply


def _first(items: str, field: str, value: Any) -> Deviation:
    def apply(record: Record) -> None:
        if record.get(items):
            record[items][0] = {**record[items][0], field: value}

    return apply


def _rename_first(items: str, old: str, new: str) -> Deviation:
    def apply(record: Record) -> None:
        if record.get(items):
            first = dict(record[items][0])
            first[new] = first.pop(old, None)
            record[items][0] = first

    return apply


DEVIATIONS: dict[str, dict[str, Deviation]] = {
    "decisions": {
        "name null": _set("name", None),
        "decision group displayName null": _first("decisionGroups", "displayName", None),
        "status PENDING_REVIEW": _set("status", "PENDING_REVIEW"),
        "guidance omitted": _drop("guidance"),
        "authorityTypeOrder as a string": _first("decisionAuthorities", "authorityTypeOrder", "3"),
        "authority value type Ratio": _first("decisionAuthorities", "authorityLimitValueType", "Ratio"),
        "permission key renamed": _rename_first("permissions", "relationship_key", "relationshipKey"),
        "decisionDisplayId as a number": _set("decisionDisplayId", 12345),
        "id empty": _set("id", ""),
    },
    "users": {
        "status SUSPENDED": _set("status", "SUSPENDED"),
        "lastLoginDate malformed": _set("lastLoginDate", "last tuesday"),
        "isDeleted as a string": _set("isDeleted", "false"),
    },
    "groups": {
        "address null": _set("address", None),
        "displayName null": _set("displayName", None),
    },
    "delegations": {
        "status ON_HOLD": _set("status", "ON_HOLD"),
        "decisionName null": _set("decisionName", None),
    },
}
"""Per list kind, the deviations served in turn, by name."""


def assignment(kind: str, ids: list[str], rate: float) -> dict[str, str]:
    """Record id -> the name of the deviation it is served with, for one list kind at ``rate``."""
    deviations = list(DEVIATIONS.get(kind, {}))
    if rate <= 0 or not deviations:
        return {}
    every = max(1, round(1 / rate))
    chosen = sorted(ids)[every - 1 :: every]
    return {record_id: deviations[index % len(deviations)] for index, record_id in enumerate(chosen)}


def serve(kind: str, record: Record, deviation: str | None, top_user: bool) -> Record:
    """The record as served: a copy with its deviation applied (and the top user without a manager)."""
    if deviation is None and not top_user:
        return record
    served = dict(record)
    if deviation is not None:
        DEVIATIONS[kind][deviation](served)
    if top_user:
        served["manager"] = None
    return served
