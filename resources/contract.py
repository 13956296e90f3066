"""The schema contract of paged records: what a deviation from the spec does to a sync.

A real service never matches its documentation exactly, and one odd record must not fail a tenant every
night. Only what the spec promises is assumed. Each page is first validated whole and strictly (the common
case: one fast pass, by msgspec where it reads the page exactly as pydantic would: `resources.fast_records`,
else by pydantic). A page that fails is read record by record:

- **Strict in every mode**, because nothing could be loaded right without them: the envelope and page
  shape, a record that is an object with a non-empty string ``id``, and a ``tenantId`` that, where the
  record carries one, names the tenant being read (another tenant's record is evidence of a leak, not a
  quirk). A record that breaks one is *rejected*: it is kept, with its page, position, field, rule, the
  value received and its own JSON, for the ``rejected_records`` table, and the run decides by threshold
  whether that is acceptable.
- **Tolerated** in ``tolerant`` mode (the default of nightly runs) and recorded, everything else: ``null``
  or a missing field (stored as null; cursor and creation times included: the sync then reads that list
  whole), an unknown enum value (kept as text), a number or boolean sent as a string (converted), a number
  where the spec has a string, an id included (kept as the very text the service wrote,
  ``1500.00`` stays ``1500.00``), an instant sent as a date alone or as epoch seconds or milliseconds
  (converted to that instant), an item of a nested list that is not an object (dropped), any other value
  that does not validate (stored as null). Every deviation is counted per list (by its name in
  `resources.catalog`), field and kind, with sample record ids. Embedded records' ids are not assumed
  unique: the warehouse keys them by parent and position.
- In ``strict`` mode (CI, contract tests) any deviation fails the read with a message naming the
  list, endpoint, page, record id, field, what the spec expects and what was received. It is not retried:
  the same answer would come back.

Modes, rejections and deviations are keyed by the list's name, never by its endpoint: two lists read from
one endpoint keep their own mode and their own counts.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import Enum, StrEnum
from functools import cache, cached_property
from types import UnionType
from typing import Annotated, Any, Protocol, Union, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError, create_model

from models.base import Envelope, Page, ServiceModel
from resources.contract_modes import ContractMode
from resources.endpoints import EndpointName
from resources.errors import ResponseFormatError
from resources.fast_records import RecordStruct, fast_page
from resources.rawjson import array_records, exact_value, page_records

SAMPLES = 5
"""Record ids kept per kind of deviation."""
VALUE_CHARS = 200
"""How much of a received value a deviation or rejection keeps."""


class Source(Protocol):
    """What a read under the contract is: a list of `resources.catalog` (or E9's read), by its name."""

    @property
    def name(self) -> str:
        """The list's name: what its mode, rejections and deviations are keyed by."""
        ...

    @property
    def endpoint(self) -> EndpointName:
        """The endpoint serving it (named in errors and evidence)."""
        ...

    @property
    def record(self) -> type[Any]:
        """The model its records are read as."""
        ...


class DeviationKind(StrEnum):
    """How a tolerated field differed from the spec."""

    NULL = "null"
    MISSING = "missing"
    UNKNOWN_ENUM = "unknown_enum"
    NUMBER_AS_STRING = "number_as_string"
    BOOL_AS_STRING = "bool_as_string"
    NUMBER_AS_TEXT = "number_as_text"
    NOT_AN_OBJECT = "not_an_object"
    INVALID = "invalid"
    DATE_ONLY = "date_only"
    EPOCH_SECONDS = "epoch_seconds"
    EPOCH_MILLISECONDS = "epoch_milliseconds"
    FUTURE_INSTANT = "future_instant"
    """An updated-at stamp later than the service's own clock (`resources.clock`): loaded, moves no cursor."""


@dataclass(frozen=True)
class Rejection:
    """A record that broke a rule that is strict in every mode."""

    list_name: str
    """The list (`resources.catalog`) or the read (``current_user_positions``, E9) that served it."""
    endpoint: str
    page: int
    position: int
    record_id: str | None
    field: str
    rule: str
    value: str
    record: str
    """The record's JSON as the service sent it."""


@dataclass
class ContractLog:
    """What the contract saw during one extract; shared by the threads that read pages."""

    deviations: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(list name, field path, kind) -> records."""
    samples: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    """List name -> the endpoint it was read from (shown beside the list's deviations)."""
    rejections: list[Rejection] = field(default_factory=list)
    _rejected: set[tuple[str, str]] = field(default_factory=set, repr=False)
    _deviated: set[tuple[str, str, str, str]] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def deviated(self, source: Source, path: str, kind: DeviationKind, record_id: str) -> None:
        """Count one tolerated deviation of the list ``source``, once per record: a list read again (a
        pass that settles its count) serves the same record again."""
        key = (source.name, path, kind.value)
        with self._lock:
            self.endpoints[source.name] = source.endpoint
            if (*key, record_id) in self._deviated:
                return
            self._deviated.add((*key, record_id))
            self.deviations[key] += 1
            sample = self.samples.setdefault(key, [])
            if len(sample) < SAMPLES:
                sample.append(record_id)

    def rejected(self, rejection: Rejection) -> None:
        """Keep one rejected record, once: a list read again (a second pass after it changed) serves it
        again, and the same record is the same rejection."""
        with self._lock:
            if (rejection.list_name, rejection.record) not in self._rejected:
                self._rejected.add((rejection.list_name, rejection.record))
                self.rejections.append(rejection)

    def rejected_from(self, list_name: str) -> list[Rejection]:
        """The records of the list ``list_name`` rejected so far."""
        return [rejection for rejection in self.rejections if rejection.list_name == list_name]

    def summary(self) -> list[dict[str, Any]]:
        """The deviations as JSON-ready rows: list, endpoint, field, kind, records, sample ids."""
        return [
            {
                "list": name,
                "endpoint": self.endpoints[name],
                "field": f,
                "kind": k,
                "records": n,
                "sample_ids": self.samples[(name, f, k)],
            }
            for (name, f, k), n in sorted(self.deviations.items())
        ]


@dataclass(frozen=True)
class RecordContract:
    """Reads pages of one extract under a mode, into one log."""

    mode: ContractMode = ContractMode.TOLERANT
    """The mode of every list without one of its own."""
    modes: Mapping[str, ContractMode] = field(default_factory=dict)
    """List name -> its own mode."""
    reject_max_count: int = 10
    """Rejected records a list may have before the run fails (checked by the sync, not here)."""
    reject_max_share: float = 0.01
    """... and the share of the list's total they may be."""
    tenant_id: str | None = None
    """The tenant being read: a record whose ``tenantId`` names another one is rejected."""
    log: ContractLog = field(default_factory=ContractLog)

    def reader(self, source: Source, page: int) -> Callable[[bytes], Envelope[Any]]:
        """The body parser of one page of the list ``source``."""
        return lambda body: self.read_page(source, page, body)

    def read_page(self, source: Source, page: int, body: bytes) -> Envelope[Any]:
        """The page's envelope with its valid (or tolerated) records; rejected ones are logged, not kept."""
        envelope = self._page_whole(source, body)
        if envelope is not None and self._all_fit(envelope.data.data, body, page_records):
            return envelope
        # Not JSON, or a broken envelope or page: strict in every mode (the caller reports it).
        raw = Envelope[Page[Any]].model_validate_json(body)
        texts = page_records(body.decode("utf-8"))
        kept, rejected = self._kept(source, page, raw.data.data, texts)
        page_read = raw.data.model_copy(update={"data": kept}).keeping_out(rejected)
        return raw.model_copy(update={"data": page_read})

    @staticmethod
    def _page_whole(source: Source, body: bytes) -> Envelope[Any] | None:
        """The page read whole and strictly: by msgspec where it reads it exactly as pydantic would (the
        same records, so no second read when they do not all fit), else by pydantic; None when it does
        not validate."""
        fast = fast_page(source.record, body)
        if fast is not None:
            return fast
        envelope_type: type[Envelope[Page[Any]]] = Envelope[Page[source.record]]  # type: ignore[name-defined]
        try:
            return envelope_type.model_validate_json(body, strict=True)
        except ValidationError:
            return None

    def read_array(self, source: Source, body: bytes) -> Envelope[Any]:
        """An envelope holding an array of records (E9), read as one page under the contract."""
        envelope_type: type[Envelope[list[Any]]] = Envelope[list[source.record]]  # type: ignore[name-defined]
        try:
            envelope = envelope_type.model_validate_json(body, strict=True)
        except ValidationError:
            envelope = None
        if envelope is not None and self._all_fit(envelope.data, body, array_records):
            return envelope
        raw = Envelope[list[Any]].model_validate_json(body)
        kept, _ = self._kept(source, 1, raw.data, array_records(body.decode("utf-8")))
        return raw.model_copy(update={"data": kept})

    def _all_fit(self, items: list[Any], body: bytes, texts: Callable[[str], list[str]]) -> bool:
        """Whether strictly valid records all have a usable id and are all of the tenant read (else they are
        read one by one, to reject those); each keeps its own JSON text."""
        for item in items:
            record_id = getattr(item, "id", None)
            if not isinstance(record_id, str) or not record_id.strip():
                return False
            if self._foreign(getattr(item, "tenant_id", None)):
                return False
        for item, text in zip(items, texts(body.decode("utf-8")), strict=True):
            if isinstance(item, ServiceModel | RecordStruct):
                item.keep_received(text)
        return True

    def _kept(
        self, source: Source, page: int, items: list[Any], texts: list[str]
    ) -> tuple[list[BaseModel], list[str]]:
        """The records of one page read one by one: valid or mended ones kept, the others rejected; the
        kept records, and the JSON texts of the rejected ones."""
        kept: list[BaseModel] = []
        rejected: list[str] = []
        for position, (item, text) in enumerate(zip(items, texts, strict=True), start=1):
            found = self._record(_Where(source, page, position, item, text))
            if found is None:
                rejected.append(text)
                continue
            if isinstance(found, ServiceModel):
                found.keep_received(text)
            kept.append(found)
        return kept, rejected

    def _foreign(self, tenant: Any) -> bool:
        """Whether a record's ``tenantId`` names a tenant other than the one being read."""
        return (
            self.tenant_id is not None
            and isinstance(tenant, str)
            and tenant.strip().lower() != self.tenant_id.lower()
        )

    def _record(self, where: _Where) -> BaseModel | None:
        model: type[BaseModel] = where.source.record
        source, item = where.source, where.item
        rejected = _key_problem(item) or self._tenant_problem(item)
        if rejected is not None:
            self._reject(where, *rejected)
            return None
        try:
            return model.model_validate_json(where.text, strict=True)
        except ValidationError as error:
            problems = error.errors(include_url=False)
        if self.mode_of(source.name) is ContractMode.STRICT:
            first = problems[0]
            raise _mismatch(where, _path(first["loc"]), _expected(first), _received(first))
        repaired = _repair(
            where, problems, lambda path, kind: self.log.deviated(source, path, kind, where.record_id)
        )
        try:
            return tolerant_model(model).model_validate(repaired)
        except ValidationError as error:  # what repair could not mend: keep the record out, with evidence
            problem = error.errors(include_url=False)[0]
            self._reject(where, _path(problem["loc"]), problem["type"], _received(problem))
            return None

    def _tenant_problem(self, item: dict[str, Any]) -> tuple[str, str, str] | None:
        tenant = item.get("tenantId")
        if self._foreign(tenant):
            return "tenantId", f"the tenant being read ({self.tenant_id})", _shown(tenant)
        return None

    def mode_of(self, list_name: str) -> ContractMode:
        """The mode the list ``list_name`` is read under."""
        return self.modes.get(list_name, self.mode)

    def _reject(self, where: _Where, path: str, rule: str, value: str) -> None:
        if self.mode_of(where.source.name) is ContractMode.STRICT:
            raise _mismatch(where, path, rule, value)
        self.log.rejected(
            Rejection(
                where.source.name,
                where.source.endpoint,
                where.page,
                where.position,
                where.record_id or None,
                path,
                rule,
                value,
                where.text,
            )
        )


def _mismatch(where: _Where, path: str, expected: str, received: str) -> ResponseFormatError:
    """The error of a strict read: the list, page, record and position, the field and the rule."""
    return ResponseFormatError.mismatch(
        where.source.endpoint,
        path,
        f"page {where.page} of the {where.source.name} list, record {where.record_id or '(no id)'} "
        f"(position {where.position}): {path}: expected {expected}, received {received}",
    )


@dataclass(frozen=True)
class _Where:
    source: Source
    page: int
    position: int
    item: Any
    text: str

    @property
    def record_id(self) -> str:
        value = self.item.get("id") if isinstance(self.item, dict) else None
        if _is_number(value):
            return str(_at(self.exact, ("id",)))
        return value if isinstance(value, str) else ""

    @cached_property
    def exact(self) -> Any:
        """The record parsed with every number kept as the text the service wrote."""
        return exact_value(self.text)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _key_problem(item: Any) -> tuple[str, str, str] | None:
    """A record that is not an object, or whose id is not a non-empty string: (field, rule, value)."""
    if not isinstance(item, dict):
        return "<record>", "an object", _shown(item)
    if "id" not in item:
        return "id", "a non-empty string", "nothing (the field is missing)"
    value = item["id"]
    if _is_number(value):  # an id sent as a JSON number is that id, kept as its text (number_as_text)
        return None
    if not isinstance(value, str) or not value.strip():
        return "id", "a non-empty string", _shown(value)
    return None


def _path(loc: tuple[int | str, ...]) -> str:
    return ".".join("*" if isinstance(part, int) else str(part) for part in loc)


def _expected(problem: Any) -> str:
    """What the spec wants, from pydantic's message ("Input should be a valid string" -> "a valid string")."""
    message = str(problem["msg"])
    return (
        "the field to be present"
        if problem["type"] == "missing"
        else message.removeprefix("Input should be ")
    )


def _received(problem: Any) -> str:
    """What a pydantic problem received, shown (a missing field's input is its parent: not shown)."""
    return "nothing (the field is missing)" if problem["type"] == "missing" else _shown(problem.get("input"))


def _shown(value: Any) -> str:
    """A received value as JSON, truncated."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _repair(
    where: _Where, problems: list[Any], deviated: Callable[[str, DeviationKind], None]
) -> dict[str, Any]:
    """A copy of the record with each problem mended (see the module docstring), each one reported. Items
    of nested lists that are not objects are dropped (after every other mend, so that indexes hold)."""
    repaired: dict[str, Any] = json.loads(json.dumps(where.item))
    dropped: list[tuple[int | str, ...]] = []
    for problem in problems:
        loc, value = problem["loc"], problem.get("input")
        kind, mended = _mend(problem["type"], value)
        if kind is DeviationKind.NUMBER_AS_TEXT:
            mended = str(_at(where.exact, loc))
        if _is_list_item(loc) and problem["type"] in _NOT_AN_OBJECT:
            kind = DeviationKind.NOT_AN_OBJECT
            dropped.append(loc)
        deviated(_path(loc), kind)
        _set(repaired, loc, mended)
    for loc in sorted(dropped, reverse=True):
        container = _at(repaired, loc[:-1])
        if isinstance(container, list):
            del container[int(loc[-1])]
    return repaired


_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})
"""Pydantic's error types for an item that should be an object and is not."""


def _is_list_item(loc: tuple[int | str, ...]) -> bool:
    return len(loc) > 1 and isinstance(loc[-1], int)


def _at(target: Any, loc: tuple[int | str, ...]) -> Any:
    for part in loc:
        target = target[part]
    return target


def _mend(error_type: str, value: Any) -> tuple[DeviationKind, Any]:
    if error_type == "missing":
        return DeviationKind.MISSING, None
    if value is None:
        return DeviationKind.NULL, None
    if error_type == "enum" and isinstance(value, str):
        return DeviationKind.UNKNOWN_ENUM, value
    if isinstance(value, str) and error_type in {"int_type", "float_type"}:
        number = _number(value)
        if number is not None:
            return DeviationKind.NUMBER_AS_STRING, number
    if isinstance(value, str) and error_type == "bool_type" and value.strip().lower() in {"true", "false"}:
        return DeviationKind.BOOL_AS_STRING, value.strip().lower() == "true"
    if error_type == "string_type" and _is_number(value):
        return DeviationKind.NUMBER_AS_TEXT, value  # its exact text replaces it (`_repair`)
    if error_type.startswith("datetime"):
        return _instant(value)
    return DeviationKind.INVALID, None


EPOCH_MILLISECONDS_FROM = 1e11
"""An epoch number at least this large counts milliseconds, a smaller one seconds: 1e11 seconds is the
year 5138, 1e11 milliseconds March 1973."""


def _instant(value: Any) -> tuple[DeviationKind, Any]:
    """An instant the service sent in another form than ISO 8601 date-time: a date alone (midnight UTC),
    or epoch seconds or milliseconds."""
    try:
        if isinstance(value, str):
            day = date.fromisoformat(value.strip())
            return DeviationKind.DATE_ONLY, datetime(day.year, day.month, day.day, tzinfo=UTC)
        if _is_number(value):
            if abs(value) >= EPOCH_MILLISECONDS_FROM:
                return DeviationKind.EPOCH_MILLISECONDS, datetime.fromtimestamp(value / 1000, UTC)
            return DeviationKind.EPOCH_SECONDS, datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        pass
    return DeviationKind.INVALID, None


def _number(value: str) -> int | float | None:
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


def _set(target: Any, loc: tuple[int | str, ...], value: Any) -> None:
    target = _at(target, loc[:-1])
    if isinstance(target, dict) and value is None:
        # Left out rather than null: the field's default (None) then stands, and no validator of the
        # model that refuses an explicit null (the user's status) rejects what the contract tolerates.
        target.pop(loc[-1], None)
    elif isinstance(target, (dict, list)):
        target[loc[-1]] = value  # type: ignore[index]


@cache
def tolerant_model(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with every field optional and every enum widened to text: what a mended record fits.
    A subclass, so the rows code reads it as the model it is."""
    fields: dict[str, Any] = {
        name: (_widen(info.annotation) | None, Field(None, alias=info.alias))
        for name, info in model.model_fields.items()
    }
    return create_model(f"Tolerant{model.__name__}", __base__=model, **fields)


def _widen(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin is Annotated:
        return annotation
    if origin in (Union, UnionType):
        widened = [_widen(arg) for arg in get_args(annotation)]
        result = widened[0]
        for arg in widened[1:]:
            result = result | arg
        return result
    if origin is list:
        (item,) = get_args(annotation)
        return list[_widen(item)]  # type: ignore[misc]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return annotation | str
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return tolerant_model(annotation)
    return annotation
