"""Opening the warehouse: a file of this release is used as it is after one read (`up_to_date`); any
difference from what this release builds is noticed there and handled as before, by `migrate`: an earlier
release's file refused or upgraded, a newer release's refused, an outdated catalog or dictionary rendered
again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.conftest import copy_of
from warehouse import migrate as migrations
from warehouse.catalog_sql import FINGERPRINT_KEY
from warehouse.commit import connected
from warehouse.dictionary import APPLIED_TABLE
from warehouse.migrate import NewerWarehouseError, OlderWarehouseError, up_to_date


def _older(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)")


def _newer(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "INSERT INTO schema_migrations (version, name) "
        "SELECT max(version) + 1, 'later' FROM schema_migrations"
    )


def _other_catalog(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("UPDATE warehouse_meta SET value = 'another release' WHERE key = ?", [FINGERPRINT_KEY])


def _no_catalog_mark(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DELETE FROM warehouse_meta WHERE key = ?", [FINGERPRINT_KEY])


def _other_dictionary(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"UPDATE {APPLIED_TABLE} SET fingerprint = 'another release'")  # noqa: S608 - fixed name


def _no_dictionary_table(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DROP TABLE {APPLIED_TABLE}")


CHANGES: dict[str, Callable[[duckdb.DuckDBPyConnection], None]] = {
    "older": _older,
    "newer": _newer,
    "other catalog": _other_catalog,
    "no catalog mark": _no_catalog_mark,
    "other dictionary": _other_dictionary,
    "no dictionary table": _no_dictionary_table,
}
"""Ways a file differs from what this release builds, each as a change made to a current one."""


def _changed(template: Path, folder: Path, change: Callable[[duckdb.DuckDBPyConnection], None]) -> Path:
    path = copy_of(template, folder / "warehouse.duckdb")
    with duckdb.connect(path) as con:
        assert up_to_date(con)
        change(con)
        assert not up_to_date(con)
    return path


def test_a_new_file_is_not_up_to_date_until_built(tmp_path: Path) -> None:
    with duckdb.connect(tmp_path / "new.duckdb") as con:
        assert not up_to_date(con)
        migrations.migrate(con)
        assert up_to_date(con)


@pytest.mark.parametrize(
    "difference", ["other catalog", "no catalog mark", "other dictionary", "no dictionary table"]
)
def test_an_open_renders_again_what_another_release_rendered(
    template: Path, tmp_path: Path, difference: str
) -> None:
    path = _changed(template, tmp_path, CHANGES[difference])
    with connected(path, upgrade=False) as con:
        assert up_to_date(con)


def test_an_earlier_releases_file_is_refused_without_upgrade_and_upgraded_with_it(
    template: Path, tmp_path: Path
) -> None:
    path = _changed(template, tmp_path, CHANGES["older"])
    with (
        pytest.raises(OlderWarehouseError, match="authority-sync warehouse upgrade"),
        connected(path, upgrade=False),
    ):
        pass
    with connected(path) as con:
        assert up_to_date(con)


def test_a_newer_releases_file_is_refused_either_way(template: Path, tmp_path: Path) -> None:
    path = _changed(template, tmp_path, CHANGES["newer"])
    for upgrade in (False, True):
        newer = pytest.raises(NewerWarehouseError, match="migrated by a newer authority-sync")
        with newer, connected(path, upgrade=upgrade):
            pass
