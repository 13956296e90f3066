"""How a process of this tool allocates: few malloc arenas, and Arrow's buffers from malloc too, both set
when it starts, before its threads.

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

Arrow's buffers (the pages the extract stages, the tables it hands DuckDB) come from pyarrow's default
memory pool, mimalloc in the wheels, which keeps a heap for each thread that allocates and holds on to
what those heaps freed. A sync of a 150-decision tenant peaked at 287 MB with it and at 243 MB on the
system allocator, and a full extract of 100,000 decisions at 401-427 MB against 379-383 MB, no slower
(docs/benchmarks.md, "Arrow's memory pool"). pyarrow chooses its pool when it is first imported, from
``ARROW_DEFAULT_MEMORY_POOL``, so `arrow_on_malloc` sets that variable (an operator's own value stands)
rather than import pyarrow (46 MB and a tenth of a second) into commands that never use it. A process
that imported pyarrow before the package keeps the pool it chose; the variable also reaches the
processes this one starts.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

ARENAS = 1
"""Arenas a process of this tool keeps at most."""

ARROW_POOL = "system"
"""pyarrow's default memory pool in a process of this tool (``ARROW_DEFAULT_MEMORY_POOL``): malloc's."""

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


def arrow_on_malloc() -> None:
    """Have pyarrow allocate from `ARROW_POOL` once it is imported, unless the operator chose a pool
    (``ARROW_DEFAULT_MEMORY_POOL``)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
