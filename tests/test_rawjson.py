"""Each record's own text out of a page body (narrow unit tests of `resources.rawjson`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resources.rawjson import RawJsonError, array_records, member_objects, page_records


def test_each_record_is_cut_out_as_sent() -> None:
    records = [
        '{"id": "a", "n": "3", "at": "2026-01-01T01:00:00+01:00"}',
        '{"id":"b","nested":[1,{"k":null}],"s":"a \\"quoted\\" ] } , string"}',
        "{}",
    ]
    body = (
        '{ "statusCode": 200, "message": "ok, \\"data\\"", "timestamp": "t",\n'
        '  "data" : { "page": 1, "data": [ ' + " ,\n ".join(records) + ' ], "total": 3 } }'
    )
    assert page_records(body) == records
    assert [json.loads(text) for text in page_records(body)] == [json.loads(text) for text in records]


def test_an_empty_page() -> None:
    assert page_records('{"data": {"data": []}}') == []


@pytest.mark.parametrize("body", ['{"data": {"items": []}}', '{"data": []}', "[]"])
def test_a_body_without_data_data_is_refused(body: str) -> None:
    with pytest.raises(RawJsonError):
        page_records(body)


def test_the_objects_of_a_member_array_are_cut_out_as_sent_the_last_key_winning() -> None:
    record = (
        '{"items": [{"n": 1}], "id": "x", '
        '"items" : [ {"n": 1500.00, "s": "]"} , 7, null,{"k":[{}]} ], "z": 1}'
    )
    assert member_objects(record, ["items", "id", "absent"]) == {
        "items": ['{"n": 1500.00, "s": "]"}', '{"k":[{}]}'],
        "id": None,  # no array
        "absent": None,
    }


@pytest.mark.parametrize("record", ['{"items": null}', '{"other": []}', "[]", '{"items": [1, }'])
def test_a_member_that_is_no_array_has_no_objects(record: str) -> None:
    assert member_objects(record, ["items"]) == {"items": None}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    record=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
    items=st.lists(JSON_VALUES, max_size=4),
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
)
def test_the_objects_of_a_member_array_are_texts_of_the_record(
    record: dict[str, object], items: list[object], indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps({**record, "items": items}, indent=indent, ensure_ascii=ascii_only)
    found = member_objects(text, ["items"])["items"]
    assert found is not None
    assert all(item in text for item in found)
    assert [json.loads(item) for item in found] == [item for item in items if isinstance(item, dict)]


def test_a_record_holding_nan_still_gives_its_objects_as_sent() -> None:
    # NaN and Infinity are no JSON, but some services write them and the standard library reads them
    record = '{"x": NaN, "items": [{"n": 1500.00, "y": -Infinity}, 2], "items2": []}'
    assert member_objects(record, ["items", "items2"]) == {
        "items": ['{"n": 1500.00, "y": -Infinity}'],
        "items2": [],
    }


def test_a_key_sent_twice_gives_the_records_of_the_last_as_the_models_read_them() -> None:
    # Before: the first "data" was cut out while pydantic validated the last, so a record could be stored
    # with another record's text as its raw (or the page failed on a count that did not match).
    body = (
        '{"data": {"data": [{"id": "gone"}]}, "message": "ok", '
        '"data": {"data": [{"id": "old"}], "page": 1, "data": [{"id": "x", "n": 1.50}]}}'
    )
    assert page_records(body) == ['{"id": "x", "n": 1.50}']
    assert array_records('{"data": [{"id": "old"}], "data": [{"id": "x"}]}') == ['{"id": "x"}']


def test_a_page_holding_nan_still_gives_each_record_as_sent() -> None:
    body = '{"data": {"data": [{"id": "old"}]}, "data": {"data": [{"id": "x", "n": NaN}, {"n": 1.50}]}}'
    assert page_records(body) == ['{"id": "x", "n": NaN}', '{"n": 1.50}']
    assert array_records('{"data": [{"n": Infinity}]}') == ['{"n": Infinity}']


WHITESPACE = st.text(alphabet=" \t\n\r", max_size=2)
"""What RFC 8259 allows between tokens."""
DATA_KEY = st.sampled_from(['"data"', '"d\\u0061ta"', '"\\u0064ata"'])
"""The member name ``data`` as JSON may spell it (escapes are the same name)."""


@st.composite
def page_bodies(draw: st.DrawFn) -> str:
    """A page envelope as JSON allows it: ``data`` (and ``data.data``) possibly sent more than once, with
    escaped names, any whitespace, and records of any JSON values in any formatting."""

    def obj(members: list[tuple[str, str]]) -> str:
        gap = draw(WHITESPACE)
        return "{" + ",".join(f"{gap}{key}{draw(WHITESPACE)}:{gap}{value}" for key, value in members) + "}"

    def records() -> str:
        found = draw(st.lists(st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=3), max_size=3))
        indent, ascii_only = draw(st.sampled_from([None, 0, 2])), draw(st.booleans())
        return "[" + ",".join(json.dumps(r, indent=indent, ensure_ascii=ascii_only) for r in found) + "]"

    def envelope() -> str:
        inner = [(draw(DATA_KEY), records()) for _ in range(draw(st.integers(1, 2)))]
        return obj([*inner, ('"page"', "1")])

    outer = [(draw(DATA_KEY), envelope()) for _ in range(draw(st.integers(1, 3)))]
    return draw(WHITESPACE) + obj([('"message"', '"ok"'), *outer]) + draw(WHITESPACE)


@given(body=page_bodies())
def test_each_record_of_any_page_json_allows_is_the_text_of_a_record_the_models_read(body: str) -> None:
    # The records a JSON parser keeps (the last of a repeated name, as pydantic reads them), each as its text.
    found = page_records(body)
    assert all(text in body for text in found)
    assert [json.loads(text) for text in found] == json.loads(body)["data"]["data"]
