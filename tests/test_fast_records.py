"""The contract's fast path reads exactly what the strict pydantic read reads, or declines (issue 31).

`resources.fast_records` reads a page with msgspec into structs derived from the models, and the flatten
functions of `warehouse.rows` hash a struct with msgspec. The property draws pages of every list whose
model has a struct, from what the spec's field tables allow (tests/spec_generators.py, never from the
models) and from what JSON and HTTP bodies allow beyond them: any number text, instants in every form and
at impossible days and hours, keys given twice, keys under another spelling, lone surrogate escapes,
unknown keys, missing and null fields, values of another JSON type. Whenever the fast path takes a page,
pydantic's strict read must take it too, with the same envelope, and every record must flatten to the same
rows, cell by cell (``raw`` and ``content_hash`` included; floats bit for bit, instants with their offset).
Where the fast path declines, the page goes to pydantic as before, which other tests cover.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from emulator.scale import DEMO_TENANT_ID
from emulator.server import EmulatorServer
from models.base import Envelope, Page, ServiceModel
from models.users import User, UserStatus
from resources.catalog import PAGED_LISTS
from resources.contract import RecordContract
from resources.endpoints import ENDPOINTS
from resources.fast_records import RecordStruct, UnsupportedError, fast_page, struct_of
from resources.rawjson import page_records
from tests.spec_generators import IDS, JSON_VALUES, FieldType, record, texts, timestamps
from tests.standin import SPEC, JsonText, encode
from tests.test_client_support import make_client
from warehouse.catalog import LISTS


def _has_struct(model: type[ServiceModel]) -> bool:
    try:
        struct_of(model)
    except UnsupportedError:
        return False
    return True


def _spec_record(name: str) -> str:
    """The spec's record of the catalog's list ``name``, found by the path it is read from (two lists of
    one endpoint, such as ``groups`` and ``group_directory``, read the same record)."""
    path = ENDPOINTS[PAGED_LISTS[name].endpoint].path
    return str(next(entry["record"] for entry in SPEC["lists"].values() if entry["path"] == path))


FAST_LISTS = sorted(name for name in PAGED_LISTS if _has_struct(PAGED_LISTS[name].record))

CANONICAL = st.datetimes(datetime(1, 1, 2), datetime(9999, 12, 30), timezones=st.just(UTC)).map(
    lambda instant: instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
)
"""An instant in the form the service writes: UTC, milliseconds, ``Z``."""
ODD_INSTANTS = st.sampled_from(
    [
        "2026-02-30T00:00:00.000Z",
        "2026-01-01T24:00:00.000Z",
        "2026-12-31T23:59:60.000Z",
        "0000-01-01T00:00:00.000Z",
        "2026-01-01t00:00:00.000z",
        "2026-01-01 00:00:00.000Z",
        "2026-01-01T00:00:00.000+00:00",
        "2026-01-01T00:00:00.000",
        "2026-01-01T00:00:00.0000Z",
        "\uff12\uff10\uff12\uff16-01-01T00:00:00.000Z",  # full-width digits
    ]
)
"""Instants a service may write that are not that form, or look like it and name no instant."""
NUMBER_TEXTS = st.sampled_from(
    ["1e16", "-1E16", "9999999999999998", "1e400", "1.0", "1E+2", "-0", "0.1e-320", "123456789012345678901"]
).map(JsonText)
"""Numbers at the edges where readers and writers part: the float exponent, overflow, subnormals."""
SURROGATE = st.sampled_from(['"\\ud800"', '"a\\udfff"', '"\\ud83d\\ude00"']).map(JsonText)
"""Strings with lone or paired surrogate escapes (RFC 8259 allows them in the text; UTF-8 cannot hold
a lone one)."""


def _whole(value: Any) -> Any:
    """``value`` with every number made a whole one of 31 bits, as services write counts and ranks."""
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, float | JsonText):
        number = float(value)
        return int(number) % 2**31 if math.isfinite(number) else 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value % 2**31
    return value


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@st.composite
def varied(draw: st.DrawFn, spec_record: str, clean: bool) -> Any:
    """A record of the spec's ``spec_record``: clean (every field present, most often) or with the spec
    generators' deviations; then, for one record in three, bent the ways the protocol allows: instants in
    odd forms, edge number texts, surrogate escapes, a key given twice or under its Python spelling."""
    complete = clean and draw(st.integers(0, 4)) < 4
    drawn = draw(record(spec_record, clean=clean, complete=complete)).record
    if not draw(st.booleans()):
        drawn = _whole(drawn)
    bent = draw(st.integers(0, 2)) == 2
    values = _bend(draw, {"id": draw(IDS | texts()), **drawn}, spec_record, bent)
    text = encode(values).decode()
    if bent and draw(st.integers(0, 3)) == 3:  # a key twice: the later value is the record's
        key = draw(st.sampled_from(sorted(values)))
        given_again = encode(draw(JSON_VALUES | st.just(values[key]))).decode()
        pair = f"{json.dumps(key)}:{given_again}"
        text = text[:-1] + ("," if len(text) > 2 else "") + pair + "}"
    return JsonText(text)


def _bend(
    draw: Callable[[st.SearchStrategy[Any]], Any], values: dict[str, Any], spec_record: str, bent: bool
) -> dict[str, Any]:
    """``values`` (a record of the spec's ``spec_record``) with its instants, and its embedded records',
    in the service's own form; when ``bent``, some fields bent (see `varied`)."""
    fields = SPEC[spec_record]["fields"]
    for name in list(values):
        kind = FieldType.parse(fields[name]) if name in fields else None
        roll = draw(st.integers(0, 19)) if bent else 0
        value = values[name]
        if kind is not None and kind.record is not None and isinstance(value, dict | list):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    _bend(draw, item, kind.record, bent)
        elif kind is not None and kind.base == "timestamp" and not kind.array and value is not None:
            values[name] = draw(CANONICAL) if roll < 17 else draw(ODD_INSTANTS | timestamps())
        elif kind is not None and kind.base == "number" and roll == 19:
            values[name] = draw(NUMBER_TEXTS)
        elif kind is not None and kind.base == "string" and roll == 18 and draw(st.integers(0, 3)) == 3:
            values[name] = draw(SURROGATE)
        elif roll == 16 and draw(st.integers(0, 3)) == 3:
            values[_snake(name)] = values.pop(name)
    return values


@st.composite
def pages(draw: st.DrawFn, name: str) -> bytes:
    """A page envelope of the list ``name`` holding 1 to 3 drawn records."""
    spec_record = _spec_record(name)
    clean = draw(st.integers(0, 3)) < 3
    records = draw(st.lists(varied(spec_record, clean), min_size=1, max_size=3))
    stamp = draw(CANONICAL) if draw(st.integers(0, 4)) < 4 else draw(ODD_INSTANTS | timestamps())
    page = {"page": 1, "limit": 100, "total": draw(st.none() | st.integers(0, 10**4)), "data": records}
    if draw(st.integers(0, 9)) == 9:
        page["extra"] = draw(JSON_VALUES)
    return encode({"statusCode": 200, "timestamp": stamp, "message": draw(texts()), "data": page})


def _clean_record(draw: Callable[[st.SearchStrategy[Any]], Any], spec_record: str) -> dict[str, Any]:
    """A whole record of the spec's ``spec_record`` with an id, whole numbers and instants in the service's
    own form: one both paths can read, before a test changes what it is about."""
    drawn = _whole(draw(record(spec_record, clean=True, complete=True)).record)
    return _bend(draw, {"id": draw(IDS), **drawn}, spec_record, bent=False)


def _page_of(item: dict[str, Any]) -> bytes:
    """A page envelope holding ``item`` alone, as the service writes one."""
    envelope = {"statusCode": 200, "timestamp": "2026-01-01T00:00:00.000Z", "message": "OK"}
    return encode(envelope | {"data": {"page": 1, "limit": 100, "total": 1, "data": [item]}})


def _strict(model: type[ServiceModel], body: bytes) -> Envelope[Any] | None:
    """The page read by pydantic strictly (the contract's pydantic fast pass), records with their texts."""
    try:
        envelope: Envelope[Any] = Envelope[Page[model]].model_validate_json(body, strict=True)  # type: ignore[valid-type]
    except ValueError:
        return None
    for item, text in zip(envelope.data.data, page_records(body.decode()), strict=True):
        item.keep_received(text)
    return envelope


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type: floats bit for bit, instants with the same offset, containers
    element by element."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return bool(
            (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
        )
    if isinstance(a, datetime):
        return bool(a == b and a.utcoffset() == b.utcoffset())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _differences(fast: Any, slow: Any, flatten: Any) -> list[str]:
    """Cells where the rows of ``fast`` (a struct) and ``slow`` (a model) differ, named."""
    found = []
    fast_rows, slow_rows = flatten(DEMO_TENANT_ID, fast), flatten(DEMO_TENANT_ID, slow)
    assert fast_rows.keys() == slow_rows.keys()
    for table, rows in slow_rows.items():
        assert len(fast_rows[table]) == len(rows), table
        for number, (row, other) in enumerate(zip(fast_rows[table], rows, strict=True)):
            assert row.keys() == other.keys()
            found += [
                f"{table}[{number}].{column}: fast {row[column]!r}, pydantic {other[column]!r}"
                for column in row
                if not _same(row[column], other[column])
            ]
    return found


@pytest.mark.parametrize("name", FAST_LISTS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_fast_path_reads_what_pydantic_reads_or_declines(name: str, data: st.DataObject) -> None:
    _assert_same_or_declined(name, data.draw(pages(name)))


def _assert_same_or_declined(name: str, body: bytes) -> None:
    """The fast path declines the page ``body`` of the list ``name``, or reads it as pydantic does."""
    model = PAGED_LISTS[name].record
    fast = fast_page(model, body)
    event("fast path took the page" if fast is not None else "fast path declined")
    if fast is None:
        return
    slow = _strict(model, body)
    assert slow is not None, "the fast path took a page that pydantic's strict read refuses"
    for field in ("status_code", "timestamp", "message"):
        assert _same(getattr(fast, field), getattr(slow, field)), field
    for field in ("page", "limit", "total", "served"):
        assert _same(getattr(fast.data, field), getattr(slow.data, field)), field
    texts_sent = page_records(body.decode())
    for item, text in zip(fast.data.data, texts_sent, strict=True):
        assert isinstance(item, RecordStruct)
        item.keep_received(text)
    for fast_record, slow_record in zip(fast.data.data, slow.data.data, strict=True):
        assert _differences(fast_record, slow_record, LISTS[name].flatten) == []


@settings(max_examples=80, deadline=None)
@given(data=st.data(), number=st.floats() | st.integers(-(10**20), 10**20) | NUMBER_TEXTS)
def test_a_float_field_reads_the_same_or_declines(data: st.DataObject, number: Any) -> None:
    """A float the models declare beyond the spec's table (E8's ``authorityLimitSortPrecedence``): any
    number JSON allows reads to the same row and hash by either path, or the fast path declines (from
    1e16 on, where pydantic and msgspec write the exponent differently)."""
    decision = _clean_record(data.draw, "Decision")
    decision["authorityLimitSortPrecedence"] = number if math.isfinite(float(number)) else None
    body = _page_of(decision)
    _assert_same_or_declined("decisions", body)


class _Omitted:
    def __repr__(self) -> str:
        return "omitted"


OMITTED = _Omitted()
"""A field left out of the record."""
LEFT_OUT = [info.alias or name for name, info in User.model_fields.items() if not info.is_required()]
"""The fields of a user that a service may leave out (each has a default)."""
STATUSES = [None, *UserStatus, "active", "", 1, True]
"""Values of a user's ``status``: never null, one of the states, or something else."""


CASES = [*((name, OMITTED) for name in LEFT_OUT), *(("status", value) for value in STATUSES)]


@pytest.mark.parametrize(("field", "value"), CASES, ids=repr)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_a_field_left_out_reads_as_pydantic_reads_it_and_a_null_status_by_neither(
    field: str, value: Any, data: st.DataObject
) -> None:
    """A user's field with a default may be left out: the fast path then reads the default, as pydantic
    does. ``status`` may be left out (it is then None) but is never null (`models.base.refuse_null`): the
    fast path declines a null one, which pydantic refuses."""
    user = _clean_record(data.draw, "User")
    user.pop(field, None)
    if value is not OMITTED:
        user[field] = value
    body = _page_of(user)
    _assert_same_or_declined("users", body)  # what the fast path takes, it reads as pydantic does
    fast, slow = fast_page(User, body), _strict(User, body)
    if value is None:
        assert (fast, slow) == (None, None)
    elif value is OMITTED:
        assume(slow is not None)  # a record pydantic reads (a few drawn ones are not, whatever is left out)
        assert fast is not None


def test_every_list_has_a_fast_path() -> None:
    """Which models msgspec reads: a change to a model that takes it off the fast path shows here (users
    came on it once their ``status``, omitted or never null, was declared with `models.base.refuse_null`)."""
    assert sorted(PAGED_LISTS) == FAST_LISTS


def test_the_contract_reads_a_service_page_the_fast_way(seeded_http: httpx.Client) -> None:
    """A page as the emulator serves it goes the fast way, and the contract keeps each record's text."""
    body = seeded_http.get("/decision/v1/decisions", params={"page": 1, "limit": 20}).content
    envelope = RecordContract(tenant_id=DEMO_TENANT_ID).read_page(PAGED_LISTS["decisions"], 1, body)
    records = envelope.data.data
    assert records and all(isinstance(item, RecordStruct) for item in records)
    assert [item.raw_json() for item in records] == page_records(body.decode())


@pytest.mark.parametrize("name", sorted(PAGED_LISTS))
def test_every_list_as_the_emulator_serves_it_goes_the_fast_way(server: EmulatorServer, name: str) -> None:
    """The sync's own read of each list (client, paging, contract) takes the emulator's pages the fast way:
    a model that gains something msgspec cannot read, or a page the service writes in another form, would
    otherwise fall back to pydantic unnoticed (right, but twice as slow)."""
    source = PAGED_LISTS[name]
    with make_client(server) as client:
        stream = client.iter_list(source, source.whole_read(DEMO_TENANT_ID, 100), RecordContract())
        records = list(stream.items())
    assert records and all(isinstance(record, RecordStruct) for record in records)


CONCURRENT_FIRST_READS = """
import json, sys, threading
from pydantic import create_model
from models.decisions import Decision
from models.groups import Group
from resources.fast_records import fast_page
bodies = json.load(sys.stdin)
for round in range(40):
    # New models each round: new struct types, each built by the first threads that read a page of it.
    models = [create_model(f"D{round}", __base__=Decision), create_model(f"G{round}", __base__=Group)]
    barrier = threading.Barrier(8)
    def read(i):
        barrier.wait()
        assert fast_page(models[i % 2], bodies[i % 2].encode()) is not None
    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print("read")
"""


def test_threads_reading_first_pages_at_once_do_not_crash(seeded_http: httpx.Client) -> None:
    """The extract reads the first pages of several lists at once. msgspec builds a struct type's decoding
    information on first use, and threads doing that at once for one type crashed the process (SIGSEGV
    in `make bench-quick`, 7 calls into a sync; this probe crashed 3 runs of 3 without
    `resources.fast_records.built_once`'s lock)."""
    decisions = seeded_http.get("/decision/v1/decisions", params={"page": 1, "limit": 50}).text
    groups = seeded_http.get(
        "/settings/v1/groups", params={"page": 1, "limit": 50, "tenantId": DEMO_TENANT_ID}
    )
    assert groups.status_code == 200
    found = subprocess.run(
        [sys.executable, "-c", CONCURRENT_FIRST_READS],
        input=json.dumps([decisions, groups.text]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (found.returncode, found.stdout.strip()) == (0, "read"), found.stderr[-2000:]
