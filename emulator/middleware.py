"""Pure ASGI middleware: counts traffic per endpoint and applies the configured faults."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.faults import RateLimiter
from emulator.mutations import drift
from emulator.service import Emulator
from emulator.state import now

ADMIN_PREFIX = "/_admin"
UNCOUNTED = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")
DRIFTING = {"E8": "decisions", "delegations": "delegations"}


class FaultMiddleware:
    """Wraps the app: every service request is counted, then delayed, limited or broken as configured."""

    def __init__(self, app: ASGIApp, emulator: Emulator, classify: Callable[[Scope], str]) -> None:
        self.app = app
        self.emulator = emulator
        self.classify = classify
        self.limiter = RateLimiter()
        self.rng = random.Random(emulator.options.seed)
        self.list_requests = 0
        self.injected = 0

    def reset(self) -> None:
        """Start faults afresh: full rate budget, fault count zero, same random sequence."""
        self.limiter.reset()
        self.rng = random.Random(self.emulator.options.seed)
        self.list_requests = 0
        self.injected = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(ADMIN_PREFIX) or scope["path"] in UNCOUNTED:
            await self.app(scope, receive, send)
            return
        stats = self.emulator.stats
        endpoint = self.classify(scope)
        stats.requests[endpoint] += 1
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

        async def counted_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                stats.statuses[message["status"]] += 1
            await send(message)

        try:
            await self.handle(scope, receive, counted_send, endpoint)
        finally:
            stats.in_flight -= 1

    async def handle(self, scope: Scope, receive: Receive, send: Send, endpoint: str) -> None:
        """Apply latency, then rate limit, then the error, drift, drop and malformed faults."""
        faults = self.emulator.faults
        if faults.latency_ms or faults.jitter_ms:
            await asyncio.sleep((faults.latency_ms + self.rng.uniform(0, faults.jitter_ms)) / 1000)
        tenant_id = self.emulator.tenant_of(_header(scope, b"authorization"))
        if tenant_id is not None:
            wait = self.limiter.retry_after(tenant_id, faults)
            if wait is not None:
                self.emulator.stats.faults["429"] += 1
                await _error(
                    send, 429, "Too Many Requests", "Rate limit exceeded", {b"retry-after": str(wait)}
                )
                return
        targeted = self.targeted(scope["method"], endpoint)
        if targeted and self.rng.random() < faults.error_rate:
            self.injected += 1
            self.emulator.stats.faults["5xx"] += 1
            await _error(send, faults.error_status, "Internal Server Error", "Injected server error")
            return
        if tenant_id is not None and faults.drift_every and endpoint in DRIFTING:
            self.list_requests += 1
            if self.list_requests % faults.drift_every == 0:
                drift(self.emulator, self.emulator.tenants[tenant_id], DRIFTING[endpoint])
        mode = self.break_mode(targeted)
        if mode is None:
            await self.app(scope, receive, send)
            return
        self.injected += 1
        self.emulator.stats.faults[mode] += 1
        await self.app(scope, receive, _Breaker(send, mode))

    def targeted(self, method: str, endpoint: str) -> bool:
        """Whether error/drop/malformed faults may hit this request now."""
        faults = self.emulator.faults
        if not faults.targets(method, endpoint):
            return False
        if sum(self.emulator.stats.writes.values()) < faults.after_writes:
            return False
        return faults.max_faults is None or self.injected < faults.max_faults

    def break_mode(self, targeted: bool) -> str | None:
        """``drop``, ``malformed`` or None, drawn from the configured rates."""
        if not targeted:
            return None
        faults = self.emulator.faults
        draw = self.rng.random()
        if draw < faults.drop_rate:
            return "drop"
        if draw < faults.drop_rate + faults.malformed_rate:
            return "malformed"
        return None


class _Breaker:
    """A ``send`` that lets the route answer in full, then cuts or corrupts what reaches the client."""

    def __init__(self, send: Send, mode: str) -> None:
        self.send = send
        self.mode = mode
        self.start: Message | None = None
        self.body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        self.body += message.get("body", b"")
        if message.get("more_body") or self.start is None:
            return
        if self.mode == "drop":
            # Declared length, half the bytes, then the app returns: the server closes the connection.
            await self.send(self.start)
            await self.send(
                {"type": "http.response.body", "body": self.body[: len(self.body) // 2], "more_body": True}
            )
            return
        corrupt = self.body[: max(1, len(self.body) // 2)] + b"\x00<!-- upstream"
        headers = [(k, v) for k, v in self.start["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(corrupt)).encode()))
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": corrupt})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _error(
    send: Send, status: int, error: str, message: str, extra: dict[bytes, str] | None = None
) -> None:
    body = orjson.dumps({"statusCode": status, "message": message, "error": error, "timestamp": now()})
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(key, value.encode()) for key, value in (extra or {}).items()]
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})
