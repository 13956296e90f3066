"""A setting is declared once, in `pipelines.settings.SyncSettings`: the CLI, Dagster and the README's table
all read that one field (its default, validation, what it accepts and its description)."""

from __future__ import annotations

from typing import Annotated

import dagster as dg
import duckdb
import pytest
from pydantic import Field
from typer.testing import CliRunner

import pipelines.settings
from pipelines.bindings import resources
from pipelines.cli import app
from pipelines.settings import Accepts, SyncSettings, accepts, load_settings
from pipelines.settings_doc import MARKERS, README, settings_table
from warehouse.dictionary_page import with_section


class WithANewSetting(SyncSettings):
    """The settings with one more, added as a developer would: one field, nothing else."""

    probe_wait_s: Annotated[float, Field(gt=0), Accepts("a number of seconds above 0")] = Field(
        1.5, description="how long a probe waits"
    )


def test_a_setting_added_in_one_place_reaches_the_cli_dagster_and_the_docs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipelines.settings, "SyncSettings", WithANewSetting)
    # The CLI: its settings read the variable and refuse a bad value in one line naming it.
    monkeypatch.setenv("ADM_PROBE_WAIT_S", "2.5")
    settings = load_settings()
    assert isinstance(settings, WithANewSetting) and settings.probe_wait_s == 2.5
    monkeypatch.setenv("ADM_PROBE_WAIT_S", "soon")
    refused = CliRunner().invoke(app, ["budget"])
    assert refused.exit_code == 2
    assert "ADM_PROBE_WAIT_S='soon' is not accepted: expected a number of seconds above 0" in refused.output

    # Dagster: an asset gets it from the resources bound from the settings.
    @dg.asset
    def probe(sync_policy: dg.ResourceParam[SyncSettings]) -> float:
        assert isinstance(sync_policy, WithANewSetting)
        return sync_policy.probe_wait_s

    result = dg.materialize([probe], resources=resources(settings))
    assert result.output_for_node("probe") == 2.5

    # The docs: the README's table has its row.
    row = "| `ADM_PROBE_WAIT_S` | 1.5 | a number of seconds above 0 | how long a probe waits |"
    assert row in settings_table(WithANewSetting)


def test_the_readme_table_of_settings_is_rendered_from_the_fields() -> None:
    page = README.read_text(encoding="utf-8")
    assert with_section(page, settings_table(), MARKERS) == page, (
        "README.md's settings table differs from pipelines/settings.py: run `make dictionary`"
    )


def test_every_setting_read_from_a_variable_says_what_it_accepts_and_means() -> None:
    undocumented = [
        name
        for name, field in SyncSettings.model_fields.items()
        if name != "tenant_names" and (accepts(field) is None or not field.description)
    ]
    assert undocumented == []


def test_loading_the_settings_opens_no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: every load opened an in-memory DuckDB to check the copy's storage version (39 ms).
    opened: list[object] = []
    monkeypatch.setattr(duckdb, "connect", lambda *args, **kwargs: opened.append(args))
    load_settings()
    assert opened == []
