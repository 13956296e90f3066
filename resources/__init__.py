"""The typed client of the Authority Delegation Management Service and its Dagster resource.

Public surface: `AdmClient` and its `ClientSettings`; `AdmClientResource` for Dagster; `PageStream`
(what `AdmClient.iter_pages` returns); `MetricsSnapshot`; the exception tree rooted at `ServiceError`
(see `resources.errors`). The client's ``ConnectionError`` is exported as ``APIConnectionError`` so that
``from resources import *`` does not shadow the builtin; ``resources.ConnectionError`` names it too.
"""

from resources.client import AdmClient
from resources.dagster_resource import AdmClientResource
from resources.errors import (
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
from resources.errors import ConnectionError as APIConnectionError
from resources.errors import ConnectionError as ConnectionError
from resources.metrics import MetricsSnapshot
from resources.paging import PageStream
from resources.ratelimit import clear_buckets
from resources.settings import ClientSettings, Environment, RatePlan

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
