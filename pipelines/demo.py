"""The demo layer: the only product module that imports the emulator.

`authority-sync demo` and `authority-sync emulator` start the emulator through here, and the settings of
a demo run point at it with the emulator's public demo tenant and token. Nothing else imports this module
at the top of a file, so a sync, the Dagster code location and the client never load the emulator (a test
walks the imports)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from emulator.scale import DEMO_ACCESS_KEY, DEMO_TENANT_ID, DEMO_TOKEN, Scale
from pipelines.demo_defaults import DEMO_WAREHOUSE, EMULATOR_HOST, EMULATOR_PORT
from pipelines.settings import UNLIMITED_RATE, SyncSettings

if TYPE_CHECKING:
    from emulator.server import EmulatorServer

DEMO_CHANGES = {
    "decisionsUpdated": 8,
    "decisionsInserted": 2,
    "delegationsUpdated": 4,
    "usersUpdated": 3,
    "documentRevisions": 2,
}
"""About 1% of the demo tenant's records, changed between the demo's two syncs."""


@contextmanager
def embedded_emulator() -> Iterator[EmulatorServer]:
    """A seeded emulator served on a free loopback port for the duration of the block."""
    # Imported here: the server (FastAPI, uvicorn) costs a command that never starts it half a second.
    from emulator.server import EmulatorServer

    with EmulatorServer() as server:
        yield server


def demo_settings(settings: SyncSettings, base_url: str) -> SyncSettings:
    """``settings`` pointed at an emulator at ``base_url`` serving the demo tenant (its public,
    emulator-only token), at no rate limit unless one is set."""
    return settings.model_copy(
        update={
            "base_url": base_url,
            "environment": None,
            "token": SecretStr(DEMO_TOKEN),
            "access_key": None,
            "tenants": settings.tenants or [DEMO_TENANT_ID],
            "rate_per_minute": settings.rate_per_minute or UNLIMITED_RATE,
        }
    )


def serve_emulator(
    host: str,
    port: int,
    log_level: str,
    *,
    seed: int,
    identity: dict[str, str | None],
    counts: dict[str, int | None],
    faults: dict[str, Any],
) -> None:
    """Serve the emulator until stopped; ``identity`` (tenant_id, token, access_key) and ``counts`` (records
    of the demo tenant) fall back to the demo's where None."""
    from emulator.faults import FaultConfig
    from emulator.server import serve
    from emulator.service import EmulatorOptions

    scale = Scale(**{kind: count for kind, count in counts.items() if count is not None})
    tenant_id = identity["tenant_id"] or DEMO_TENANT_ID
    options = EmulatorOptions(
        seed=seed,
        scale=scale,
        tenant_id=tenant_id,
        token=identity["token"] or DEMO_TOKEN,
        access_key=identity["access_key"] or DEMO_ACCESS_KEY,
        faults=FaultConfig(**faults),
    )
    print(
        f"emulator: http://{host}:{port}  tenant {tenant_id}  (its token and access key: docs/emulator.md)",
        file=sys.stderr,
    )
    serve(options, host, port, log_level)


DEMO_EMULATOR_URL = f"http://{EMULATOR_HOST}:{EMULATOR_PORT}"


def demo_environment(base_url: str = DEMO_EMULATOR_URL) -> dict[str, str]:
    """The ``ADM_*`` variables of a sync of the demo tenant on an emulator at ``base_url`` into the demo's
    own files (``make dagster`` with no service configured)."""
    return {
        "ADM_BASE_URL": base_url,
        "ADM_TENANT_ID": DEMO_TENANT_ID,
        "ADM_TOKEN": DEMO_TOKEN,
        "ADM_WAREHOUSE": str(DEMO_WAREHOUSE),
        "ADM_RATE_PER_MINUTE": str(int(UNLIMITED_RATE)),
    }


if __name__ == "__main__":
    # `eval "$(python -m pipelines.demo)"`: the demo's variables as shell exports.
    print(" ".join(f"export {name}={shlex.quote(value)};" for name, value in demo_environment().items()))
