"""Rows (dicts keyed by column name) as Arrow tables, without Arrow's constructors from Python values: those
(``pa.array``, ``Table.from_pylist``, ``pa.scalar``, ``Schema.empty_table``) ask pandas whether the values
are its own, which imports pandas: 45-65 MB of a sync's peak memory and about 0.4 s of its start
(issue 31). The rows travel as JSON lines instead (msgspec, in C), which Arrow's JSON reader parses to the
schema (in C++); every value arrives exactly (`tests/test_staging_batches.py`).

Text columns may also be given apart from the rows (``texts``): their values are laid into Arrow's buffers
as they are, never written into JSON and parsed back. A record's ``raw`` is most of a staged row's bytes
(about 5 KB of a decision's row of 5.5), and its round trip through JSON (escaped, then unescaped) was half
of staging a page of decisions (docs/benchmarks.md, session 36).
"""

from __future__ import annotations

import functools
import itertools
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

_LINES = msgspec.json.Encoder()
MAX_CHUNK_BYTES = 2**31 - 1
"""The most UTF-8 bytes one Arrow string array holds (its offsets are 32-bit); longer texts take chunks."""


def arrow_batch(
    rows: Sequence[Mapping[str, Any]],
    schema: pa.Schema,
    texts: Mapping[str, Sequence[str | None]] | None = None,
) -> pa.Table:
    """``rows`` as an Arrow table of ``schema``, by way of JSON lines (see the module): a key the schema
    lacks is ignored, a column a row lacks is null, as ``Table.from_pylist`` has them. ``texts``: string
    columns of ``schema`` given apart, one value (or None) a row, in the rows' order; the rows' own values
    of those columns are ignored."""
    import pyarrow.json as pj

    if not rows:  # Arrow's reader refuses an empty input
        return pa.Table.from_batches([], schema=schema)  # empty_table() imports pandas
    given = texts or {}
    wire, doubles = _wire(schema, tuple(given))
    if doubles:
        rows = [_doubles_as_text(row, doubles) for row in rows]
    options = pj.ParseOptions(explicit_schema=wire, unexpected_field_behavior="ignore")
    lines = pa.BufferReader(_LINES.encode_lines(rows))  # one call for the batch: 6-10% less than a row's each
    read = pj.read_json(lines, pj.ReadOptions(use_threads=False), options)
    columns = [
        text_array(given[column.name]) if column.name in given else _read(read, column) for column in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _read(read: pa.Table, column: pa.Field) -> pa.ChunkedArray:
    """``column`` as the reader gave it, cast to its type where it travelled as text."""
    found = read.column(column.name)
    return found if found.type == column.type else found.cast(column.type)


def text_array(values: Sequence[str | None]) -> pa.ChunkedArray:
    """``values`` as an Arrow string column, laid into its buffers directly (UTF-8, None as null)."""
    return pa.chunked_array(
        [_strings(chunk) for chunk in _chunks([None if v is None else v.encode() for v in values])],
        pa.string(),
    )


def _chunks(encoded: list[bytes | None]) -> Iterator[list[bytes | None]]:
    """``encoded`` in runs of at most `MAX_CHUNK_BYTES` (one run unless the texts are that large)."""
    if sum(map(len, filter(None, encoded))) <= MAX_CHUNK_BYTES:  # the common case, counted in C
        yield encoded
        return
    start, size = 0, 0
    for index, text in enumerate(encoded):
        length = len(text or b"")
        if size + length > MAX_CHUNK_BYTES and index > start:
            yield encoded[start:index]
            start, size = index, 0
        size += length
    yield encoded[start:]


def _strings(encoded: list[bytes | None]) -> pa.Array:
    """One Arrow string array of ``encoded`` (its offsets, its bytes, and its nulls when it has any)."""
    offsets = array("i", itertools.accumulate((len(text or b"") for text in encoded), initial=0))
    data = b"".join(filter(None, encoded))
    valid = [text is not None for text in encoded] if None in encoded else None
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(len(encoded), pa.py_buffer(offsets), pa.py_buffer(data), bitmap)


def _doubles_as_text(row: Mapping[str, Any], doubles: tuple[str, ...]) -> Mapping[str, Any]:
    # msgspec writes NaN and the infinities as null; a double's repr is its exact shortest text.
    return {**row, **{name: repr(float(row[name])) for name in doubles if row.get(name) is not None}}


@functools.cache
def _wire(schema: pa.Schema, apart: tuple[str, ...]) -> tuple[pa.Schema, tuple[str, ...]]:
    """How ``schema``'s columns but those given ``apart`` travel in the JSON lines (`arrow_batch`): dates as
    their ISO text (as msgspec writes them) and doubles as text (`_doubles_as_text`), cast to their types
    after reading; the names of the double columns."""
    textual = (pa.date32(), pa.float64())
    carried = [column for column in schema if column.name not in apart]
    wire = pa.schema(
        [column.with_type(pa.string()) if column.type in textual else column for column in carried]
    )
    doubles = tuple(column.name for column in carried if column.type == pa.float64())
    return wire, doubles
