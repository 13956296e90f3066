"""The HR sync's steps, as the CLI, the Dagster job and the demo run them: refresh, plan, allow, apply.

Each step opens the warehouse for itself and closes it before returning, because the extract (which a
refresh runs in-process) opens the same DuckDB file and one process cannot hold it twice in two modes.

After an apply the warehouse is refreshed by the incremental extract (the CLI runs it unless told not
to; in Dagster the ``hr_refresh_after_apply`` sensor starts it as a run of its own), and planning refuses
a warehouse whose last extract started before the tenant's last HR write: the next plan always diffs
against what the service holds now, so re-applying the same file plans nothing. (Patching warehouse rows
from write responses instead would bypass the extract's history and cursors.)
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path

import duckdb

from models.errors import AuthoritySyncError
from models.hr.kinds import Watched
from models.hr.plan import Plan
from models.hr.status import PlanStatus
from models.hr.thresholds import (
    EntityKey,
    Thresholds,
    blocked_kinds,
    check_thresholds,
    watched_entities,
    watched_kind,
)
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import ApplyReport, apply_plan
from pipelines.hr.identity import FOREIGN_RULE
from pipelines.hr.mapping import Mapping as HrMapping
from pipelines.hr.plan import make_plan
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.snapshot import fresh_run, load_snapshot
from pipelines.hr.staleness import ExportTimes
from pipelines.hr.upload import read_upload
from pipelines.hr.validate import Validation, validate
from pipelines.publishing import republish
from pipelines.settings import SyncSettings
from pipelines.tenant_runs import tenant_runner
from pipelines.warehouse_resource import WarehouseResource
from resources.client import AdmClient
from warehouse.commit import MEMORY_LIMIT, writing
from warehouse.hr_store import (
    PendingChange,
    StoredPlan,
    due_plans,
    find_plan,
    load_plan,
    pending_changes,
    plan_changes,
    record_allowances,
    record_blocked,
    save_plan,
    window_plans,
)
from warehouse.tenants import tenant_label

PLAN_MEMORY_LIMIT = "32MB"
"""DuckDB's memory limit while planning (see `plan_upload`)."""


class RefreshFailedError(AuthoritySyncError):
    """The extract run before planning failed; the warehouse is unchanged."""


class FourEyesError(AuthoritySyncError, ValueError):
    """``ADM_HR_FOUR_EYES``: a plan's thresholds are lifted by someone other than its planner."""


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: the HR files, for which tenant, with which mapping and options."""

    files: tuple[Path, ...]
    tenant_id: str
    mapping: HrMapping
    strict: bool = False
    allow: Mapping[str, str] = field(default_factory=dict)
    """Watched change kinds to lift for this plan -> the reason recorded with it."""
    approved_by: str = ""
    """Who lifts the ``allow`` kinds (the CLI's default: the OS user)."""
    planned_by: str = ""
    """Who makes the plan (the CLI: the OS user; Dagster: the run's launcher, sensor or schedule)."""
    policy: HrPolicyResource = field(default_factory=HrPolicyResource)
    """The invalid share that refuses an upload, and whether a lift needs a second person."""
    as_of: datetime | None = None
    """When the files were exported; None: each file's modification time (or its as-of column)."""
    allow_old_export: bool = False
    """Plan files older than ``[plan] max_export_age_hours`` (their stale rows are still refused)."""


@dataclass
class PlanOutcome:
    """A validated upload and its stored plan, or why no plan was made."""

    validation: Validation
    plan: Plan | None
    refusal: str | None = None


def refresh(
    settings: SyncSettings, tenant_id: str, adm: AdmClientResource, warehouse: WarehouseResource
) -> str:
    """Run the incremental tenant sync of one tenant (the CLI's, in this process: `pipelines.tenant_runs`)
    with the settings' other resources; returns its run id."""
    with tenant_runner(settings, adm, warehouse) as run_tenant:
        run = run_tenant(tenant_id)
    if not run.success:
        raise RefreshFailedError(f"the extract of tenant {tenant_id} failed: {run.error}")
    return run.run_id


def plan_upload(
    store: WarehouseResource,
    request: PlanRequest,
    now: datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> PlanOutcome:
    """Validate the files against a fresh enough warehouse and store the plan of their valid rows, telling
    ``progress`` each step done (rows read, snapshot loaded, validated, planned: a 50,000-row upload takes
    half a minute). Raises `pipelines.hr.snapshot.StaleWarehouseError` when the warehouse is too old."""
    moment = now or datetime.now(UTC)
    step = Steps(progress)
    checked_allowances(request.allow)
    if request.allow:
        four_eyes(request.policy, request.planned_by, request.approved_by)
    options = request.mapping.csv
    files = [read_upload(path, options.encoding, options.delimiter) for path in request.files]
    step.done(f"read {sum(len(file.rows) for file in files):,} row(s) from {len(files)} file(s)")
    # DuckDB's buffer is kept small: planning reads each user once and writes little (the tenant's
    # users are scanned in batches; a large buffer would only hold pages never read again). A file of an
    # earlier release is refused, not migrated: its migrations need more than that buffer (OutOfMemory at
    # 50,000 users), and `warehouse upgrade` does what they leave undone and keeps a copy.
    with short_write(store, memory_limit=PLAN_MEMORY_LIMIT, upgrade=False) as con:
        run = fresh_run(con, request.tenant_id, request.mapping.max_warehouse_age, moment)
        snapshot = load_snapshot(con, request.tenant_id, run)
        users, groups = len(snapshot.user_values), len(snapshot.groups)
        step.done(f"loaded the warehouse's {users:,} user(s) and {groups:,} group(s)")
        max_age = None if request.allow_old_export else request.mapping.max_export_age
        times = ExportTimes.of(files, request.as_of, moment, max_age)
        validation = validate(files, request.mapping, snapshot, moment.date(), times)
        step.done(f"validated {len(validation.rows):,} row(s): {len(validation.problems):,} problem(s)")
        tenant = tenant_label(con, request.tenant_id)
        refusal = _refusal(validation, request.strict, request.policy.max_invalid_share, tenant)
        if refusal:
            return PlanOutcome(validation, None, refusal)
        earlier = window_entities(con, request.tenant_id, request.mapping.thresholds, moment, None)
        plan = make_plan(
            validation,
            snapshot,
            request.mapping,
            request.allow,
            moment,
            earlier=earlier,
            approved_by=request.approved_by,
            planned_by=request.planned_by,
        )
        step.done(f"planned {len(plan.entities):,} entit(ies) to change")
        save_plan(con, plan)
    republish(store, "hr-plan")
    return PlanOutcome(validation, plan)


class Steps:
    """Tells a person waiting each step of a long run done, with the seconds it took (nothing when no one
    listens)."""

    def __init__(self, listener: Callable[[str], None] | None) -> None:
        self.listener = listener
        self.since = time.monotonic()

    def done(self, what: str) -> None:
        """Tell ``what`` was done and how long it took."""
        now = time.monotonic()
        if self.listener is not None:
            self.listener(f"{what} ({now - self.since:.1f} s)")
        self.since = now


def _refusal(validation: Validation, strict: bool, max_invalid_share: float, tenant: str) -> str | None:
    """Why the upload is not planned at all, or None. A file mostly wrong (a shifted column, another
    system's export, another tenant's people) is a failure to report, not a plan of its few valid rows
    that looks like success."""
    foreign = [problem for problem in validation.file_problems if problem.rule == FOREIGN_RULE]
    if foreign:
        files = "; ".join(f"{Path(problem.file).name}: {problem.message}" for problem in foreign)
        return f"this file is not about this tenant {tenant} ({files}); nothing was planned"
    if validation.file_problems:
        return "the upload cannot be read as mapped; nothing was planned"
    if strict and validation.problems:
        return f"--strict: {len(validation.problems)} problem(s) in the upload; nothing was planned"
    invalid, rows = sum(1 for row in validation.rows if not row.valid), len(validation.rows)
    if rows and invalid == rows:
        return f"every row of the upload is invalid ({rows}); nothing was planned"
    if rows and invalid / rows > max_invalid_share:
        return (
            f"{invalid} of {rows} rows are invalid ({invalid / rows:.0%}), more than "
            f"ADM_HR_MAX_INVALID_SHARE ({max_invalid_share:.0%}); nothing was planned: fix the file"
        )
    return None


def checked_allowances(allow: Mapping[str, str]) -> dict[str, str]:
    """``allow`` after checking each kind has a threshold and a reason."""
    for kind, reason in allow.items():
        watched_kind(kind)
        if not reason.strip():
            raise ValueError(f"lifting {kind} needs a reason")
    return dict(allow)


def allow(
    store: WarehouseResource,
    plan_id: str,
    kinds: Mapping[str, str],
    approved_by: str,
    policy: HrPolicyResource | None = None,
    now: datetime | None = None,
) -> StoredPlan:
    """Lift watched kinds (-> reasons) for one stored plan, recorded as lifted by ``approved_by`` (under
    the ``policy``'s four eyes: default the settings' defaults); returns the plan as now stored.
    `warehouse.hr_store.AllowancesFinalError` once the plan began applying."""
    lifted = checked_allowances(kinds)
    moment = now or datetime.now(UTC)
    with short_write(store) as con:
        four_eyes(policy or HrPolicyResource(), load_plan(con, plan_id).planned_by, approved_by)
        record_allowances(con, plan_id, lifted, approved_by, moment)
        return recheck_thresholds(con, plan_id, moment)


def four_eyes(
    policy: HrPolicyResource, planned_by: str | None, actor: str, act: str = "lift its thresholds"
) -> None:
    """Under ``ADM_HR_FOUR_EYES``, refuse the plan's own planner (``actor``) the ``act`` (a lift, an
    apply) with `FourEyesError`."""
    if policy.four_eyes and (planned_by or "").casefold() == actor.casefold():
        raise FourEyesError(f"ADM_HR_FOUR_EYES: {actor} made this plan, so another person must {act}")


def recheck_thresholds(con: duckdb.DuckDBPyConnection, plan_id: str, now: datetime) -> StoredPlan:
    """Check a plan not yet applying again with the limits it was planned with, against the plans applied
    within the window by ``now`` (others may have been applied since it was made); returns it as stored."""
    plan = load_plan(con, plan_id)
    if plan.status not in (PlanStatus.READY, PlanStatus.BLOCKED):
        return plan
    if plan.thresholds is None:
        # Planned before its limits were stored: only the lifts can change what blocks it.
        blocked = [kind for kind in plan.blocked if kind not in plan.allowed]
    else:
        stored = dict(plan.thresholds)
        population = stored.pop("population")
        thresholds = Thresholds.model_validate(stored)
        earlier = window_entities(con, plan.tenant_id, thresholds, now, plan_id)
        own = watched_entities(plan_changes(con, plan_id))
        blocked = blocked_kinds(check_thresholds(own, earlier, population, thresholds, plan.allowed))
    record_blocked(con, plan_id, blocked)
    return load_plan(con, plan_id)


def window_entities(
    con: duckdb.DuckDBPyConnection, tenant_id: str, thresholds: Thresholds, now: datetime, plan_id: str | None
) -> dict[Watched, set[EntityKey]]:
    """The entities per watched kind that the tenant's other plans applied within the window changed.
    What a plan lifted was approved and is accounted for: its changes of a lifted kind count in no later
    check (of that kind, nor in ``total``), so one approved mass change does not block every unrelated
    plan of the window. Its changes nobody approved still add up, so splitting a mass change still shows."""
    found: dict[Watched, set[EntityKey]] = {kind: set() for kind in Watched}
    for earlier in window_plans(con, tenant_id, now - thresholds.window, plan_id):
        unapproved = [change for change in earlier.changes if change[0] not in earlier.lifted]
        for kind, entities in watched_entities(unapproved).items():
            if kind.value not in earlier.lifted:
                found[kind] |= entities
    return found


def short_write(
    store: WarehouseResource, memory_limit: str | None = MEMORY_LIMIT, upgrade: bool = True
) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """The warehouse for one short step of the HR workflow: the writer lock (waiting up to the store's
    ``lock_wait_s`` for a sync's commit, then one line naming it) and a connection, released at the end of
    the step (``upgrade``: see `warehouse.commit.connect`)."""
    return writing(store.file, f"hr {os_user()}", store.lock_wait_s, memory_limit, upgrade)


def os_user() -> str:
    """Who runs this process, as the operating system knows them: the account of its real user id in the
    password database (`pwd`: local accounts, or the directory behind NSS). Never ``LOGNAME`` or ``USER``,
    which whoever starts the process sets to anything."""
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # no passwd entry (a bare container)
        return f"uid {uid}"


def stored_plan(store: WarehouseResource, plan_id: str) -> StoredPlan:
    """A stored plan by its id or a unique prefix of it; `warehouse.hr_store.PlanNotFoundError` when there
    is none."""
    with short_write(store) as con:
        return find_plan(con, plan_id)


def apply_stored(
    store: WarehouseResource,
    plan_id: str,
    client: AdmClient,
    run_id: str,
    policy: HrPolicyResource | None = None,
    now: datetime | None = None,
    actor: str | None = None,
) -> ApplyReport:
    """Apply (or resume) a stored plan as of ``now`` (default: the clock): the changes due by then; one
    older than the ``policy``'s plan age (default: the HR policy's defaults) is refused, unless scheduled,
    and under its four eyes so is an apply by the plan's planner. The apply is recorded as run by
    ``actor`` (default: the OS user)."""
    rules = policy or HrPolicyResource()
    moment = now or datetime.now(UTC)
    who = actor or os_user()
    open_write = partial(writing, store.file, f"hr apply of plan {plan_id}", store.lock_wait_s)
    with open_write() as con:
        plan = recheck_thresholds(con, plan_id, moment)
    four_eyes(rules, plan.planned_by, who, "apply it")
    report = apply_plan(open_write, client, plan, run_id, rules.plan_max_age, moment, who)
    republish(store, "hr-apply")
    return report


def overdue_changes(store: WarehouseResource, today: date) -> list[PendingChange]:
    """The dated changes (of every tenant) whose day is past while they still wait."""
    with short_write(store) as con:
        return [change for change in pending_changes(con, None) if change.overdue(today)]


def plans_due(store: WarehouseResource, tenant_id: str | None, now: datetime | None = None) -> list[str]:
    """The plans (of one tenant, or of all) with changes come due by ``now``'s day, oldest first."""
    with short_write(store) as con:
        return due_plans(con, tenant_id, (now or datetime.now(UTC)).date())
