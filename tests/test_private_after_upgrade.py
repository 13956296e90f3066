"""What an earlier release left readable (it followed the umask: 0644 files, 0755 folders) is private again
after `warehouse upgrade` and after any sync: 0600 files, 0700 folders."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import app
from tests.standin import StandIn
from tests.sync_support import sync_standin
from tests.test_sync_quirks import decision, tenant


def loosen(folder: Path) -> None:
    """What the first release left under umask 022."""
    for item in [folder / "staging", folder / "ratelimit", *folder.rglob("*")]:
        item.chmod(0o755 if item.is_dir() else 0o644)


def modes(folder: Path) -> dict[str, int]:
    return {str(item.relative_to(folder)): item.stat().st_mode & 0o777 for item in folder.rglob("*")}


def test_an_upgrade_and_a_sync_make_what_they_own_private_again(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    warehouse = folder / "warehouse.duckdb"
    (folder / "staging" / "leftover").mkdir(parents=True)
    (folder / "staging" / "leftover" / "part.parquet").write_bytes(b"personal data")
    with StandIn(tenant(decisions=[decision(1)])) as standin:
        sync_standin(standin, warehouse)
        loosen(folder)
        upgraded = CliRunner().invoke(app, ["warehouse", "upgrade", "--warehouse", str(warehouse)])
        assert upgraded.exit_code == 0, upgraded.output
        after_upgrade = modes(folder)
        loosen(folder)
        sync_standin(standin, warehouse)
    after_sync = modes(folder)

    for after in (after_upgrade, after_sync):
        assert {name: mode for name, mode in after.items() if mode not in (0o600, 0o700)} == {}
        assert after["staging"] == 0o700 and after["warehouse.duckdb"] == 0o600
    assert after_upgrade["staging/leftover/part.parquet"] == 0o600
    assert after_upgrade["warehouse.duckdb.before-upgrade"] == 0o600
