"""How many malloc arenas a process of this tool keeps: bounded when it starts, before its threads.

glibc's malloc gives each new thread an arena of its own, up to eight per core, and an arena keeps what its
thread freed for that thread to reuse. A sync runs pools of worker threads (the client's, of
``ADM_CONCURRENCY``, and the extract's) beside DuckDB's, so freed buffers piled up in as many arenas
instead of being reused. One arena for all is enough: the threads take turns on the GIL for almost
everything they allocate, and a full extract took no longer on one arena than on sixteen. Bounding the
arenas only holds for those made afterwards, so `bound_malloc_arenas` runs when the ``pipelines`` package
is imported, which is where the command line and Dagster's processes (code servers, run workers) begin.
A `dagster` process has started a thread of its own by then (gRPC's registry cleanup) and keeps the two
arenas it has; the command line keeps one. Figures in docs/benchmarks.md ("malloc arenas").

An operator's ``MALLOC_ARENA_MAX`` (glibc reads it when the process starts) is left as it is. Elsewhere
than on glibc (macOS, musl) there is nothing to bound.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

ARENAS = 1
"""Arenas a process of this tool keeps at most."""

_M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter of the number of arenas (malloc.h)."""


@cache  # once a process: later calls say how the first went
def bound_malloc_arenas() -> bool:
    """Bound the process's malloc arenas to `ARENAS`: whether the bound is now in place. Not where the
    operator set ``MALLOC_ARENA_MAX``, nor where the C library has no ``mallopt``."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, ARENAS) == 1)
