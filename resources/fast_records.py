"""The record contract's fast path: a page read by msgspec, in C, into structs derived from the models.

Validating a page of 100 decisions with pydantic cost 11-18 ms of CPU, the largest part of a page's cost
(issue 31, docs/benchmarks.md); msgspec reads the same page into structs of the same fields in about 1 ms.
The fast path reads only what it can read exactly as the strict pydantic read would, and declines the rest
(the page is then read by pydantic as before, under the whole contract):

- a model with anything msgspec cannot express the same way (a pattern, a validator or a serialiser of its
  own, a default built by a factory or a mutable one, another configuration) has no struct: its pages always
  go to pydantic. One validator is understood: `models.base.refuse_null` (a field omitted is None, a null
  one is refused), read as the field's type without None, defaulting to None;
- an instant is taken only in the service's own form (`models.base.format_timestamp`,
  ``2026-03-31T00:00:00.000Z``), read by the standard library: other forms that pydantic accepts (offsets,
  more or fewer decimals) go to pydantic, which converts them;
- a record or item with a key its model does not declare (pydantic keeps it, and the content hash covers
  it), or declares under the Python name instead of the wire name;
- a float of 1e16 or more in magnitude (pydantic writes its exponent as ``1e+16`` and msgspec as ``1e16``:
  the content hash, defined by pydantic's serialisation, would differ);
- anything else msgspec refuses.

A struct keeps the model's field names, so the flatten functions of `warehouse.rows` read it as they read
the model, and the service's own text of its record (`RecordStruct.raw_json`). tests/test_fast_records.py
proves the class: pages drawn from what JSON and the models' types allow give the same rows by either path,
cell by cell with ``raw`` and ``content_hash``, or the fast path declines them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, ParamSpec, TypeVar, Union, cast, get_args, get_origin

import annotated_types
import msgspec
from pydantic import BaseModel

from models.base import Envelope, Page, ServiceModel, Timestamp, refuse_null
from models.errors import AuthoritySyncError

FLOAT_LIMIT = 1e16
"""The magnitude from which pydantic and msgspec write a float differently (``1e+16``, ``1e16``)."""

_TIMESTAMP = get_args(Timestamp)[1:]
"""What pydantic's field info holds for a `models.base.Timestamp` besides ``datetime``."""
S = TypeVar("S", bound=msgspec.Struct)
T = TypeVar("T")
P = ParamSpec("P")

_BUILDING = threading.RLock()


def built_once(build: Callable[P, T]) -> Callable[P, T]:
    """``build`` cached, each call under one lock for every struct type and decoder: msgspec builds a
    struct type's decoding information when a decoder of it is first made, and two threads doing that at
    once for the same type crashed the process (SIGSEGV: the extract reads the first pages of several
    lists at once). Reentrant, as struct types are built within one another."""
    cached = functools.cache(build)

    @functools.wraps(build)
    def once(*args: P.args, **kwargs: P.kwargs) -> T:
        with _BUILDING:
            return cached(*args, **kwargs)  # type: ignore[arg-type]  # builders take hashable arguments

    return once


class UnsupportedError(AuthoritySyncError, TypeError):
    """A model, or a type in it, that msgspec cannot read exactly as pydantic does."""


INSTANT_TEXT = Annotated[
    str, msgspec.Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\Z")
]
"""A `models.base.Timestamp` field as msgspec reads it: the service's own form
(`models.base.format_timestamp`, ASCII digits), made a ``datetime`` once the page is read."""


class RecordStruct(msgspec.Struct, dict=True):
    """A record read by the fast path: its model's fields by their Python names, and the service's text
    of the record (kept in the instance's ``__dict__``, as `models.base.ServiceModel` keeps it in a slot)."""

    model: ClassVar[type[ServiceModel]]
    """The model the struct is derived from."""

    def keep_received(self, text: str) -> None:
        """Remember the service's own JSON text of this record."""
        self._received = text

    def raw_json(self) -> str:
        """The record's JSON as the service sent it (the fast path keeps it for every record it reads)."""
        text: str = self._received
        return text


def _as_struct_type(annotation: Any) -> Any:
    """A pydantic field's type as a struct's, or `UnsupportedError`."""
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _annotated(arguments[0], arguments[1:])
    if origin in (Union, UnionType):
        return Union[tuple(_as_struct_type(argument) for argument in arguments)]  # noqa: UP007 - built
    if origin is list:
        return list[_as_struct_type(arguments[0])]  # type: ignore[misc]
    if origin is dict and arguments == (str, Any):
        return dict[str, Any]
    if annotation in (str, bool, int, NoneType):
        return annotation
    if annotation is float:
        return Annotated[float, msgspec.Meta(gt=-FLOAT_LIMIT, lt=FLOAT_LIMIT)]
    if isinstance(annotation, type) and issubclass(annotation, Enum) and issubclass(annotation, str):
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, ServiceModel):
        return struct_of(annotation)
    raise UnsupportedError(f"no struct type for {annotation!r}")


def _annotated(base: Any, metadata: tuple[Any, ...]) -> Any:
    """A type with pydantic metadata: a `models.base.Timestamp`, or an integer within bounds."""
    if base is datetime and tuple(metadata) == _TIMESTAMP:
        return INSTANT_TEXT
    if base is int and all(isinstance(item, annotated_types.Ge | annotated_types.Le) for item in metadata):
        bounds: dict[str, Any] = {}
        for item in metadata:
            bounds |= {"ge": item.ge} if isinstance(item, annotated_types.Ge) else {"le": item.le}
        return Annotated[int, msgspec.Meta(**bounds)]
    raise UnsupportedError(f"no struct type for {base!r} with {metadata!r}")


@built_once
def struct_of(model: type[ServiceModel]) -> type[RecordStruct]:
    """The struct of ``model``: its fields under their wire names, with their types and defaults; keys it
    does not declare refused. `UnsupportedError` when msgspec cannot read it exactly as pydantic does."""
    decorators = model.__pydantic_decorators__
    null_refused = _null_refused(model)
    if model.model_config != ServiceModel.model_config or any(
        (
            decorators.validators,
            decorators.root_validators,
            decorators.model_validators,
            decorators.field_serializers,
            decorators.model_serializers,
            decorators.computed_fields,
        )
    ):
        raise UnsupportedError(f"{model.__name__} has a configuration or validators of its own")
    fields = []
    for name, info in model.model_fields.items():
        annotation = _without_none(info.annotation) if name in null_refused else info.annotation
        kind = _as_struct_type(Annotated[(annotation, *info.metadata)] if info.metadata else annotation)
        wire = info.alias or name
        if info.is_required():
            fields.append((name, kind, msgspec.field(name=wire)))
        elif info.default_factory is None and isinstance(info.default, _CONSTANT_DEFAULTS):
            # Neither reader validates a default, and both write it as they write a value read.
            fields.append((name, kind, msgspec.field(default=info.default, name=wire)))
        else:
            raise UnsupportedError(f"{model.__name__}.{name}: a default msgspec cannot share")
    struct = msgspec.defstruct(
        f"{model.__name__}Struct",
        fields,
        bases=(RecordStruct,),
        kw_only=True,
        # A record's key that its model does not declare is kept by pydantic and hashed: such a record
        # is read by pydantic. The envelope's and the page's own keys matter to nothing (nor are they kept).
        forbid_unknown_fields=not issubclass(model, Envelope | Page),
        namespace={"model": model},
    )
    return cast(type[RecordStruct], struct)


_CONSTANT_DEFAULTS = (NoneType, bool, int, str)
"""Defaults a struct field takes as they are: immutable, and written the same way by pydantic and msgspec."""


def _null_refused(model: type[ServiceModel]) -> frozenset[str]:
    """The fields of ``model`` whose one validator is `models.base.refuse_null` (omitted: None; null:
    refused): a struct reads them as their type without None, defaulting to None, so that msgspec refuses an
    explicit null as pydantic does. `UnsupportedError` for any other field validator."""
    fields: set[str] = set()
    for decorator in model.__pydantic_decorators__.field_validators.values():
        if getattr(decorator.func, "__func__", None) is not refuse_null or decorator.info.mode != "before":
            raise UnsupportedError(f"{model.__name__} has a field validator of its own")
        fields.update(decorator.info.fields)
    return frozenset(fields)


def _without_none(annotation: Any) -> Any:
    """``annotation`` (``X | None``) without None."""
    kept = tuple(argument for argument in get_args(annotation) if argument is not NoneType)
    if get_origin(annotation) not in (Union, UnionType) or len(kept) != 1:
        raise UnsupportedError(f"{annotation!r} is not one type or None")
    return kept[0]


@built_once
def _page_decoder(model: type[ServiceModel]) -> msgspec.json.Decoder[Any] | None:
    """The strict decoder of a page envelope of ``model``'s records, or None when the model has no struct."""
    try:
        return msgspec.json.Decoder(struct_of(Envelope[Page[model]]), strict=True)  # type: ignore[valid-type]
    except UnsupportedError:
        return None


def fast_page(model: type[BaseModel], body: bytes) -> Envelope[Any] | None:
    """The page ``body`` of ``model``'s records read the fast way: its envelope, holding structs of its
    records (without their texts, which the contract keeps), or None when the fast path declines it."""
    decoder = _page_decoder(model) if issubclass(model, ServiceModel) else None
    if decoder is None:
        return None
    try:
        read = _instants_read(decoder.decode(body))
    except (msgspec.DecodeError, ValueError):  # not read exactly (an impossible day too): read by pydantic
        return None
    page = Page[Any].model_construct(**msgspec.structs.asdict(read.data))
    return Envelope[Any].model_construct(**msgspec.structs.asdict(read) | {"data": page})


def _instants_read(struct: S) -> S:
    """``struct`` with its instants, read as text, made ``datetime`` (UTC), those of the structs it holds
    too; ValueError for an impossible day or time."""
    instants, nested = _instant_fields(type(struct))
    for name in instants:
        value = getattr(struct, name)
        if value is not None:
            setattr(struct, name, datetime.fromisoformat(value))
    for name in nested:
        value = getattr(struct, name)
        for item in value if isinstance(value, list) else () if value is None else (value,):
            _instants_read(item)
    return struct


@built_once
def _instant_fields(struct: type[msgspec.Struct]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of ``struct`` read as `INSTANT_TEXT`, and those holding structs (alone or in a list) that
    have some."""
    instants, nested = [], []
    for found in msgspec.structs.fields(struct):
        options = get_args(found.type) if get_origin(found.type) in (Union, UnionType) else (found.type,)
        if INSTANT_TEXT in options:
            instants.append(found.name)
        held = [get_args(option)[0] if get_origin(option) is list else option for option in options]
        if any(_is_struct(kind) and any(_instant_fields(kind)) for kind in held):
            nested.append(found.name)
    return tuple(instants), tuple(nested)


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)
