"""Serve the emulator: in the foreground for the CLI, or on a background thread for tests and the
embedded default of the main job."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn

from emulator.app import create_app
from emulator.service import Emulator, EmulatorOptions

STARTUP_TIMEOUT_S = 30.0


def serve(options: EmulatorOptions, host: str, port: int, log_level: str = "info") -> None:
    """Serve until interrupted."""
    uvicorn.run(create_app(options), host=host, port=port, log_level=log_level, access_log=False)


class EmulatorServer:
    """An emulator on a background thread, on a free loopback port unless one is given."""

    def __init__(
        self, options: EmulatorOptions | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.app = create_app(options)
        self.host = host
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="emulator", daemon=True
        )

    @property
    def base_url(self) -> str:
        """The address clients use."""
        return f"http://{self.host}:{self.port}"

    @property
    def emulator(self) -> Emulator:
        """The emulator's state, counters and faults."""
        return self.app.emulator

    def start(self) -> EmulatorServer:
        """Start serving; returns once the server accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("emulator did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(
        self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
    ) -> None:
        self.stop()
