"""Where the test suite's CPU goes: a pytest plugin that writes each test's CPU, and a summary of it.

```sh
.venv/bin/pytest -p benchmarks.suite_cpu -n 4 --dist loadgroup --no-loadscope-reorder  # record
.venv/bin/python -m benchmarks.suite_cpu                                            # summary
```

Each worker appends one JSON line per test to ``data/bench/suite_cpu/<worker>.jsonl``: the CPU its process
spent on the test (user and system, every thread: the in-process emulator's included), the CPU of child
processes that ended and were waited for during it (the CLI, ``dagster`` commands), its wall time, and the
bytes left in its ``tmp_path``. A process nobody waits for is not counted: Dagster's fork server and the
step processes forked from it (a ``dagster`` command's 13.3 s of children read 5.5 s once its step ran
there, while the machine's busy time went from 20.3-20.9 s to 19.6-19.7 s). A new recording run starts
from empty files. CPU time is the figure to compare between runs: wall time on 2 shared cores depends on
what runs beside the test. Needs the bench extra (`make .venv/.synced-bench`): it writes where the
benchmarks do (`benchmarks.harness`).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import OUTPUT

FOLDER = OUTPUT / "suite_cpu"
"""Where the recording run writes, one file per worker."""
_TMP = pytest.StashKey[Path | None]()


def _cpu() -> tuple[float, float]:
    """CPU seconds so far of this process and of its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed)."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start this worker's file empty."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    _output().write_text("")


def _output() -> Path:
    return FOLDER / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Note the test's ``tmp_path`` while its fixtures are still there."""
    arguments: dict[str, Any] = getattr(item, "funcargs", None) or {}
    item.stash[_TMP] = arguments.get("tmp_path")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Time the whole protocol of one test (set-up, call, teardown) and append its line."""
    own, children = _cpu()
    started = time.monotonic()
    result = yield
    own_after, children_after = _cpu()
    folder = item.stash.get(_TMP, None)
    line = {
        "test": item.nodeid,
        "cpu_s": own_after - own,
        "children_cpu_s": children_after - children,
        "wall_s": time.monotonic() - started,
        "tmp_bytes": _size(folder) if folder else 0,
    }
    with _output().open("a") as output:
        output.write(json.dumps(line) + "\n")
    return result


def recorded(folder: Path = FOLDER) -> Iterator[dict[str, Any]]:
    """Every line the last recording run wrote."""
    for path in sorted(folder.glob("*.jsonl")):
        with path.open() as lines:
            yield from map(json.loads, lines)


def summary(lines: list[dict[str, Any]], top: int = 15) -> str:
    """The totals, the files by CPU and the costliest tests, as text."""
    cpu = {line["test"]: line["cpu_s"] + line["children_cpu_s"] for line in lines}
    by_file: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for name, spent in cpu.items():
        by_file[name.split("::")[0]] += spent
        tests[name.split("::")[0]] += 1
    costliest = sorted(cpu.items(), key=lambda pair: pair[1], reverse=True)
    tmp = sum(line["tmp_bytes"] for line in lines) / 1e9
    rows = [f"{len(lines)} tests, {sum(cpu.values()):,.0f} s of CPU, {tmp:.1f} GB left in tmp_path", ""]
    rows += [f"{spent:8.1f} s {tests[name]:5d} tests  {name}" for name, spent in by_file.most_common(top)]
    rows += ["", f"the {top} costliest tests: {sum(spent for _, spent in costliest[:top]):,.0f} s"]
    rows += [f"{spent:8.1f} s  {name}" for name, spent in costliest[:top]]
    return "\n".join(rows)


if __name__ == "__main__":
    found = list(recorded())
    if not found:
        sys.exit(f"nothing recorded under {FOLDER}: run pytest with -p benchmarks.suite_cpu first")
    print(summary(found))
