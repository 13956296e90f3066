"""The root of authority-sync's own errors.

Every error the product raises of its own derives from `AuthoritySyncError` (as well as from the built-in
class its meaning matches: `ValueError` for a refused value, `OSError` for a file, ...), so a script or an
orchestrator can tell the product's errors from Python's and the libraries' with one ``except``."""

from __future__ import annotations


class AuthoritySyncError(Exception):
    """An error authority-sync raises of its own; its message is one line meant for people."""
