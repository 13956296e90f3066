"""Where a client's requests go: the proxy the environment names (for https only), the shared TLS context,
and a connection pool that a failed tunnel cannot block.

Proxies: ``HTTPS_PROXY``/``ALL_PROXY`` (and ``NO_PROXY``) carry https requests, which a proxy only tunnels
(``CONNECT``): the token stays encrypted end to end. A plain-http address is always reached directly, never
through ``HTTP_PROXY``/``ALL_PROXY``: a proxy would read the token and the access key in clear, and the
plain-http address the settings accept is this machine's own (or one the operator explicitly allowed).

Failed tunnels: httpcore (1.0.9, its newest release) keeps a ``CONNECT`` tunnel whose TLS handshake failed
in its pool for good (encode/httpcore#1023, fixes proposed upstream and not released): after as many
failures as the pool holds connections, every request waits for a pool timeout. Behind a proxy, a failed
connection attempt therefore replaces the pool; the old one is closed once its requests in flight end.
"""

from __future__ import annotations

import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx

from resources.settings import ClientSettings
from resources.tls import tls_context

DEFAULT_HEADERS = {"Accept-Encoding": "gzip, deflate", "Connection": "keep-alive"}
"""What httpx's own client adds to every request (the encodings its installed decoders read)."""


class Channel:
    """The requests of one `AdmClient`: its address, timeouts, pool size and headers, over ``transport`` (a
    test's stand-in) or the network as `network_transport` reaches it.

    Each request is one `httpx.Request` handed straight to the transport. ``httpx.Client`` would add its
    own layers per request (merging the path into the base URL, parsing it twice more, a cookie jar, auth
    and redirect flows): about a third of a small call's CPU, for nothing this client uses. It
    authenticates and follows redirects itself (`resources.transfer`), and it keeps no cookies: a
    ``Set-Cookie`` from the service, or from anything on the way, is never sent back."""

    def __init__(self, settings: ClientSettings, transport: httpx.BaseTransport | None = None) -> None:
        size = settings.concurrency
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self.transport = transport or network_transport(settings, limits)
        self._base = settings.address.rstrip("/")
        self._headers = {**DEFAULT_HEADERS, "User-Agent": settings.user_agent, "Accept": "application/json"}
        self._timeout = httpx.Timeout(
            connect=settings.connect_timeout_s,
            read=settings.read_timeout_s,
            write=settings.write_timeout_s,
            pool=settings.pool_timeout_s,
        ).as_dict()

    def request(
        self,
        method: str,
        url: str | httpx.URL,
        params: dict[str, str] | None,
        body: dict[str, Any] | None,
        headers: dict[str, str],
    ) -> httpx.Request:
        """The request of ``method`` to ``url``: a path under the address (percent-encoded by
        `resources.endpoints`, so joining it as text cannot leave the address), or a whole address (a
        redirect's target)."""
        target = url if isinstance(url, httpx.URL) else self._base + url
        return httpx.Request(
            method,
            target,
            params=params,
            json=body,
            headers={**self._headers, **headers},
            extensions={"timeout": self._timeout},
        )

    def close(self) -> None:
        """Close the transport's connections."""
        self.transport.close()


def network_transport(settings: ClientSettings, limits: httpx.Limits) -> httpx.BaseTransport:
    """The network under the shared TLS context: straight to the address, or through the environment's
    proxy with a pool that is renewed after a failed connection attempt."""
    proxy = environment_proxy(settings.address)
    context = tls_context(settings.ca_bundle)
    make = partial(httpx.HTTPTransport, verify=context, limits=limits, proxy=proxy, trust_env=False)
    return RenewingTransport(make) if proxy else make()


def environment_proxy(address: str) -> str | None:
    """The proxy the environment names for ``address`` (``HTTPS_PROXY``, else ``ALL_PROXY``, unless
    ``NO_PROXY`` covers its host); None for a plain-http address, which is never sent through a proxy."""
    parts = urlsplit(address)
    if parts.scheme != "https" or urllib.request.proxy_bypass(parts.netloc):
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get("https") or proxies.get("all")


class RenewingTransport(httpx.BaseTransport):
    """Transports made by ``make``, the current one replaced after a failed connection attempt (see the
    module docstring); a replaced one is closed when its last response is."""

    def __init__(self, make: Callable[[], httpx.BaseTransport]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._current = make()
        self._users: Counter[httpx.BaseTransport] = Counter()
        self._retired: set[httpx.BaseTransport] = set()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send over the current transport; after a failed connection attempt, the next request gets a new
        one."""
        with self._lock:
            transport = self._current
            self._users[transport] += 1
        try:
            response = transport.handle_request(request)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            self._retire(transport)
            self._release(transport)
            raise
        except BaseException:
            self._release(transport)
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)  # a sync transport's answer
        response.stream = _Releasing(response.stream, partial(self._release, transport))
        return response

    def close(self) -> None:
        """Close every transport, the current and the replaced ones."""
        with self._lock:
            transports = [self._current, *self._retired]
            self._retired.clear()
        for transport in transports:
            transport.close()

    def _retire(self, transport: httpx.BaseTransport) -> None:
        with self._lock:
            if transport is self._current:
                self._current = self._make()
                self._retired.add(transport)

    def _release(self, transport: httpx.BaseTransport) -> None:
        with self._lock:
            self._users[transport] -= 1
            done = transport in self._retired and self._users[transport] <= 0
            if done:
                self._retired.discard(transport)
                del self._users[transport]
        if done:
            transport.close()


class _Releasing(httpx.SyncByteStream):
    """A response body that calls ``release`` once, when it is closed."""

    def __init__(self, stream: httpx.SyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()
