"""One tenant sync from start to commit, free of Dagster: lock, budget, extract, checks, commit, record.

1. The tenant's lock: at most one sync of a tenant at a time, whatever launched it; a second is refused.
   Holding it, the run marks ``killed`` the rows of the tenant's runs left ``running`` (their process was
   killed), with the calls their staging last reported, and writes its own row, ``running``.
2. The API budget: a run projected to push the month's calls past the allowed share of the plan's quota
   is refused unless allowed.
3. Staging left behind by killed runs of the tenant is removed; this run stages into its own folder.
4. The extract (`pipelines.extract`), then the blocking checks (`pipelines.checks`).
5. One transaction commits the tables, the cursors and the run's row (`warehouse.commit`); then the copy
   readers open is published (`warehouse.publish`): a failed publish is a warning, the run stays committed.

SIGTERM and SIGINT (a Dagster run termination arrives as one of them) and the run's wall-clock budget stop
it at once (`pipelines.stopping`): no further request, nothing committed, the revision lists fetched kept
for the next run, the row ``interrupted`` (a signal) or ``failed`` (the budget) with one line saying so.
The run's calls reach its staging before each request is sent, so that a killed run is charged exactly.

Whatever happens, the run leaves its row in ``sync_runs`` (a run that did not commit writes it in a small
transaction of its own) and its staging is removed. Nothing is committed unless every check passed, so a
failed run leaves the warehouse's data exactly as it was.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from models.errors import AuthoritySyncError
from pipelines.budget import BudgetTerms, MonthProjection, project_month
from pipelines.checks import CheckOutcome, conformity, limits_parse, run_checks
from pipelines.clients import AdmClientResource
from pipelines.extract import (
    ExtractRequest,
    TenantExtract,
    extract_tenant,
    reads_whole,
    whole_reads,
)
from pipelines.settings import SyncSettings
from pipelines.stopping import (
    ROW_WAIT_S,
    RunInterruptedError,
    RunOverBudgetError,
    RunStop,
    budget_timer,
    run_allowance,
    stopping_on_signals,
)
from pipelines.warehouse_resource import WarehouseResource
from resources.client import AdmClient
from resources.contract import RecordContract
from resources.contract_modes import parse_modes
from resources.errors import StoppedError
from resources.metrics import MetricsSnapshot
from resources.waits import ended_by
from warehouse import reads
from warehouse.catalog import LISTS, REVISIONS
from warehouse.commit import CommitResult, StagedRun, StartedRun, commit_run, record_unfinished, start_run
from warehouse.files import keep_private, tighten, warehouse_files
from warehouse.locks import LockBusyError, held, tenant_lock_path
from warehouse.read_modes import FULL, INCREMENTAL
from warehouse.runs import Progress, QuotaProjection, RunRecord, RunStatus
from warehouse.staging import (
    ProgressFile,
    clean_leftovers,
    discard,
    forget_resume,
    leftover_progress,
    resume_dir,
)
from warehouse.unchanged import derivation, stage_unchanged

logger = logging.getLogger(__name__)


LOG_EVERY_S = 10.0
"""How often the run's log says how far its extract got."""


class SyncRefusedError(AuthoritySyncError, RuntimeError):
    """The run did not start its extract (another sync of the tenant runs, or the API budget is spent)."""


class SyncBlockedError(AuthoritySyncError, RuntimeError):
    """A blocking check failed: nothing was committed."""


@dataclass(frozen=True)
class SyncRequest:
    """One run of one tenant."""

    tenant_id: str
    run_id: str
    full_refresh: bool = False
    allow_over_quota: bool = False
    job_name: str | None = None
    warn_only_checks: frozenset[str] = frozenset()
    """Blocking checks that only warn in this run (besides those of the policy)."""

    @property
    def mode(self) -> str:
        """The mode asked for (a list may still fall back to a full read)."""
        return FULL if self.full_refresh else INCREMENTAL


@dataclass
class SyncOutcome:
    """What a run did. ``record`` is its ``sync_runs`` row; ``commit`` is set only when it committed."""

    record: RunRecord
    projection: QuotaProjection | None = None
    month: MonthProjection | None = None
    """The tenant's month under the configured schedules and plan, projected after the commit."""
    extract: TenantExtract | None = None
    checks: list[CheckOutcome] = field(default_factory=list)
    commit: CommitResult | None = None
    killed: list[str] = field(default_factory=list)
    """Runs of the tenant this run found killed (their rows now say so)."""

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        """The blocking checks that did not pass."""
        return [check for check in self.checks if check.blocking and not check.passed]


@dataclass(frozen=True)
class SyncServices:
    """The resources a sync uses."""

    adm: AdmClientResource
    warehouse: WarehouseResource
    policy: SyncSettings


def sync_tenant(
    request: SyncRequest, services: SyncServices, outcome: SyncOutcome | None = None
) -> SyncOutcome:
    """Run one tenant's sync. Raises `SyncRefusedError`, `SyncBlockedError` or the failure that stopped
    it; ``outcome`` (pass one in to see it after a raise) holds what the run got to, its row included."""
    outcome = outcome or SyncOutcome(
        RunRecord(request.run_id, request.tenant_id, request.mode, datetime.now(UTC))
    )
    outcome.record.job_name = request.job_name
    outcome.record.monthly_quota = services.policy.quota_of(request.tenant_id)
    warehouse = services.warehouse.file
    keep_private()
    tighten(*owned_files(services.warehouse, services.adm.limiter_state_dir))
    stop = RunStop()
    staging = services.warehouse.staging(request.run_id, request.tenant_id)
    recorded = True
    with stopping_on_signals(stop):  # until the row is written: a second signal cannot lose it
        try:
            with ended_by(lambda: stop.requested), _tenant_lock(warehouse, request):
                _run(request, services, outcome, stop, staging)
        except BaseException as error:
            stopped = stop.error(_left_for_resume(services, outcome.record))
            recorded = _record_failure(services, outcome.record, error, stopped, stop.signal_number)
            if stopped is not None:
                raise stopped from None
            raise
        finally:
            # A row that could not be written stays as the run began it; the next run records it killed,
            # with the calls the progress report in its staging counted.
            if recorded:
                discard(staging)
    return outcome


def _record_failure(
    services: SyncServices,
    record: RunRecord,
    error: BaseException,
    stopped: RunInterruptedError | RunOverBudgetError | None,
    signal_number: int | None,
) -> bool:
    """Write the row of a run that ended without a commit (``stopped``: the stop's error, if it was one);
    returns whether it was written."""
    if stopped is not None:
        interrupted = isinstance(stopped, RunInterruptedError)
        record.status = RunStatus.INTERRUPTED if interrupted else RunStatus.FAILED
        record.error = str(stopped)
    record.error = record.error or one_line(error)
    # A signalled run does not publish its row for readers (a copy of the whole warehouse: seconds at least,
    # which a supervisor's grace period cannot spare; the next publish carries it), nor waits long for the
    # writer to write it.
    if signal_number is not None:
        return record_unfinished(
            services.warehouse.file, record, min(services.warehouse.lock_wait_s, ROW_WAIT_S)
        )
    return record_unfinished(
        services.warehouse.file, record, services.warehouse.lock_wait_s, services.warehouse.publish_target
    )


def owned_files(warehouse: WarehouseResource, limiter_state_dir: str | None) -> list[Path]:
    """What syncs write and keep (an earlier release may have left it readable): the warehouse and its
    files, staging, the rate-limit state, and the copy for readers unless a group may read it."""
    target = warehouse.publish_target
    shared = [] if target.readers_group else [target.path, target.parquet_root]
    limiter = [Path(limiter_state_dir)] if limiter_state_dir else []
    return [*warehouse_files(warehouse.file), warehouse.staging_root, *limiter, *shared]


def _left_for_resume(services: SyncServices, record: RunRecord) -> str:
    """What a stopped run leaves for the next one, in words."""
    if services.policy.resume_hours <= 0:
        return (
            "nothing committed; nothing is kept for resuming (ADM_RESUME_HOURS=0): the next run starts afresh"
        )
    fetched = sum(record.api_calls.get(revisions.endpoint, 0) for revisions in REVISIONS.values())
    return (
        f"nothing committed; the revision lists fetched ({fetched:,} calls) are kept: the next run of tenant "
        f"{record.tenant_id} within {services.policy.resume_hours:g} h reuses them"
    )


@contextmanager
def _tenant_lock(warehouse: Path, request: SyncRequest) -> Iterator[None]:
    """The tenant's lock, refused at once (not awaited) when another sync holds it."""
    lock = tenant_lock_path(warehouse, request.tenant_id)
    with ExitStack() as stack:
        # Only taking this lock is a refusal: a lock the commit later waits for in vain is a failure of a
        # run that did read the service, and must not be reported as one that did nothing.
        try:
            stack.enter_context(
                held(lock, f"run {request.run_id}", 0, f"the sync of tenant {request.tenant_id}")
            )
        except LockBusyError as error:
            raise SyncRefusedError(f"{error}; this run did nothing") from None
        yield


def _run(
    request: SyncRequest, services: SyncServices, outcome: SyncOutcome, stop: RunStop, staging: Path
) -> None:
    warehouse, policy = services.warehouse.file, services.policy
    staging_root = Path(services.warehouse.staging_root)
    killed = leftover_progress(staging_root, request.tenant_id)
    quota = (policy.quota_of(request.tenant_id), policy.quota_max_share)
    wait, recheck_days = services.warehouse.lock_wait_s, policy.revision_recheck_days
    outcome.record.derivation = derivation(policy.schema_contract)
    reusing = _reusing(request.full_refresh, policy.reuse_min_records)
    started = start_run(warehouse, outcome.record, killed, wait, quota, recheck_days, reusing)
    outcome.killed, outcome.projection = started.killed, started.projection
    if outcome.projection.over and not (request.allow_over_quota or policy.allow_over_quota):
        raise SyncRefusedError(
            f"API budget: {outcome.projection.describe()}; refused (allow it with ADM_ALLOW_OVER_QUOTA=true, "
            "the run tag adm/allow_over_quota=true or --allow-over-quota)"
        )
    for leftover in clean_leftovers(staging_root, request.tenant_id):
        logger.info("removed staging left by an earlier run: %s", leftover)
    _extract_check_commit(request, services, outcome, started, staging, stop)
    sizes = outcome.commit.sizes if outcome.commit is not None else None
    outcome.month = _project_month(request.tenant_id, services, sizes)


def _reusing(full_refresh: bool, min_records: int) -> Callable[[reads.RunStart], frozenset[str]]:
    """Which lists a run reads whole and may stage unchanged records of (``ADM_REUSE_MIN_RECORDS``), from
    what the warehouse says as it starts."""

    def lists(start: reads.RunStart) -> frozenset[str]:
        evidence = start.evidence
        whole = whole_reads(evidence.live_records, evidence.applied_since_commit)
        return frozenset(
            name
            for name, records in evidence.live_records.items()
            if records >= min_records and reads_whole(name, full_refresh, start.cursors, whole)
        )

    return lists


def _project_month(
    tenant_id: str, services: SyncServices, sizes: reads.TenantSizes | None
) -> MonthProjection | None:
    """The month the tenant's committed sizes make under the configured schedules and plan."""
    policy = services.policy
    terms = BudgetTerms(
        services.adm.rate_plan_of(tenant_id),
        policy.quota_of(tenant_id),
        policy.quota_max_share,
        policy.revision_recheck_days,
        policy.nightly_cron,
        policy.full_refresh_cron,
    )
    return project_month(sizes, terms)[0] if sizes is not None else None


def _extract_check_commit(
    request: SyncRequest,
    services: SyncServices,
    outcome: SyncOutcome,
    started: StartedRun,
    staging: Path,
    stop: RunStop,
) -> None:
    warehouse, record, policy, start = services.warehouse.file, outcome.record, services.policy, started.start
    record.recheck_days = policy.revision_recheck_days
    default, modes = parse_modes(policy.schema_contract)
    contract = RecordContract(
        default, modes, policy.reject_max_count, policy.reject_max_share, tenant_id=request.tenant_id
    )
    with (
        services.adm.client_for(request.tenant_id) as client,
        _phase(record, "extract"),
        _reporting(staging, client),
        _budget(stop, client, policy, outcome.projection),
    ):
        stop.attach(client)
        try:
            outcome.extract = extract_tenant(
                ExtractRequest(
                    client=client,
                    tenant_id=request.tenant_id,
                    staging=staging,
                    full_refresh=request.full_refresh,
                    cursors=start.cursors,
                    overlap=timedelta(minutes=services.policy.overlap_minutes),
                    revision_plans=start.revision_plans,
                    contract=contract,
                    resume=_resume_dir(services, request.tenant_id),
                    resume_max_age=timedelta(hours=policy.resume_hours),
                    whole=whole_reads(start.evidence.live_records, start.evidence.applied_since_commit),
                    unchanged=started.unchanged,
                )
            )
            _stage_unchanged(services, record, outcome.extract, started.unchanged)
        finally:
            _count_calls(record, client.metrics)
            record.deviations, record.rejections = contract.log.summary(), list(contract.log.rejections)
    if stop.requested:  # the last request had answered: still, a stopping run commits nothing
        raise StoppedError("the run is stopping")
    extract = outcome.extract
    record.mode, record.warnings = extract.mode, extract.warnings
    with _phase(record, "checks"):
        warnings = [*conformity(extract), limits_parse(extract)]
        warn_only = frozenset(policy.warn_only_checks) | request.warn_only_checks
        outcome.checks = run_checks(extract, start.checks, warn_only) + warnings
    record.checks = [check.as_record() for check in outcome.checks]
    if outcome.failed_checks:
        record.status = RunStatus.BLOCKED_BY_CHECK
        record.error = "; ".join(f"{c.table} {c.name}: {c.description}" for c in outcome.failed_checks)
        raise SyncBlockedError(f"blocking check failed, nothing committed: {record.error}")
    reports = extract.reports
    staged = StagedRun(
        staging,
        extract.tables,
        {entity: report.mode for entity, report in reports.items()},
        {
            entity: report.cursor.isoformat() if report.cursor else None
            for entity, report in reports.items()
            if report.cursor or report.forget_cursor
        },
        {entity: report.vanished for entity, report in reports.items() if report.vanished},
        sum(start.evidence.live_records.values()),
    )
    outcome.commit = commit_run(
        warehouse, staged, record, services.warehouse.lock_wait_s, services.warehouse.publish_target
    )
    forget_resume(Path(services.warehouse.staging_root), request.tenant_id)


def _stage_unchanged(
    services: SyncServices, record: RunRecord, extract: TenantExtract, stored: dict[str, dict[str, str]]
) -> None:
    """Stage the stored rows of the records each list read unchanged; count them with its tables and in
    the run's record."""
    noted = {
        entity: {record_id: stored[entity][record_id] for record_id in report.unchanged}
        for entity, report in extract.reports.items()
        if report.unchanged
    }
    warehouse = services.warehouse
    added = stage_unchanged(warehouse.file, warehouse.lock_wait_s, extract.staging, record.tenant_id, noted)
    for entity in noted:
        report = extract.reports[entity]
        for table in LISTS[entity].family.tables:
            report.tables[table] = report.tables.get(table, 0) + added.get(table, 0)
    record.records_reused = {entity: len(ids) for entity, ids in noted.items()}
    if noted:
        logger.info("read unchanged, their stored rows staged: %s", record.records_reused)


def _resume_dir(services: SyncServices, tenant_id: str) -> Path | None:
    """Where the tenant's runs journal their revision lists, unless resuming is off."""
    if services.policy.resume_hours <= 0:
        return None
    return resume_dir(Path(services.warehouse.staging_root), tenant_id)


def _log_progress(metrics: MetricsSnapshot) -> None:
    """One line of progress for the run's log: calls so far per endpoint, 429s, retries, limiter wait."""
    calls = (
        ", ".join(f"{endpoint} {count}" for endpoint, count in sorted(metrics.calls.items())) or "none yet"
    )
    logger.info(
        "extracting: %d calls so far (%s); %d x 429, %d retries, %.1f s waiting for the rate limit",
        sum(metrics.calls.values()),
        calls,
        metrics.rate_limited,
        metrics.retries,
        metrics.limiter_wait_s,
    )


@contextmanager
def _reporting(staging: Path, client: AdmClient) -> Iterator[None]:
    """Report what the run has spent to its staging before each request it sends (a run that gets killed
    leaves the calls it made for the next run to count), and in the run's log every `LOG_EVERY_S`."""
    staging.mkdir(parents=True, exist_ok=True)
    done = threading.Event()

    def keep_logging() -> None:
        while not done.wait(LOG_EVERY_S):
            _log_progress(client.metrics)

    with ProgressFile(staging) as progress:

        def report(metrics: MetricsSnapshot) -> None:
            progress.write(Progress(dict(metrics.calls), metrics.rate_limited, metrics.retries, _now()))

        client.observe(report)
        logging_thread = threading.Thread(target=keep_logging, name="adm-progress", daemon=True)
        logging_thread.start()
        try:
            yield
        finally:
            done.set()
            logging_thread.join()
            client.observe(None)
            report(client.metrics)


@contextmanager
def _budget(
    stop: RunStop, client: AdmClient, policy: SyncSettings, projection: QuotaProjection | None
) -> Iterator[None]:
    """The run's wall-clock budget (`run_allowance`), watched until the block ends."""
    rate = client.settings.plan_rate_per_minute
    allowed = run_allowance(policy.run_budget_s, rate, projection, lambda: client.metrics.api_calls)
    with budget_timer(stop, allowed, lambda: client.metrics):
        yield


def _now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def _phase(record: RunRecord, name: str) -> Iterator[None]:
    """Time one phase of the run into its row (also when the phase fails)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        record.phase_seconds[name] = round(time.perf_counter() - started, 3)


def _count_calls(record: RunRecord, metrics: MetricsSnapshot) -> None:
    """The run's API calls, also when it failed half-way: they count against the month's quota."""
    record.api_calls = dict(metrics.calls)
    record.rate_limited, record.retries = metrics.rate_limited, metrics.retries


def one_line(error: BaseException) -> str:
    """The error's kind and first line, as stored in ``sync_runs.error``."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
