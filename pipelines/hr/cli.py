"""``authority-sync hr``: plan, apply and follow HR reverse syncs from the command line.

Exit codes: 0 done (a plan ready to apply, an apply with every entity applied, scheduled for its effective
date or superseded); 1 refused (an unreadable file, an upload whose every row is invalid, a stale
warehouse, a plan expired or applied already, the warehouse busy) or not all applied (an apply left
``incomplete``, a 401 included, or entities skipped: see the output and ``hr status PLAN_ID --problems``);
2 a usage error (a missing file or a directory, a mistyped ``--allow`` kind, an unknown encoding); 3 a plan
blocked by safety thresholds. The service's token is never printed.

Like `pipelines.cli`, the module holds the commands' signatures only: each command and helper imports the
HR workflow, the warehouse and the HTTP client it uses in its body, so ``hr --help`` loads none of them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from models.hr.status import EntityStatus, PlanStatus
from pipelines.terminal import line_console

if TYPE_CHECKING:
    import duckdb

    from pipelines.hr.mapping import Mapping
    from pipelines.hr.policy import HrPolicyResource
    from pipelines.hr.workflow import PlanOutcome, PlanRequest
    from pipelines.settings import SyncSettings
    from pipelines.warehouse_resource import WarehouseResource
    from resources.client import AdmClient
    from warehouse.hr_store import StoredPlan

DEFAULT_REPORTS = Path("data/hr/reports")
TROUBLED = frozenset({PlanStatus.BLOCKED, PlanStatus.APPLYING, PlanStatus.INCOMPLETE})
"""Plan statuses ``hr status --problems`` lists."""
BLOCKED = 3
"""Exit code of a plan that safety thresholds block (2 is click's usage error)."""
SETTLED = frozenset({EntityStatus.APPLIED, EntityStatus.SCHEDULED, EntityStatus.SUPERSEDED})
"""Entity outcomes of an apply that exits 0: applied, waiting for its effective date, or cancelled by a
later upload."""


hr_app = typer.Typer(
    pretty_exceptions_show_locals=False,
    no_args_is_help=True,
    help="HR reverse sync: plan org changes from HR CSVs, then apply them.",
)

WarehouseOption = Annotated[Path | None, typer.Option(help="DuckDB file; default ADM_WAREHOUSE.")]
TenantOption = Annotated[
    str | None,
    typer.Option(help="Tenant id or ADM_TENANTS name (as `extract --tenant`); default the first configured."),
]
AllowOption = Annotated[
    list[str] | None,
    typer.Option("--allow", help="Lift one safety threshold (a change kind) for this plan; repeatable."),
]
ReasonOption = Annotated[str | None, typer.Option(help="Why the thresholds are lifted (recorded; required).")]
ApprovedByOption = Annotated[
    str | None, typer.Option(help="Who lifts the thresholds (recorded); default the OS user.")
]


@hr_app.command("plan")
def plan_command(
    files: Annotated[
        list[Path],
        # A directory or a missing file is a usage error (exit 2), not a traceback from reading it.
        typer.Argument(help="HR users and/or org-units CSV files.", exists=True, dir_okay=False),
    ],
    mapping: Annotated[
        Path | None, typer.Option(help="Column-mapping TOML; default the shipped one.")
    ] = None,
    encoding: Annotated[
        str | None, typer.Option(help="The files' encoding (utf-8, cp1252, latin-1); default the mapping's.")
    ] = None,
    delimiter: Annotated[
        str | None, typer.Option(help="The cell delimiter (',', ';' or 'tab'); default detected.")
    ] = None,
    date_format: Annotated[
        list[str] | None,
        typer.Option(help="A strptime format of the files' dates (repeatable); default the mapping's."),
    ] = None,
    as_of: Annotated[
        datetime | None,
        typer.Option(
            help="When the files were exported (UTC unless an offset is given); default each file's "
            "modification time.",
            formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"],
        ),
    ] = None,
    allow_old_export: Annotated[
        bool, typer.Option(help="Plan files older than the mapping's max_export_age_hours.")
    ] = False,
    tenant: TenantOption = None,
    warehouse: WarehouseOption = None,
    strict: Annotated[bool, typer.Option(help="Refuse the whole upload if any row is invalid.")] = False,
    refresh_first: Annotated[
        bool, typer.Option("--refresh", help="Run the incremental extract first, so the warehouse is fresh.")
    ] = False,
    allow_kind: AllowOption = None,
    reason: ReasonOption = None,
    approved_by: ApprovedByOption = None,
    csv: Annotated[Path | None, typer.Option(help="Also write the plan's changes to this CSV.")] = None,
    json: Annotated[Path | None, typer.Option(help="Also write the whole plan to this JSON file.")] = None,
    errors: Annotated[
        Path, typer.Option(help="Folder of the error reports (<file>.errors.csv).")
    ] = DEFAULT_REPORTS,
    limit: Annotated[int, typer.Option(help="Changes and problems printed at most.")] = 200,
) -> None:
    """Validate HR files, diff them against the warehouse and store a plan (nothing is written)."""
    from pipelines.cli_support import service_or_exit, settings_or_exit, tenant_or_exit
    from pipelines.hr.exports import write_plan_csv, write_plan_json
    from pipelines.hr.policy import HrPolicyResource
    from pipelines.hr.workflow import PlanRequest, os_user
    from pipelines.warehouse_resource import WarehouseResource

    console = line_console()
    settings = settings_or_exit(warehouse)
    tenant_id = tenant_or_exit(settings, tenant)
    request = PlanRequest(
        tuple(files),
        tenant_id,
        _mapping(mapping, encoding, delimiter, date_format),
        strict,
        _allowances(allow_kind, reason),
        approved_by=_approver(approved_by, settings),
        planned_by=os_user(),
        policy=HrPolicyResource(settings),
        as_of=as_of if as_of is None or as_of.tzinfo else as_of.replace(tzinfo=UTC),
        allow_old_export=allow_old_export,
    )
    if refresh_first:
        _refresh(console, tenant_id, service_or_exit(settings))
    store = WarehouseResource(settings)
    outcome = show_plan(console, store, request, errors, limit)
    if outcome.plan is None:
        raise typer.Exit(1)
    if csv:
        console.print(f"Plan CSV: {write_plan_csv(csv, outcome.plan)}")
    if json:
        console.print(f"Plan JSON: {write_plan_json(json, outcome.plan)}")
    raise typer.Exit(BLOCKED if outcome.plan.blocked else 0)


@hr_app.command("apply")
def apply_command(
    plan_id: Annotated[str, typer.Argument(help="The plan to apply (see `hr status`).")],
    warehouse: WarehouseOption = None,
    allow_kind: AllowOption = None,
    reason: ReasonOption = None,
    approved_by: ApprovedByOption = None,
    refresh_after: Annotated[
        bool, typer.Option("--refresh/--no-refresh", help="Run the incremental extract after applying.")
    ] = True,
) -> None:
    """Apply a plan once (or resume an interrupted apply), then refresh the warehouse."""
    from pipelines.cli_support import service_or_exit, settings_or_exit
    from pipelines.clients import AdmClientResource
    from pipelines.hr.apply import PlanBlockedError, PlanNotApplicableError
    from pipelines.hr.policy import HrPolicyResource
    from pipelines.hr.report import print_apply, print_unsettled
    from pipelines.hr.workflow import FourEyesError, apply_stored
    from pipelines.stopping import RunInterruptedError, exit_at_once
    from pipelines.warehouse_resource import WarehouseResource
    from resources.errors import ServiceError
    from warehouse.hr_store import journal_entries
    from warehouse.locks import LockBusyError

    console = line_console()
    settings = service_or_exit(settings_or_exit(warehouse))
    store, policy = WarehouseResource(settings), HrPolicyResource(settings)
    stored = _stored(store, plan_id)
    plan_id = stored.plan_id
    if allow_kind:
        approver = _approver(approved_by, settings)
        stored = _allow(console, store, plan_id, _allowances(allow_kind, reason), approver, policy)
    # Resolved here: outside a Dagster run the resource still holds its EnvVar references.
    adm = AdmClientResource(settings)
    with adm.client_for(stored.tenant_id) as client:
        try:
            report = apply_stored(store, plan_id, client, str(uuid.uuid4()), policy)
        except PlanBlockedError as error:
            console.print(f"[red]{escape(str(error))}[/]")
            raise typer.Exit(BLOCKED) from None
        except RunInterruptedError as error:  # one line, and the exit status of a process the signal ended
            console.print(f"[red]plan {escape(plan_id)}: {escape(str(error))}[/]")
            exit_at_once(128 + error.signal_number)
        except (PlanNotApplicableError, FourEyesError, ServiceError, LockBusyError) as error:
            # Service errors carry method, path, status and message: never a header or a token.
            console.print(f"[red]{escape(str(error))}[/]")
            raise typer.Exit(1) from None
    print_apply(console, report)
    if report.status == PlanStatus.INCOMPLETE:
        with _reading(console, settings.warehouse, settings.lock_wait_s) as con:
            print_unsettled(console, report, journal_entries(con, plan_id))
    if refresh_after:
        _refresh(console, stored.tenant_id, settings)
    raise typer.Exit(0 if set(report.outcomes) <= SETTLED else 1)


@hr_app.command("apply-due")
def apply_due_command(
    tenant: TenantOption = None,
    warehouse: WarehouseOption = None,
    refresh_after: Annotated[
        bool, typer.Option("--refresh/--no-refresh", help="Run the incremental extract after applying.")
    ] = True,
) -> None:
    """Apply the changes of scheduled plans whose effective date has come (what Dagster's
    ``hr_apply_due`` schedule runs every night), then refresh the warehouse."""
    from pipelines.cli_support import service_or_exit, settings_or_exit, tenant_or_exit
    from pipelines.clients import AdmClientResource
    from pipelines.hr.policy import HrPolicyResource
    from pipelines.hr.workflow import plans_due
    from pipelines.warehouse_resource import WarehouseResource

    console = line_console()
    settings = settings_or_exit(warehouse)
    tenant_id = tenant_or_exit(settings, tenant)
    store = WarehouseResource(settings)
    due = plans_due(store, tenant_id)
    if not due:
        console.print("No scheduled change is due.")
        return
    settings = service_or_exit(settings)
    adm = AdmClientResource(settings)
    policy = HrPolicyResource(settings)
    with adm.client_for(tenant_id) as client:
        settled = [_apply_due(console, store, plan_id, client, policy) for plan_id in due]
    if refresh_after:
        _refresh(console, tenant_id, settings)
    raise typer.Exit(0 if all(settled) else 1)


def _apply_due(
    console: Console, store: WarehouseResource, plan_id: str, client: AdmClient, policy: HrPolicyResource
) -> bool:
    """Apply one plan's due changes and print what happened; whether everything settled."""
    from pipelines.hr.apply import PlanNotApplicableError
    from pipelines.hr.report import print_apply
    from pipelines.hr.workflow import FourEyesError, apply_stored
    from resources.errors import ServiceError
    from warehouse.locks import LockBusyError

    try:
        report = apply_stored(store, plan_id, client, str(uuid.uuid4()), policy)
    except (PlanNotApplicableError, FourEyesError, ServiceError, LockBusyError) as error:
        console.print(f"[red]{escape(str(error))}[/]")
        return False
    print_apply(console, report)
    return set(report.outcomes) <= SETTLED


@hr_app.command("status")
def status_command(
    plan_id: Annotated[str | None, typer.Argument(help="A plan; default: list the latest plans.")] = None,
    warehouse: WarehouseOption = None,
    tenant: TenantOption = None,
    limit: Annotated[int, typer.Option(help="Plans listed at most.")] = 20,
    problems: Annotated[
        bool,
        typer.Option(
            "--problems",
            help="Only what needs attention: plans blocked, applying, incomplete or expired; dated changes "
            "overdue; entities not applied.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the same as JSON (for scripts).")] = False,
) -> None:
    """List the latest plans and pending dated changes, or show one plan's entities and their outcomes."""
    from pipelines.cli_support import settings_or_exit, tenant_or_exit
    from pipelines.hr.apply import expired
    from pipelines.hr.report import (
        pending_summary,
        plan_detail,
        plan_summary,
        print_journal,
        print_pending,
        print_plans,
    )
    from warehouse.hr_store import allowances, journal_entries, list_plans, pending_changes

    console = line_console()
    settings = settings_or_exit(warehouse)
    tenant = tenant_or_exit(settings, tenant) if tenant else None
    max_age = timedelta(hours=settings.hr_plan_max_age_hours)
    now = datetime.now(UTC)
    with _reading(console, settings.warehouse, settings.lock_wait_s) as con:
        if plan_id is None:
            plans = list_plans(con, tenant, limit)
            old = {plan.plan_id for plan in plans if expired(plan, max_age, now)}
            pending = pending_changes(con, tenant)
            if problems:
                plans = [plan for plan in plans if plan.status in TROUBLED or plan.plan_id in old]
                pending = [change for change in pending if change.overdue(now.date())]
            if as_json:
                _print_json(
                    {
                        "plans": [plan_summary(p, p.plan_id in old) for p in plans],
                        "pending": [pending_summary(change, now.date()) for change in pending],
                    }
                )
                return
            print_plans(console, plans, old)
            print_pending(console, pending, now.date())
            return
        plan = _loaded(con, plan_id)
        entries = journal_entries(con, plan.plan_id)
        if problems:
            entries = [entry for entry in entries if entry.status != EntityStatus.APPLIED]
        lifts = allowances(con, plan.plan_id)
    if as_json:
        _print_json(plan_detail(plan, expired(plan, max_age, now), lifts, entries))
        return
    print_journal(console, plan, lifts, entries)


def _print_json(document: object) -> None:
    """A JSON document on standard output, unstyled (for scripts)."""
    typer.echo(json.dumps(document, indent=2, ensure_ascii=False, default=str))


@hr_app.command("show")
def show_command(
    plan_id: Annotated[str, typer.Argument(help="A stored plan (see `hr status`).")],
    warehouse: WarehouseOption = None,
    csv: Annotated[Path | None, typer.Option(help="Also write the plan's changes to this CSV.")] = None,
    limit: Annotated[int, typer.Option(help="Changes printed at most.")] = 200,
) -> None:
    """Print a stored plan as it was planned (or write its changes with --csv), at any time later."""
    from pipelines.cli_support import settings_or_exit
    from pipelines.hr.apply import expired
    from pipelines.hr.exports import write_change_rows
    from pipelines.hr.report import print_stored_plan
    from warehouse.hr_store import plan_items

    console = line_console()
    settings = settings_or_exit(warehouse)
    with _reading(console, settings.warehouse, settings.lock_wait_s) as con:
        plan = _loaded(con, plan_id)
        items = plan_items(con, plan.plan_id)
    old = expired(plan, timedelta(hours=settings.hr_plan_max_age_hours), datetime.now(UTC))
    print_stored_plan(console, plan, items, limit, old)
    if csv:
        console.print(f"Plan CSV: {write_change_rows(csv, items)}")


@hr_app.command("revert")
def revert_command(
    plan_id: Annotated[str, typer.Argument(help="The applied plan to revert (see `hr status`).")],
    mapping: Annotated[
        Path | None, typer.Option(help="Column-mapping TOML (its thresholds); default the shipped one.")
    ] = None,
    warehouse: WarehouseOption = None,
    limit: Annotated[int, typer.Option(help="Changes printed at most.")] = 200,
) -> None:
    """Plan the revert of an applied plan: its entities' values from before it, except for an entity
    changed since (listed, left alone). Apply the new plan with `hr apply`."""
    from pipelines.cli_support import settings_or_exit
    from pipelines.hr.report import print_plan
    from pipelines.hr.revert import NotRevertibleError, revert_stored
    from pipelines.hr.snapshot import StaleWarehouseError
    from pipelines.hr.workflow import os_user
    from pipelines.warehouse_resource import WarehouseResource

    console = line_console()
    store = WarehouseResource(settings_or_exit(warehouse))
    try:
        revert = revert_stored(
            store, _stored(store, plan_id).plan_id, _mapping(mapping), planned_by=os_user()
        )
    except (NotRevertibleError, StaleWarehouseError) as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1) from None
    for left in revert.left:
        console.print(f"Left alone: {left.entity.kind} {escape(left.entity.hr_key)}: {left.reason}")
    for part in revert.partial:
        console.print(f"Restored in part: {part.entity.kind} {escape(part.entity.hr_key)}: {part.reason}")
    print_plan(console, revert.plan, limit)
    raise typer.Exit(BLOCKED if revert.plan.blocked else 0)


def show_plan(
    console: Console, store: WarehouseResource, request: PlanRequest, errors: Path, limit: int
) -> PlanOutcome:
    """Plan an upload and print its problems, error reports and plan (or why there is none)."""
    from pipelines.hr.exports import write_error_reports
    from pipelines.hr.report import print_plan, print_problems
    from pipelines.hr.snapshot import StaleWarehouseError
    from pipelines.hr.workflow import FourEyesError, plan_upload
    from warehouse.migrate import OlderWarehouseError

    try:
        outcome = plan_upload(store, request, progress=lambda line: console.print(f"[dim]{escape(line)}[/]"))
    except (StaleWarehouseError, FourEyesError, OlderWarehouseError) as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1) from None
    print_problems(console, outcome.validation.problems, limit)
    for note in outcome.validation.notes:
        console.print(f"Note: {escape(Path(note.file).name)} line {note.line}: {escape(note.message)}")
    for path in write_error_reports(outcome.validation, request.mapping, errors):
        console.print(f"Error report: {path} (fix those rows and upload them again)")
    if outcome.plan is None:
        console.print(f"[red]{outcome.refusal}[/]")
    else:
        print_plan(console, outcome.plan, limit)
    return outcome


def show_demo_plan(console: Console, store: WarehouseResource, tenant_id: str) -> None:
    """The demo's last step: a dry-run plan of the shipped HR export against the demo warehouse."""
    from pipelines.hr.mapping import SAMPLES, load_mapping
    from pipelines.hr.workflow import PlanRequest

    console.rule("HR reverse sync: dry-run plan of the demo HR export (nothing is written)")
    # The sample files describe the seeded tenant as of now, however long ago they were checked out.
    files = (SAMPLES / "demo_users.csv", SAMPLES / "demo_groups.csv")
    request = PlanRequest(files, tenant_id, load_mapping(), as_of=datetime.now(UTC))
    show_plan(console, store, request, store.file.parent / "hr", limit=60)
    console.print("(The demo stops here: its emulator is gone, so this plan is for reading, not applying.)")


def _mapping(
    path: Path | None,
    encoding: str | None = None,
    delimiter: str | None = None,
    date_formats: list[str] | None = None,
) -> Mapping:
    from pipelines.hr.mapping import MappingError, load_mapping, with_file_options

    try:
        loaded = load_mapping(path)
    except MappingError as error:
        raise typer.BadParameter(str(error), param_hint="--mapping") from None
    try:
        return with_file_options(loaded, encoding, delimiter, date_formats)
    except MappingError as error:
        raise typer.BadParameter(str(error), param_hint="--encoding/--delimiter/--date-format") from None


def _approver(named: str | None, settings: SyncSettings) -> str:
    """Who lifts thresholds: ``--approved-by``, else the OS user. Under ``ADM_HR_FOUR_EYES`` only the OS
    user: a name typed for someone else would defeat the rule."""
    from pipelines.hr.workflow import os_user

    if settings.hr_four_eyes and named and named.casefold() != os_user().casefold():
        message = "ADM_HR_FOUR_EYES: the approver is who runs the command; --approved-by cannot name another"
        raise typer.BadParameter(message, param_hint="--approved-by")
    return named or os_user()


def _allowances(kinds: list[str] | None, reason: str | None) -> dict[str, str]:
    from models.hr.thresholds import watched_kind

    if not kinds:
        return {}
    if not reason or not reason.strip():
        raise typer.BadParameter("--allow needs a --reason", param_hint="--reason")
    for kind in kinds:
        try:
            watched_kind(kind)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--allow") from None
    return dict.fromkeys(kinds, reason)


def _allow(
    console: Console,
    store: WarehouseResource,
    plan_id: str,
    kinds: dict[str, str],
    approved_by: str,
    policy: HrPolicyResource,
) -> StoredPlan:
    """Lift ``kinds`` for a plan; a plan that began applying keeps its lifts, and nothing is applied."""
    from pipelines.hr.workflow import FourEyesError, allow
    from warehouse.hr_store import AllowancesFinalError

    try:
        return allow(store, plan_id, kinds, approved_by, policy)
    except (AllowancesFinalError, FourEyesError) as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1) from None


@contextmanager
def _reading(console: Console, path: Path, wait_s: float) -> Iterator[duckdb.DuckDBPyConnection]:
    """The warehouse opened read-only (never migrated: a command that only reads changes nothing),
    waiting up to ``wait_s`` for a writer's statement to end; a missing warehouse or one that stays busy
    ends the command with one line (exit 1) instead of a traceback."""
    from warehouse.locks import LockBusyError
    from warehouse.reads import read_only

    try:
        with read_only(path, wait_s) as con:
            if con is None:
                console.print(f"[red]{escape(str(path))} does not exist: sync a tenant first[/]")
                raise typer.Exit(1)
            yield con
    except LockBusyError as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1) from None


def _loaded(con: duckdb.DuckDBPyConnection, plan_id: str) -> StoredPlan:
    """The plan of an id or a unique prefix of it; a usage error (exit 2) saying why when there is none."""
    from warehouse.hr_store import PlanNotFoundError, find_plan

    try:
        return find_plan(con, plan_id)
    except PlanNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint="PLAN_ID") from None


def _stored(store: WarehouseResource, plan_id: str) -> StoredPlan:
    """`_loaded`, opening the warehouse for it."""
    from pipelines.hr.workflow import stored_plan
    from warehouse.hr_store import PlanNotFoundError
    from warehouse.locks import LockBusyError

    try:
        return stored_plan(store, plan_id)
    except PlanNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint="PLAN_ID") from None
    except LockBusyError as error:  # another apply or a sync holds the warehouse
        line_console().print(f"[red]{escape(str(error))}; try again when it ends[/]")
        raise typer.Exit(1) from None


def _refresh(console: Console, tenant_id: str, settings: SyncSettings) -> None:
    """The incremental tenant sync, so that the warehouse holds what the service holds now."""
    from pipelines.clients import AdmClientResource
    from pipelines.hr.workflow import RefreshFailedError, refresh
    from pipelines.warehouse_resource import WarehouseResource

    adm = AdmClientResource(settings)
    try:
        run_id = refresh(settings, tenant_id, adm, WarehouseResource(settings))
    except RefreshFailedError as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1) from None
    console.print(f"Warehouse refreshed (extract run {run_id[:8]}).")
