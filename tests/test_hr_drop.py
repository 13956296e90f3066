"""The HR drop folders as an unattended HR system uses them, over real HTTP and a real warehouse: a file
is taken only once complete, each folder has its own tenant, mapping and date formats, workbooks and
names in any case are picked up, and files end in processed/ or failed/."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import dagster as dg
import xlsxwriter

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from pipelines.clients import AdmClientResource
from pipelines.hr.dagster import FOLDER_TAG, hr_drop_folder
from pipelines.hr.demo_export import USER_EXTRA, USER_FIELDS_ORDER
from pipelines.hr.mapping import SAMPLES
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import PlanRequest, plan_upload
from pipelines.location import sync_definitions
from pipelines.runner import run_tenant
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
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


class Kept(logging.Handler):
    """Keeps the records a sensor tick logs."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Folder:
    """The drop-folder sensor over ``root`` with one Dagster instance: ticks, and the runs it asks for
    executed in process against the test's emulator and warehouse."""

    def __init__(self, root: Path, adm: AdmClientResource, store: WarehouseResource) -> None:
        self.root, self.adm, self.store = root, adm, store
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor: str | None = None
        self.logs: list[logging.LogRecord] = []

    def tick(self) -> list[dg.RunRequest]:
        """One sensor evaluation (its log records kept in ``logs``); the run requests it made."""
        context = drop_sensor_context(self.root, self.instance, self.cursor)
        kept = Kept(self.logs)
        context.log.addHandler(kept)
        try:
            result = hr_drop_folder(context)
        finally:
            context.log.removeHandler(kept)
        assert isinstance(result, dg.SensorResult)
        self.cursor = result.cursor
        return list(result.run_requests or [])

    def errors(self) -> list[str]:
        """The error messages the sensor logged so far."""
        return [record.getMessage() for record in self.logs if record.levelno >= logging.ERROR]

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


def test_a_broken_folder_setting_fails_its_folder_alone_at_every_tick(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "hr-folder.toml").write_text('tenant = "typo"\n')
    write_users(tmp_path / "acme" / "users.csv", promotion())
    write_users(tmp_path / "users.csv", promotion())
    drops = Folder(tmp_path, adm, hr_store)
    (request,) = drops.tick() + drops.tick()  # the root's file goes on
    assert request.tags[FOLDER_TAG] == "."
    errors = drops.errors()
    assert len(errors) == 2 and all("acme/hr-folder.toml" in error and "tenant" in error for error in errors)


def test_a_folder_naming_an_unconfigured_tenant_says_so_and_takes_nothing(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    (tmp_path / "globex").mkdir()
    (tmp_path / "globex" / "hr-folder.toml").write_text(
        'tenant_id = "1d2e3f40-0000-4000-8000-000000000000"\n'
    )
    write_users(tmp_path / "globex" / "users.csv", promotion())
    drops = Folder(tmp_path, adm, hr_store)
    policy = HrPolicyResource(SyncSettings(hr_drop_dir=tmp_path, tenants=f"acme={DEMO_TENANT_ID}"))
    context = dg.build_sensor_context(
        instance=drops.instance,
        resources={"hr_policy": policy, "adm": AdmClientResource(policy.settings)},
    )
    kept = Kept(drops.logs)
    context.log.addHandler(kept)
    result = hr_drop_folder(context)
    assert isinstance(result, dg.SensorResult) and not result.run_requests
    (error,) = drops.errors()
    assert "1d2e3f40-0000-4000-8000-000000000000" in error and "is not configured" in error


def test_two_files_of_one_tenant_in_one_tick_take_turns(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    rows = promotion()
    write_users(inbox / "first.csv", rows)
    later = promotion()
    row_of(later, "E100011")["positions"] = (
        "Buyer" if row_of(later, "E100011")["positions"] != "Buyer" else "Controller"
    )
    write_users(inbox / "second.csv", [row_of(later, "E100011")])
    drops = Folder(inbox, adm, hr_store)
    (first,) = drops.settle()  # one run, not two: the second file waits for it and its refresh
    assert first.success and writes(server) == {f"user:{user_id('E100010')}": 1}
    assert drops.run(drops.tick()) == []
    refreshed = run_tenant(
        sync_definitions(SETTINGS, {"adm": adm, "warehouse": hr_store}), DEMO_TENANT_ID, drops.instance
    )
    assert refreshed.success
    (second,) = drops.run(drops.tick())
    assert second.success, second.all_events
    assert writes(server) == {f"user:{user_id('E100010')}": 1, f"user:{user_id('E100011')}": 1}


def test_a_utf16_file_with_a_totals_row_is_taken_and_applied(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    folder = tmp_path / "inbox" / "sap"
    folder.mkdir(parents=True)
    (folder / "hr-folder.toml").write_text(f'tenant_id = "{DEMO_TENANT_ID}"\nencoding = "utf-16"\n')
    rows = promotion()
    lines = write_users(tmp_path / "users.csv", rows).read_text(encoding="utf-8-sig").splitlines()
    total = f"Total: {len(rows)} workers"
    (folder / "users.csv").write_text("\n".join([*lines, total]) + "\n", encoding="utf-16")
    assert (folder / "users.csv").read_bytes()[-2:] == b"\n\0"  # its last byte is no line break
    drops = Folder(tmp_path / "inbox", adm, hr_store)
    (result,) = drops.settle()
    assert result.success, result.all_events
    planned = next(
        event for event in result.all_events if event.step_key == "hr_plan" and event.is_successful_output
    )
    assert total in str(planned.step_output_data.metadata["notes"])
    assert writes(server) == {f"user:{user_id('E100010')}": 1}


def test_a_folder_sets_trust_in_its_dates_order(tmp_path: Path) -> None:
    folder = tmp_path / "sap"
    folder.mkdir()
    (folder / "hr-folder.toml").write_text('date_formats = ["%d/%m/%Y"]\ntrust_date_order = true\n')
    write_users(folder / "users.csv", promotion())
    instance = dg.DagsterInstance.ephemeral()
    first = hr_drop_folder(drop_sensor_context(tmp_path, instance))
    assert isinstance(first, dg.SensorResult)
    result = hr_drop_folder(drop_sensor_context(tmp_path, instance, first.cursor))
    assert isinstance(result, dg.SensorResult)
    (request,) = result.run_requests or []
    config = request.run_config["ops"]["hr_plan"]["config"]
    assert config["trust_date_order"] is True and config["date_formats"] == ["%d/%m/%Y"]


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
