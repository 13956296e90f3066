"""The root of authority-sync's own errors.

Every error the product raises of its own derives from `AuthoritySyncError` (as well as from the built-in
class its meaning matches: `ValueError` for a refused value, `OSError` for a file, ...), so a script or an
orchestrator can tell the product's errors from Python's and the libraries' with one ``except``."""

from __future__ import annotations

from typing import Any


class AuthoritySyncError(Exception):
    """An error authority-sync raises of its own; its message is one line meant for people.

    Each one survives a pickle round trip with its message and attributes, so it can cross a process
    boundary (Dagster's multiprocess executor, a worker pool)."""

    def __reduce__(self) -> str | tuple[Any, ...]:
        # Exception's own reduce calls the class again with ``args``, which a class whose __init__ takes
        # other arguments refuses (a keyword-only ``request_sent``, the cause of a failed write): rebuild
        # the error without __init__, then restore its attributes.
        return (_rebuilt, (type(self), self.args), self.__dict__)


def _rebuilt(cls: type[AuthoritySyncError], args: tuple[Any, ...]) -> AuthoritySyncError:
    """An error of ``cls`` with ``args`` and no attributes yet (pickle sets them next)."""
    error = cls.__new__(cls, *args)
    error.args = args
    return error
