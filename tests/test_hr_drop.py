"""The HR drop folders as an unattended HR system uses them, over real HTTP and a real warehouse: a file
is taken only once complete, each folder has its own tenant, mapping and date formats, workbooks and
names in any case are picked up, and files end in processed/ or failed/."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import xlsxwriter

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from pipelines.hr.dagster import hr_drop_folder
from pipelines.hr.demo_export import USER_EXTRA, USER_FIELDS_ORDER
from pipelines.hr.mapping import SAMPLES
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import PlanRequest, plan_upload
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.warehouse_resource import WarehouseResource
from resources.dagster_resource import AdmClientResource
from tests.test_hr_safety import rows_before_leaving
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    drop_sensor_context,
    hr_sync,
    plan,
    row_of,
    step_failure,
    user_id,
    user_rows,
    write_users,
    writes,
)

pytest_plugins = ["tests.test_hr_support"]


class Folder:
    """The drop-folder sensor over ``root`` with one Dagster instance: ticks, and the runs it asks for
    executed in process against the test's emulator and warehouse."""

    def __init__(self, root: Path, adm: AdmClientResource, store: WarehouseResource) -> None:
        self.root, self.adm, self.store = root, adm, store
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor: str | None = None

    def tick(self) -> list[dg.RunRequest]:
        """One sensor evaluation; the run requests it made."""
        result = hr_drop_folder(drop_sensor_context(self.root, self.instance, self.cursor))
        assert isinstance(result, dg.SensorResult)
        self.cursor = result.cursor
        return list(result.run_requests or [])

    def run(self, requests: list[dg.RunRequest]) -> list[dg.ExecuteInProcessResult]:
        """Execute requested runs as the daemon would launch them (tags included)."""
        return [
            hr_sync.execute_in_process(
                run_config=request.run_config,
                resources={"adm": self.adm, "warehouse": self.store, "hr_policy": HrPolicyResource()},
                instance=self.instance,
                tags={**request.tags, "dagster/run_key": str(request.run_key)},
                raise_on_error=False,
            )
            for request in requests
        ]

    def settle(self) -> list[dg.ExecuteInProcessResult]:
        """Two ticks (a file must stay the same over two), running whatever they ask for."""
        return self.run(self.tick() + self.tick())


def promotion() -> list[dict[str, str]]:
    """Seeded rows in which E100010 gets another job title, ending with a row of two roles or more."""
    rows = user_rows()
    title = "Buyer" if row_of(rows, "E100010")["positions"] != "Buyer" else "Controller"
    row_of(rows, "E100010")["positions"] = title
    last = next(row for row in rows if ";" in row["roles"] and row["employee_id"] != "E100010")
    return [row_of(rows, "E100010"), row_of(rows, "E100011"), last]


def test_a_file_cut_short_mid_row_is_never_planned_however_long_its_writer_pauses(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = promotion()
    full = write_users(tmp_path / "full.csv", rows).read_bytes()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    drop = inbox / "users.csv"
    # The writer stopped inside the last row's roles ("Approver;Vie"): planned, it would remove a role.
    roles = rows[-1]["roles"].encode()
    drop.write_bytes(full[: full.rindex(roles) + roles.index(b";") + 4])
    folder = Folder(inbox, adm, hr_store)
    assert folder.settle() + folder.settle() == []
    assert writes(server) == {}
    drop.write_bytes(full)  # the writer finishes
    (result,) = folder.settle()
    assert result.success and writes(server) == {f"user:{user_id('E100010')}": 1}


def test_a_second_dropped_file_waits_for_the_refresh_after_the_first_apply_then_applies(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    write_users(inbox / "first.csv", promotion())
    drops = Folder(inbox, adm, hr_store)
    (first,) = drops.settle()
    assert first.success and writes(server) == {f"user:{user_id('E100010')}": 1}
    rows = promotion()
    row_of(rows, "E100011")["positions"] = (
        "Buyer" if row_of(rows, "E100011")["positions"] != "Buyer" else "Controller"
    )
    write_users(inbox / "second.csv", rows)
    # Planned now, it would be refused as stale (the warehouse does not show the first apply): it waits.
    assert drops.settle() == []
    refreshed = run_tenant(
        sync_definitions(SETTINGS, {"adm": adm, "warehouse": hr_store}), DEMO_TENANT_ID, drops.instance
    )
    assert refreshed.success  # the tenant's sync, as the refresh sensor starts it
    (second,) = drops.run(drops.tick())  # the file is stable already: the next tick takes it
    assert second.success, second.all_events
    assert writes(server) == {f"user:{user_id('E100010')}": 1, f"user:{user_id('E100011')}": 1}


def test_each_folder_has_its_tenant_mapping_and_date_formats_and_takes_workbooks_in_any_case(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    root = tmp_path / "inbox"
    folder = root / "acme-workday"
    folder.mkdir(parents=True)
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    (folder / "workday.toml").write_text(
        mapping.replace('date_formats = ["%Y-%m-%d"]', 'date_formats = ["%d.%m.%Y"]')
    )
    (folder / "hr-folder.toml").write_text(f'tenant_id = "{DEMO_TENANT_ID}"\nmapping = "workday.toml"\n')
    rows = promotion()
    header = [MAPPING.users.columns[name] for name in USER_FIELDS_ORDER] + [USER_EXTRA]
    workbook = xlsxwriter.Workbook(str(folder / "USERS.XLSX"))
    sheet = workbook.add_worksheet()
    sheet.write_row(0, 0, header)
    for number, row in enumerate(rows, start=1):
        # Dates as German text: the folder's mapping reads them; the workbook's text cells stay text.
        day = row["start_date"].split("-")
        row["start_date"] = f"{day[2]}.{day[1]}.{day[0]}"
        for column, name in enumerate((*USER_FIELDS_ORDER, USER_EXTRA)):
            sheet.write_string(number, column, row.get(name, ""))
    workbook.close()

    drops = Folder(root, adm, hr_store)
    (result,) = drops.settle()
    run_config: Any = result.dagster_run.run_config
    config = run_config["ops"]["hr_plan"]["config"]
    assert (config["tenant_id"], Path(config["mapping"]).name) == (DEMO_TENANT_ID, "workday.toml")
    assert result.success, result.all_events
    assert writes(server) == {f"user:{user_id('E100010')}": 1}
    assert drops.tick() == []  # its run ended: filed away
    (done,) = (folder / "processed").iterdir()
    assert done.name.endswith("-USERS.XLSX") and not (folder / "USERS.XLSX").exists()


def test_a_rejected_file_goes_to_failed_beside_its_error_report(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()[:30]
    rows[0]["email"] = "not an email"
    inbox = tmp_path / "inbox"
    write_users(inbox / "users.csv", rows)
    drops = Folder(inbox, adm, hr_store)
    (result,) = drops.settle()
    assert not result.success
    assert drops.tick() == []
    names = sorted(path.name for path in (inbox / "failed").iterdir())
    assert names[0].endswith("-users.csv") and names[1] == "users.errors.csv"
    assert (inbox / "failed" / "users.errors.csv").stat().st_mode & 0o777 == 0o600


def test_a_broken_folder_setting_is_a_sensor_error_not_a_silent_skip(tmp_path: Path) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "hr-folder.toml").write_text('tenant = "typo"\n')
    with pytest.raises(dg.Failure, match=r"hr-folder\.toml"):
        hr_drop_folder(drop_sensor_context(tmp_path, dg.DagsterInstance.ephemeral()))
    shutil.rmtree(tmp_path / "acme")


def test_an_export_older_than_the_services_changes_does_not_put_them_back_unattended(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    # 14 terminations (within the threshold of 25), then last week's export taken before them, dropped
    # with its modification time kept.
    earlier = rows_before_leaving(hr_store, adm, tmp_path / "terminations.csv", 14)
    written = writes(server)
    old = write_users(tmp_path / "inbox" / "export.csv", earlier)
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))

    (result,) = Folder(tmp_path / "inbox", adm, hr_store).settle()
    assert step_failure(result) == ("hr_plan", "every row of the upload is invalid (14); nothing was planned")
    assert writes(server) == written  # nobody reactivated
    report = (tmp_path / "inbox" / "failed" / "export.errors.csv").read_text(encoding="utf-8-sig")
    assert report.count("[stale_row] exported") == 14


def test_an_export_older_than_allowed_is_refused_unless_allowed(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    path = write_users(tmp_path / "users.csv", promotion())
    month_ago = time.time() - 30 * 86_400
    os.utime(path, (month_ago, month_ago))
    refused = plan(hr_store, path)
    (problem,) = refused.validation.problems
    assert refused.plan is None and (problem.rule, problem.line) == ("stale_export", 0)
    assert "the file's modification time), 30 days ago" in problem.message
    request = PlanRequest((path,), DEMO_TENANT_ID, MAPPING, allow_old_export=True)
    allowed = plan_upload(hr_store, request)
    assert allowed.plan is not None and allowed.plan.counts == {"position": 1}
