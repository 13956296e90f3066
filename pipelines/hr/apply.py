"""Apply a stored plan through E1 and E3, once, safely under crashes, conflicts and unknown outcomes.

Each pass reads back what changed in the service since the plan's warehouse snapshot (one paged users
query and one groups query with ``updated_at_start``), then settles every entity still pending:

* not changed since the snapshot: the plan's "before" still holds, so it is written;
* its planned fields equal "after": applied already (by an interrupted earlier write, or by someone else),
  so nothing is written;
* its planned fields equal "before": it is written (a ``in_flight``/``unknown`` write proven not applied);
* anything else: someone changed it since planning; it is skipped, not overwritten.

A write whose request may still be running at the service (no answer came back: a timeout, a cut
connection, or the process died after marking it ``in_flight``) is not judged before its request's
timeout has passed (`settle_window`): read back earlier, a slow service's pending write looks "not
applied" and would be sent twice. The pass waits for that deadline instead.

Writes follow the journal protocol of `warehouse.hr_store.Journal`: mark ``in_flight`` and commit, send,
record the outcome and commit. A write whose outcome is unknown (dropped connection, 5xx, unreadable
answer) is never repeated blindly: the next pass (or the next apply) reads it back first. Groups go
before users, parents before children; each level runs concurrently under the client's rate limiter.
Bodies are minimal: E1 gets ``tenantId`` and the changed fields; E3 only the changed fields.

A signal (SIGTERM, SIGINT) stops the apply as it stops a sync (`pipelines.stopping`): no further
request is sent, a write not yet sent goes back to ``planned``, one whose answer was not journaled in
time stays ``in_flight`` (read back by the next apply, never sent twice), and the plan ends
``incomplete`` with `RunInterruptedError` saying what was written; the same apply again resumes from
the journal.

Dated changes: an apply on day ``today`` settles only the changes due by then and not yet written (see
`due_part`); an entity with changes dated later ends ``scheduled`` and the plan ``scheduled`` until an
apply on or after their day (``hr apply-due``) writes them, read back and judged like any other write, so a
record changed in the meantime is skipped, not overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from itertools import groupby
from typing import NamedTuple

from models.errors import AuthoritySyncError
from models.groups import UpdateGroup
from models.hr.fields import Value, Values, group_values, same, user_values
from models.hr.plan import Change, EntityPlan
from models.hr.status import PENDING, EntityStatus, PlanStatus
from models.queries import GroupQuery, UserQuery
from models.users import UpdateUserEntities
from pipelines.stopping import RunStop, stopping_on_signals
from resources.client import AdmClient
from resources.errors import (
    APIConnectionError,
    AuthenticationError,
    PermissionDeniedError,
    RateLimitError,
    ServiceError,
    StoppedError,
    WriteOutcomeUnknown,
)
from resources.settings import ClientSettings
from warehouse.commit import Opener
from warehouse.hr_store import (
    Journal,
    JournalEntry,
    StoredPlan,
    journal_entries,
    outcome_counts,
    set_plan_status,
)

logger = logging.getLogger(__name__)

WRITE_PASSES = 2
"""Passes that write: the first, and one retry of writes a read-back proved were not applied."""
CLOCK_SKEW = timedelta(minutes=10)
"""Read-backs start this long before the snapshot, in case the service's clock is behind ours."""
DEFAULT_MAX_AGE = timedelta(hours=72)
"""A plan older than this is refused (``ADM_HR_PLAN_MAX_AGE_HOURS``): the files are planned again."""
UNFINISHED = PENDING | {EntityStatus.FAILED}
"""Entity statuses that leave a plan ``incomplete`` after an apply."""

Key = tuple[str, str]
Outcome = tuple[EntityStatus, str | None]


class PlanNotApplicableError(AuthoritySyncError):
    """The plan cannot be applied: it was applied already, it expired, or a threshold blocks it."""


class PlanBlockedError(PlanNotApplicableError):
    """A safety threshold blocks the plan: a person lifts it (``--allow KIND --reason TEXT``) or not."""


class Written(NamedTuple):
    """One write's outcome: status and message, whether the write was sent to the service, and until when
    its request may still be running there (None: an answer came back, or nothing was sent)."""

    status: EntityStatus
    message: str | None
    sent: bool
    running_until: datetime | None = None
    answer: str | None = None
    """What the service answered a write whose outcome is unknown (its status and message), or that it
    did not: shown beside "not applied" when the read-back proves it was not."""


@dataclass
class ApplyReport:
    """What one apply did: the plan's status after it, entities per outcome, writes sent, reads made."""

    plan_id: str
    run_id: str
    status: PlanStatus
    outcomes: dict[str, int]
    writes: int = 0
    read_backs: int = 0


def check_applicable(plan: StoredPlan, max_age: timedelta, now: datetime) -> None:
    """Refuse a plan that was applied already, closed by its revert, older than ``max_age``, or that a
    threshold still blocks."""
    if plan.status == PlanStatus.SUPERSEDED:
        raise PlanNotApplicableError(
            f"plan {plan.plan_id} was closed by its revert, plan {plan.superseded_by}: it never applies "
            "again (plan the files again to make these changes)"
        )
    if plan.status == PlanStatus.APPLIED:
        raise PlanNotApplicableError(
            f"plan {plan.plan_id} was applied at {plan.applied_at}; a plan applies once"
        )
    if expired(plan, max_age, now):
        raise PlanNotApplicableError(
            f"plan {plan.plan_id} expired: made {plan.created_at:%Y-%m-%d %H:%M} UTC, more than "
            f"{max_age.total_seconds() / 3600:g} h ago (ADM_HR_PLAN_MAX_AGE_HOURS); plan the files again"
        )
    if plan.blocked:
        kinds = ", ".join(plan.blocked)
        raise PlanBlockedError(
            f"plan {plan.plan_id} is blocked by safety thresholds ({kinds}): lift a kind with "
            "--allow KIND --reason TEXT after checking the plan"
        )


def expired(plan: StoredPlan, max_age: timedelta, now: datetime) -> bool:
    """Whether a plan not yet applied is older than ``max_age`` (and so is never applied). A scheduled
    plan never expires: its dated changes were accepted when it was applied and wait for their day."""
    waiting = plan.status in (PlanStatus.APPLIED, PlanStatus.SCHEDULED, PlanStatus.SUPERSEDED)
    return not waiting and now - plan.created_at > max_age


def apply_plan(
    open_write: Opener,
    client: AdmClient,
    plan: StoredPlan,
    run_id: str,
    max_age: timedelta = DEFAULT_MAX_AGE,
    now: datetime | None = None,
    actor: str | None = None,
) -> ApplyReport:
    """Apply (or resume) ``plan`` as of ``now`` (default: the clock), writing the changes due by its day,
    recorded as run by ``actor``; every entity's outcome is journaled in the warehouse, each in a short
    write of its own (``open_write``), never holding the file while a request is out. An error that stops
    the apply (a 401, a 403, ...) leaves the plan ``incomplete`` with the error, and is raised; so does a
    signal, as `RunInterruptedError`."""
    moment = now or datetime.now(UTC)
    check_applicable(plan, max_age, moment)
    with open_write() as con:
        set_plan_status(con, plan.plan_id, PlanStatus.APPLYING, run_id, datetime.now(UTC), actor=actor)
        entries = journal_entries(con, plan.plan_id)
    journal = Journal(open_write, plan.plan_id, run_id, moment.date())
    stop = RunStop()
    stop.attach(client)
    try:
        with stopping_on_signals(stop):  # until the plan's status is written: a second signal cannot lose it
            report = _passes(entries, client, plan, journal)
    except Exception as error:
        # Closed first: a write still running on a worker thread must not journal any more.
        journal.close()
        with open_write() as con:
            stopped = stop.error(written_so_far(outcome_counts(con, plan.plan_id), plan.plan_id))
            said = str(stopped or error)
            set_plan_status(con, plan.plan_id, PlanStatus.INCOMPLETE, run_id, datetime.now(UTC), said)
        if stopped is not None:
            raise stopped from None
        raise
    finally:
        journal.close()
    with open_write() as con:
        report.outcomes = outcome_counts(con, plan.plan_id)
        report.status = plan_status(report.outcomes)
        set_plan_status(con, plan.plan_id, report.status, run_id, datetime.now(UTC))
    return report


def written_so_far(outcomes: Mapping[str, int], plan_id: str) -> str:
    """What an interrupted apply leaves, in words: entities per journal status, and how to resume."""
    counts = ", ".join(f"{status} {count:,}" for status, count in sorted(outcomes.items()))
    return (
        f"the plan's entities are now {counts}; `authority-sync hr apply {plan_id}` again resumes from "
        "its journal (a write whose answer never came is read back, never sent twice)"
    )


def plan_status(outcomes: Mapping[str, int]) -> PlanStatus:
    """A plan's status after an apply, from its entities per journal status."""
    if any(status in UNFINISHED for status in outcomes):
        return PlanStatus.INCOMPLETE
    return PlanStatus.SCHEDULED if EntityStatus.SCHEDULED in outcomes else PlanStatus.APPLIED


def settle_window(settings: ClientSettings) -> timedelta:
    """How long a write's request may run on our side (connect, send, await the answer): until then an
    unanswered write may still be applied by the service, so it is not judged by reading it back."""
    seconds = settings.connect_timeout_s + settings.write_timeout_s + settings.read_timeout_s
    return timedelta(seconds=seconds)


def _passes(
    entries: list[JournalEntry], client: AdmClient, plan: StoredPlan, journal: Journal
) -> ApplyReport:
    """Read back, settle and write, pass after pass, until nothing is pending (see the module docstring);
    ``entries`` is the plan's journal as the apply began."""
    entities = [due_part(entry, journal.today) for entry in entries]
    status = {_key(entry.entity): entry.status for entry in entries}
    _schedule(entities, status, journal)
    running = {_key(entry.entity): entry.settle_after for entry in entries if entry.settle_after}
    answers: dict[Key, str] = {}
    report = ApplyReport(plan.plan_id, journal.run_id, PlanStatus.APPLYING, {})
    write = partial(write_entity, client, journal, plan.tenant_id, settle_window(client.settings))
    for number in range(WRITE_PASSES + 1):
        pending = [entity for entity in entities if status[_key(entity)] in PENDING]
        if not pending:
            break
        _await_running(client, pending, running)
        current = _read_back(client, plan, {entity.kind for entity in pending})
        report.read_backs += 1
        writing = number < WRITE_PASSES
        to_write = _settle(pending, status, current, journal, writing, answers)
        if writing and to_write:
            report.writes += _write_levels(client, write, to_write, status, running, answers)
    return report


def due_part(entry: JournalEntry, today: date) -> EntityPlan:
    """The entity with the changes an apply on ``today`` settles (due by then, not written by an earlier
    apply: dated after ``written_through``) and, held back in ``later``, those dated after ``today``."""
    done = entry.written_through
    due = [c for c in entry.entity.changes if _day(c) <= today and (done is None or _day(c) > done)]
    later = [c for c in entry.entity.changes if _day(c) > today]
    return replace(entry.entity, changes=tuple(due), later=tuple(later))


def _day(change: Change) -> date:
    """When a change takes effect; an undated one is due from the start."""
    return change.effective_on or date.min


def _schedule(entities: list[EntityPlan], status: dict[Key, EntityStatus], journal: Journal) -> None:
    """Journal the entities with nothing due today as ``scheduled``; a scheduled one with changes come
    due is pending again (``planned``), to be read back and written like a planned one."""
    for entity in entities:
        was = status[_key(entity)]
        if was == EntityStatus.PLANNED and not entity.changes:
            journal.record(entity, EntityStatus.SCHEDULED, entity.waiting)
            status[_key(entity)] = EntityStatus.SCHEDULED
        elif was == EntityStatus.SCHEDULED and entity.changes:
            status[_key(entity)] = EntityStatus.PLANNED


def _key(entity: EntityPlan) -> Key:
    return entity.kind, entity.entity_id


def _await_running(client: AdmClient, pending: list[EntityPlan], running: Mapping[Key, datetime]) -> None:
    """Wait until no pending entity's write may still be running at the service (cut short when the
    client is stopped: its next read-back then ends the apply)."""
    deadlines = [running[_key(entity)] for entity in pending if _key(entity) in running]
    wait = (max(deadlines) - datetime.now(UTC)).total_seconds() if deadlines else 0.0
    if wait > 0:
        logger.info("waiting %.1f s for unanswered writes to time out before reading them back", wait)
        client.pause(wait)


def _read_back(client: AdmClient, plan: StoredPlan, kinds: set[str]) -> dict[Key, Values]:
    """Current values of every user and group updated since the plan's snapshot (one query each)."""
    since = plan.snapshot_at - CLOCK_SKEW
    current: dict[Key, Values] = {}
    if "user" in kinds:
        users = client.iter_users(UserQuery(updated_at_start=since))
        current |= {("user", user.id): user_values(user) for user in users}
    if "group" in kinds:
        groups = client.iter_groups(GroupQuery(tenant_id=plan.tenant_id, updated_at_start=since))
        current |= {("group", group.id): group_values(group) for group in groups}
    return current


def _settle(
    pending: list[EntityPlan],
    status: dict[Key, EntityStatus],
    current: Mapping[Key, Values],
    journal: Journal,
    writing: bool,
    answers: Mapping[Key, str],
) -> list[EntityPlan]:
    """Settle each pending entity against the read-back; returns those to write (now, if ``writing``:
    the last pass only reads back). An entity proven not applied says what the service answered its
    write (``answers``)."""
    to_write = []
    for entity in pending:
        was = status[_key(entity)]
        outcome = triage(entity, was, current.get(_key(entity)))
        if outcome is None:
            to_write.append(entity)
            again = "writing it" if writing else "apply the plan again to retry"
            answer = f" ({answers[_key(entity)]})" if _key(entity) in answers else ""
            message = f"read back: not applied{answer}; {again}" if was != EntityStatus.PLANNED else None
            outcome = (EntityStatus.PLANNED, message)
        if outcome != (EntityStatus.PLANNED, None):
            # An in_flight write found applied reached the service, though its answer was never recorded.
            sent = was == EntityStatus.IN_FLIGHT and outcome[0] == EntityStatus.APPLIED
            journal.record(entity, *outcome, sent=sent)
        status[_key(entity)] = outcome[0]
    return to_write


def triage(entity: EntityPlan, status: EntityStatus, current: Values | None) -> Outcome | None:
    """The outcome of a pending entity given its current values (None: not updated since the snapshot),
    or None when it must be written. See the module docstring."""
    if current is None:
        return None
    if all(same(current[change.field], change.after) for change in entity.changes):
        done = (
            "read back: the write was applied"
            if status != EntityStatus.PLANNED
            else "already had the planned values"
        )
        return EntityStatus.APPLIED, done
    if all(same(current[change.field], change.before) for change in entity.changes):
        return None
    changed = [change.field for change in entity.changes if not same(current[change.field], change.before)]
    return EntityStatus.SKIPPED_CHANGED, f"changed in the service since planning: {', '.join(changed)}"


def _write_levels(
    client: AdmClient,
    write: Callable[[EntityPlan], Written],
    entities: list[EntityPlan],
    status: dict[Key, EntityStatus],
    running: dict[Key, datetime],
    answers: dict[Key, str],
) -> int:
    """Write level by level (groups by depth, then users), each level concurrently; returns the writes
    sent to the service. What the service answered a write whose outcome is unknown goes to
    ``answers``."""
    received = 0
    for _, level in groupby(
        sorted(entities, key=lambda entity: entity.order), key=lambda entity: entity.order
    ):
        for entity, written in client.map_concurrent(write, list(level)):
            status[_key(entity)] = written.status
            received += written.sent
            if written.answer:
                answers[_key(entity)] = written.answer
            if written.running_until is None:
                running.pop(_key(entity), None)
            else:
                running[_key(entity)] = written.running_until
    return received


def write_entity(
    client: AdmClient, journal: Journal, tenant_id: str, window: timedelta, entity: EntityPlan
) -> Written:
    """Journal, send and check one entity's write; returns its recorded outcome. An authentication or
    permission failure stops the whole apply (every other write would fail the same way)."""
    deadline = datetime.now(UTC) + window
    journal.mark_in_flight(entity, deadline)
    try:
        status, message = _compare(entity, _send(client, tenant_id, entity))
        written = Written(status, message, sent=True)
    except WriteOutcomeUnknown as error:
        # With no answer at all (a timeout, a cut connection) the service may still be working on it.
        running_until = deadline if error.status is None else None
        written = Written(EntityStatus.UNKNOWN, str(error), True, running_until, service_answer(error))
    except (RateLimitError, APIConnectionError) as error:
        # Retried by the client and still failing before the request left: certainly not applied.
        written = Written(EntityStatus.PLANNED, f"not sent: {error}", sent=False)
    except (AuthenticationError, PermissionDeniedError, StoppedError) as error:
        # Every other write would fail the same way (a stopped client sends nothing more).
        journal.record(entity, EntityStatus.PLANNED, f"not sent: {error}")
        raise
    except ServiceError as error:
        written = Written(EntityStatus.FAILED, str(error), sent=True)
    still_running = written.running_until is not None
    journal.record(entity, written.status, written.message, sent=written.sent, still_running=still_running)
    logger.info("%s %s (%s): %s", entity.kind, entity.hr_key, entity.entity_id, written.status)
    return written


def service_answer(error: ServiceError) -> str:
    """What the service answered a write (its status and message), or that no answer came."""
    cause = error.__cause__ if isinstance(error.__cause__, ServiceError) else error
    if error.status is None:
        return f"no answer: {cause.message}"
    return f"the service answered {error.status}: {cause.message}"


def _send(client: AdmClient, tenant_id: str, entity: EntityPlan) -> Values:
    if entity.kind == "user":
        return user_values(client.update_user_entities(entity.entity_id, user_body(tenant_id, entity)))
    return group_values(client.update_group(entity.entity_id, group_body(entity)))


def _compare(entity: EntityPlan, got: Values) -> Outcome:
    """``applied`` when the response holds every planned value, else ``mismatch`` naming the fields."""
    wrong = [
        f"{change.field} (sent {change.after!r}, got {got[change.field]!r})"
        for change in entity.changes
        if not same(got[change.field], change.after)
    ]
    if wrong:
        return EntityStatus.MISMATCH, "the response differs: " + "; ".join(wrong)
    return EntityStatus.APPLIED, None


def user_body(tenant_id: str, entity: EntityPlan) -> UpdateUserEntities:
    """E1's minimal body: the tenant and the changed fields."""
    fields: dict[str, object] = {"tenant_id": tenant_id}
    for change in entity.changes:
        fields |= _user_field(change.field, change.after)
    return UpdateUserEntities.model_validate(fields)


def _user_field(name: str, value: Value) -> dict[str, object]:
    if name == "groups":
        return {
            "groups": [
                {"group_id": key, "is_primary_org": index == 0} for index, key in enumerate(value or [])
            ]
        }
    wire = {"manager": "manager_id", "positions": "position_ids", "roles": "role_ids"}
    return {wire.get(name, name): value}


def group_body(entity: EntityPlan) -> UpdateGroup:
    """E3's minimal body: only the changed fields; a new parent list becomes links added and removed."""
    fields: dict[str, object] = {}
    for change in entity.changes:
        if change.field == "parent":
            fields |= _parent_links(change.before or [], change.after or [])
        else:
            fields[change.field] = change.after
    return UpdateGroup.model_validate(fields)


def _parent_links(before: Iterable[str], after: Iterable[str]) -> dict[str, object]:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    return {
        **({"add_parent_group_ids": added} if added else {}),
        **({"remove_parent_group_ids": removed} if removed else {}),
    }
