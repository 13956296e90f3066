"""The service's own text of each record of a page, so that ``raw`` stores what the service sent (its
number formats, offsets and key order), not a re-serialisation of our model.

The standard library's JSON decoder parses one value from any position (`json.JSONDecoder.raw_decode`) and
reports where it ended; walking the envelope down to ``data.data`` with it gives each record's span. The
items of a record's member arrays are cut out by msgspec's ``Raw`` (the text of a value, left undecoded):
walking every key of every record in Python cost more than the rest of flattening it (issue 31).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from models.errors import AuthoritySyncError

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


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
    start = _member(body, _skip(body, 0), "data")
    return _items(body, _member(body, start, "data"))


def array_records(body: str) -> list[str]:
    """The JSON text of each item of ``data`` of an envelope holding an array (E9), in order."""
    return _items(body, _member(body, _skip(body, 0), "data"))


def member_objects(record: str, key: str) -> list[str] | None:
    """The JSON text of each object of the array under ``key`` of the object ``record`` (the last such key,
    as a JSON parser keeps it), items that are not objects left out: None when ``record`` has no array
    there (or is not valid JSON)."""
    try:
        members = _MEMBERS.decode(record)
    except msgspec.ValidationError:  # valid JSON, not an object
        return None
    except msgspec.DecodeError:  # NaN or Infinity, which the standard library reads and msgspec does not
        return _walked_member_objects(record, key)
    found = members.get(key)
    if found is None:
        return None
    try:
        items = _ITEMS.decode(found)
    except msgspec.ValidationError:  # not an array
        return None
    return [text for text in (bytes(item).decode("utf-8") for item in items) if text.startswith("{")]


def _walked_member_objects(record: str, key: str) -> list[str] | None:
    """`member_objects` by the standard library's decoder, key by key (slow: for what msgspec refuses)."""
    try:
        position = _member(record, _skip(record, 0), key, last=True)
        items = _items(record, position)
    except (RawJsonError, ValueError, IndexError):
        return None
    return [item for item in items if item.startswith("{")]


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _member(text: str, position: int, wanted: str, *, last: bool = False) -> int:
    """Where the value of key ``wanted`` of the object at ``position`` starts: its first occurrence (an
    envelope's, found without reading the rest), or with ``last`` its last one."""
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
            if not last:
                return position
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
