"""The analysts' side of the copy (issue 21): how fresh it is and what its tenants are called, pandas and the
``sql`` command in the project's own environment, the example notebook, and types every reader takes. Real
syncs of the small emulator over loopback HTTP (a first run read whole, a change, a nightly run) publish
one copy that the whole module reads."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from emulator.server import EmulatorServer
from pipelines.analytics import NoPublishedCopyError, connect
from pipelines.cli import app
from pipelines.settings import SyncSettings
from pipelines.tenant_runs import TenantRun
from tests.conftest import DEMO_TENANT_ID, copy_of, shared_http
from tests.sync_support import ROOT, only_run, query, settings_for, sync
from warehouse import dictionary
from warehouse.examples import EXAMPLES
from warehouse.migrate import migrate

pytestmark = pytest.mark.xdist_group("test_analytics")  # its module fixture syncs: once, on one worker

NOTEBOOK = ROOT / "docs" / "notebooks" / "as_of.ipynb"


@dataclass(frozen=True)
class Synced:
    """The module's warehouse, its published copy and the two runs that made them."""

    settings: SyncSettings
    full: TenantRun
    nightly: TenantRun

    @property
    def copy(self) -> Path:
        """The copy published for readers."""
        return self.settings.publish_file


@pytest.fixture(scope="module")
def synced(
    small_emulator_server: EmulatorServer, synced_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Synced]:
    """A first run of the demo tenant, which reads every list whole (a copy of the synced template), some
    changes in the service, then a nightly run."""
    server = small_emulator_server
    server.emulator.reset()
    warehouse = copy_of(synced_template, tmp_path_factory.mktemp("analytics") / "wh.duckdb")
    settings = settings_for(server, warehouse)
    full = TenantRun(DEMO_TENANT_ID, only_run(warehouse)[0], success=True, error=None)
    changes = {"decisionsUpdated": 2, "usersUpdated": 2}
    shared_http().post(f"{server.base_url}/_admin/mutate", json=changes).raise_for_status()
    yield Synced(settings, full, sync(settings))
    server.emulator.reset()


@pytest.fixture
def reader_env(synced: Synced, monkeypatch: pytest.MonkeyPatch) -> Synced:
    """``ADM_WAREHOUSE`` names the module's warehouse, as an analyst's environment would."""
    monkeypatch.setenv("ADM_WAREHOUSE", str(synced.settings.warehouse))
    monkeypatch.delenv("ADM_PUBLISH_PATH", raising=False)
    return synced


STATUS = (
    "SELECT tenant_label, last_commit_run_id, last_commit_mode, last_full_refresh_run_id, last_run_status, "
    "api_calls_this_month FROM v_sync_status WHERE tenant_id = ?"
)


def test_sync_status_names_the_last_full_refresh_and_a_tenants_label(synced: Synced) -> None:
    calls = query(
        synced.copy, "SELECT sum(api_calls_total) FROM sync_runs WHERE tenant_id = ?", [DEMO_TENANT_ID]
    )
    status = query(synced.copy, STATUS, [DEMO_TENANT_ID])
    assert status == [
        (DEMO_TENANT_ID, synced.nightly.run_id, "incremental", synced.full.run_id, "succeeded", calls[0][0])
    ]
    assert query(synced.copy, "SELECT last_full_refresh_at FROM v_sync_status") == query(
        synced.copy, "SELECT finished_at FROM sync_runs WHERE run_id = ?", [synced.full.run_id]
    )

    runner = CliRunner()
    warehouse = str(synced.settings.warehouse)
    labelled = runner.invoke(
        app, ["tenant-label", DEMO_TENANT_ID.upper(), " Acme Demo ", "--warehouse", warehouse]
    )
    refused = runner.invoke(app, ["tenant-label", "acme", "Acme", "--warehouse", warehouse])

    assert labelled.exit_code == 0, labelled.output
    assert labelled.output == f"tenant {DEMO_TENANT_ID} is labelled 'Acme Demo'\n"
    # The copy is published again at once: readers see the label without waiting for a sync.
    assert query(synced.copy, STATUS, [DEMO_TENANT_ID])[0][0] == "Acme Demo"
    assert (refused.exit_code, refused.output) == (2, "error: 'acme' is not a tenant id (a UUID)\n")


def test_each_example_query_answers(synced: Synced) -> None:
    """The examples `make demo` prints and the guide points to (after a change, so v_changes has rows)."""
    for title, sql in EXAMPLES.items():
        assert query(synced.copy, sql), title


def test_df_and_fetchall_read_instants_and_counts_in_the_projects_environment(reader_env: Synced) -> None:
    with connect() as con:
        users = con.sql("SELECT id, valid_from, start_date FROM users_as_of(now())").df()
        budget = con.sql("SELECT api_calls FROM v_api_budget").df()
        instant = con.execute("SELECT max(valid_from) FROM users_history").fetchall()[0][0]

    assert len(users) == query(reader_env.copy, "SELECT count(*) FROM users")[0][0]
    assert str(users["valid_from"].dtype).startswith("datetime64") and "UTC" in str(users["valid_from"].dtype)
    assert str(budget["api_calls"].dtype) == "int64"
    assert isinstance(instant, datetime) and instant.utcoffset() is not None


def test_connect_refuses_when_nothing_was_published(tmp_path: Path) -> None:
    with pytest.raises(NoPublishedCopyError, match="a sync publishes it"):
        connect(tmp_path / "nothing.duckdb")


def test_sql_prints_a_query_as_csv_json_or_a_table(synced: Synced) -> None:
    runner = CliRunner()
    sql = (
        "SELECT tenant_id, last_commit_at, api_calls_this_month, [1, 2] AS pair, NULL AS nothing "
        "FROM v_sync_status"
    )

    def run(*options: str) -> Any:
        result = runner.invoke(app, ["sql", sql, "--copy", str(synced.copy), *options])
        assert result.exit_code == 0, result.output
        return result.output

    committed, calls = query(synced.copy, "SELECT last_commit_at, api_calls_this_month FROM v_sync_status")[0]
    as_csv = list(csv.reader(io.StringIO(run("--format", "csv"))))
    as_json = json.loads(run("--format", "json"))
    as_table = run()
    broken = runner.invoke(app, ["sql", "SELECT nope", "--copy", str(synced.copy)])
    piped = runner.invoke(
        app, ["sql", "-", "--copy", str(synced.copy), "--format", "json"], input="SELECT 1 AS one"
    )

    assert as_csv == [
        ["tenant_id", "last_commit_at", "api_calls_this_month", "pair", "nothing"],
        [DEMO_TENANT_ID, committed.isoformat(), str(calls), "[1, 2]", ""],
    ]
    assert as_json == [
        {
            "tenant_id": DEMO_TENANT_ID,
            "last_commit_at": committed.isoformat(),
            "api_calls_this_month": calls,
            "pair": [1, 2],
            "nothing": None,
        }
    ]
    assert "api_calls_this_month" in as_table and DEMO_TENANT_ID[:8] in as_table
    assert broken.exit_code == 1 and broken.output.startswith("error: Binder Error")
    assert json.loads(piped.output) == [{"one": 1}]


def run_notebook(path: Path) -> dict[str, Any]:
    """Run a notebook's code cells in order in one namespace, as a kernel would (Jupyter itself is not a
    dependency: the file is nbformat 4 JSON); returns the namespace."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    namespace: dict[str, Any] = {}
    for number, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            code = compile("".join(cell["source"]), f"{path.name} cell {number}", "exec")
            exec(code, namespace)  # noqa: S102 - the repository's own notebook
    return namespace


def test_the_example_notebook_answers_its_questions_in_the_projects_environment(reader_env: Synced) -> None:
    answers = run_notebook(NOTEBOOK)
    # The notebook's own connection: DuckDB refuses a second one to the same file with other settings.
    con, moment = answers["con"], answers["moment"]

    first = con.execute("SELECT finished_at FROM sync_runs WHERE run_id = ?", [reader_env.full.run_id])
    assert moment == first.fetchall()[0][0]
    groups = con.execute(
        "SELECT group_id FROM user_groups_as_of(?) WHERE user_id = ? ORDER BY ALL",
        [moment, answers["user_id"]],
    ).fetchall()
    assert sorted(answers["groups_then"]["group_id"]) == [group for (group,) in groups]
    assert len(answers["limits_then"]) > 0 and len(answers["approvers_then"]) > 0
    assert set(answers["approvers_then"]["decision_name"]) == {answers["approvers_then"]["decision_name"][0]}
    con.close()


def test_no_column_a_reader_gets_is_a_128_bit_integer() -> None:
    """pandas reads a HUGEINT as float64 and Polars as a 38-digit decimal: every count is a BIGINT, in every
    table, view and table macro. The one exception is declared, not summed: ``limit_number``, an amount held
    exactly as DECIMAL(38,6) (issue 28), with its JSON text beside it."""
    relations = dictionary.load(dictionary.source_text())
    with duckdb.connect() as con:
        migrate(con)
        live = dictionary.live_schema(con, dictionary.calls(relations))
    wide = [
        f"{name}.{column.name} {column.data_type}"
        for name, relation in live.items()
        for column in relation.columns
        if "HUGEINT" in column.data_type
        or (column.data_type.startswith("DECIMAL(38") and column.name != "limit_number")
    ]
    assert not wide


GUIDE = ROOT / "docs" / "analysts.md"
T, X = "TIMESTAMPTZ '2026-03-01 00:00:00+00'", "'Approve capital spend'"
"""The instant and the decision the guide's examples ask about."""
WEEK_AGO = "now() - INTERVAL 7 DAY"
"""The other instant they ask about."""


def guide_sql(marker: str | None = None) -> list[str]:
    """The guide's SQL blocks, or the one after ``<!-- marker -->``."""
    text = GUIDE.read_text(encoding="utf-8")
    if marker is not None:
        text = text.split(f"<!-- {marker} -->", 1)[1]
    blocks = [block.split("```", 1)[0] for block in text.split("```sql\n")[1:]]
    return blocks[:1] if marker is not None else blocks


def test_who_could_approve_x_as_of_t_takes_4_lines_instead_of_31_and_gives_the_same_rows(
    synced: Synced,
) -> None:
    (before,), (after,) = guide_sql("who-could-approve: before"), guide_sql("who-could-approve: after")
    moment = query(synced.copy, "SELECT finished_at FROM sync_runs WHERE run_id = ?", [synced.full.run_id])[
        0
    ][0]
    (decision,) = query(
        synced.copy,
        "SELECT min(decision_name) FROM user_authorities_as_of(?) WHERE user_can_act",
        [moment],
    )[0]

    def asked(sql: str) -> list[tuple[Any, ...]]:
        literal = "'" + decision.replace("'", "''") + "'"
        return query(synced.copy, sql.replace(T, f"TIMESTAMPTZ '{moment.isoformat()}'").replace(X, literal))

    assert asked(after) and asked(before) == asked(after)
    assert (len(before.strip().splitlines()), len(after.strip().splitlines())) == (31, 4)


def test_every_query_of_the_guide_runs_on_the_copy(synced: Synced) -> None:
    """Its instants (a fixed date, a week ago) moved into the copy's history, which starts at the module's
    first sync: an instant before it is refused (tests/test_analyst_truth.py)."""
    (moment,) = query(
        synced.copy, "SELECT finished_at FROM sync_runs WHERE run_id = ?", [synced.full.run_id]
    )[0]
    inside = f"TIMESTAMPTZ '{moment.isoformat()}'"
    with duckdb.connect(str(synced.copy), read_only=True) as con:
        for block in guide_sql():
            for statement in block.split(";"):
                if any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines()):
                    con.execute(statement.replace(T, inside).replace(WEEK_AGO, inside)).fetchall()


INSTANT = "SELECT TIMESTAMPTZ '2020-01-01 00:00:00+00' AS at"


def _sql_in(zone: str, copy: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``authority-sync sql INSTANT --format csv`` on ``copy``, in a process whose time zone is ``zone``."""
    command = [str(Path(sys.executable).with_name("authority-sync")), *options, "sql", INSTANT]
    return subprocess.run(
        [*command, "--format", "csv", "--copy", str(copy)],
        env={"PATH": os.environ["PATH"], "TZ": zone},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("zone", "shown"),
    [
        ("Asia/Tokyo", "2020-01-01T09:00:00+09:00"),  # the reader's own zone
        ("JST", "2020-01-01T00:00:00+00:00"),  # an alias pytz lacks: UTC, said (before: a traceback)
        ("GMT+3", "2020-01-01T00:00:00+00:00"),
    ],
)
def test_a_reader_sees_instants_in_their_zone_or_in_utc_where_python_cannot_convert_to_it(
    zone: str, shown: str, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.duckdb"
    duckdb.connect(str(copy)).close()
    plain, verbose = _sql_in(zone, copy), _sql_in(zone, copy, "--verbose")
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, f"at\n{shown}\n", "")
    assert verbose.stdout == plain.stdout
    said = "instants are shown in UTC: Python cannot convert them to this process's time zone"
    assert (said in verbose.stderr) == shown.endswith("+00:00"), verbose.stderr
