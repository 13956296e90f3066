"""The service's own text of each record of a page, so that ``raw`` stores what the service sent (its
number formats, offsets and key order), not a re-serialisation of our model.

msgspec's ``Raw`` (the text of a value, left undecoded) cuts the records out of ``data.data`` and the items
out of a record's member arrays, in C: walking every key of every record in Python cost more than the rest of
flattening it (issue 31). Where a key comes twice the last one counts, as for the models' own parser
(pydantic), so that each record gets its own text. What msgspec refuses and the standard library reads
(``NaN``, ``Infinity``) is walked in Python instead: `json.JSONDecoder.raw_decode` parses one value from
any position and reports where it ended.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import msgspec

from models.errors import AuthoritySyncError

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


class _Array(msgspec.Struct):
    data: list[msgspec.Raw]


class _Paged(msgspec.Struct):
    data: _Array


_PAGED = msgspec.json.Decoder(_Paged)
_ARRAY = msgspec.json.Decoder(_Array)


class RawJsonError(AuthoritySyncError, ValueError):
    """The body is not an envelope holding a ``data.data`` array."""


class NumberText(str):
    """A JSON number as the service wrote it (``1500.00``, ``123456789012345678901234567.891``): RFC 8259
    sets no precision, and a float would round it and render it anew."""


def exact_value(text: str | bytes) -> Any:
    """The JSON value of ``text`` with every number kept as its `NumberText` (``NaN`` and ``Infinity``,
    which some services write, too)."""
    return json.loads(text, parse_float=NumberText, parse_int=NumberText, parse_constant=NumberText)


def page_records(body: str) -> list[str]:
    """The JSON text of each item of ``data.data`` of a list's envelope, in order."""
    try:
        return _texts(_PAGED.decode(body).data.data)
    except msgspec.ValidationError as error:
        raise RawJsonError(f"not a page's envelope: {error}") from None
    except msgspec.DecodeError:
        start = _member(body, _skip(body, 0), "data")
        return _items(body, _member(body, start, "data"))


def array_records(body: str) -> list[str]:
    """The JSON text of each item of ``data`` of an envelope holding an array (E9), in order."""
    try:
        return _texts(_ARRAY.decode(body).data)
    except msgspec.ValidationError as error:
        raise RawJsonError(f"not an envelope holding an array: {error}") from None
    except msgspec.DecodeError:
        return _items(body, _member(body, _skip(body, 0), "data"))


def _texts(values: list[msgspec.Raw]) -> list[str]:
    return [bytes(value).decode("utf-8") for value in values]


def member_objects(record: str, keys: Collection[str]) -> dict[str, list[str] | None]:
    """For each of ``keys``, the JSON text of each object of the array under it in the object ``record``
    (the last such key, as a JSON parser keeps it), items that are not objects left out: None for a key
    with no array there (or when ``record`` is not valid JSON). The record is decoded once for all keys."""
    try:
        members = _MEMBERS.decode(record)
    except msgspec.ValidationError:  # valid JSON, not an object
        return dict.fromkeys(keys)
    except msgspec.DecodeError:  # NaN or Infinity, which the standard library reads and msgspec does not
        return {key: _walked_member_objects(record, key) for key in keys}
    return {key: _objects(members.get(key)) for key in keys}


def _objects(array: msgspec.Raw | None) -> list[str] | None:
    """The text of each object of the JSON ``array`` (None when it is missing or not an array)."""
    if array is None:
        return None
    try:
        items = _ITEMS.decode(array)
    except msgspec.ValidationError:  # not an array
        return None
    return [text for text in _texts(items) if text.startswith("{")]


def _walked_member_objects(record: str, key: str) -> list[str] | None:
    """`member_objects` by the standard library's decoder, key by key (slow: for what msgspec refuses)."""
    try:
        position = _member(record, _skip(record, 0), key)
        items = _items(record, position)
    except (RawJsonError, ValueError, IndexError):
        return None
    return [item for item in items if item.startswith("{")]


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _member(text: str, position: int, wanted: str) -> int:
    """Where the value of the last key ``wanted`` of the object at ``position`` starts (the one a JSON
    parser keeps)."""
    if text[position : position + 1] != "{":
        raise RawJsonError(f"expected an object at {position}")
    found = None
    position = _skip(text, position + 1)
    while text[position : position + 1] == '"':
        key, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if text[position : position + 1] != ":":
            raise RawJsonError(f"expected ':' at {position}")
        position = _skip(text, position + 1)
        if key == wanted:
            found = position
        _, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if text[position : position + 1] == ",":
            position = _skip(text, position + 1)
    if found is None:
        raise RawJsonError(f"no key {wanted!r}")
    return found


def _items(text: str, position: int) -> list[str]:
    """The text of each item of the array at ``position``."""
    if text[position : position + 1] != "[":
        raise RawJsonError(f"expected an array at {position}")
    items: list[str] = []
    position = _skip(text, position + 1)
    while text[position : position + 1] not in ("]", ""):
        _, end = _DECODER.raw_decode(text, position)
        items.append(text[position:end])
        position = _skip(text, end)
        if text[position : position + 1] == ",":
            position = _skip(text, position + 1)
    return items
