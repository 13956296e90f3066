"""The ``authority-sync`` command line.

The module holds the commands' signatures only: each command imports what it runs (the sync, Dagster, the
HTTP client, DuckDB, the HR workflow) in its body, so ``--help`` and ``sql`` pay for nothing else
(tests/test_cli_imports.py). Option types and defaults come from light modules: typer reads the signatures
when the command line is built."""

from __future__ import annotations

import logging
from pathlib import Path
from signal import Signals
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pipelines.demo_defaults import DEMO_WAREHOUSE, EMULATOR_HOST, EMULATOR_PORT
from pipelines.formats import OutputFormat
from pipelines.hr.cli import hr_app, show_demo_plan
from pipelines.process_exit import exit_now
from pipelines.terminal import line_console
from warehouse.files import keep_private

if TYPE_CHECKING:
    from pipelines.settings import SyncSettings
    from pipelines.tenant_runs import TenantRun

app = typer.Typer(
    pretty_exceptions_show_locals=False,
    no_args_is_help=True,
    help="authority-sync: sync the Authority Delegation Management Service.",
)
app.add_typer(hr_app, name="hr")
warehouse_app = typer.Typer(no_args_is_help=True, help="Look after the warehouse file.")
app.add_typer(warehouse_app, name="warehouse")


def run() -> None:
    """The ``authority-sync`` command: `app`, then the process ends at once (`pipelines.process_exit`)."""
    try:
        app()
    except SystemExit as done:
        exit_now(done.code)


@app.callback()
def main(
    ctx: typer.Context,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show Dagster's log, every retry and every warning.")
    ] = False,
) -> None:
    """Nightly extract, HR reverse sync and a local service emulator. Secrets are never printed."""
    keep_private()
    # Without --verbose a run says what happened in its summary and one line per failure; the log of
    # every retry and Dagster's own output (its failures come with stack traces) are for --verbose.
    # The level is the handler's too: an instance's dagster.yaml (python_logs) raises the project's loggers
    # to INFO, which the root logger's level alone would let through.
    level = logging.INFO if verbose else logging.ERROR
    handler = logging.StreamHandler()
    handler.setLevel(level)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", handlers=[handler])
    ctx.obj = verbose


@app.command()
def emulator(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = EMULATOR_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = EMULATOR_PORT,
    seed: Annotated[int, typer.Option(help="Seed of the generated tenants (same seed, same records).")] = 42,
    token: Annotated[str | None, typer.Option(help="Bearer token of the demo tenant.")] = None,
    tenant_id: Annotated[str | None, typer.Option(help="Id of the demo tenant.")] = None,
    access_key: Annotated[
        str | None,
        typer.Option(help="Access key the exchange accepts for the demo tenant."),
    ] = None,
    users: Annotated[int | None, typer.Option(help="Users of the demo tenant.")] = None,
    decisions: Annotated[int | None, typer.Option(help="Decisions of the demo tenant.")] = None,
    delegations: Annotated[int | None, typer.Option(help="Delegations of the demo tenant.")] = None,
    documents: Annotated[int | None, typer.Option(help="Documents of the demo tenant.")] = None,
    latency_ms: Annotated[float, typer.Option(help="Latency added to every request.")] = 0.0,
    jitter_ms: Annotated[float, typer.Option(help="Random extra latency, up to this.")] = 0.0,
    error_rate: Annotated[float, typer.Option(help="Share of requests answered with a 5xx.")] = 0.0,
    drop_rate: Annotated[
        float, typer.Option(help="Share of requests whose connection is cut mid-response.")
    ] = 0.0,
    malformed_rate: Annotated[float, typer.Option(help="Share of requests answered with broken JSON.")] = 0.0,
    rate_limit: Annotated[
        float | None, typer.Option(help="Per-tenant requests per minute (429 beyond).")
    ] = None,
    rate_burst: Annotated[int | None, typer.Option(help="Token bucket size; default twice the rate.")] = None,
    drift_every: Annotated[
        int, typer.Option(help="Every Nth list request inserts and updates a record.")
    ] = 0,
    realism_rate: Annotated[
        float, typer.Option(help="Share of list records served off the spec (see emulator/realism.py).")
    ] = 0.0,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the service emulator (E1-E14, access-key exchange, list extensions, /_admin)."""
    from pipelines.demo import serve_emulator  # the demo layer: only this command loads the emulator

    counts = {"users": users, "decisions": decisions, "delegations": delegations, "documents": documents}
    faults = {
        "latency_ms": latency_ms,
        "jitter_ms": jitter_ms,
        "error_rate": error_rate,
        "drop_rate": drop_rate,
        "malformed_rate": malformed_rate,
        "rate_limit_per_minute": rate_limit,
        "rate_burst": rate_burst,
        "drift_every": drift_every,
        "realism_rate": realism_rate,
    }
    identity = {"tenant_id": tenant_id, "token": token, "access_key": access_key}
    serve_emulator(host, port, log_level, seed=seed, identity=identity, counts=counts, faults=faults)


@app.command()
def extract(
    ctx: typer.Context,
    full_refresh: Annotated[
        bool, typer.Option(help="Read everything; mark vanished records deleted.")
    ] = False,
    tenant: Annotated[
        list[str] | None, typer.Option(help="Tenant id to sync (repeatable); default all.")
    ] = None,
    warehouse: Annotated[Path | None, typer.Option(help="DuckDB file; default ADM_WAREHOUSE.")] = None,
    allow_over_quota: Annotated[
        bool, typer.Option(help="Run even when the month's API calls would pass the quota share.")
    ] = False,
) -> None:
    """Run the tenant sync in-process: with DAGSTER_HOME set, as the Dagster jobs, in that instance's
    history; without it, the same sync without Dagster (no instance would keep the run). With no
    ADM_BASE_URL or ADM_ENVIRONMENT it refuses (try `authority-sync demo`)."""

    from pipelines.cli_support import service_or_exit, settings_or_exit, tenants_or_exit
    from pipelines.console import run_summary
    from pipelines.stopping import exit_at_once, received_signal

    console = line_console()
    settings = settings_or_exit(warehouse)
    tenants = tenants_or_exit(settings, tenant)
    settings = service_or_exit(settings)
    _label_tenants(settings, tenants)
    runs = sync_tenants(console, settings, tenants, full_refresh, allow_over_quota, verbose=bool(ctx.obj))
    stopped_by = received_signal()
    if stopped_by is not None:  # one line, and the exit status of a process the signal ended
        run = runs[-1]
        shown = escape(settings.tenant_label(run.tenant_id))
        said = run.error if not run.success else f"committed; {Signals(stopped_by).name}: no further tenant"
        console.print(f"[red]tenant {shown}: {escape(said or 'interrupted')}[/]")
        exit_at_once(128 + stopped_by)
    failed = [run for run in runs if not run.success]
    for run in failed:
        shown = escape(settings.tenant_label(run.tenant_id))
        console.print(f"[red]tenant {shown} failed, nothing committed: {escape(run.error or '')}[/]")
    row_ids = [row_id for run in runs for row_id in run.row_ids]
    run_summary(console, settings.warehouse, row_ids, settings.publish_target, settings.tenant_label)
    raise typer.Exit(1 if failed else 0)


def _label_tenants(settings: SyncSettings, tenants: list[str]) -> None:
    """Label the tenants ``ADM_TENANTS`` names in the warehouse (``v_sync_status`` shows the labels); a
    warehouse busy past the lock wait ends the command in one line."""
    from warehouse.commit import writing
    from warehouse.locks import LockBusyError
    from warehouse.tenants import set_label

    named = {tenant: settings.tenant_names[tenant] for tenant in tenants if tenant in settings.tenant_names}
    if not named:
        return
    try:
        with writing(settings.warehouse, "tenant labels", settings.lock_wait_s) as con:
            for tenant, name in named.items():
                set_label(con, tenant, name)
    except LockBusyError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


def sync_tenants(
    console: Console,
    settings: SyncSettings,
    tenants: list[str],
    full_refresh: bool,
    allow_over_quota: bool = False,
    *,
    verbose: bool = False,
) -> list[TenantRun]:
    """Run each tenant's sync in turn, with a spinner (and Dagster's log with ``verbose``, when it runs as a
    Dagster job: `pipelines.tenant_runs`)."""

    from pipelines.stopping import received_signal
    from pipelines.tenant_runs import tenant_runner
    from warehouse.read_modes import FULL, INCREMENTAL

    runs = []
    with tenant_runner(settings, verbose=verbose) as run_tenant:
        for tenant_id in tenants:
            mode = FULL if full_refresh else INCREMENTAL
            with console.status(f"tenant {escape(settings.tenant_label(tenant_id))}: {mode} sync"):
                runs.append(
                    run_tenant(tenant_id, full_refresh=full_refresh, allow_over_quota=allow_over_quota)
                )
            if received_signal() is not None:
                break  # stopped by a signal: no next tenant
    return runs


@warehouse_app.command("upgrade")
def warehouse_upgrade(
    warehouse: Annotated[Path | None, typer.Option(help="DuckDB file; default ADM_WAREHOUSE.")] = None,
) -> None:
    """Bring a warehouse written by an earlier release up to this one, in place, keeping its history, runs
    and HR audit trail; the file as it was is kept beside it (<name>.before-upgrade) for a rollback."""
    import duckdb

    from pipelines.cli_support import settings_or_exit
    from pipelines.sync import owned_files
    from pipelines.warehouse_resource import WarehouseResource
    from warehouse.files import tighten
    from warehouse.locks import LockBusyError
    from warehouse.migrate import NewerWarehouseError
    from warehouse.upgrade import upgrade

    settings = settings_or_exit(warehouse)
    try:
        done = upgrade(settings.warehouse, settings.lock_wait_s)
        tighten(*owned_files(WarehouseResource(settings), str(settings.limiter_state_dir)))
    except (OSError, LockBusyError, NewerWarehouseError, duckdb.Error) as error:
        typer.echo(f"error: {settings.warehouse}: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{settings.warehouse}: {done.describe()}")


@app.command()
def demo(
    warehouse: Annotated[Path, typer.Option(help="DuckDB file of the demo.")] = DEMO_WAREHOUSE,
) -> None:
    """The product in one go on an embedded emulator: a first (full) sync, a change of about 1% of the
    records, an incremental sync, example analyst queries, then a dry-run HR plan."""
    import httpx

    from pipelines.cli_support import settings_or_exit
    from pipelines.console import query_results, run_summary
    from pipelines.demo import DEMO_CHANGES, demo_settings, embedded_emulator  # loads the emulator
    from pipelines.warehouse_resource import WarehouseResource
    from warehouse.examples import EXAMPLES
    from warehouse.publish import for_readers
    from warehouse.reads import read_only

    console = line_console()
    warehouse.unlink(missing_ok=True)
    base = settings_or_exit(warehouse).model_copy(update={"tenants": [], "tenant_id": None})
    base.publish_file.unlink(missing_ok=True)  # the example queries must not read an earlier demo's copy
    with embedded_emulator() as server:
        settings = demo_settings(base, server.base_url)
        console.rule(f"Nightly sync against the embedded emulator at {server.base_url}")
        first = sync_tenants(console, settings, settings.sync_tenants, full_refresh=False)
        httpx.post(f"{server.base_url}/_admin/mutate", json=DEMO_CHANGES).raise_for_status()
        console.rule("About 1% of the records changed in the service; the next sync reads only those")
        second = sync_tenants(console, settings, settings.sync_tenants, full_refresh=False)
    runs = first + second
    run_summary(console, warehouse, [row_id for run in runs for row_id in run.row_ids], base.publish_target)
    if not all(run.success for run in runs):
        console.print(f"[red]{next(run.error for run in runs if not run.success)}[/]")
        raise typer.Exit(1)
    console.rule("Example analyst queries")
    # Analysts read the published copy: a session on it never delays the next sync.
    with read_only(for_readers(warehouse, base.publish_file)) as con:
        assert con is not None
        for title, sql in EXAMPLES.items():
            query_results(console, con, title, sql)
    show_demo_plan(console, WarehouseResource(settings), settings.default_tenant)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="The SQL to run; - reads it from standard input.")],
    output: Annotated[
        OutputFormat, typer.Option("--format", help="table (for people), csv or json (for programs).")
    ] = OutputFormat.TABLE,
    copy: Annotated[
        Path | None, typer.Option(help="The DuckDB file to read; default the copy published for readers.")
    ] = None,
) -> None:
    """Run one query on the copy published for readers (read-only: it never holds up a sync) and print its
    rows. For example: authority-sync sql "SELECT * FROM v_sync_status" --format csv"""
    import duckdb

    from pipelines.analytics import NoPublishedCopyError, connect, write_rows
    from warehouse.reads import WriterHoldsFileError

    text = typer.get_text_stream("stdin").read() if query == "-" else query
    try:
        with connect(copy) as con:
            cursor = con.execute(text)
            columns = [column[0] for column in cursor.description or []]
            rows = cursor.fetchall()
    except (NoPublishedCopyError, WriterHoldsFileError, duckdb.Error) as error:
        typer.echo(f"error: {str(error).strip().splitlines()[0]}", err=True)
        raise typer.Exit(1) from None
    write_rows(typer.get_text_stream("stdout"), columns, rows, output)


@app.command()
def budget(
    tenant: Annotated[
        list[str] | None, typer.Option(help="A configured tenant (repeat for several); default all.")
    ] = None,
    warehouse: Annotated[Path | None, typer.Option(help="DuckDB file; default ADM_WAREHOUSE.")] = None,
) -> None:
    """Project each tenant's API calls and wall time a month under the configured schedules
    (ADM_NIGHTLY_CRON, ADM_FULL_REFRESH_CRON) on each plan, from its sizes in the warehouse; warn when the
    configured plan's month would pass ADM_QUOTA_MAX_SHARE of its quota. Calls no service."""

    from pipelines.budget import BudgetTerms, project_month
    from pipelines.cli_support import settings_or_exit, tenants_or_exit
    from pipelines.console import budget_table
    from pipelines.settings import NO_TENANT
    from warehouse.reads import tenant_sizes

    settings = settings_or_exit(warehouse)
    tenants = tenants_or_exit(settings, tenant)
    if not tenants:
        typer.echo(f"error: {NO_TENANT}", err=True)
        raise typer.Exit(2)
    console = line_console()
    for tenant_id in tenants:
        sizes = tenant_sizes(settings.warehouse, tenant_id, wait_s=settings.lock_wait_s)
        if sizes is None or not any(sizes.records.values()):
            console.print(f"tenant {tenant_id}: nothing committed in {escape(str(settings.warehouse))} yet")
            continue
        terms = BudgetTerms.of(settings, tenant_id)
        budget_table(console, settings.tenant_label(tenant_id), project_month(sizes, terms))


@app.command("tenant-label")
def tenant_label(
    tenant: Annotated[str, typer.Argument(help="The tenant's id.")],
    label: Annotated[str, typer.Argument(help="What to call it, e.g. 'Acme EU'.")],
    warehouse: Annotated[Path | None, typer.Option(help="DuckDB file; default ADM_WAREHOUSE.")] = None,
) -> None:
    """Name a tenant (the service gives tenants no name): v_sync_status shows the label beside its id. The
    copy for readers is published again at once."""
    from pipelines.cli_support import settings_or_exit
    from warehouse.commit import writing
    from warehouse.publish import try_publish
    from warehouse.tenants import TenantLabelError, set_label

    settings = settings_or_exit(warehouse)
    try:
        with writing(settings.warehouse, "tenant-label", settings.lock_wait_s) as con:
            key = set_label(con, tenant, label)
            published = try_publish(con, settings.publish_target, "tenant-label")
    except TenantLabelError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"tenant {key} is labelled {label.strip()!r}")
    if published.error:
        typer.echo(f"warning: {published.error}", err=True)
