"""How the ``authority-sync`` process ends (`pipelines.process_exit`): at once, with its exit handlers run,
its output whole and its status as `SystemExit` gives it; normally while another thread still works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PRELUDE = (
    "import atexit, sys, threading, time\n"
    "from pipelines.process_exit import exit_now\n"
    "class Noisy:\n"
    "    def __del__(self):\n"
    "        print('torn down', flush=True)\n"
    "kept = Noisy()  # freed by Python's teardown, which exit_now skips\n"
    "atexit.register(lambda: print('handler ran'))\n"
)


def ended(body: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """A Python process that runs `PRELUDE` then ``body``, its output buffered as it is in a pipe."""
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + body, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=buffered,
    )


@pytest.mark.parametrize(
    ("code", "status", "stderr"), [("None", 0, ""), ("3", 3, ""), ("'it failed'", 1, "it failed\n")]
)
def test_the_process_ends_with_its_handlers_run_its_output_whole_and_its_status(
    code: str, status: int, stderr: str
) -> None:
    done = ended(f"print('the last line', end='')\nexit_now({code})\n")

    assert done.returncode == status
    assert done.stdout == "the last linehandler ran\n"  # buffered output flushed, after the handlers
    assert done.stderr == stderr


def test_a_normal_exit_tears_down_what_exit_now_skips() -> None:
    # The probe's own check: without exit_now the object is freed (and says so) as Python tears down.
    done = ended("sys.exit(0)\n")

    assert done.stdout == "handler ran\ntorn down\n"


def test_a_thread_still_working_makes_it_a_normal_exit_that_waits_for_it(tmp_path: Path) -> None:
    marker = tmp_path / "written"
    body = (
        "def work():\n"
        "    time.sleep(0.3)\n"
        "    open(sys.argv[1], 'w').write('done')\n"
        "threading.Thread(target=work).start()\n"
        "exit_now(0)\n"
    )

    done = ended(body, str(marker))

    assert done.returncode == 0
    assert marker.read_text() == "done"
    assert done.stdout == "handler ran\ntorn down\n"


@pytest.mark.parametrize("hook", ["setprofile", "settrace"])
def test_a_profiler_or_debugger_following_the_process_gets_a_normal_exit(hook: str) -> None:
    # Before: `python -m cProfile -o` and pyinstrument wrote no report for `authority-sync`, whose process
    # ended before the program returned to them.
    body = (
        f"sys.{hook}(lambda *event: None)\n"
        "try:\n"
        "    exit_now(0)\n"
        "except SystemExit:\n"  # what the tool's own code would see as the program returns
        "    print('returned to the tool')\n"
        "    raise\n"
    )

    done = ended(body)

    assert done.returncode == 0
    assert done.stdout.startswith("returned to the tool\nhandler ran\n")
