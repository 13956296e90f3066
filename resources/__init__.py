"""The typed client of the Authority Delegation Management Service.

Public surface: `AdmClient` and its `ClientSettings`; `PageStream`
(what `AdmClient.iter_pages` returns); `MetricsSnapshot`; the exception tree rooted at `ServiceError`
(see `resources.errors`; ``APIConnectionError`` is named as openai-python names it: the builtin
``ConnectionError`` stays unshadowed).
"""

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

__all__ = [
    "APIConnectionError",
    "AdmClient",
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
