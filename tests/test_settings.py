"""The one settings object: defaults, per-tenant credentials, quotas, and a refused value in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.bindings import resources
from pipelines.cli import app
from pipelines.location import sync_definitions
from pipelines.settings import SettingsError, credential_for, load_settings
from pipelines.tenant_tags import TENANT_NAME_TAG, TENANT_TAG
from resources.settings import MONTHLY_QUOTAS, RatePlan
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID
from warehouse import empty, reads
from warehouse.db import open_database
from warehouse.locks import LockBusyError
from warehouse.publish_target import DEFAULT_STORAGE_VERSION, storage_version_problem


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``ADM_*`` variable but those a test sets."""
    for name in list(os.environ):
        if name.startswith("ADM_"):
            monkeypatch.delenv(name)


def refusal(monkeypatch: pytest.MonkeyPatch, **variables: str) -> str:
    """The one-line message `load_settings` gives for these variables."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_defaults_need_no_variable() -> None:
    settings = load_settings()

    assert settings.sync_tenants == []
    assert not settings.address_configured
    assert settings.staging_root == Path("data/staging")
    assert settings.quota == MONTHLY_QUOTAS[RatePlan.ESSENTIAL] == 25_000


def test_the_limiter_state_lives_beside_the_warehouse_whatever_the_staging_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Before: it followed the staging folder's parent, so ADM_STAGING_DIR=/tmp wrote /ratelimit and a
    # one-level relative staging folder wrote ./ratelimit into the working directory (committed once).
    monkeypatch.setenv("ADM_WAREHOUSE", str(tmp_path / "wh" / "warehouse.duckdb"))
    monkeypatch.setenv("ADM_STAGING_DIR", "/tmp")
    assert load_settings().limiter_state_dir == tmp_path / "wh" / "ratelimit"


def test_the_repository_holds_no_runtime_state() -> None:
    # Before: a limiter state file (ratelimit/<tenant>.<hash>.json) was committed at the root. The one
    # DuckDB file shipped is the empty warehouse the baseline script builds (tests/test_baseline.py holds
    # it to the script's bookkeeping rows and nothing else).
    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    runtime = ("ratelimit/", "data/", "staging/", ".duckdb", ".duckdb.wal", ".parquet")
    shipped = empty.shipped()
    assert shipped is not None
    found = [path for path in listed.stdout.splitlines() if any(part in path for part in runtime)]
    assert found == [shipped.relative_to(root).as_posix()]


def test_the_default_storage_version_is_one_duckdb_knows() -> None:
    # Loading the settings skips DuckDB's probe for the default (pipelines.settings): it must stay known.
    assert storage_version_problem(DEFAULT_STORAGE_VERSION) is None


def test_an_address_without_a_tenant_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: the emulator's demo tenant was every installation's default tenant.
    message = refusal(monkeypatch, ADM_BASE_URL="https://api.example.com", ADM_TOKEN="secret-token")
    assert message == "no tenant configured: set ADM_TENANTS (ids, comma-separated) or ADM_TENANT_ID"
    monkeypatch.delenv("ADM_BASE_URL")
    with pytest.raises(SettingsError, match="no tenant configured"):
        _ = load_settings().default_tenant
    monkeypatch.setenv("ADM_TENANT_ID", DEMO_TENANT_ID)
    assert load_settings().default_tenant == DEMO_TENANT_ID


def test_plan_words_ignore_case_and_give_the_plan_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADM_RATE_PLAN", " Premium ")
    assert load_settings().quota == 100_000
    monkeypatch.setenv("ADM_MONTHLY_QUOTA", "40000")
    assert load_settings().quota == 40_000


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADM_CONCURRENCY", "")
    monkeypatch.setenv("ADM_TOKEN", "")

    settings = load_settings()

    assert settings.concurrency == 8 and settings.token is None


def test_each_tenant_may_have_its_own_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADM_BASE_URL", "https://adm.example.com/")
    monkeypatch.setenv("ADM_TENANTS", f"{DEMO_TENANT_ID}, {OTHER_TENANT_ID}")
    monkeypatch.setenv(f"ADM_ACCESS_KEY__{DEMO_TENANT_ID.upper().replace('-', '_')}", "key-demo")
    monkeypatch.setenv(f"ADM_TOKEN__{OTHER_TENANT_ID.replace('-', '_')}", "token-other")

    settings = load_settings()

    assert settings.base_url == "https://adm.example.com"
    assert settings.sync_tenants == [DEMO_TENANT_ID, OTHER_TENANT_ID]
    demo_key = credential_for(settings.tenant_access_keys, DEMO_TENANT_ID)
    other_token = credential_for(settings.tenant_tokens, OTHER_TENANT_ID)
    assert demo_key is not None and demo_key.get_secret_value() == "key-demo"
    assert other_token is not None and other_token.get_secret_value() == "token-other"
    assert "key-demo" not in repr(settings) and "token-other" not in repr(settings)


def test_each_tenant_may_have_its_own_rate_plan_and_quota_and_name_in_dagster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADM_BASE_URL", "https://adm.example.com")
    monkeypatch.setenv("ADM_TOKEN", "shared")
    monkeypatch.setenv("ADM_TENANTS", f"acme={DEMO_TENANT_ID},{OTHER_TENANT_ID}")
    monkeypatch.setenv("ADM_RATE_PLAN", "essential")
    monkeypatch.setenv(f"ADM_RATE_PLAN__{DEMO_TENANT_ID.upper().replace('-', '_')}", "Premium")
    monkeypatch.setenv(f"ADM_MONTHLY_QUOTA__{OTHER_TENANT_ID.replace('-', '_')}", "1234")

    settings = load_settings()
    bound = resources(settings)

    # The acme tenant: its own plan, so its plan's quota; the other: the shared plan, its own quota.
    assert (settings.rate_plan_of(DEMO_TENANT_ID), settings.quota_of(DEMO_TENANT_ID)) == (
        RatePlan.PREMIUM,
        MONTHLY_QUOTAS[RatePlan.PREMIUM],
    )
    assert (settings.rate_plan_of(OTHER_TENANT_ID), settings.quota_of(OTHER_TENANT_ID)) == (
        RatePlan.ESSENTIAL,
        1234,
    )
    # The resources a run gets carry them: the client limits each tenant at its plan's rate.
    adm = bound["adm"]
    assert adm.client_settings(DEMO_TENANT_ID).rate_plan == RatePlan.PREMIUM
    assert adm.client_settings(OTHER_TENANT_ID).rate_plan == RatePlan.ESSENTIAL
    policy = bound["sync_policy"]
    assert (policy.quota_of(DEMO_TENANT_ID), policy.quota_of(OTHER_TENANT_ID)) == (100_000, 1234)
    # Dagster shows the name: the schedules tag each tenant's runs with its id and, if it has one, name.
    repository = sync_definitions(settings).get_repository_def()
    schedule = repository.get_schedule_def("nightly_sync_schedule")
    moment = datetime(2026, 11, 23, 2, tzinfo=UTC)
    tick = dg.build_schedule_context(scheduled_execution_time=moment, repository_def=repository)
    requests = schedule.evaluate_tick(tick).run_requests or []
    named = (TENANT_TAG, TENANT_NAME_TAG)
    assert [{k: v for k, v in request.tags.items() if k in named} for request in requests] == [
        {TENANT_TAG: DEMO_TENANT_ID, TENANT_NAME_TAG: "acme"},
        {TENANT_TAG: OTHER_TENANT_ID},
    ]


@pytest.mark.parametrize(
    ("suffix", "value", "expected"),
    [
        ("DEMO", "gold", "ADM_RATE_PLAN__{tenant}='gold' is not accepted: expected one of essential"),
        ("UNKNOWN", "premium", "ADM_RATE_PLAN__UNKNOWN names no tenant of ADM_TENANTS"),
    ],
)
def test_a_tenant_setting_that_is_wrong_or_names_no_tenant_is_one_line(
    monkeypatch: pytest.MonkeyPatch, suffix: str, value: str, expected: str
) -> None:
    tenant = DEMO_TENANT_ID.upper().replace("-", "_")
    name = tenant if suffix == "DEMO" else suffix
    message = refusal(monkeypatch, ADM_TENANTS=DEMO_TENANT_ID, **{f"ADM_RATE_PLAN__{name}": value})
    assert message.startswith(expected.format(tenant=tenant))


def test_a_tenant_without_any_credential_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refusal(
        monkeypatch,
        ADM_ENVIRONMENT="prod-eu",
        ADM_TENANTS=f"{DEMO_TENANT_ID},{OTHER_TENANT_ID}",
        **{f"ADM_TOKEN__{DEMO_TENANT_ID.upper().replace('-', '_')}": "token-demo"},
    )

    assert message.startswith(f"no credential for tenant {OTHER_TENANT_ID}: set ADM_TOKEN or ADM_ACCESS_KEY")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("ADM_RATE_PER_MINUTE", "fast", "a number of requests per minute above 0"),
        ("ADM_ENVIRONMENT", "prod-usa", "one of staging-us, staging-eu, prod-us, prod-eu"),
        ("ADM_TENANTS", "acme,0b5e5c1e", "comma-separated tenant ids (UUIDs)"),
        ("ADM_CONCURRENCY", "100", "a whole number from 1 to 64"),
        ("ADM_QUOTA_MAX_SHARE", "1.5", "a share above 0 and at most 1 (e.g. 0.9)"),
        ("ADM_BASE_URL", "adm.example.com", "an address starting with http:// or https://"),
        (
            "ADM_SCHEMA_CONTRACT",
            "tolerant,payroll=strict",
            "strict or tolerant, optionally per list (e.g. tolerant,users=strict)",
        ),
        (
            "ADM_SCHEMA_CONTRACT",
            "lenient",
            "strict or tolerant, optionally per list (e.g. tolerant,users=strict)",
        ),
    ],
)
def test_a_refused_value_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    # A rule of our own adds its reason in brackets.
    message = refusal(monkeypatch, **{variable: value})
    assert message.startswith(f"{variable}={value!r} is not accepted: expected {expected}"), message


def test_an_environment_and_an_address_are_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refusal(monkeypatch, ADM_ENVIRONMENT="prod-us", ADM_BASE_URL="https://x.example", ADM_TOKEN="t")

    assert message == "give ADM_ENVIRONMENT or ADM_BASE_URL, not both"


def test_a_warehouse_path_that_cannot_be_a_duckdb_file_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("meeting notes, not a database", encoding="utf-8")
    expected = "expected the path of a DuckDB file, existing or to create"

    folder = refusal(monkeypatch, ADM_WAREHOUSE=str(tmp_path))
    text = refusal(monkeypatch, ADM_WAREHOUSE=str(tmp_path / "notes.txt"))
    through = refusal(monkeypatch, ADM_WAREHOUSE=str(tmp_path / "notes.txt" / "wh.duckdb"))

    assert (
        folder
        == f"ADM_WAREHOUSE={str(tmp_path)!r} is not accepted: {expected} ({tmp_path} is a folder, "
        + ("not a DuckDB file)")
    )
    assert text.endswith(f"({tmp_path / 'notes.txt'} is not a DuckDB database file)")
    assert through.endswith(
        f"({tmp_path / 'notes.txt'} is a file, so {tmp_path / 'notes.txt' / 'wh.duckdb'} cannot be created)"
    )


def test_the_warehouse_flag_is_checked_the_same_way(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["extract", "--warehouse", str(tmp_path)])

    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --warehouse: {tmp_path} is a folder, not a DuckDB file"
    ]


@pytest.mark.parametrize("name", ["memory.duckdb", "temp.duckdb", 'we"ird.duckdb', "o'brien.db", "ü-ñ"])
def test_a_warehouse_of_any_file_name_is_written_and_read_as_its_connections_only_database(
    tmp_path: Path, name: str
) -> None:
    # A file opened for writing is attached to an instance of its own (for its row groups' size), under
    # the name DuckDB gives a file it opens; DuckDB's own names ("memory", "temp") cannot be taken.
    path = tmp_path / name
    with open_database(path) as con:
        con.execute("CREATE TABLE t AS SELECT 42 AS answer")
        current = con.execute("SELECT current_database()").fetchone()
        listed = con.execute(
            "SELECT database_name, path FROM duckdb_databases() WHERE NOT internal"
        ).fetchall()
        assert current is not None and listed == [(current[0], str(path))]
    with open_database(path, read_only=True) as con:
        assert con.execute("SELECT answer FROM t").fetchall() == [(42,)]


def test_a_read_of_a_file_that_is_not_duckdb_fails_without_waiting(tmp_path: Path) -> None:
    """Only a lock held by another process is waited for; a broken file is an answer at once."""
    path = tmp_path / "warehouse.duckdb"
    path.write_bytes(b"not a database, whatever its name says" * 100)

    started = time.monotonic()
    with pytest.raises(duckdb.IOException), reads.read_only(path, wait_s=30):
        pass

    assert time.monotonic() - started < 5


def test_a_read_while_another_process_writes_waits_then_names_the_holder(tmp_path: Path) -> None:
    # Before: a hard-coded 60 s wait, then DuckDB's raw error suggesting read-only mode.
    path = tmp_path / "warehouse.duckdb"
    open_database(path).close()
    holder = (
        "import sys, time; from pathlib import Path; from warehouse.commit import writing; "
        "w = writing(Path(sys.argv[1]), 'hr apply of plan 1234', 5); w.__enter__(); "
        "print('held', flush=True); time.sleep(30)"
    )
    process = subprocess.Popen([sys.executable, "-c", holder, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        with pytest.raises(LockBusyError) as raised, reads.read_only(path, wait_s=0.5):
            pass
    finally:
        process.kill()
        process.wait()
    message = str(raised.value)
    assert message.startswith(f"the warehouse {path} is held by hr apply of plan 1234 (pid {process.pid}")
    assert message.endswith("after waiting 0.5 s") and "\n" not in message


@pytest.mark.parametrize(
    "address", ["http://10.0.0.5:8080", "http://api.example.com", "http://[2001:db8::1]/"]
)
def test_plain_http_to_another_machine_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    monkeypatch.setenv("ADM_TENANT_ID", DEMO_TENANT_ID)
    message = refusal(monkeypatch, ADM_BASE_URL=address, ADM_TOKEN="secret-token")
    assert "would send the token unencrypted to another machine" in message
    assert "ADM_ALLOW_INSECURE_HTTP=true" in message and "secret-token" not in message
    monkeypatch.setenv("ADM_ALLOW_INSECURE_HTTP", "true")
    assert load_settings().base_url == address.rstrip("/")


@pytest.mark.parametrize(
    "address",
    ["http://127.0.0.1:8080", "http://localhost:9000", "http://[::1]:8080", "https://api.example.com"],
)
def test_https_and_plain_http_to_this_machine_are_accepted(
    monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    monkeypatch.setenv("ADM_BASE_URL", address)
    monkeypatch.setenv("ADM_TOKEN", "t")
    monkeypatch.setenv("ADM_TENANT_ID", DEMO_TENANT_ID)
    assert load_settings().base_url == address


def test_a_readers_group_that_does_not_exist_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refusal(monkeypatch, ADM_READERS_GROUP="no-such-group-here")
    assert message == (
        "ADM_READERS_GROUP='no-such-group-here' is not accepted: expected the name of a group of this "
        "machine (no group named 'no-such-group-here' on this machine)"
    )


@pytest.mark.parametrize("cron", ["every night", "61 2 * * *", "0 2 * *", "0 0 2 * * *"])
def test_a_cron_setting_that_is_not_five_valid_fields_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, cron: str
) -> None:
    # Before: a 123-line traceback from Dagster's schedule when the code location loaded.
    message = refusal(monkeypatch, ADM_NIGHTLY_CRON=cron)
    assert message.startswith("ADM_NIGHTLY_CRON") and "a cron expression of five fields" in message
