"""Shared building blocks of every wire model: naming, timestamps, ids, the envelope and the page.

Response models (`ServiceModel`) keep fields the service adds tomorrow (``extra="allow"``) so that a new
field is neither fatal nor lost. Request models (`RequestModel`) forbid unknown fields so that a typo in
our own code is caught before it reaches the service.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    ValidationInfo,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
"""A UUID of any version, as the spec's ``<uuid>`` placeholder allows."""

PHONE_PATTERN = r"^[0-9+().\s-]{7,25}$"
"""Spec E1: 7 to 25 characters of digits, plus, parentheses, dot, whitespace and hyphen."""

_UUID_RE = re.compile(UUID_PATTERN)


def format_timestamp(value: datetime) -> str:
    """Render a timestamp the way the service does: UTC, milliseconds, trailing ``Z``; the year always
    has four digits (``strftime("%Y")`` writes year 202 as ``202``, which no ISO 8601 reader accepts)."""
    v = value.astimezone(UTC)
    return (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}."
        f"{v.microsecond // 1000:03d}Z"
    )


def _as_utc(value: datetime) -> datetime:
    # The spec says timestamps are UTC; a naive value is read as UTC rather than rejected.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+00:01 is before year 1 in UTC
        raise ValueError("the timestamp is out of range once converted to UTC") from None


def refuse_null(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """A field validator (``mode="before"``) of a field that may be omitted, and is then None, but is never
    null on the wire: an explicit null is refused. The record contract's fast path reads such a field as its
    type without None, None when omitted (`resources.fast_records`)."""
    if value is None:
        raise ValueError(f"{info.field_name} may be omitted but not null")
    return value


def _printable(value: str) -> str:
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise PydanticCustomError(
            "control_characters", "control characters and line breaks are not allowed in a name"
        )
    return value


PRINTABLE = AfterValidator(_printable)
"""A person's or group's name has no control characters and no line breaks (error type
``control_characters``). Put it after the field's length constraint, which keeps its own error type."""


Timestamp = Annotated[
    datetime,
    AfterValidator(_as_utc),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]
"""An ISO 8601 UTC date-time; serialised with milliseconds and ``Z``."""

UuidStr = Annotated[str, Field(pattern=UUID_PATTERN, json_schema_extra={"format": "uuid"})]
Count = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
"""A count or a rank the spec types as a number: the warehouse holds it as a 32-bit integer. A larger one
(JSON allows any) does not validate: under the tolerant contract it is stored as null and counted
``invalid``, and ``raw`` keeps its text (found by the protocol fuzzer: it used to stop the tenant's run
with "Python int too large to convert to C long", naming nothing)."""
"""A UUID kept as a string, because every id in the service's records is a string."""


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID string of the spec's form."""
    return bool(_UUID_RE.match(value))


def canonical_id(value: str) -> str:
    """An id as the warehouse keys it: a UUID in lower case (UUIDs compare without regard to case, so one
    cited as ``ABC…`` and as ``abc…`` is one record), any other id exactly as sent."""
    lowered = value.lower()
    if lowered == value:  # most ids arrive in lower case: no pattern to match (a page has ~2,600 ids)
        return value
    return lowered if _UUID_RE.match(value) else value


class ServiceModel(BaseModel):
    """A record as the service sends it: camelCase on the wire, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )
    # The service's text of the record in a slot, not a pydantic private attribute: a model with one runs
    # Python for every instance it validates (a page of decisions builds ~750 of them, nested items
    # included), which was half of validating a page (issue 31). Copies and pickles carry it below.
    __slots__ = ("_received",)

    def keep_received(self, text: str) -> None:
        """Remember the service's own JSON text of this record (see `raw_json`)."""
        self._received = text

    def received(self) -> str | None:
        """The service's own JSON text of this record, when it was kept."""
        return getattr(self, "_received", None)

    def raw_json(self) -> str:
        """The record's JSON as the service sent it when known, else re-serialised (unknown fields kept)."""
        text = self.received()
        return text if text is not None else self.model_dump_json(by_alias=True)

    def __copy__(self) -> Self:
        return self._carried(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        return self._carried(super().__deepcopy__(memo))

    def __getstate__(self) -> dict[Any, Any]:
        return {**super().__getstate__(), "_received": self.received()}

    def __setstate__(self, state: dict[Any, Any]) -> None:
        text = state.pop("_received", None)
        super().__setstate__(state)
        if text is not None:
            self.keep_received(text)

    def _carried(self, copy: Self) -> Self:
        """``copy`` holding this record's text too (pydantic copies its own attributes only)."""
        text = self.received()
        if text is not None:
            copy.keep_received(text)
        return copy


class RequestModel(BaseModel):
    """A request body or query: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON body to send: wire names, only the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


T = TypeVar("T")


class Page(ServiceModel, Generic[T]):
    """A paged list: ``total`` counts items across all pages, not pages. A service that leaves ``total``
    out is still read (to a short page); ``served`` is how many records the service put on the page,
    including those a record contract kept out of ``data`` (``kept_out``: their JSON texts as served)."""

    page: int
    limit: int
    total: int | None = None
    data: list[T]
    _kept_out: tuple[str, ...] = PrivateAttr(default=())

    @property
    def served(self) -> int:
        """Records the service served on this page."""
        return len(self.data) + len(self._kept_out)

    @property
    def kept_out(self) -> tuple[str, ...]:
        """The JSON texts of the records served on this page that ``data`` does not hold."""
        return self._kept_out

    def keeping_out(self, texts: list[str]) -> Page[T]:
        """This page, noting the records the service served on it that ``data`` does not hold."""
        self._kept_out = tuple(texts)
        return self


class Envelope(ServiceModel, Generic[T]):
    """The envelope of every successful response except the revision-id lists."""

    status_code: int
    timestamp: Timestamp
    message: str
    data: T


class ErrorBody(ServiceModel):
    """An error body. The spec does not show its shape; public-reference.md expects these fields.

    Assumption: ``statusCode`` and ``message`` are present, ``error`` names the HTTP reason and ``field``
    (emulator only) names the offending field.
    """

    status_code: int
    message: str | list[str]
    error: str | None = None
    field: str | None = None
