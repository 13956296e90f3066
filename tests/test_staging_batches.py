"""Staged batches hold every value exactly as the rows gave it (issue 31): `warehouse.arrow_batches`
sends rows through JSON lines and Arrow's JSON reader instead of Arrow's constructors from Python values,
which import pandas. The property draws rows of any staged table with any values its column types allow
(texts of any code point but a lone surrogate, which UTF-8 cannot hold; the 32-bit range; every double
including NaN, infinities and -0.0; decimals at the column's precision; instants and days across the
calendar) and compares each cell with what the rows held, bit for bit where floats are concerned. Text
columns given apart from the rows (as staging gives ``raw``) go into Arrow's buffers directly: the same
property holds for them, and a column too large for one Arrow array is cut into chunks losing nothing."""

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

from warehouse import arrow_batches
from warehouse.arrow_batches import arrow_batch, text_array
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


Batch = tuple[pa.Schema, list[dict[str, Any]], dict[str, list[str | None]]]


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    """A staged table's schema (or `EVERY_TYPE`), rows for it (each column sometimes left out of a row),
    and some of its text columns given apart from the rows, as `StagingWriter` gives ``raw`` (the rows'
    own values of those columns then differ, to be ignored)."""
    schema = draw(st.sampled_from(TABLES).map(staging_schema) | st.just(EVERY_TYPE))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = {}
        for column in schema:
            if draw(st.integers(0, 9)):
                row[column.name] = draw(_values(column.type))
        rows.append(row)
    texts = [column.name for column in schema if pa.types.is_string(column.type)]
    apart = {
        name: [row.get(name) for row in rows] for name in draw(st.lists(st.sampled_from(texts), unique=True))
    }
    for name in apart:
        for row in rows:
            row[name] = "given apart: not this"
    return schema, rows, apart


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
def test_a_staged_batch_holds_every_value_exactly_as_the_rows_gave_it(batch: Batch) -> None:
    schema, rows, apart = batch
    staged = arrow_batch(rows, schema, apart)
    assert staged.schema == schema
    for number, (row, found) in enumerate(zip(rows, staged.to_pylist(), strict=True)):
        for column in schema.names:
            given_value = apart[column][number] if column in apart else row.get(column)
            staged_value = found[column]
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
        "arrow_batch([{'id': 'a', 'authority_limit_sort_precedence': 1.5}], staging_schema('decisions'),"
        " {'raw': [None]})\n"
        "print('pandas' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.strip() == "False"


TEXTS = st.lists(
    st.none() | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6), max_size=12
)


@settings(max_examples=80, deadline=None)
@given(TEXTS, st.integers(1, 12))
def test_a_text_column_longer_than_one_arrow_array_holds_is_cut_into_chunks_losing_nothing(
    values: list[str | None], limit: int
) -> None:
    # An Arrow string array holds at most 2 GiB: the same rule at a few bytes cuts small columns.
    original, arrow_batches.MAX_CHUNK_BYTES = arrow_batches.MAX_CHUNK_BYTES, limit
    try:
        column = text_array(values)
    finally:
        arrow_batches.MAX_CHUNK_BYTES = original
    assert column.to_pylist() == values
    assert column.type == pa.string()
    for chunk in column.chunks:
        texts = [text.encode() for text in chunk.to_pylist() if text]
        assert sum(map(len, texts)) <= limit or len(chunk) == 1, (limit, chunk)
