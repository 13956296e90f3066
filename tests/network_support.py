"""Helpers of the corporate-network tests (no tests here): certificates made by openssl, the emulator
served over TLS, and a loopback proxy that tunnels CONNECT and records every request head it receives."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import uvicorn

from emulator.app import create_app
from emulator.service import EmulatorOptions
from tests.conftest import SMALL

ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"
REFUSED = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
HEAD_END = b"\r\n\r\n"
CHUNK = 65_536


@dataclass(frozen=True)
class Certificates:
    """A corporate CA, a certificate it signed for 127.0.0.1, and a self-signed one nobody trusts."""

    ca: Path
    signed: tuple[Path, Path]
    """(certificate, key) signed by ``ca``."""
    self_signed: tuple[Path, Path]


def make_certificates(folder: Path) -> Certificates:
    """Make the three with the openssl command (EC keys: fast)."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ip = "subjectAltName=IP:127.0.0.1"

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    run("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Corp CA")
    run("req", *key, "-keyout", "signed.key", "-out", "signed.csr", "-subj", "/CN=127.0.0.1")
    (folder / "signed.ext").write_text(f"{ip}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run(
        "x509", "-req", "-in", "signed.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "signed.pem", "-days", "2", "-extfile", "signed.ext",
    )  # fmt: skip
    run("req", "-x509", *key, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2", "-subj", "/CN=x")
    return Certificates(
        folder / "ca.pem",
        (folder / "signed.pem", folder / "signed.key"),
        (folder / "rogue.pem", folder / "rogue.key"),
    )


class TlsEmulator:
    """A small-scale emulator served over https on a free loopback port with the given certificate."""

    def __init__(self, certificate: tuple[Path, Path]) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))  # listening: clients queue until it serves
        self.base_url = f"https://127.0.0.1:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(
            create_app(EmulatorOptions(scale=SMALL)),
            ssl_certfile=str(certificate[0]),
            ssl_keyfile=str(certificate[1]),
            log_level="critical",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="tls-emulator", daemon=True
        )

    def __enter__(self) -> TlsEmulator:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


class RecordingProxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy on ``host``: it tunnels CONNECT, closing its first ``cut`` tunnels right after
    answering 200 (as a proxy that times out does), refuses every other request with 502, and records the
    head of every request it receives (``heads``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", cut: int = 0) -> None:
        super().__init__((host, 0), _ProxyHandler)
        self.heads: list[bytes] = []
        self.cut = cut
        self._lock = threading.Lock()
        # Polled every 50 ms, not the default 0.5 s, which closing the proxy waited for.
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="proxy", daemon=True
        )

    @property
    def url(self) -> str:
        """The proxy's address, for ``HTTPS_PROXY`` and its kin."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def tunnels(self) -> int:
        """CONNECT requests received."""
        return sum(head.startswith(b"CONNECT ") for head in self.heads)

    def received(self, head: bytes) -> bool:
        """Record ``head``; whether this tunnel is one to cut."""
        with self._lock:
            self.heads.append(head)
            cut, self.cut = self.cut > 0, max(0, self.cut - 1)
        return cut

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.shutdown()
        self.server_close()


class _ProxyHandler(socketserver.BaseRequestHandler):
    server: RecordingProxy
    request: socket.socket

    def handle(self) -> None:
        head = b""
        while HEAD_END not in head and (chunk := self.request.recv(CHUNK)):
            head += chunk
        cut = self.server.received(head)
        method, target = [*head.split(b" ", 2), b"", b""][:2]
        if method != b"CONNECT":
            self.request.sendall(REFUSED)
            return
        if cut:
            self.request.sendall(ESTABLISHED)
            return
        host, _, port = target.decode().rpartition(":")
        with socket.create_connection((host, int(port))) as upstream:
            self.request.sendall(ESTABLISHED)
            back = threading.Thread(target=_pipe, args=(upstream, self.request), daemon=True)
            back.start()
            _pipe(self.request, upstream)
            back.join()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends, then end ``sink``'s writing side."""
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass  # the other side went away: end this one too
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
