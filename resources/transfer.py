"""One HTTP exchange as RFC 9110 and RFC 8259 allow a service to answer it.

- **A deadline per request.** httpx bounds each read of a body (``read_timeout_s``), not the body: a
  service trickling 4 bytes every 2 s never trips a 30 s read timeout and holds a run for as long as it
  trickles. Each request also gets a total deadline (``request_deadline_s``), from before it connects to
  its body's last byte, checked as each part of the body arrives; past it the request fails as a
  `httpx.ReadTimeout` naming the endpoint, which the retry policy treats as any timeout. A single read
  can overrun the deadline by at most the read timeout.
- **Redirects.** A 307 or 308 (RFC 9110 15.4.8, 15.4.9: the same method and body, at another address) to
  the same origin (scheme, host and port) is followed, at most `MAX_REDIRECTS` times; the credentials go
  with it because they go to the same service. A redirect to another origin is refused, never followed:
  a bearer token must not reach an address nobody configured. Other 3xx are not followed (a 301, 302 or
  303 may turn the request into a GET) and fail as the answers they are.
- **A UTF-8 byte order mark** before a JSON body is ignored (RFC 8259 8.1 lets a parser do so).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx

from resources.errors import ServiceError

MAX_REDIRECTS = 5
"""Same-origin 307/308 redirects followed for one request."""
FOLLOWED = frozenset({307, 308})
"""The redirects that keep the method and body, and so may be followed for any request."""
UTF8_BOM = b"\xef\xbb\xbf"


class _Deadline(httpx.SyncByteStream):
    """A response body that fails once its request's deadline has passed."""

    def __init__(self, stream: httpx.SyncByteStream, until: float, late: httpx.ReadTimeout) -> None:
        self._stream, self._until, self._late = stream, until, late

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._until:
                raise self._late
            yield chunk

    def close(self) -> None:
        self._stream.close()


def send_within(
    transport: httpx.BaseTransport, request: httpx.Request, deadline_s: float, endpoint: str
) -> httpx.Response:
    """Send ``request`` over ``transport`` and read its whole answer, or raise `httpx.ReadTimeout` once
    ``deadline_s`` has passed since it was sent (connecting included)."""
    until = time.monotonic() + deadline_s
    late = httpx.ReadTimeout(
        f"{endpoint}: no complete answer within the deadline of {deadline_s:g} s per request",
        request=request,
    )
    try:
        response = transport.handle_request(request)
    except httpx.RequestError as error:
        error.request = request  # as httpx's client does: the error names what it was about
        raise
    response.request = request
    try:
        if time.monotonic() > until:
            raise late
        if isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _Deadline(response.stream, until, late)
        response.read()
    finally:
        response.close()
    return response


def redirect_target(response: httpx.Response, method: str, path: str) -> httpx.URL | None:
    """Where a same-origin 307 or 308 sends the request again; None when the answer is no such redirect.
    Raises `ServiceError` for one to another origin."""
    location = response.headers.get("Location")
    if response.status_code not in FOLLOWED or not location:
        return None
    target = response.request.url.join(location)
    if _origin(target) != _origin(response.request.url):
        raise ServiceError(
            f"a redirect to another origin ({_shown(target)}) is not followed: the credentials go only "
            "to the service configured",
            method=method,
            path=path,
            status=response.status_code,
        )
    return target


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _shown(url: httpx.URL) -> str:
    """An origin as text (never the user information a location may carry)."""
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port is not None else "")


def json_bytes(response: httpx.Response) -> bytes:
    """The body, without a UTF-8 byte order mark before it."""
    return response.content.removeprefix(UTF8_BOM)
