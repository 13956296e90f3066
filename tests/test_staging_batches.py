"""Staged batches hold every value exactly as the rows gave it (issue 31): `warehouse.arrow_batches`
sends rows through JSON lines and Arrow's JSON reader instead of Arrow's constructors from Python values,
which import pandas. The property draws rows of any staged table with any values its column types allow
(texts of any code point but a lone surrogate, which UTF-8 cannot hold; the 32-bit range; every double
including NaN, infinities and -0.0; decimals at the column's precision; instants and days across the
calendar) and compares each cell with what the rows held, bit for bit where floats are concerned."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.arrow_batches import arrow_batch
from warehouse.schema import arrow_schemas, staging_schema

TABLES = sorted(arrow_schemas())
EVERY_TYPE = pa.schema(
    [
        pa.field(f"c{number}", kind)
        for number, kind in enumerate(
            {str(column.type): column.type for table in TABLES for column in staging_schema(table)}.values()
        )
    ]
)
"""One column of each type a staged table has: every type is drawn in every example of it."""

OFFSETS: st.SearchStrategy[Any] = st.none() | st.integers(-23 * 60, 23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
INSTANTS = st.datetimes(
    min_value=datetime(2, 1, 1),  # naive bounds, a day inside the calendar: any offset stays in it in UTC
    max_value=datetime(9998, 12, 31),
    timezones=OFFSETS,
)
"""Instants at any offset of whole minutes (RFC 3339's; the models stage them in UTC anyway), or naive
(read as UTC, as ``Table.from_pylist`` reads them)."""


def _values(kind: pa.DataType) -> st.SearchStrategy[Any]:
    """Any value of a staged column of type ``kind``, or None."""
    if pa.types.is_timestamp(kind):
        found: st.SearchStrategy[Any] = INSTANTS
    elif pa.types.is_date32(kind):
        found = st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))
    elif pa.types.is_decimal(kind):
        digits = kind.precision - kind.scale
        bound = Decimal(10) ** digits
        found = st.decimals(min_value=-bound + 1, max_value=bound - 1, places=kind.scale).filter(
            lambda number: abs(number) < bound  # the bounds are drawn rounded to the places, up or down
        )
    elif pa.types.is_float64(kind):
        found = st.floats(allow_nan=True, allow_infinity=True)
    elif pa.types.is_int32(kind):
        found = st.integers(-(2**31), 2**31 - 1)
    elif pa.types.is_boolean(kind):
        found = st.booleans()
    elif pa.types.is_list(kind):
        found = st.lists(st.text())
    else:
        assert pa.types.is_string(kind), kind
        found = st.text(alphabet=st.characters(exclude_categories=["Cs"]))  # a lone surrogate is no UTF-8
    return st.none() | found


@st.composite
def batches(draw: st.DrawFn) -> tuple[pa.Schema, list[dict[str, Any]]]:
    """A staged table's schema (or `EVERY_TYPE`) and rows for it, each column sometimes left out of a row."""
    schema = draw(st.sampled_from(TABLES).map(staging_schema) | st.just(EVERY_TYPE))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = {}
        for column in schema:
            if draw(st.integers(0, 9)):
                row[column.name] = draw(_values(column.type))
        rows.append(row)
    return schema, rows


def _same(staged: Any, given: Any) -> bool:
    """Whether a staged cell holds exactly the value given (floats bit for bit: NaN is NaN, -0.0 not 0.0)."""
    if isinstance(given, datetime) and given.tzinfo is None:
        given = given.replace(tzinfo=UTC)
    if isinstance(given, float):
        return isinstance(staged, float) and (
            math.isnan(staged) if math.isnan(given) else staged.hex() == given.hex()
        )
    return bool(staged == given) and type(staged) is type(given)


@settings(max_examples=60, deadline=None)
@given(batches())
def test_a_staged_batch_holds_every_value_exactly_as_the_rows_gave_it(
    batch: tuple[pa.Schema, list[dict[str, Any]]],
) -> None:
    schema, rows = batch
    staged = arrow_batch(rows, schema)
    assert staged.schema == schema
    for row, found in zip(rows, staged.to_pylist(), strict=True):
        for column in schema.names:
            given_value, staged_value = row.get(column), found[column]
            if given_value is None:
                assert staged_value is None, column
            else:
                assert _same(staged_value, given_value), (column, given_value, staged_value)


def test_staging_a_batch_imports_no_pandas() -> None:
    # pyarrow's constructors from Python values import pandas (45-65 MB of a run's peak): staging must not.
    probe = (
        "import sys\n"
        "from warehouse.schema import staging_schema\n"
        "from warehouse.arrow_batches import arrow_batch\n"
        "arrow_batch([{'id': 'a', 'authority_limit_sort_precedence': 1.5}], staging_schema('decisions'))\n"
        "print('pandas' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.strip() == "False"
