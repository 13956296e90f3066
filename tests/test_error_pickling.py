"""Every error of the product crosses a process boundary (Dagster's multiprocess executor, a worker pool):
a pickle round trip keeps its class, its message and every attribute."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from models.base import ErrorBody
from models.errors import AuthoritySyncError
from pipelines.hr.encodings import EncodingRefusedError
from pipelines.hr.problems import Problem
from pipelines.stopping import RunInterruptedError
from resources.errors import (
    APIConnectionError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    ServiceError,
    WriteOutcomeUnknown,
    WriteResponseFormatError,
)

PACKAGES = ("models", "resources", "warehouse", "pipelines")
"""The product's packages (the emulator's errors are the service's, not the product's)."""

CONTEXT: dict[str, Any] = {"method": "PATCH", "path": "/users/v1/u-1", "status": 503}
_FORMAT = ResponseFormatError.mismatch("E3", "data.0.id", "not a UUID", **CONTEXT)

EXAMPLES: dict[type[AuthoritySyncError], Callable[[], AuthoritySyncError]] = {
    ServiceError: lambda: ServiceError(
        "refused",
        body=ErrorBody.model_validate({"statusCode": 400, "message": "bad", "error": "Bad Request"}),
        **CONTEXT,
    ),
    RateLimitError: lambda: RateLimitError("slow down", retry_after_s=2.5, **CONTEXT),
    APIConnectionError: lambda: APIConnectionError("ReadTimeout after sending", request_sent=True, **CONTEXT),
    ResponseFormatError: lambda: _FORMAT,
    WriteOutcomeUnknown: lambda: WriteOutcomeUnknown(ServerError("down", **CONTEXT)),
    WriteResponseFormatError: lambda: WriteResponseFormatError(_FORMAT),
    EncodingRefusedError: lambda: EncodingRefusedError(Problem("a.csv", 3, "", "encoding", "not UTF-8")),
    RunInterruptedError: lambda: RunInterruptedError("stopped by SIGTERM", 15),
}
"""An instance of each error whose ``__init__`` takes more than a message; every other class is built
with one line of text."""


def _subclasses(root: type[AuthoritySyncError]) -> Iterator[type[AuthoritySyncError]]:
    for subclass in root.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def _product_errors() -> list[type[AuthoritySyncError]]:
    """Every subclass of the product's error root, each module of the product imported first."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            importlib.import_module(module.name)
    found = {error for error in _subclasses(AuthoritySyncError) if error.__module__.startswith(PACKAGES)}
    return sorted(found, key=lambda error: f"{error.__module__}.{error.__qualname__}")


@pytest.mark.parametrize("error_class", _product_errors(), ids=lambda error: error.__qualname__)
def test_every_error_of_the_product_survives_a_pickle_round_trip(
    error_class: type[AuthoritySyncError],
) -> None:
    error = EXAMPLES.get(error_class, lambda: error_class("a one-line message"))()
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes, just made
    assert type(copy) is error_class
    assert str(copy) == str(error) and copy.args == error.args
    assert vars(copy) == vars(error)


def test_the_enumeration_finds_the_errors_of_every_layer() -> None:
    found = {error.__name__ for error in _product_errors()}
    assert {"APIConnectionError", "StagingError", "SettingsError", "EncodingRefusedError"} <= found


def test_the_client_connection_error_does_not_shadow_the_builtin() -> None:
    import resources.errors

    assert not hasattr(resources.errors, "ConnectionError")
