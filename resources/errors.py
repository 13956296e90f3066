"""The client's exception tree: one class per kind of failure, each carrying what a caller needs to act.

::

    ServiceError
    ├── AuthenticationError        401: token or access key refused
    ├── PermissionDeniedError      403
    ├── NotFoundError              404
    ├── ValidationError            400 / 422: the request was refused as invalid
    ├── RateLimitError             429 (retried first; raised when attempts run out)
    ├── ServerError                5xx on a read, after retries
    ├── APIConnectionError         no usable answer: refused, timed out, cut off
    ├── TLSError                   the TLS handshake failed: an untrusted certificate (never retried)
    ├── StoppedError               the client was stopped (`AdmClient.stop`): the request was not sent
    ├── ResponseFormatError        the answer does not match the spec's shape
    ├── WriteOutcomeUnknown        a write failed after it was sent: it may have been applied
    │   └── WriteResponseFormatError  (also a ResponseFormatError) a write's answer could not be read
    └── PagingDriftError           a list kept changing while it was paged

Every error carries ``method``, ``path`` (the path only: never the query string or a header),
``status`` (None without an answer), the service's ``message`` and the error ``body`` (parsed JSON or
text). Neither the token nor the access key is ever part of an error.

Every error survives a pickle round trip with its message and attributes (see `AuthoritySyncError`), so
it can cross a process boundary (Dagster's multiprocess executor, a worker pool).
"""

from __future__ import annotations

import math
import ssl
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from pydantic import ValidationError as PydanticValidationError

from models.base import ErrorBody
from models.errors import AuthoritySyncError

MAX_BODY_TEXT = 2_000
"""Characters of a non-JSON error body kept on the error (an HTML error page can be long)."""
MAX_DETAIL = 200
"""Characters of a transport error's own message kept on an `APIConnectionError`."""


class ServiceError(AuthoritySyncError):
    """Base of every error the client raises."""

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        path: str | None = None,
        status: int | None = None,
        body: ErrorBody | str | None = None,
    ) -> None:
        self.message = message
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = " ".join(part for part in (self.method, self.path) if part)
        status = f" -> {self.status}" if self.status is not None else ""
        return f"{where}{status}: {self.message}" if where else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class AuthenticationError(ServiceError):
    """401: the token was refused, or the access key could not be exchanged."""


class PermissionDeniedError(ServiceError):
    """403: the token's tenant or user may not do this."""


class NotFoundError(ServiceError):
    """404: no such record (or path)."""


class ValidationError(ServiceError):
    """400 or 422: the service refused the request as invalid; ``field`` names the offending field when
    the service says."""

    @property
    def field(self) -> str | None:
        """The offending field, when the error body names it."""
        return self.body.field if isinstance(self.body, ErrorBody) else None


class RateLimitError(ServiceError):
    """429: over the tenant's rate budget. ``retry_after_s`` is the service's Retry-After, if any."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, **context: Any) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message, **context)


class ServerError(ServiceError):
    """5xx: the service failed."""


class APIConnectionError(ServiceError):
    """No usable answer: the connection was refused, timed out or was cut mid-response.

    ``request_sent`` is False when the failure is known to have happened before the request left
    (connect error, connect or pool timeout): then even a write was certainly not applied.
    """

    def __init__(self, message: str, *, request_sent: bool, **context: Any) -> None:
        self.request_sent = request_sent
        super().__init__(message, **context)


class TLSError(ServiceError):
    """The TLS handshake failed for a reason that will not pass by itself: a certificate that is not
    trusted (a proxy re-signing TLS with its own CA, a wrong host, an expired certificate) or a handshake
    the two sides cannot agree on. Nothing was sent; trying again would fail the same way, so neither the
    client nor a Dagster step retries it."""


class StoppedError(ServiceError):
    """The client was stopped (`AdmClient.stop`: the run is stopping): this request was not sent, and no
    later one will be."""


TLS_ADVICE = (
    "if your network re-signs TLS (a corporate proxy), trust its CA: install it in the OS trust store or "
    "set ADM_CA_BUNDLE to its PEM file (docs/operations.md, corporate network)"
)
"""How to trust a CA, as every `TLSError` says it."""


class ResponseFormatError(ServiceError):
    """A response that is not valid JSON, or whose JSON does not match the endpoint's model.

    ``endpoint`` names the endpoint (E1..E14, exchange, users, ...), ``field_path`` the first offending
    field (``data.data.3.createdAt``), ``malformed`` is True when the body is not JSON at all.
    """

    def __init__(
        self, message: str, *, endpoint: str, field_path: str, malformed: bool, **context: Any
    ) -> None:
        self.endpoint = endpoint
        self.field_path = field_path
        self.malformed = malformed
        super().__init__(message, **context)

    @classmethod
    def mismatch(cls, endpoint: str, field_path: str, problem: str, **context: Any) -> ResponseFormatError:
        """The error of a well-formed answer that is not what the spec promises."""
        return cls(
            f"{endpoint} response does not match the spec: {problem}",
            endpoint=endpoint,
            field_path=field_path,
            malformed=False,
            **context,
        )

    @classmethod
    def from_validation(
        cls, endpoint: str, error: PydanticValidationError, **context: Any
    ) -> ResponseFormatError:
        """The error of a body that failed ``model_validate_json``: endpoint, field path and rule."""
        first = error.errors(include_url=False, include_input=False)[0]
        field_path = ".".join(str(part) for part in first["loc"]) or "<body>"
        if first["type"] != "json_invalid":
            return cls.mismatch(endpoint, field_path, f"{field_path}: {first['msg']}", **context)
        where = str(first["msg"]).removeprefix("Invalid JSON: ")
        if any(marker in where for marker in _BROKEN_TEXT):
            # Text that is not Unicode (invalid UTF-8, a lone surrogate) is what the service stored: the
            # same answer comes back on every try, so it is a contract breach, not a transport fault.
            return cls.mismatch(
                endpoint, field_path, f"the body holds text that is not Unicode ({where})", **context
            )
        if "recursion limit" in where:
            # Valid JSON nested deeper than the parser follows: the same answer comes back on every try.
            return cls.mismatch(
                endpoint, field_path, f"the body is nested too deep to read ({where})", **context
            )
        return cls(
            f"{endpoint} response is not valid JSON",
            endpoint=endpoint,
            field_path=field_path,
            malformed=True,
            **context,
        )


_BROKEN_TEXT = ("unicode code point", "surrogate", "hex escape")
"""Markers of pydantic's JSON errors about text that is not Unicode (deterministic, unlike a cut body)."""

WRITE_ADVICE = "the write may have been applied; verify it by reading before deciding, do not repeat it"


class WriteOutcomeUnknown(ServiceError):  # noqa: N818 - the name callers match on
    """A write (PATCH, PUT, POST, DELETE) failed after the request was sent: a 5xx, a read timeout, a
    dropped connection or an unreadable answer. The service may have applied it. Read the record to find
    out; repeating the write blindly could apply it twice. The original failure is ``__cause__``."""

    def __init__(self, cause: ServiceError) -> None:
        # Not super(): in WriteResponseFormatError the MRO continues with ResponseFormatError.__init__,
        # whose extra arguments are not known here; that subclass copies them from the cause itself.
        ServiceError.__init__(
            self,
            f"{cause.message}; {WRITE_ADVICE}",
            method=cause.method,
            path=cause.path,
            status=cause.status,
            body=cause.body,
        )
        self.__cause__ = cause


class WriteResponseFormatError(WriteOutcomeUnknown, ResponseFormatError):
    """A write's answer could not be read (both a `WriteOutcomeUnknown` and a `ResponseFormatError`)."""

    def __init__(self, cause: ResponseFormatError) -> None:
        WriteOutcomeUnknown.__init__(self, cause)
        self.endpoint = cause.endpoint
        self.field_path = cause.field_path
        self.malformed = cause.malformed


class PagingDriftError(ServiceError):
    """A paged list kept changing (its ``total`` moved) in every pass allowed: no consistent read."""


_STATUS_ERRORS: dict[int, type[ServiceError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: ValidationError,
    429: RateLimitError,
}


def parse_error_body(response: httpx.Response) -> ErrorBody | str:
    """The error body as JSON ``{statusCode, message, error, field}`` when it is, else its text."""
    try:
        return ErrorBody.model_validate_json(response.content)
    except PydanticValidationError:
        return response.text[:MAX_BODY_TEXT]


def error_message(body: ErrorBody | str, response: httpx.Response) -> str:
    """What the service said, or the reason phrase when it said nothing."""
    if isinstance(body, ErrorBody):
        return "; ".join(body.message) if isinstance(body.message, list) else body.message
    return body.strip() or response.reason_phrase or f"HTTP {response.status_code}"


def retry_after_seconds(response: httpx.Response, now: datetime | None = None) -> float | None:
    """The Retry-After header in seconds: delay-seconds (the form public-reference.md documents) or an
    HTTP date (RFC 9110 allows both), measured from ``now``; None when absent or unreadable."""
    value = (response.headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT by definition
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def error_for_response(method: str, path: str, response: httpx.Response) -> ServiceError:
    """The typed error of an unsuccessful answer."""
    body = parse_error_body(response)
    status = response.status_code
    context: dict[str, Any] = {"method": method, "path": path, "status": status, "body": body}
    message = error_message(body, response)
    if status == 429:
        return RateLimitError(message, retry_after_s=retry_after_seconds(response), **context)
    return _error_class(status)(message, **context)


def _error_class(status: int) -> type[ServiceError]:
    return _STATUS_ERRORS.get(status, ServerError if status >= 500 else ServiceError)


def error_in_envelope(method: str, path: str, response: httpx.Response) -> ServiceError | None:
    """The typed error of a successful HTTP answer whose envelope reports a failure (``statusCode`` 400 or
    more: some services answer 200 and put the real status in the body), quoting the service's message;
    None when the body reports none."""
    try:
        body = ErrorBody.model_validate_json(response.content)
    except PydanticValidationError:
        return None
    if body.status_code < 400:
        return None
    message = "; ".join(body.message) if isinstance(body.message, list) else body.message
    said = f"HTTP {response.status_code} whose body says statusCode {body.status_code}: {message}"
    context: dict[str, Any] = {"method": method, "path": path, "status": body.status_code, "body": body}
    if body.status_code == 429:
        return RateLimitError(said, retry_after_s=retry_after_seconds(response), **context)
    return _error_class(body.status_code)(said, **context)


_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


_PASSING_TLS = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)
"""Handshakes cut off by the network (a proxy's timeout, a dropped connection): may pass, retried."""


def error_for_transport(method: str, path: str, error: httpx.RequestError) -> ServiceError:
    """The `TLSError` of a refused handshake, else the `APIConnectionError` of a failure without a usable
    answer, which says whether the request can have left."""
    refusal = _tls_refusal(error)
    if refusal is not None:
        return TLSError(f"{refusal}; {TLS_ADVICE}", method=method, path=path)
    sent = not isinstance(error, _NOT_SENT)
    detail = str(error)[:MAX_DETAIL] or type(error).__name__
    return APIConnectionError(
        f"{type(error).__name__} {'after' if sent else 'before'} the request was sent: {detail}",
        request_sent=sent,
        method=method,
        path=path,
    )


def _tls_refusal(error: BaseException) -> str | None:
    """What a failed handshake says about the certificate or the protocol, or None when ``error`` holds no
    TLS failure that would repeat."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    if cause is None or isinstance(cause, _PASSING_TLS):
        return None
    where = _host(error)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"the certificate of {where} is not trusted: {cause.verify_message} ({cause.reason})"
    return f"the TLS handshake with {where} failed: {cause.reason or cause}"


def _host(error: BaseException) -> str:
    """The host an httpx error was about (httpx attaches the request; a RuntimeError says it did not)."""
    try:
        return error.request.url.host if isinstance(error, httpx.RequestError) else "the service"
    except RuntimeError:
        return "the service"
