"""The bearer token of a client: a ready token, or one obtained by exchanging the access key, renewed at
most once per token generation however many concurrent requests see it refused."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pydantic import SecretStr

from resources.errors import AuthenticationError

logger = logging.getLogger(__name__)

Exchange = Callable[[SecretStr], SecretStr]
"""Exchanges an access key for a token (the client's call of the exchange endpoint)."""


class Credentials:
    """Holds the token; never logs, returns or shows it, except in the Authorization header it builds."""

    def __init__(self, token: SecretStr | None, access_key: SecretStr | None, exchange: Exchange) -> None:
        self._token = token
        self._access_key = access_key
        self._exchange = exchange
        self._lock = threading.Lock()
        self.generation = 0
        """Bumped by every exchange, so that a refused token is renewed once, not once per request."""

    def __repr__(self) -> str:
        token, key = ("set" if value else "none" for value in (self._token, self._access_key))
        return f"Credentials(token={token}, access_key={key})"

    @property
    def renewable(self) -> bool:
        """Whether an access key is at hand to obtain a new token."""
        return self._access_key is not None

    def ensure(self) -> int:
        """Make sure a token is at hand (exchanging the key the first time); returns its generation."""
        with self._lock:
            if self._token is None:
                self._renew()
            return self.generation

    def authorization(self) -> dict[str, str]:
        """The Authorization header of the current token."""
        self.ensure()
        assert self._token is not None  # ensure() provides one or raises
        return {"Authorization": f"Bearer {self._token.get_secret_value()}"}

    def renew(self, refused_generation: int | None = None) -> None:
        """Exchange the key for a new token, unless another request already replaced the refused one."""
        with self._lock:
            if refused_generation is None or refused_generation == self.generation:
                self._renew()

    def _renew(self) -> None:
        if self._access_key is None:
            raise AuthenticationError("no access key configured to obtain a token")
        self._token = self._exchange(self._access_key)
        self.generation += 1
        logger.info("exchanged the access key for a new token (generation %d)", self.generation)
