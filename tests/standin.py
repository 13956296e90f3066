"""A stand-in of the service for the generative and quirk tests: a few dozen lines of plain HTTP written from
the spec (tests/spec_records.toml names its paths), sharing no code with the emulator or with models/.

It serves one tenant's lists (filtered by ``updatedAtStart`` when asked), E9 and the revision-id lists
from JSON-ready records the test provides, and misbehaves as real services do when `Quirks` says so: a
capped page size, totals off or missing, a 200 whose envelope carries an error status, 429s with a
Retry-After in seconds or as an HTTP date, latency, a hook that changes a list between two page
requests (a record deleted or inserted while it is paged), pages past the end answered 404 or 400,
bodies behind a UTF-8 byte order mark, 307/308 redirects (same origin or not) and bodies trickled a few
bytes at a time. Numbers can be sent as written (`JsonText`).
"""

from __future__ import annotations

import json
import re
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

TRICKLE_BYTES = 4
UTF8_BOM = b"\xef\xbb\xbf"
MOVED = "/moved"

SPEC = tomllib.loads(Path(__file__).with_name("spec_records.toml").read_text(encoding="utf-8"))
"""The spec's records and paths, as transcribed for the tests."""

Record = dict[str, Any]


class JsonText(str):
    """A value the stand-in writes as this very JSON text: a number with more digits than a float holds, or
    with trailing zeros (``1500.00``), as RFC 8259 lets a service send it."""


def encode(body: Any) -> bytes:
    """``body`` as JSON, each `JsonText` in it written as its own text."""
    texts: list[str] = []

    def marked(value: Any) -> Any:
        if isinstance(value, JsonText):
            texts.append(str(value))
            return f"\x00{len(texts) - 1}\x00"
        if isinstance(value, dict):
            return {key: marked(item) for key, item in value.items()}
        if isinstance(value, list):
            return [marked(item) for item in value]
        return value

    encoded = json.dumps(marked(body))
    return re.sub(r'"\\u0000(\d+)\\u0000"', lambda found: texts[int(found[1])], encoded).encode()


@dataclass
class Tenant:
    """What the stand-in serves: records as JSON-ready dicts, in the order it serves them."""

    tenant_id: str
    token: str
    lists: dict[str, list[Record]] = field(default_factory=lambda: {name: [] for name in SPEC["lists"]})
    current_user_positions: list[Record] = field(default_factory=list)
    revisions: dict[str, dict[str, list[str] | None]] = field(
        default_factory=lambda: {name: {} for name in SPEC["revisions"]}
    )
    """delegations/documents -> record id (lower case) -> its revision ids, or None to answer 404."""


@dataclass
class Quirks:
    """How the stand-in deviates from the spec; the default deviates in nothing."""

    page_cap: int | None = None
    """Serve at most this many records a page, whatever ``limit`` asks."""
    cap_reported: bool = True
    """Whether a capped page's ``limit`` says the cap (else it echoes the limit asked)."""
    total_skew: dict[str, int] = field(default_factory=dict)
    """List -> what every reported ``total`` is off by."""
    no_total: set[str] = field(default_factory=set)
    """Lists whose pages leave ``total`` out."""
    envelope_errors: int = 0
    """The first N list requests answer HTTP 200 whose envelope says statusCode 500."""
    rate_limited: int = 0
    """The first N requests answer 429."""
    retry_after: Callable[[], str] = lambda: "1"
    """The Retry-After header of a 429."""
    revisions_answered: int | None = None
    """After this many revision-id answers, the token is refused (401): a run that fails part-way."""
    outage: tuple[int, int] | None = None
    """(after, failures): after this many revision-id answers, the next requests of them answer 500 this
    many times (a passing outage)."""
    latency_s: float = 0.0
    """How long every answer takes (a slow service, or one far away)."""
    on_list_request: Callable[[str, int, Tenant], None] | None = None
    """Called before a list request is answered: (list, how many of its requests came before, tenant)."""
    order: Callable[[str, list[Record]], list[Record]] | None = None
    """The order a list's records are served in, asked anew for every request (whatever ``sortBy`` asks):
    (list, its records) -> the same records in another order."""
    past_end: int | None = None
    """The status (404, or 400 "page out of range") of a page past the end of a list, instead of ``[]``."""
    bom: bool = False
    """Every body starts with a UTF-8 byte order mark (RFC 8259 8.1 lets a reader ignore it)."""
    redirect: tuple[int, str] | None = None
    """(status, origin): every request outside ``/moved`` is redirected to the same path and query under
    ``/moved`` at ``origin`` ("" for a relative location), which serves what the path would."""
    trickled: int = 0
    """The first N answers are trickled: `TRICKLE_BYTES` at a time, `trickle_every_s` apart."""
    trickle_every_s: float = 0.05
    transport: dict[int, str] = field(default_factory=dict)
    """Request number (every GET counts, from 0) -> how its answer travels, one of `TRANSPORT`."""


TRANSPORT = {
    "reset": "the connection is closed before any answer",
    "cut": "the body is cut off half-way (Content-Length promised more) and the connection closed",
    "html_503": "503 with an HTML page, as a load balancer answers",
    "empty_502": "502 without a body",
    "json_500": "500 with the service's JSON error",
    "close": "the answer, then the connection closed (Connection: close)",
    "chunked": "the answer in chunks (Transfer-Encoding: chunked)",
    "bom": "the answer behind a UTF-8 byte order mark",
    "redirect_307": "307 to the same path under /moved, same origin",
    "redirect_308": "308 to the same path under /moved, same origin",
    "trickle": "the answer a few bytes at a time",
    "stall": "the answer trickled for longer than the client's deadline per request",
    "cookie": "the answer sets a cookie (RFC 6265 lets any answer carry Set-Cookie)",
}
"""The ways an answer can travel (RFC 9110), by name: what the generative test draws from."""
STALL_S = 3.0
"""How long a stalled answer trickles before it gives up (the generative test's deadline is shorter)."""


class StandIn:
    """The stand-in, served on a free loopback port while the context is open."""

    def __init__(self, tenant: Tenant, quirks: Quirks | None = None) -> None:
        self.tenant = tenant
        self.quirks = quirks or Quirks()
        self.requests: Counter[str] = Counter()
        """Requests answered, by list name, ``E9``, ``revisions of delegations``/``documents`` or ``429``;
        and ``with a cookie``: requests that sent a ``Cookie`` header (the client configures none)."""
        self._lock = threading.Lock()
        self._received = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        # Polled every 50 ms, not the default 0.5 s: leaving the context waits for the loop to see the
        # shutdown, which cost each stand-in test about a quarter of a second of waiting.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The address to give the client."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(
        self, path: str, query: dict[str, str], authorization: str | None
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, headers) of one GET."""
        time.sleep(self.quirks.latency_s)
        if authorization != f"Bearer {self.tenant.token}":
            return 401, _error(401, "Unauthorized"), {}
        with self._lock:
            if self.quirks.rate_limited > 0:
                self.quirks.rate_limited -= 1
                self.requests["429"] += 1
                return 429, _error(429, "Too Many Requests"), {"Retry-After": self.quirks.retry_after()}
            if self.quirks.redirect is not None and not path.startswith(MOVED + "/"):
                status, origin = self.quirks.redirect
                location = f"{origin}{MOVED}{path}" + (f"?{urlencode(query)}" if query else "")
                return status, _error(status, "Moved"), {"Location": location}
            if path.startswith(MOVED + "/"):
                self.requests["moved"] += 1
            while path.startswith(MOVED + "/"):  # a redirected request redirected again moved twice
                path = path.removeprefix(MOVED)
            return self._route(path, query)

    def body(self, answer: Any) -> bytes:
        """The bytes of one answer's JSON, with a byte order mark when the quirks say."""
        return (UTF8_BOM if self.quirks.bom else b"") + encode(answer)

    def travel(self) -> str:
        """How the next answer travels (`Quirks.transport`; "" as it should), counting the request."""
        with self._lock:
            number = self._received
            self._received += 1
        return self.quirks.transport.get(number, "")

    def count(self, kind: str) -> None:
        """Count one request of ``kind`` in `requests` (from any of the server's threads)."""
        with self._lock:
            self.requests[kind] += 1

    def trickles(self) -> bool:
        """Whether the next answer is trickled (counts it)."""
        with self._lock:
            if self.quirks.trickled <= 0:
                return False
            self.quirks.trickled -= 1
            self.requests["trickled"] += 1
            return True

    def _route(self, path: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        for name, spec in SPEC["lists"].items():
            if path == spec["path"]:
                return self._page(name, query)
        if path == SPEC["current_user_positions"]["path"]:
            self.requests["E9"] += 1
            return 200, _envelope(self.tenant.current_user_positions), {}
        for name, spec in SPEC["revisions"].items():
            prefix, suffix = spec["path"].split("{id}")
            if path.startswith(prefix) and path.endswith(suffix):
                answered = sum(self.requests[f"revisions of {kind}"] for kind in SPEC["revisions"])
                if self.quirks.revisions_answered is not None and answered >= self.quirks.revisions_answered:
                    return 401, _error(401, "Unauthorized"), {}
                if self.quirks.outage and answered >= self.quirks.outage[0] and self.quirks.outage[1] > 0:
                    self.quirks.outage = (self.quirks.outage[0], self.quirks.outage[1] - 1)
                    return 500, _error(500, "Internal Server Error"), {}
                self.requests[f"revisions of {name}"] += 1
                found = self.tenant.revisions[name].get(path[len(prefix) : -len(suffix)].lower())
                return (404, _error(404, "Not Found"), {}) if found is None else (200, found, {})
        return 404, _error(404, f"no route {path}"), {}

    def _page(self, name: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        if SPEC["lists"][name].get("tenant_param") and query.get("tenantId") != self.tenant.tenant_id:
            return 400, _error(400, "tenantId is required"), {}
        quirks, before = self.quirks, self.requests[name]
        self.requests[name] += 1
        if quirks.on_list_request is not None:
            quirks.on_list_request(name, before, self.tenant)
        if quirks.envelope_errors > 0:
            quirks.envelope_errors -= 1
            return 200, {**_error(500, "Internal error"), "data": None}, {}
        number, asked = int(query.get("page", "1")), int(query.get("limit", "10"))
        size = min(asked, quirks.page_cap) if quirks.page_cap else asked
        records = _updated_since(self.tenant.lists[name], query.get("updatedAtStart"))
        if quirks.order is not None:
            records = quirks.order(name, records)
        if quirks.past_end is not None and number > 1 and (number - 1) * size >= len(records):
            return quirks.past_end, _error(quirks.past_end, f"page {number} out of range"), {}
        page: dict[str, Any] = {
            "page": number,
            "limit": size if quirks.cap_reported else asked,
            "total": len(records) + quirks.total_skew.get(name, 0),
            "data": records[(number - 1) * size : number * size],
        }
        if name in quirks.no_total:
            del page["total"]
        return 200, _envelope(page), {}


_FAILURES: dict[str, tuple[int, str, bytes]] = {
    "reset": (0, "", b""),
    "cut": (200, "application/json", b'{"statusCode": 200, "data": {"page": 1, "da'),
    "html_503": (503, "text/html", b"<html><body><h1>503 Service Unavailable</h1></body></html>"),
    "empty_502": (502, "text/plain", b""),
    "json_500": (500, "application/json", b'{"statusCode": 500, "message": "Internal error"}'),
}
"""The answers of the transport failures (status, content type, body)."""


def _updated_since(records: list[Record], start: str | None) -> list[Record]:
    """The records updated at or after ``start`` (the updated-at range of spec E8, named as the public
    reference's sibling endpoints name it); a record that does not say when it was updated is kept."""
    if start is None:
        return records
    since = datetime.fromisoformat(start)
    return [record for record in records if not _before(record, since)]


def _before(record: Record, since: datetime) -> bool:
    instant = instant_of(record.get("updatedAt", record.get("updatedOn")))
    return instant is not None and instant < since


EPOCH_SECONDS_BEFORE = 32_503_680_000
"""An epoch number below this (the year 3000 in seconds) counts seconds, one at least this large
milliseconds: the stand-in's own reading, which agrees with any other for the instants the tests draw."""


def instant_of(stamp: Any) -> datetime | None:
    """The instant a stamp names in any form the tests write one: ISO 8601 with or without an offset (none
    is UTC), a date alone (that day's midnight UTC, the service's own instant), epoch seconds or
    milliseconds; None for anything else (such a record is always served)."""
    try:
        if isinstance(stamp, int) and not isinstance(stamp, bool):
            seconds = stamp if abs(stamp) < EPOCH_SECONDS_BEFORE else stamp / 1000
            return datetime.fromtimestamp(seconds, UTC)
        instant = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except (ValueError, OverflowError, OSError):
        return None
    return None if instant is None else instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def _envelope(data: Any) -> dict[str, Any]:
    return {"statusCode": 200, "timestamp": _now(), "message": "Success", "data": data}


def _error(status: int, message: str) -> dict[str, Any]:
    return {"statusCode": status, "message": message, "error": message}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            travel = standin.travel()
            if self.headers.get("Cookie") is not None:
                standin.count("with a cookie")
            if travel in _FAILURES:
                self._fail(travel)
                return
            if travel.startswith("redirect_"):
                self.send_response(int(travel.removeprefix("redirect_")))
                self.send_header("Location", MOVED + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            url = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(url.query).items()}
            status, body, headers = standin.answer(url.path, query, self.headers.get("Authorization"))
            payload = (UTF8_BOM if travel == "bom" else b"") + standin.body(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if travel == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(payload)))
            if travel == "close":
                self.send_header("Connection", "close")
                self.close_connection = True
            if travel == "cookie":
                self.send_header("Set-Cookie", "session=standin-session; Path=/")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if travel == "chunked":
                for start in range(0, len(payload), 64):
                    part = payload[start : start + 64]
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            if travel == "stall":
                self._trickle(payload, STALL_S / max(1, len(payload) // TRICKLE_BYTES))
            elif travel == "trickle" or standin.trickles():
                self._trickle(payload, 0.001 if travel == "trickle" else standin.quirks.trickle_every_s)
            else:
                self.wfile.write(payload)

        def _trickle(self, payload: bytes, every_s: float) -> None:
            try:
                for start in range(0, len(payload), TRICKLE_BYTES):
                    self.wfile.write(payload[start : start + TRICKLE_BYTES])
                    self.wfile.flush()
                    time.sleep(every_s)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting: that is the point
                self.close_connection = True

        def _fail(self, travel: str) -> None:
            """Answer as the transport failure ``travel`` (one of `_FAILURES`)."""
            self.close_connection = True
            if travel == "reset":
                return
            status, content, body = _FAILURES[travel]
            self.send_response(status)
            self.send_header("Content-Type", content)
            self.send_header("Content-Length", str(len(body) * (2 if travel == "cut" else 1)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read `StandIn.requests` instead."""

    return Handler


def records_of(tenant: Tenant) -> Iterator[tuple[str, Record]]:
    """Every (list, record) the tenant serves."""
    for name, records in tenant.lists.items():
        for record in records:
            yield name, record
