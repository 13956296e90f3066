"""What a person running ``hr apply`` is shown when the service fails a write, over real HTTP against the
emulator and a real warehouse: the service's answer per entity left unwritten, what was written, and how
to resume (following it finishes the plan)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.server import EmulatorServer
from pipelines.warehouse_resource import WarehouseResource
from tests.test_hr_cli import hr, service_env
from tests.test_hr_support import faults, half_applicable_plan, writes

pytest_plugins = ["tests.test_hr_support"]
__all__ = ["service_env"]  # the CLI tests' fixture, used here


def test_a_503_during_hr_apply_shows_the_answer_what_was_written_and_how_to_resume(
    service_env: Path,
    hr_store: WarehouseResource,
    server: EmulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # lines unwrapped
    made = half_applicable_plan(hr_store, server, tmp_path)
    apply = ("apply", made.plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    code, output = hr(*apply)
    assert code == 1, output
    assert f"Plan {made.plan_id}: incomplete" in output and "applied 1, planned 1" in output
    # The entity the service refused (either: writes of one level run concurrently), with its answer.
    unwritten = r"E1000(10|12) \(planned\): read back: not applied \(the service answered 503: "
    assert len(re.findall(unwritten, output)) == 1, output
    resume = f"`authority-sync hr apply {made.plan_id}` again resumes from its journal"
    assert "the plan's entities are now applied 1, planned 1" in output and resume in output
    assert sum(writes(server).values()) == 1
    faults(server)
    code, output = hr(*apply)
    assert code == 0 and f"Plan {made.plan_id}: applied" in output and "applied 2" in output, output
    assert sum(writes(server).values()) == 2
