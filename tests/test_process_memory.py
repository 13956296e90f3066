"""How a process of this tool allocates (`pipelines.process_memory`), each in a process of its own since
both settings are process-wide: at most `ARENAS` malloc arenas from its start, counted by glibc itself
(``malloc_stats``), and pyarrow's buffers from `ARROW_POOL`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from pipelines.process_memory import ARENAS, ARROW_POOL

THREADS = 16
"""As many worker threads as the client's pool of a benchmark's sync (``ADM_CONCURRENCY=16``)."""

_ALLOCATE = textwrap.dedent(
    f"""
    import ctypes, threading

    def allocate_then_count():
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        start = threading.Barrier({THREADS})

        def allocate():
            start.wait()
            for _ in range(2000):  # a foreign call releases the GIL: the threads allocate at once
                libc.free(libc.malloc(4096))

        threads = [threading.Thread(target=allocate) for _ in range({THREADS})]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        libc.malloc_stats()
    """
)

_WAYS = {
    "plain": "allocate_then_count()",
    # Where the command line (`pipelines.cli`) and Dagster's processes (`pipelines.definitions`) begin.
    "package": "import pipelines\nallocate_then_count()",
}


def _arenas(way: str, **env: str) -> int:
    """The arenas glibc reports after `THREADS` threads allocated at once in a new process started one of
    `_WAYS`."""
    environment = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"} | env
    done = subprocess.run(
        [sys.executable, "-c", _ALLOCATE + _WAYS[way]],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return len(re.findall(r"^Arena \d+:$", done.stderr, re.MULTILINE))


def test_importing_the_package_bounds_the_arenas_its_threads_share() -> None:
    # Without the bound glibc gives the threads arenas of their own: the count shows the bound at work.
    assert _arenas("plain") > ARENAS
    assert 1 <= _arenas("package") <= ARENAS


def test_an_operators_malloc_arena_max_is_left_as_it_is() -> None:
    assert _arenas("package", MALLOC_ARENA_MAX="4") == 4


def _arrow_pool(code: str, **env: str) -> str:
    """The backend of pyarrow's default memory pool in a new process that ran ``code`` first."""
    environment = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport pyarrow\nprint(pyarrow.default_memory_pool().backend_name)"],
        capture_output=True,
        text=True,
        env=environment | env,
        check=True,
    )
    return done.stdout.strip()


def test_importing_the_package_puts_arrows_buffers_on_malloc() -> None:
    # pyarrow's own choice differs, so the check shows the package's doing.
    assert _arrow_pool("pass") != ARROW_POOL
    assert _arrow_pool("import pipelines") == ARROW_POOL
    # As in Dagster's processes: `dagster` is imported first, and loads no pyarrow before the package.
    assert _arrow_pool("import dagster\nimport pipelines") == ARROW_POOL


def test_an_operators_arrow_pool_is_left_as_it_is() -> None:
    assert _arrow_pool("import pipelines", ARROW_DEFAULT_MEMORY_POOL="jemalloc") == "jemalloc"
