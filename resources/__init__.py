"""The typed client of the Authority Delegation Management Service and its Dagster resource.

Public surface: `AdmClient` and its `ClientSettings`; `AdmClientResource` for Dagster; `PageStream`
(what `AdmClient.iter_pages` returns); `MetricsSnapshot`; the exception tree rooted at `ServiceError`
(see `resources.errors`; ``APIConnectionError`` is named as openai-python names it: the builtin
``ConnectionError`` stays unshadowed).
"""

from typing import TYPE_CHECKING, Any

from resources.client import AdmClient
from resources.errors import (
    APIConnectionError,
    AuthenticationError,
    NotFoundError,
    PagingDriftError,
    PermissionDeniedError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    ServiceError,
    ValidationError,
    WriteOutcomeUnknown,
    WriteResponseFormatError,
)
from resources.metrics import MetricsSnapshot
from resources.paging import PageStream
from resources.ratelimit import clear_buckets
from resources.settings import ClientSettings, Environment, RatePlan

if TYPE_CHECKING:
    from resources.dagster_resource import AdmClientResource


def __getattr__(name: str) -> Any:
    # Dagster is imported by whoever asks for its resource, not by every user of the client (importing
    # Dagster costs more than half a second).
    if name == "AdmClientResource":
        from resources.dagster_resource import AdmClientResource

        return AdmClientResource
    raise AttributeError(f"module 'resources' has no attribute {name!r}")


__all__ = [
    "APIConnectionError",
    "AdmClient",
    "AdmClientResource",
    "AuthenticationError",
    "ClientSettings",
    "Environment",
    "MetricsSnapshot",
    "NotFoundError",
    "PageStream",
    "PagingDriftError",
    "PermissionDeniedError",
    "RateLimitError",
    "RatePlan",
    "ResponseFormatError",
    "ServerError",
    "ServiceError",
    "ValidationError",
    "WriteOutcomeUnknown",
    "WriteResponseFormatError",
    "clear_buckets",
]
