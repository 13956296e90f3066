"""Hypothesis strategies of service records, derived from the spec's field tables (tests/spec_records.toml),
never from models/ or the emulator: a generated record is what the spec allows, with deviations a real
service sends injected on purpose and written down, so that a test can say what the product must make of
them.

A record conforms field by field to its type, except where a `Deviation` was drawn: the field missing,
null where the spec does not allow it, a value of another JSON type, or an unknown field added. Ids are
drawn from a small shared pool, in either case, so that embedded records repeat ids within and across
parents and one id is cited in two cases; the root id alone is promised unique and a non-empty string.
"""

from __future__ import annotations

import functools
import re
import string
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from tests.standin import SPEC, JsonText

_TYPE = re.compile(r"^(?P<base>\w+)(?:\((?P<values>[^)]*)\))?(?P<array>\[\])?(?P<nullable>\?)?$")
SCALARS = frozenset({"string", "number", "boolean", "timestamp", "object", "enum"})


@dataclass(frozen=True)
class FieldType:
    """One field's type as the spec's table gives it."""

    base: str
    values: tuple[str, ...] = ()
    array: bool = False
    nullable: bool = False

    @classmethod
    def parse(cls, text: str) -> FieldType:
        """``string?``, ``enum(A|B)``, ``UserRole[]``, ``object[]?`` ..."""
        found = _TYPE.match(text)
        assert found is not None, text
        values = tuple(found["values"].split("|")) if found["values"] else ()
        return cls(found["base"], values, bool(found["array"]), bool(found["nullable"]))

    @property
    def record(self) -> str | None:
        """The embedded record's name, when the field holds records."""
        return None if self.base in SCALARS else self.base


@dataclass(frozen=True)
class Deviation:
    """One field of one record that a generated record serves off the spec."""

    path: str
    kind: str
    """missing, null, other_type or unknown_field."""


@dataclass
class Drawn:
    """A generated record and what was done to it."""

    record: dict[str, Any]
    deviations: list[Deviation] = field(default_factory=list)


ID_POOL = [str(uuid.UUID(int=n * 0x1_0000_0001 + 7)) for n in range(1, 9)]
"""Ids embedded records draw from: few, so that they repeat within and across parents."""


def ids(pool: list[str] = ID_POOL) -> st.SearchStrategy[str]:
    """An id of the pool, in lower or upper case (a uuid compares without regard to case)."""
    return st.tuples(st.sampled_from(pool), st.booleans()).map(
        lambda pair: pair[0].upper() if pair[1] else pair[0]
    )


INSTANT_FORMS = ("iso", "iso", "iso", "date", "epoch_seconds", "epoch_milliseconds")
"""The forms a service writes an instant in (ISO 8601 most often)."""
MILLISECONDS_FROM = datetime(1973, 3, 4, tzinfo=UTC)
"""Epoch milliseconds are written from here on (an earlier instant drawn in that form is written as this
one): an earlier instant's count of milliseconds (below 10^11) is also a plausible count of seconds, which
no reader can tell apart (docs/sync.md, "Cursors")."""


def timestamps() -> st.SearchStrategy[str | int]:
    """An instant, past or future (1970 to 2099), in any form a service writes one: ISO 8601 with ``Z`` or
    ``+hh:mm`` and milliseconds, microseconds or none; a date alone; epoch seconds or milliseconds."""
    instants = st.datetimes(datetime(1970, 1, 2), datetime(2099, 12, 31), timezones=st.just(UTC))
    return st.builds(written, instants, st.sampled_from(INSTANT_FORMS), OFFSETS, PRECISIONS, st.booleans())


OFFSETS = st.sampled_from([timedelta(0), timedelta(hours=5, minutes=30), timedelta(hours=-8)])
PRECISIONS = st.sampled_from(["milliseconds", "microseconds", "seconds"])


def written(instant: datetime, form: str, offset: timedelta, precision: str, zulu: bool) -> str | int:
    """``instant`` written in ``form`` (one of `INSTANT_FORMS`; an ISO 8601 one at ``offset`` and
    ``precision``, ``Z`` for UTC when ``zulu``). A date alone names the instant's UTC day."""
    if form == "date":
        return instant.astimezone(UTC).date().isoformat()
    if form == "epoch_seconds":
        return int(instant.timestamp())
    if form == "epoch_milliseconds":
        return int(max(instant, MILLISECONDS_FROM).timestamp() * 1000)
    return _iso(instant, offset, precision, zulu)


def numbers() -> st.SearchStrategy[Any]:
    """A JSON number of any size or precision RFC 8259 allows: ordinary, huge and tiny floats, and numbers
    written with more digits than a float holds or with trailing zeros (`JsonText`)."""
    plain = st.integers(-(10**9), 10**9) | st.floats(allow_nan=False, allow_infinity=False)
    written = st.one_of(
        st.integers(10**17, 10**40).map(str),
        st.tuples(st.integers(0, 10**27), st.integers(0, 999)).map(lambda pair: f"{pair[0]}.{pair[1]:03d}"),
        st.sampled_from(["1500.00", "0.10", "1E+2", "-0.0", "1e-300", "123456789012345678901234567.891"]),
    ).map(JsonText)
    return plain | plain | written


def _iso(instant: datetime, offset: timedelta, form: str, zulu: bool) -> str:
    text = instant.astimezone(timezone(offset)).isoformat(timespec=form)
    return text.replace("+00:00", "Z") if zulu else text


def texts() -> st.SearchStrategy[str]:
    """Any text a person or a system writes: accents, other scripts, emoji, quotes, line breaks."""
    return st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def json_values() -> st.SearchStrategy[Any]:
    """A free-form JSON value (a spec ``object`` field's contents)."""
    leaves = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | texts()
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts(), inner, max_size=3),
        max_leaves=4,
    )


SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": texts(),
    "number": numbers(),
    "boolean": st.booleans(),
    "timestamp": timestamps(),
    "object": st.dictionaries(texts(), json_values(), max_size=3),
}
"""Values the spec allows for each scalar type (built once: strategies are reusable)."""
IDS = ids()


def conforming(kind: FieldType, name: str, depth: int, complete: bool = False) -> st.SearchStrategy[Any]:
    """A value the spec allows for one field (one item, for an array; embedded records with every field
    when ``complete``)."""
    if kind.record is not None:
        return embedded(kind.record, depth + 1, complete)
    if name == "id" or (name.endswith("Id") and kind.base == "string"):
        return IDS
    if kind.base == "enum":
        return st.sampled_from(kind.values or ("X",))
    return SCALAR_VALUES[kind.base]


@functools.cache
def value_of(kind: FieldType, name: str, depth: int, complete: bool = False) -> st.SearchStrategy[Any]:
    """A value the spec allows for the field, arrays and null included (arrays stay short, and empty two
    records deep)."""
    one = conforming(kind, name, depth, complete)
    values = st.lists(one, max_size=3 if depth < 1 else 0) if kind.array else one
    return (st.none() | values) if kind.nullable else values


@functools.cache
def embedded(name: str, depth: int, complete: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """A record embedded in another, as the spec allows it, with an id from the shared pool (and every
    field when ``complete``)."""
    own = record(name, depth, clean=True, complete=complete).map(lambda drawn: drawn.record)
    if "id" not in SPEC[name]["fields"]:
        return own
    return st.tuples(IDS, own).map(lambda pair: {"id": pair[0], **pair[1]})


OTHER_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.integers(0, 99_999) | st.booleans() | st.just({}),
    "number": st.sampled_from(["twelve", "", True, []]),
    "boolean": st.sampled_from(["yes", 1, {}]),
    "timestamp": st.sampled_from(["not a date", "2024-13-45T99:00:00Z", 1_700_000_000]),
    "object": st.sampled_from(["text", 5, [1]]),
    "enum": st.sampled_from([7, False]),
}
"""A value of another JSON type than the field's."""

UNKNOWN_NAMES = st.sampled_from([f"x{letter}" for letter in string.ascii_lowercase])
"""Names no table of the spec has."""
JSON_VALUES = json_values()
DEVIATIONS = ["none"] * 12 + ["missing", "null", "other_type"]
"""How often a field is served off the spec, when the record may deviate: about one field in five."""


@st.composite
def record(draw: st.DrawFn, name: str, depth: int = 0, clean: bool = False, complete: bool = False) -> Drawn:
    """One record of the spec's ``name`` without its ``id`` (the caller's to give); unless ``clean``,
    each field may be served off the spec, an unknown field added, a list served null or as ``{}``; when
    ``complete``, every field the spec lists is present (embedded records' too), as most services send."""
    spec = SPEC[name]
    drawn = Drawn({})
    for field_name, text in spec["fields"].items():
        if field_name == "id":
            continue
        kind = FieldType.parse(text)
        deviation = "none" if clean else draw(st.sampled_from(DEVIATIONS))
        if deviation == "missing":
            drawn.deviations.append(Deviation(field_name, "missing"))
        elif deviation == "null" and not kind.nullable:
            drawn.record[field_name] = None
            drawn.deviations.append(Deviation(field_name, "null"))
        elif deviation == "other_type" and kind.array:
            drawn.record[field_name] = draw(st.sampled_from([{}, "none"]))
            drawn.deviations.append(Deviation(field_name, "other_type"))
        elif deviation == "other_type" and kind.record is None:
            drawn.record[field_name] = draw(OTHER_TYPE[kind.base])
            drawn.deviations.append(Deviation(field_name, "other_type"))
        elif complete or _present(spec, field_name, draw):
            drawn.record[field_name] = draw(value_of(kind, field_name, depth, complete))
    if not clean and draw(st.integers(0, 4)) == 0:
        drawn.record[draw(UNKNOWN_NAMES)] = draw(JSON_VALUES)
    return drawn


def _present(spec: dict[str, Any], name: str, draw: st.DrawFn) -> bool:
    """Whether a conforming record has the field: always where the spec says so, else most of the time."""
    if spec.get("always_present") and name not in spec.get("optional", ()):
        return True
    return draw(st.integers(0, 5)) > 0
