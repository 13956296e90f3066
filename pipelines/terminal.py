"""The console every command prints to."""

from __future__ import annotations

from rich.console import Console


def line_console() -> Console:
    """A console whose lines are not wrapped (tables keep the terminal's width): an error, a plan id or a
    path is never split, so it can be copied whole from any terminal and a log or ``grep`` finds it whole.
    Without a terminal rich wraps at 80 columns, which split a failed run's one line over four."""
    return Console(soft_wrap=True)
