"""Advisory file locks beside the warehouse: one sync per tenant, one writer per file.

DuckDB lets one process write a file, and refuses a second at once. Two tenants' syncs that finish
together must take turns instead, and two syncs of the same tenant must never run together (the second
would read the same changes and race the first's cursors). Both are OS file locks (``fcntl.flock``), so
they hold whatever launched the run (the CLI, ``dagster job execute``, a Dagster run worker) and vanish
with a killed process. The holder writes who it is into the lock file, so a waiter that gives up can
say who holds it.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from models.errors import AuthoritySyncError
from resources.waits import SharedWait

POLL_S = 0.2
DEFAULT_LOCK_WAIT_S = 300.0
"""How long an open of the warehouse waits for its writer by default (``ADM_LOCK_WAIT_S``)."""


class LockBusyError(AuthoritySyncError, RuntimeError):
    """Someone else holds the lock; the message names the holder."""


def tenant_lock_path(warehouse: Path, tenant_id: str) -> Path:
    """The lock file of one tenant's sync into ``warehouse``."""
    return warehouse.with_name(f".{warehouse.name}.tenant-{tenant_id}.lock")


def writer_lock_path(warehouse: Path) -> Path:
    """The lock file of the warehouse's writer."""
    return warehouse.with_name(f".{warehouse.name}.writer.lock")


@contextmanager
def held(path: Path, holder: str, wait_s: float, what: str) -> Iterator[None]:
    """Hold the lock at ``path`` as ``holder``, waiting up to ``wait_s`` seconds for it.

    Raises `LockBusyError` naming the current holder and ``what`` is locked when the wait runs out.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _acquire(fd, path, wait_s, what)
        _describe_holder(fd, holder)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, wait_s: float, what: str) -> None:
    deadline = time.monotonic() + wait_s
    wait = SharedWait(lambda: f"{what}, held by {holder_of(path)} (up to {wait_s:g} s)")
    with wait.waiting():
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusyError(f"{what} is held by {holder_of(path)}{_waited(wait_s)}") from None
                wait.still()
                time.sleep(POLL_S)


def holder_of(path: Path) -> str:
    """Who holds (or last held) the lock at ``path``, as its holder described itself."""
    try:
        return path.read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


def _waited(wait_s: float) -> str:
    return f" after waiting {wait_s:g} s" if wait_s else ""


def busy_error(warehouse: Path, wait_s: float) -> LockBusyError:
    """The one-line error of an open that waited ``wait_s`` for the warehouse's writer in vain."""
    holder = holder_of(writer_lock_path(warehouse))
    return LockBusyError(f"the warehouse {warehouse} is held by {holder}{_waited(wait_s)}")


def _describe_holder(fd: int, holder: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{holder} (pid {os.getpid()}, since {stamp})".encode(), 0)


def file_holder_error(
    warehouse: Path, duckdb_message: str, readers_copy: Path, wait_s: float
) -> LockBusyError:
    """The one-line error of an open of the warehouse that waited ``wait_s`` in vain for DuckDB's own lock
    on the file (``duckdb_message``, DuckDB's words, names the holder's pid): which process holds it (pid,
    program, user, from /proc) and that readers belong on the published copy, ``readers_copy``. Any DuckDB
    session on the writer's file, even a read-only one in a notebook, holds that lock."""
    found = re.search(r"\(PID (\d+)\)", duckdb_message)
    holder = describe_process(int(found.group(1))) if found else "another process"
    return LockBusyError(
        f"the warehouse {warehouse} is in use by {holder}{_waited(wait_s)}: a DuckDB session on the writer's "
        f"file, even a read-only one, blocks every commit; readers belong on the published copy "
        f"{readers_copy}: close that session and open the copy instead"
    )


def describe_process(pid: int) -> str:
    """``pid N (program, user U)`` from /proc: the program is the executable's name, with the module
    (``-m``) or script it runs; never its other arguments, which may hold a secret."""
    proc = Path("/proc") / str(pid)
    try:
        argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        user = pwd.getpwuid(proc.stat().st_uid).pw_name
    except (OSError, KeyError):
        return f"pid {pid}"
    program = Path(argv[0]).name
    if len(argv) > 2 and argv[1] == "-m":
        program += f" -m {argv[2]}"
    elif len(argv) > 1 and argv[1].endswith(".py"):
        program += f" {Path(argv[1]).name}"
    return f"pid {pid} ({program}, user {user})"
