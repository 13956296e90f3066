"""The emulator's service object: tenants, credentials, tenant-isolated lookups, counters and caches."""

from __future__ import annotations

import gc
import pickle
import random
import secrets
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from emulator import realism
from emulator.encoding import dumps
from emulator.faults import FaultConfig
from emulator.scale import (
    DEMO_ACCESS_KEY,
    DEMO_TENANT_ID,
    DEMO_TOKEN,
    OTHER_ACCESS_KEY,
    OTHER_TENANT_ID,
    OTHER_TENANT_SCALE,
    OTHER_TOKEN,
    Scale,
)
from emulator.seed import seed_tenant
from emulator.state import Record, TenantState, random_uuid

LIST_CACHE_SIZE = 64


class ServiceError(Exception):
    """An error answer of the emulated service: status, message and the offending field."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


@dataclass(frozen=True)
class EmulatorOptions:
    """How an emulator is seeded and which credentials its demo tenant accepts."""

    seed: int = 42
    scale: Scale = field(default_factory=Scale)
    tenant_id: str = DEMO_TENANT_ID
    token: str = DEMO_TOKEN
    access_key: str = DEMO_ACCESS_KEY
    faults: FaultConfig = field(default_factory=FaultConfig)


@dataclass(frozen=True)
class Caller:
    """Who a request is from: the tenant and the user its token stands for."""

    state: TenantState
    user_id: str


@dataclass
class Stats:
    """What the admin route reports: traffic per endpoint, concurrency, faults and writes."""

    requests: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    writes: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    peak_in_flight: int = 0
    exchanges: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "requests": dict(self.requests),
            "statuses": {str(k): v for k, v in self.statuses.items()},
            "writes": dict(self.writes),
            "totalWrites": sum(self.writes.values()),
            "faults": dict(self.faults),
            "inFlight": self.in_flight,
            "peakInFlight": self.peak_in_flight,
            "exchanges": self.exchanges,
        }


class Emulator:
    """All tenants of one emulator process and everything requests share."""

    def __init__(self, options: EmulatorOptions) -> None:
        self.options = options
        self.faults = options.faults
        self.stats = Stats()
        self.tenants: dict[str, TenantState] = {}
        self.tokens: dict[str, tuple[str, str]] = {}
        self.access_keys: dict[str, str] = {}
        self._lists: OrderedDict[tuple[Any, ...], list[str]] = OrderedDict()
        self._encoded: dict[tuple[str, str], dict[str, bytes]] = {}
        self._deviating: dict[tuple[str, int, str, float], dict[str, str]] = {}
        self._seed: bytes | None = None
        self.reset()

    def reset(self) -> None:
        """Re-seed every tenant from the options (same seed, same records) and forget issued tokens."""
        with _gc_paused():
            demo, other = pickle.loads(self._seeded())  # noqa: S301 - this emulator's own bytes, never input
        self.tenants = {demo.tenant_id: demo, other.tenant_id: other}
        self.tokens = {
            self.options.token: (demo.tenant_id, demo.current_user_id),
            OTHER_TOKEN: (other.tenant_id, other.current_user_id),
        }
        self.access_keys = {self.options.access_key: demo.tenant_id, OTHER_ACCESS_KEY: other.tenant_id}
        self._lists.clear()
        self._encoded.clear()
        self._deviating.clear()
        self.rng = random.Random(self.options.seed + 1)

    def _seeded(self) -> bytes:
        """Both tenants as seeded from the options, pickled at the first reset (called by `reset`, with the
        collector paused). A reset loads them again: under a third of seeding them (about 43 against 150 ms
        at the default scale), and the tests reset the emulator hundreds of times a run. The options are
        fixed for the emulator's life."""
        if self._seed is None:
            demo = seed_tenant(self.options.seed, self.options.tenant_id, self.options.scale, "Acme")
            other = seed_tenant(self.options.seed, OTHER_TENANT_ID, OTHER_TENANT_SCALE, "Globex")
            self._seed = pickle.dumps((demo, other), protocol=pickle.HIGHEST_PROTOCOL)
        return self._seed

    def reset_stats(self) -> None:
        """Zero the traffic counters."""
        self.stats = Stats()

    # -- credentials ---------------------------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Caller:
        """The caller of a request from its ``Authorization`` header; 401 when missing or unknown."""
        if not authorization or not authorization.startswith("Bearer "):
            raise ServiceError(401, "Missing bearer token")
        entry = self.tokens.get(authorization.removeprefix("Bearer ").strip())
        if entry is None:
            raise ServiceError(401, "Invalid or expired token")
        return Caller(self.tenants[entry[0]], entry[1])

    def tenant_of(self, authorization: str | None) -> str | None:
        """The tenant a header's token belongs to, or None (used by the rate limiter)."""
        if not authorization:
            return None
        entry = self.tokens.get(authorization.removeprefix("Bearer ").strip())
        return entry[0] if entry else None

    def exchange(self, access_key: str) -> str:
        """Issue a token for an access key; 401 for an unknown key."""
        tenant_id = self.access_keys.get(access_key)
        if tenant_id is None:
            raise ServiceError(401, "Invalid access key")
        token = f"emu.{secrets.token_urlsafe(24)}"
        self.tokens[token] = (tenant_id, self.tenants[tenant_id].current_user_id)
        self.stats.exchanges += 1
        return token

    def revoke_issued_tokens(self) -> int:
        """Expire every token issued by an exchange (the fixed demo tokens stay); returns how many."""
        issued = [token for token in self.tokens if token.startswith("emu.")]
        for token in issued:
            del self.tokens[token]
        return len(issued)

    # -- lookups -------------------------------------------------------------------------------------------

    def lookup(self, caller: Caller, collection: str, record_id: str, what: str) -> Record:
        """A record of the caller's tenant; 403 when it belongs to another tenant, 404 when nobody has it."""
        records: dict[str, Record] = getattr(caller.state, collection)
        if record_id in records:
            return records[record_id]
        if any(record_id in getattr(state, collection) for state in self.tenants.values()):
            raise ServiceError(403, f"{what} {record_id} belongs to another tenant")
        raise ServiceError(404, f"{what} {record_id} not found")

    def require_tenant(self, caller: Caller, tenant_id: str | None, field_name: str = "tenantId") -> None:
        """403 when a request names a tenant other than the caller's."""
        if tenant_id is not None and tenant_id != caller.state.tenant_id:
            raise ServiceError(403, f"{field_name} {tenant_id} is not the tenant of this token", field_name)

    # -- caches --------------------------------------------------------------------------------------------

    def cached_ids(
        self, state: TenantState, key: tuple[Any, ...], compute: Callable[[], list[str]]
    ) -> list[str]:
        """The ids a list query selects, computed once per tenant version (so page 2..N cost a slice)."""
        full_key = (state.tenant_id, state.version, *key)
        ids = self._lists.get(full_key)
        if ids is None:
            ids = compute()
            self._lists[full_key] = ids
            if len(self._lists) > LIST_CACHE_SIZE:
                self._lists.popitem(last=False)
        else:
            self._lists.move_to_end(full_key)
        return ids

    def encoded(self, state: TenantState, kind: str, record_id: str, render: Callable[[], Record]) -> bytes:
        """A record's JSON bytes, serialised once until the record (or its kind) is written; under the
        realism profile, as `emulator.realism` serves it."""
        rate = self.faults.realism_rate
        if rate:
            deviation = self._realism(state, kind, rate).get(record_id)
            top_user = kind == "users" and state.manager_of.get(record_id) == record_id
            return dumps(realism.serve(kind, render(), deviation, top_user))
        cache = self._encoded.setdefault((state.tenant_id, kind), {})
        data = cache.get(record_id)
        if data is None:
            data = cache[record_id] = dumps(render())
        return data

    def _realism(self, state: TenantState, kind: str, rate: float) -> dict[str, str]:
        """Which records of a kind deviate, worked out once per tenant version and rate."""
        key = (state.tenant_id, state.version, kind, rate)
        found = self._deviating.get(key)
        if found is None:
            found = self._deviating[key] = realism.assignment(kind, list(getattr(state, kind, {})), rate)
        return found

    def changed(self, state: TenantState, kind: str, record_id: str | None = None) -> None:
        """Forget cached bytes of one record, or of a whole kind when a change can show in many records."""
        state.touch()
        cache = self._encoded.setdefault((state.tenant_id, kind), {})
        if record_id is None:
            cache.clear()
        else:
            cache.pop(record_id, None)

    def new_id(self) -> str:
        """A fresh record id, deterministic for a given seed and sequence of writes."""
        return random_uuid(self.rng)

    def count_write(self, kind: str, record_id: str) -> None:
        """Count one applied write of one entity (tests check that nothing is written twice)."""
        self.stats.writes[f"{kind}:{record_id}"] += 1


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Seeding builds millions of small dicts; the cyclic collector would rescan them over and over.
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
