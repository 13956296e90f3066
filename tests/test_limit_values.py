"""The warning about numeric limits that could not be read, judged column by column over the staged file:
the same limits as the definition row by row, for any values the staged columns can hold."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.checks import NUMERIC_LIMITS, unread_limit_values
from warehouse.schema import staging_schema

COLUMNS = ("value_type", "limit_value", "limit_number", "is_unlimited")
STAGED = pa.schema([staging_schema("decision_authorities").field(name) for name in COLUMNS])

# Near misses of each numeric type (case, spaces, a line end, a prefix of another name) beside any text.
near_misses = st.sampled_from(NUMERIC_LIMITS).flatmap(
    lambda name: st.sampled_from([name.lower(), f" {name}", f"{name}\n", f"{name}s", name[:-1], f"x{name}"])
)
value_types = st.one_of(st.sampled_from([*NUMERIC_LIMITS, "Authorized"]), near_misses, st.text(), st.none())
limits = st.fixed_dictionaries(
    {
        "value_type": value_types,
        "limit_value": st.one_of(st.text(), st.none()),
        "limit_number": st.one_of(st.none(), st.decimals(-(10**6), 10**6, places=6, allow_nan=False)),
        "is_unlimited": st.one_of(st.booleans(), st.none()),
    }
)


def unread_row_by_row(rows: list[dict[str, Any]]) -> list[str | None]:
    """The check's definition, one row at a time (as it was computed before it was column-wise)."""
    return [
        row["limit_value"]
        for row in rows
        if row["value_type"] in NUMERIC_LIMITS and row["limit_number"] is None and not row["is_unlimited"]
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(limits, max_size=40), row_group=st.integers(1, 50))
def test_the_unread_limits_of_any_staged_file_are_those_row_by_row(
    tmp_path: Path, rows: list[dict[str, Any]], row_group: int
) -> None:
    path = tmp_path / "decision_authorities.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=STAGED), path, row_group_size=row_group)
    assert unread_limit_values(path) == unread_row_by_row(rows)


def test_a_currency_limit_without_a_number_is_unread_unless_unlimited(tmp_path: Path) -> None:
    rows = [
        dict(zip(COLUMNS, values, strict=True))
        for values in [
            ("Currency", "about a million", None, None),
            ("Currency", "Unlimited", None, True),
            ("Days", "30", Decimal(30), False),
            ("Authorized", None, None, False),
            ("Currency\n", "near miss", None, False),
        ]
    ]
    path = tmp_path / "decision_authorities.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=STAGED), path)
    assert unread_limit_values(path) == ["about a million"]


def test_a_list_that_staged_no_limits_has_none_unread(tmp_path: Path) -> None:
    assert unread_limit_values(tmp_path / "decision_authorities.parquet") == []
