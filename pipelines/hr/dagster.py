"""Dagster definitions of the HR reverse sync: the ``hr_sync`` job and the drop-folder sensor.

``hr_sync`` plans the files named in its config and applies the plan only when no safety threshold
blocks it. A blocked plan stops there (its markdown is on the run); a person who checked it re-runs the
job with ``approve_plan_id`` and a ``reason``, which lifts the plan's blocked kinds (or those listed in
``allow``) and applies it. A run is red when its plan could not be made, or when the apply left any
entity failed, unknown or unsent (plan ``incomplete``: run it again with ``approve_plan_id`` to resume).

After an apply (green or red: writes may have happened either way) the ``hr_refresh_after_apply`` sensor
starts the tenant's incremental sync as a run of its own (``nightly_sync`` with the tenant as partition),
so it takes its turn in the run queue like every other sync; the apply never runs a sync inside itself.

The drop-folder sensor watches ``ADM_HR_DROP_DIR`` (default ``data/hr/inbox``) and starts one run per file
content (run key: the file's sha256), once the file has stopped growing: its size and mtime must be the
same on two consecutive ticks (kept in the sensor's cursor). The same content dropped again does nothing,
unless the last run of that content failed and the file was dropped (written) again after it: then it
runs again as a new attempt (run key ``<sha256>.<attempt>``).

The ``hr_apply_due`` schedule (every day at 05:00 UTC, after the nightly sync and the weekly full
refresh) starts one ``hr_sync`` run with ``approve_plan_id`` per stored plan whose dated changes have come
due (run key: plan and day): the same apply as any other, writing only what is due, with its refresh after.
"""

# No `from __future__ import annotations`: Dagster reads the ops' annotations at definition time.
import hashlib
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field, model_validator

from models.hr.plan import Plan
from models.hr.status import PlanStatus
from pipelines.assets import table_key
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import UNFINISHED, PlanNotApplicableError
from pipelines.hr.drop_folder import (
    FAILED,
    ROOT,
    SETTINGS_FILE,
    DropFolder,
    complete,
    drop_folders,
    file_away,
    signature,
    uploads,
)
from pipelines.hr.exports import write_error_reports
from pipelines.hr.mapping import MappingError, load_mapping, with_file_options
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.problems import Problem
from pipelines.hr.report import plan_markdown
from pipelines.hr.snapshot import StaleWarehouseError
from pipelines.hr.workflow import (
    FourEyesError,
    PlanOutcome,
    PlanRequest,
    allow,
    apply_stored,
    os_user,
    overdue_changes,
    plan_upload,
    plans_due,
    stored_plan,
)
from pipelines.settings import NO_TENANT, SettingsError, configured_tenant
from pipelines.tenant_runs import NIGHTLY_JOB
from pipelines.tenant_tags import TENANT_TAG, tenant_tags
from pipelines.warehouse_resource import WarehouseResource
from warehouse.hr_store import AllowancesFinalError, PlanNotFoundError, StoredPlan
from warehouse.locks import LockBusyError

DEFAULT_REPORTS = "data/hr/reports"
REFRESH_TAG = "adm/hr_refresh_tenant"
"""Set on an ``hr_sync`` run once its apply began: the tenant whose warehouse the refresh sensor syncs."""
FILE_TAG = "adm/hr_file_sha256"
"""The content hash of the dropped file a sensor's run plans."""
FOLDER_TAG = "adm/hr_drop_folder"
"""The drop folder (``.`` for ``ADM_HR_DROP_DIR`` itself) the file of a sensor's run was dropped in."""
RETRIED_STATUSES = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
RUN_FINISHED = [dg.DagsterRunStatus.SUCCESS, *RETRIED_STATUSES]
RUN_UNFINISHED = [status for status in dg.DagsterRunStatus if status not in RUN_FINISHED]
SHOWN_PROBLEMS = 5
"""Problems of a refused upload shown on its run (log and metadata), before their count and report."""
CHECK_CRON = "0 6 * * *"
"""When the overdue check runs (UTC): an hour after ``hr_apply_due``."""
INSTIGATOR_TAGS = (("dagster/sensor_name", "sensor"), ("dagster/schedule_name", "schedule"))
"""The tags Dagster puts on a run its sensor or schedule launched, with the tick in `TICK_TAG`."""
TICK_TAG = "dagster/tick"
DUE_CRON = "0 5 * * *"
"""When ``hr_apply_due`` looks for dated changes come due (UTC): after the nightly sync (02:00) and the
weekly full refresh (03:00), so an apply does not wait for their commits."""


class HrSyncConfig(dg.Config):
    """What ``hr_sync`` plans, or which stored plan it applies."""

    files: list[str] = Field(default_factory=list, description="HR users and/or org-units CSV files.")
    mapping: str | None = Field(default=None, description="Column-mapping TOML; default the shipped one.")
    tenant_id: str | None = Field(
        default=None, description="Tenant; default the first configured one (ADM_TENANTS)."
    )
    strict: bool = Field(default=False, description="Refuse the whole upload if any row is invalid.")
    approve_plan_id: str | None = Field(
        default=None, description="Apply this stored plan instead of planning."
    )
    allow: list[str] = Field(
        default_factory=list, description="With approve_plan_id: kinds to lift (default: every blocked kind)."
    )
    reason: str | None = Field(
        default=None, description="With approve_plan_id: why (recorded with the plan)."
    )
    approved_by: str | None = Field(
        default=None,
        description="With approve_plan_id: who approves (recorded; refused under four eyes); default the "
        "run's actor: its sensor or schedule, else the code location's OS account.",
    )
    encoding: str | None = Field(default=None, description="The files' encoding; default the mapping's.")
    delimiter: str | None = Field(default=None, description="The cell delimiter; default detected.")
    date_formats: list[str] = Field(
        default_factory=list, description="Date formats of the files; default the mapping's."
    )
    trust_date_order: bool | None = Field(
        default=None,
        description="Accept dates that read both as day/month and month/day; default the mapping's.",
    )
    allow_old_export: bool = Field(
        default=False,
        description="Plan files older than the mapping's max_export_age_hours (never in unattended runs).",
    )
    unattended: bool = Field(
        default=False,
        description="Set by the drop-folder sensor: apply only a plan no threshold was over; never approve.",
    )
    errors_dir: str = Field(default=DEFAULT_REPORTS, description="Folder of the error reports.")

    @model_validator(mode="after")
    def _something_to_do(self) -> "HrSyncConfig":
        # Without it a run planned nothing and stored an empty plan that then showed as "applied".
        if not self.files and not self.approve_plan_id:
            raise ValueError("hr_sync needs files to plan or an approve_plan_id to apply")
        return self


def hr_plan_op() -> dg.OpDefinition:
    """The planning op."""

    @dg.op(
        name="hr_plan",
        out={
            "plan_id": dg.Out(str, description="The plan made (or approved)."),
            "approved": dg.Out(str, is_required=False, description="The plan, when it may be applied."),
        },
    )
    def hr_plan(
        context: dg.OpExecutionContext,
        config: HrSyncConfig,
        adm: dg.ResourceParam[AdmClientResource],
        warehouse: dg.ResourceParam[WarehouseResource],
        hr_policy: dg.ResourceParam[HrPolicyResource],
    ) -> Iterator[dg.Output[str]]:
        """Plan the configured HR files (or approve a stored plan); emits ``approved`` only if the plan may
        be applied, else fails the run saying why (a blocked plan, an unattended run's rejected rows)."""
        if config.approve_plan_id:
            stored = _approve(config, warehouse, hr_policy, run_actor(context))
            context.instance.add_run_tags(
                context.run_id, tenant_tags(stored.tenant_id, hr_policy.tenant_names)
            )
            plan_id, blocked = stored.plan_id, stored.blocked
            yield dg.Output(
                plan_id, "plan_id", metadata={"status": dg.MetadataValue.text(stored.status.value)}
            )
            why = _blocked(plan_id, blocked)
        else:
            plan, metadata = _plan(config, adm, warehouse, hr_policy, run_actor(context))
            context.instance.add_run_tags(context.run_id, tenant_tags(plan.tenant_id, hr_policy.tenant_names))
            plan_id = plan.plan_id
            yield dg.Output(plan_id, "plan_id", metadata=metadata)
            why = _blocked(plan_id, plan.blocked) or _unattended_refusal(config, plan_id, metadata)
        if why:
            context.log.warning(why)
            raise dg.Failure(description=why, metadata={"plan_id": plan_id})
        yield dg.Output(plan_id, "approved")

    return hr_plan


def run_actor(context: dg.OpExecutionContext) -> str:
    """Who a run acts for, as the audit names them, from what Dagster itself recorded, never from a tag a
    launcher types: the sensor or schedule whose tick (in the instance's storage) launched it, else the
    code location's OS user (`pipelines.hr.workflow.os_user`): open-source Dagster records no user, so
    every run launched by hand is that one account, and under four eyes cannot approve what another run
    launched by hand planned."""
    tags = context.run.tags
    for tag, what in INSTIGATOR_TAGS:
        name = tags.get(tag)
        if name and _launched_by(context.instance, tags.get(TICK_TAG), name, context.run_id):
            return f"{what} {name}"
    return os_user()


def _launched_by(instance: dg.DagsterInstance, tick_id: str | None, name: str, run_id: str) -> bool:
    """Whether the instance's own record of tick ``tick_id`` shows the sensor or schedule ``name``
    launching run ``run_id`` (a tick still running has not listed its runs yet). Tags alone prove
    nothing: anyone may type them in the launchpad."""
    storage = instance.schedule_storage
    if storage is None or tick_id is None or not tick_id.isdigit():
        return False
    try:
        tick = storage.get_tick(int(tick_id))
    except dg.DagsterInvariantViolationError:  # no such tick
        return False
    listed = run_id in tick.run_ids or tick.status.value == "STARTED"
    return tick.instigator_name == name and listed


def _blocked(plan_id: str, blocked: list[str]) -> str | None:
    """Why a plan blocked by thresholds is not applied, and how a person applies it; None if it is not."""
    if not blocked:
        return None
    return (
        f"plan {plan_id} is blocked by safety thresholds ({', '.join(blocked)}): nothing was applied. "
        f"After checking it (`authority-sync hr show {plan_id}`), run hr_sync with approve_plan_id and a "
        "reason to lift them"
    )


def _unattended_refusal(config: HrSyncConfig, plan_id: str, metadata: dict[str, Any]) -> str | None:
    """Why an unattended run does not apply its plan: rows of the file were rejected. Nobody watches such
    a run, so a file applies only whole; the plan of its valid rows waits for a person."""
    rejected = int(metadata["rejected_rows"])
    if not config.unattended or not rejected:
        return None
    reports = ", ".join(metadata["error_reports"].value)
    return (
        f"{rejected} row(s) of the file were rejected (error report: {reports}); "
        f"an unattended run applies a file only when every row is valid. Plan {plan_id} of the valid rows "
        "was not applied: fix the rows and drop the file again, or apply it with approve_plan_id"
    )


def _plan(
    config: HrSyncConfig,
    adm: AdmClientResource,
    warehouse: WarehouseResource,
    policy: HrPolicyResource,
    actor: str,
) -> tuple[Plan, dict[str, Any]]:
    """Plan the configured files as ``actor``, writing error reports; returns the plan and the run's
    metadata about it. A refused upload fails the op (with the same metadata but the plan)."""
    tenant_id = config.tenant_id or adm.tenant_id
    if tenant_id is None:
        raise dg.Failure(description=NO_TENANT)
    try:
        mapping = with_file_options(
            load_mapping(Path(config.mapping) if config.mapping else None),
            config.encoding,
            config.delimiter,
            config.date_formats,
            config.trust_date_order,
        )
        request = PlanRequest(
            tuple(Path(name) for name in config.files),
            tenant_id,
            mapping,
            config.strict,
            planned_by=actor,
            policy=policy,
            # Unattended runs never plan an old export: nobody would see what it puts back.
            allow_old_export=config.allow_old_export and not config.unattended,
        )
        outcome = plan_upload(warehouse, request)
    except MappingError as error:  # one line on the run, not a traceback
        raise dg.Failure(description=str(error)) from None
    except StaleWarehouseError as error:
        raise dg.Failure(
            description=f"{error}. In Dagster: run {NIGHTLY_JOB} for tenant {tenant_id} first"
        ) from None
    reports = write_error_reports(outcome.validation, mapping, Path(config.errors_dir))
    metadata = _upload_metadata(outcome, reports)
    if outcome.plan is None:
        problems = _first_problems(outcome.validation.problems, reports)
        raise dg.Failure(description=f"{outcome.refusal}\n{problems}", metadata=metadata)
    return outcome.plan, metadata | _plan_metadata(outcome.plan)


def _upload_metadata(outcome: PlanOutcome, reports: list[Path]) -> dict[str, Any]:
    """What the upload held: rows, rows rejected as invalid, problems (the first ones, and a count), and
    where the error reports are."""
    rows, problems = outcome.validation.rows, outcome.validation.problems
    return {
        "rows": len(rows),
        "rejected_rows": sum(1 for row in rows if not row.valid),
        "problems": len(problems),
        "first_problems": dg.MetadataValue.md(_first_problems(problems, reports)),
        "notes": dg.MetadataValue.json(
            [f"{Path(note.file).name} line {note.line}: {note.message}" for note in outcome.validation.notes]
        ),
        "error_reports": dg.MetadataValue.json([str(path) for path in reports]),
    }


def _first_problems(problems: list[Problem], reports: list[Path]) -> str:
    """The first `SHOWN_PROBLEMS` problems (file, line, column, rule), one a line, then how many there are
    and where the full report is: what the operator would otherwise ask the CLI for."""
    lines = [f"- {Path(p.file).name} line {p.line}: {p.describe()}" for p in problems[:SHOWN_PROBLEMS]]
    where = f"; the full report: {', '.join(str(path) for path in reports)}" if reports else ""
    return "\n".join([*lines, f"{len(problems)} problem(s) in all{where}"])


def _plan_metadata(plan: Plan) -> dict[str, Any]:
    """The whole plan's size (the markdown shows its first rows only) and the markdown."""
    return {
        "plan_id": plan.plan_id,
        "entities": len(plan.entities),
        "changes": sum(len(entity.changes) for entity in plan.entities),
        "needs_creation": len(plan.new),
        "changes_per_kind": dg.MetadataValue.json(plan.counts),
        "plan": dg.MetadataValue.md(plan_markdown(plan)),
    }


def _approve(
    config: HrSyncConfig, warehouse: WarehouseResource, policy: HrPolicyResource, actor: str
) -> StoredPlan:
    """Lift the configured kinds (default: every blocked kind) of a stored plan (its id or a unique
    prefix), with the reason, as ``config.approved_by`` or else ``actor``."""
    if config.unattended:
        raise dg.Failure(
            description="an unattended run never approves a plan: run hr_sync with approve_plan_id"
        )
    try:
        stored = stored_plan(warehouse, str(config.approve_plan_id))
        kinds = config.allow or stored.blocked
        if not kinds:  # nothing to lift: approving applies the plan as it is, or resumes an incomplete apply
            return stored
        if not (config.reason or "").strip():
            raise dg.Failure(description="approving a blocked plan needs a reason")
        if policy.four_eyes and config.approved_by:
            raise dg.Failure(description="ADM_HR_FOUR_EYES: the approver is who launches the run")
        approver = config.approved_by or actor
        return allow(warehouse, stored.plan_id, dict.fromkeys(kinds, config.reason or ""), approver, policy)
    except (AllowancesFinalError, FourEyesError, PlanNotFoundError) as error:
        raise dg.Failure(description=str(error)) from None


@dg.op
def hr_apply(
    context: dg.OpExecutionContext,
    plan_id: str,
    adm: dg.ResourceParam[AdmClientResource],
    warehouse: dg.ResourceParam[WarehouseResource],
    hr_policy: dg.ResourceParam[HrPolicyResource],
) -> dg.Output[str]:
    """Apply (or resume) the plan; fails when any entity is left failed, unknown or unsent (plan
    ``incomplete``). Either way the refresh sensor then syncs the tenant, as a run of its own."""
    tenant_id = stored_plan(warehouse, plan_id).tenant_id
    # Tagged before any write: from here on the warehouse needs a refresh, whatever happens next.
    context.instance.add_run_tags(context.run_id, {REFRESH_TAG: tenant_id})
    with adm.client_for(tenant_id) as client:
        try:
            report = apply_stored(
                warehouse, plan_id, client, context.run_id, hr_policy, actor=run_actor(context)
            )
        except (PlanNotApplicableError, FourEyesError) as error:  # applied, expired, blocked, four eyes: red
            raise dg.Failure(description=str(error), metadata={"plan_id": plan_id}) from None
    metadata = {
        "plan_id": plan_id,
        "status": report.status.value,
        "outcomes": dg.MetadataValue.json(report.outcomes),
        "writes": report.writes,
    }
    if report.status == PlanStatus.INCOMPLETE:
        unfinished = {status: count for status, count in report.outcomes.items() if status in UNFINISHED}
        raise dg.Failure(
            description=f"plan {plan_id} is incomplete: {unfinished}; see `authority-sync hr status "
            f"{plan_id} --problems`, then run hr_sync with approve_plan_id to resume",
            metadata=metadata,
        )
    return dg.Output(report.status.value, metadata=metadata)


def hr_sync_job() -> dg.JobDefinition:
    """The ``hr_sync`` job: plan, then apply."""
    plan = hr_plan_op()

    @dg.job(description="HR reverse sync: plan HR files, then apply the plan when within safety thresholds.")
    def hr_sync() -> None:
        """Plan, then apply what is approved."""
        _, approved = plan()
        hr_apply(approved)

    return hr_sync


# Targeted by name: a sensor given the job object is copied when Definitions binds resources, and that
# copy trips a Dagster beta warning (an error under the tests' strict warning filter).
@dg.sensor(
    job_name="hr_sync",
    minimum_interval_seconds=30,
    description="New HR files in ADM_HR_DROP_DIR and its configured folders (unattended runs).",
)
def hr_drop_folder(
    context: dg.SensorEvaluationContext,
    hr_policy: dg.ResourceParam[HrPolicyResource],
    adm: dg.ResourceParam[AdmClientResource],
) -> dg.SensorResult | dg.SkipReason:
    """One ``hr_sync`` run per complete, stable file content in each drop folder, once its tenant's
    warehouse shows the tenant's last HR writes; files whose run ended are moved to ``processed/`` or
    ``failed/``."""
    root = hr_policy.drop_folder
    if not root.is_dir():
        return dg.SkipReason(f"no drop folder {root}")
    previous = json.loads(context.cursor) if context.cursor else {}
    seen: dict[str, list[int]] = {}
    requests: list[dg.RunRequest] = []
    taken: set[str] = set()
    """Tenants a file was taken for at this tick: another file of theirs waits for its run and refresh."""
    for folder in drop_folders(root):
        tenant_id, unusable = folder_tenant(folder, hr_policy, adm.tenant_id)
        if unusable is not None:
            # Loud at every tick, in this folder alone: the other folders' files go on.
            context.log.error(f"drop folder {folder.path} is not used: {unusable}")
            continue
        for path in uploads(folder):
            key = path.name if folder.key == ROOT else f"{folder.key}/{path.name}"
            seen[key] = signature(path)
            if previous.get(key) != seen[key] or not complete(path, folder.settings):
                continue
            if tenant_id in taken:
                context.log.info(f"{path.name} waits: a file of tenant {tenant_id} was taken at this tick")
                continue
            request = _run_request(context, folder, path, tenant_tags(tenant_id, hr_policy.tenant_names))
            taken |= {tenant_id} if request else set()
            requests += request
    return dg.SensorResult(run_requests=requests, cursor=json.dumps(seen))


def folder_tenant(
    folder: DropFolder, policy: HrPolicyResource, default: str | None
) -> tuple[str, str | None]:
    """The configured tenant a folder's files are for (its ``tenant_id``, an id or a name, else
    ``default``), and why the folder cannot be used (None when it can): its settings are broken, or name
    no configured tenant."""
    named = folder.settings.tenant_id or default or ""
    if folder.error is not None:
        return named, folder.error
    if not policy.tenants:
        return named, None
    try:
        return configured_tenant(named, policy.tenants, policy.tenant_names), None
    except SettingsError as error:
        return named, f"{folder.path / SETTINGS_FILE}: {error}"


def _waiting_for(instance: dg.DagsterInstance, tenant_id: str) -> str | None:
    """Why a dropped file of the tenant must wait, or None: an HR run of the tenant has not finished, or
    its warehouse has not yet been refreshed after the tenant's last apply (the refresh is a sync run of
    its own, started by ``hr_refresh_after_apply``; planning before it ends would be refused as stale).
    A refresh that ended in failure releases the file: its run then fails saying the warehouse is stale."""
    unfinished = dg.RunsFilter(tags={TENANT_TAG: tenant_id}, statuses=RUN_UNFINISHED)
    busy = instance.get_run_records(unfinished, limit=1)
    if busy:
        run = busy[0].dagster_run
        return f"{run.job_name} run {run.run_id} of tenant {tenant_id} has not finished"
    applied = instance.get_run_records(
        dg.RunsFilter(job_name="hr_sync", tags={REFRESH_TAG: tenant_id}, statuses=RUN_FINISHED), limit=1
    )
    if not applied or applied[0].end_time is None:
        return None
    ended = datetime.fromtimestamp(applied[0].end_time, UTC)
    since = dg.RunsFilter(tags={"dagster/partition": tenant_id}, created_after=ended, statuses=RUN_FINISHED)
    refreshes = instance.get_run_records(since, limit=1)
    if refreshes:
        return None
    return (
        f"the refresh of tenant {tenant_id} after hr_sync run {applied[0].dagster_run.run_id} has not run yet"
    )


def _run_request(
    context: dg.SensorEvaluationContext, folder: DropFolder, path: Path, tenant: Mapping[str, str]
) -> list[dg.RunRequest]:
    """A run of the file's content: its first, or a new attempt when the last run of that content failed
    and the file was dropped again since; none while the tenant is busy (`_waiting_for`: the file is
    asked for again at the next tick). A file whose last run ended otherwise is filed away. The run
    carries the ``tenant``'s tags (`pipelines.tenant_tags`): it queues with the tenant's syncs
    (pipelines/dagster.yaml), and the runs list finds it by the tenant's id and name."""
    instance = context.instance
    tenant_id = tenant[TENANT_TAG]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    earlier = [
        record
        for record in instance.get_run_records(dg.RunsFilter(job_name="hr_sync", tags={FILE_TAG: digest}))
        if record.dagster_run.tags.get(FOLDER_TAG, ROOT) == folder.key
    ]
    if earlier:
        last = earlier[0]  # newest first
        if not last.dagster_run.is_finished:
            return []
        failed = last.dagster_run.status in RETRIED_STATUSES
        if not failed or path.stat().st_mtime <= last.create_timestamp.timestamp():
            file_away(path, not failed, last.create_timestamp)
            return []
    waiting = _waiting_for(instance, tenant_id)
    if waiting:
        context.log.info(f"{path.name} waits: {waiting}")
        return []
    key = digest if folder.key == ROOT else f"{folder.key}/{digest}"
    return [
        dg.RunRequest(
            run_key=f"{key}.{len(earlier) + 1}" if earlier else key,
            run_config=dg.RunConfig(ops={"hr_plan": _folder_config(folder, path, tenant_id)}),
            tags={"hr_file": path.name, FILE_TAG: digest, FOLDER_TAG: folder.key, **tenant},
        )
    ]


def _folder_config(folder: DropFolder, path: Path, tenant_id: str) -> HrSyncConfig:
    """The unattended run of one dropped file, with its folder's settings."""
    settings = folder.settings
    mapping = folder.mapping_path()
    return HrSyncConfig(
        files=[str(path)],
        unattended=True,
        tenant_id=tenant_id or None,
        mapping=str(mapping) if mapping else None,
        encoding=settings.encoding,
        delimiter=settings.delimiter,
        date_formats=settings.date_formats,
        trust_date_order=settings.trust_date_order,
        errors_dir=str(folder.path / FAILED),
    )


# Running from the start: it only refreshes the warehouse after applies (a stopped one leaves the next plan
# refused as stale). The drop-folder sensor starts stopped: a folder nobody set up applies nothing.
@dg.sensor(
    job_name=NIGHTLY_JOB,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After each hr_sync run that applied (green or red), the tenant's incremental sync.",
)
def hr_refresh_after_apply(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One ``nightly_sync`` run of the tenant for each finished ``hr_sync`` run whose apply began."""
    since = datetime.fromtimestamp(float(context.cursor or 0), UTC)
    finished = context.instance.get_run_records(
        dg.RunsFilter(
            job_name="hr_sync",
            statuses=RUN_FINISHED,
            updated_after=since,
        ),
        order_by="update_timestamp",
        ascending=True,
    )
    requests = [
        # Its partition gives it the tenant's tags (`pipelines.jobs.tenant_tags`): it queues with the tenant.
        dg.RunRequest(run_key=f"hr_refresh:{record.dagster_run.run_id}", partition_key=tenant)
        for record in finished
        if (tenant := record.dagster_run.tags.get(REFRESH_TAG))
    ]
    latest = max((record.update_timestamp.timestamp() for record in finished), default=since.timestamp())
    return dg.SensorResult(run_requests=requests, cursor=str(latest))


# Targeted by name, like the sensors (see above).
# Running from the start: it applies only changes a person approved when their plan was applied, on their
# day; stopped, dated terminations would silently never happen.
@dg.schedule(
    job_name="hr_sync",
    cron_schedule=DUE_CRON,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    execution_timezone="UTC",
    description="Applies the HR plans whose dated changes (effective dates) have come due.",
)
def hr_apply_due(
    context: dg.ScheduleEvaluationContext, warehouse: dg.ResourceParam[WarehouseResource]
) -> dg.SkipReason | list[dg.RunRequest]:
    """One ``hr_sync`` run approving (applying) each plan with changes due on the tick's day."""
    moment = context.scheduled_execution_time or datetime.now(UTC)
    try:
        due = {
            plan_id: stored_plan(warehouse, plan_id).tenant_id
            for plan_id in plans_due(warehouse, None, moment)
        }
    except LockBusyError as error:  # a sync is committing: the next tick finds the plans still due
        return dg.SkipReason(str(error))
    if not due:
        return dg.SkipReason("no scheduled HR change is due")
    day = moment.date().isoformat()
    return [
        dg.RunRequest(
            run_key=f"hr_due:{plan_id}:{day}",
            run_config=dg.RunConfig(ops={"hr_plan": HrSyncConfig(approve_plan_id=plan_id)}),
            tags={"hr_due": day, TENANT_TAG: tenant_id},  # queued with the tenant's syncs
        )
        for plan_id, tenant_id in due.items()
    ]


@dg.asset_check(
    asset=table_key("users"),
    name="hr_dated_changes_on_time",
    description="No dated HR change (a termination on its day) waits past its day: hr_apply_due applies "
    "them each morning; a change still waiting after its day means it stopped or failed.",
)
def hr_dated_changes_on_time(warehouse: dg.ResourceParam[WarehouseResource]) -> dg.AssetCheckResult:
    """Fails while any dated change's day has passed and it still waits, naming each."""
    late = overdue_changes(warehouse, datetime.now(UTC).date())
    shown = [
        f"{c.entity_kind} {c.hr_key} {c.field} -> {c.after_label} on {c.effective_on} (plan {c.plan_id})"
        for c in late
    ]
    advice = "run hr_sync with approve_plan_id, or authority-sync hr apply-due"
    return dg.AssetCheckResult(
        passed=not late,
        description=f"{len(late)} dated HR change(s) overdue: {advice}" if late else "none overdue",
        metadata={"overdue": len(late), "changes": dg.MetadataValue.json(shown[:50])},
    )


hr_dated_changes_check = dg.define_asset_job(
    "hr_dated_changes_check",
    selection=dg.AssetSelection.checks(hr_dated_changes_on_time),
    description="Evaluates hr_dated_changes_on_time; launched each morning by its schedule.",
)


# An hour after hr_apply_due, running from the start: what that schedule left waiting turns red.
@dg.schedule(
    job=hr_dated_changes_check,
    cron_schedule=CHECK_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Checks that no dated HR change waits past its day.",
)
def hr_dated_changes_check_schedule() -> dg.RunRequest:
    """One evaluation of the overdue check a day."""
    return dg.RunRequest()


def hr_definitions() -> dg.Definitions:
    """The HR reverse sync's jobs, sensors, schedules and check (the resources they ask for are bound
    once, with the sync's, `pipelines.bindings`)."""
    return dg.Definitions(
        jobs=[hr_sync_job(), hr_dated_changes_check],
        sensors=[hr_drop_folder, hr_refresh_after_apply],
        schedules=[hr_apply_due, hr_dated_changes_check_schedule],
        asset_checks=[hr_dated_changes_on_time],
    )
