"""The ``authority-sync`` command line."""

from __future__ import annotations

from typing import Annotated

import typer

from emulator.faults import FaultConfig
from emulator.scale import DEMO_ACCESS_KEY, DEMO_TENANT_ID, DEMO_TOKEN, Scale

app = typer.Typer(
    no_args_is_help=True, help="authority-sync: sync the Authority Delegation Management Service."
)


@app.callback()
def main() -> None:
    """Nightly extract, HR reverse sync and a local service emulator. Secrets are never printed."""


@app.command()
def emulator(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    seed: Annotated[int, typer.Option(help="Seed of the generated tenants (same seed, same records).")] = 42,
    token: Annotated[str, typer.Option(help="Bearer token of the demo tenant.")] = DEMO_TOKEN,
    tenant_id: Annotated[str, typer.Option(help="Id of the demo tenant.")] = DEMO_TENANT_ID,
    access_key: Annotated[str, typer.Option(help="Access key the exchange accepts for the demo tenant.")] = (
        DEMO_ACCESS_KEY
    ),
    users: Annotated[int, typer.Option(help="Users of the demo tenant.")] = Scale.users,
    decisions: Annotated[int, typer.Option(help="Decisions of the demo tenant.")] = Scale.decisions,
    delegations: Annotated[int, typer.Option(help="Delegations of the demo tenant.")] = Scale.delegations,
    documents: Annotated[int, typer.Option(help="Documents of the demo tenant.")] = Scale.documents,
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
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the service emulator (E1-E14, access-key exchange, list extensions, /_admin)."""
    from emulator.server import serve
    from emulator.service import EmulatorOptions

    faults = FaultConfig(
        latency_ms=latency_ms,
        jitter_ms=jitter_ms,
        error_rate=error_rate,
        drop_rate=drop_rate,
        malformed_rate=malformed_rate,
        rate_limit_per_minute=rate_limit,
        rate_burst=rate_burst,
        drift_every=drift_every,
    )
    scale = Scale(users=users, decisions=decisions, delegations=delegations, documents=documents)
    options = EmulatorOptions(
        seed=seed, scale=scale, tenant_id=tenant_id, token=token, access_key=access_key, faults=faults
    )
    typer.echo(
        f"emulator: http://{host}:{port}  tenant {tenant_id}  (token and access key: see --help)", err=True
    )
    serve(options, host, port, log_level)
