"""`AdmClient`: the typed, synchronous client of the Authority Delegation Management Service.

One method per endpoint (E1..E14, the access-key exchange, the four list extensions), paged iterators,
and `map_concurrent` for per-entity calls. Every request of the client goes through the same path:
a concurrency slot (at most ``settings.concurrency`` requests in flight), the tenant's shared rate limiter,
the retry policy of `resources.retries`, one access-key exchange on a refused token, and validation of the
body straight from the response bytes.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel, RootModel, SecretStr
from pydantic import ValidationError as PydanticValidationError

from models.auth import AccessKeyExchange, AccessToken
from models.base import Envelope, Page, RequestModel, canonical_id
from models.decisions import Decision, DecisionProjection
from models.delegations import Delegation
from models.groups import Group, UpdateGroup
from models.positions import Position
from models.queries import (
    MAX_LIMIT,
    DecisionQuery,
    DelegationQuery,
    GroupQuery,
    PageQuery,
    PositionQuery,
    RevisionQuery,
    SortOrder,
    UserQuery,
)
from models.users import UpdateUserEntities, User, UserPosition
from resources.auth import Credentials
from resources.catalog import (
    CALLER_POSITIONS,
    DECISIONS,
    DELEGATIONS,
    GROUPS,
    POSITIONS,
    USERS,
    PagedList,
    paged_list,
)
from resources.clock import ServiceClock
from resources.concurrency import bounded_map
from resources.contract import RecordContract
from resources.endpoints import ENDPOINTS, Endpoint, EndpointName
from resources.errors import (
    AuthenticationError,
    NotFoundError,
    PagingDriftError,
    RateLimitError,
    ResponseFormatError,
    ServiceError,
    StoppedError,
    TLSError,
    ValidationError,
    error_for_response,
    error_for_transport,
    error_in_envelope,
    retry_after_seconds,
)
from resources.metrics import ClientMetrics, MetricsSnapshot
from resources.paging import PageStream
from resources.ratelimit import shared_bucket
from resources.rawjson import exact_value
from resources.retries import RetryPolicy
from resources.settings import ClientSettings
from resources.transfer import MAX_REDIRECTS, json_bytes, redirect_target, send_within
from resources.transport import Channel
from resources.waits import SharedWait

if TYPE_CHECKING:
    # The models of the endpoints no sync calls (actions, matrices, notifications, reports) are imported by
    # the methods that call them: building them cost every process that makes a client about 90 ms.
    from models.actions import (
        Action,
        ActionTemplate,
        DeleteActions,
        UpdateAction,
        ValidateAction,
        ValidateActionResult,
    )
    from models.matrices import Matrix, UpdateMatrix
    from models.notifications import MarkAllReadResult, Notification, ToggleNotificationStatus
    from models.reports import ReportStatusResult, UpdateReportStatuses

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
A = TypeVar("A")
R = TypeVar("R")


class Identified(Protocol):
    """A record with a string id (every paged record)."""

    @property
    def id(self) -> str:
        """The record's unique identifier."""
        ...


T = TypeVar("T")
Rec = TypeVar("Rec", bound=Identified)


class RevisionIds(RootModel[list[str]]):
    """E11/E12: a bare JSON array of revision ids, without envelope. An id sent as a JSON number is that
    id, as the text the service wrote (`read`)."""

    @classmethod
    def read(cls, body: bytes) -> RevisionIds:
        """The ids of one answer, numbers kept as their text."""
        try:
            value = exact_value(body)
        except ValueError:  # not JSON: pydantic's own error says so, as for every other answer
            return cls.model_validate_json(body)
        return cls.model_validate(value)


DECISION_PROJECTIONS = PagedList[DecisionProjection](
    DECISIONS.name, DECISIONS.endpoint, DecisionProjection, DECISIONS.query, DECISIONS.updated
)
"""E8 with ``fields``: the decisions, each holding only the fields selected; read a page at a time only."""

STABLE_QUERY_FIELDS = frozenset(
    {
        "page",
        "limit",
        "tenant_id",
        "sort_by",
        "sort_order",
        "fields",
        "decision_ids",
        "created_at_start",
        "created_at_end",
    }
)
"""Query fields whose filter no update can change: with only these set, a list is append-only."""


@dataclass(frozen=True)
class _Request:
    endpoint: Endpoint
    path: str
    params: dict[str, str] | None
    body: dict[str, Any] | None


class AdmClient:
    """The service client. Thread-safe; use as a context manager or call `close`.

    ``transport`` replaces the network (``httpx.MockTransport`` in narrow unit tests).
    """

    def __init__(self, settings: ClientSettings, *, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self._channel = Channel(settings, transport)
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self._halt = threading.Event()
        self._executor = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="adm-client")
        self._bucket = shared_bucket(
            settings.address,
            settings.tenant_id,
            settings.plan_rate_per_minute,
            settings.plan_burst,
            settings.limiter_state_dir,
        )
        self._retry = RetryPolicy.from_settings(settings)
        self._rate_wait = SharedWait(self._rate_limit_awaited)
        self._metrics = ClientMetrics(self._rate_wait)
        self.service_clock = ServiceClock()
        """The service's own time, as its answers state it (`resources.clock`)."""
        self._credentials = Credentials(settings.token, settings.access_key, self._exchange)

    def __repr__(self) -> str:
        return f"AdmClient(base_url={self.settings.address!r}, tenant_id={self.settings.tenant_id!r})"

    def __enter__(self) -> AdmClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker threads, close the connections and save the tenant's rate-limit state."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._channel.close()
        self._bucket.save()

    def _rate_limit_awaited(self) -> str:
        """What a request blocked on the limiter waits for: a 429's pause, or the plan's pace."""
        pause = self._bucket.pause_remaining()
        reason = (
            f"a 429's pause, {pause:.0f} s left" if pause else f"{self._bucket.rate_per_minute:g} calls/min"
        )
        return f"the rate limit of tenant {self.settings.tenant_id} ({reason})"

    def stop(self) -> None:
        """Send no more requests, from any thread: each call not yet sent, a retry's wait and a wait for
        the rate limiter included, ends at once with `StoppedError` (requests in flight finish)."""
        self._halt.set()

    def observe(self, observer: Callable[[MetricsSnapshot], None] | None) -> None:
        """Call ``observer`` with the metrics before each request leaves (see `ClientMetrics.observe`)."""
        self._metrics.observe(observer)

    @property
    def metrics(self) -> MetricsSnapshot:
        """What this client has spent so far (calls, retries, 429s, bytes, limiter wait, exchanges)."""
        return self._metrics.snapshot()

    # -- authentication ------------------------------------------------------------------------------------

    def exchange_access_key(self) -> None:
        """Exchange the access key for a new token and use it from now on (the token is never returned)."""
        self._credentials.renew()

    def _exchange(self, access_key: SecretStr) -> SecretStr:
        body = AccessKeyExchange(access_key=access_key.get_secret_value())
        token = self._call("exchange", Envelope[AccessToken], body=body).data.token
        self._metrics.exchanged()
        return SecretStr(token)

    # -- the fourteen endpoints ----------------------------------------------------------------------------

    def update_user_entities(self, user_id: str, body: UpdateUserEntities) -> User:
        """E1: update a user's fields; ``roleIds``, ``positionIds`` and ``groups`` replace whole sets."""
        return self._call("E1", Envelope[User], record_id=user_id, body=body).data

    def delete_actions(self, body: DeleteActions) -> list[Action]:
        """E2: delete several actions; returns them as deleted."""
        from models.actions import Action

        return self._call("E2", Envelope[list[Action]], body=body).data

    def update_group(self, group_id: str, body: UpdateGroup) -> Group:
        """E3: update a group (names, status, parents, address); send only what changes."""
        return self._call("E3", Envelope[Group], record_id=group_id, body=body).data

    def update_report_statuses(self, body: UpdateReportStatuses) -> ReportStatusResult:
        """E4: set or restore the status of several reports; ids not updated are in ``failedIds``."""
        from models.reports import ReportStatusResult

        return self._call("E4", Envelope[ReportStatusResult], body=body).data

    def validate_action(self, body: ValidateAction) -> ValidateActionResult:
        """E5: whether an action exists for a decision and/or delegation."""
        from models.actions import ValidateActionResult

        return self._call("E5", Envelope[ValidateActionResult], body=body).data

    def update_action(self, action_id: str, body: UpdateAction) -> Action:
        """E6: update an action."""
        from models.actions import Action

        return self._call("E6", Envelope[Action], record_id=action_id, body=body).data

    def update_matrix(self, matrix_id: str, body: UpdateMatrix) -> Matrix:
        """E7: update a matrix."""
        from models.matrices import Matrix

        return self._call("E7", Envelope[Matrix], record_id=matrix_id, body=body).data

    def list_decisions(self, query: DecisionQuery) -> Page[Decision]:
        """E8: one page of full decisions. A query with ``fields`` needs `list_decision_projections`."""
        if query.fields:
            raise ValueError("a query with fields returns projections: use list_decision_projections")
        return self._page(DECISIONS, query)

    def list_decision_projections(self, query: DecisionQuery) -> Page[DecisionProjection]:
        """E8 with ``fields``: one page of decisions holding only the selected fields (and ``id``)."""
        return self._page(DECISION_PROJECTIONS, query)

    def current_user_positions(self, contract: RecordContract | None = None) -> list[UserPosition]:
        """E9: the positions of the user the token stands for. With a ``contract``, its records are read
        under it (`resources.contract`); without, any record off the spec fails the call."""
        parse = None if contract is None else partial(contract.read_array, CALLER_POSITIONS)
        return self._call(CALLER_POSITIONS.endpoint, Envelope[list[UserPosition]], parse=parse).data

    def get_action_template(self, template_id: str) -> ActionTemplate:
        """E10: one action template."""
        from models.actions import ActionTemplate

        return self._call("E10", Envelope[ActionTemplate], record_id=template_id).data

    def delegation_revision_ids(self, delegation_id: str, query: RevisionQuery | None = None) -> list[str]:
        """E11: a delegation's changelog revision ids."""
        return self.revision_ids("E11", delegation_id, query)

    def document_revision_ids(self, document_id: str, query: RevisionQuery | None = None) -> list[str]:
        """E12: a document's changelog revision ids."""
        return self.revision_ids("E12", document_id, query)

    def toggle_notification_status(
        self, notification_id: str, body: ToggleNotificationStatus
    ) -> Notification:
        """E13: set a notification READ or UNREAD (without ``status`` it flips)."""
        from models.notifications import Notification

        return self._call("E13", Envelope[Notification], record_id=notification_id, body=body).data

    def mark_all_notifications_read(self) -> MarkAllReadResult:
        """E14: mark every notification of the caller read; ``count`` says how many."""
        from models.notifications import MarkAllReadResult

        return self._call("E14", Envelope[MarkAllReadResult]).data

    def revision_ids(
        self, name: EndpointName, record_id: str, query: RevisionQuery | None = None
    ) -> list[str]:
        """The changelog revision ids of one record from its revision endpoint (E11, E12), for a caller
        that holds the endpoint as data (the warehouse's catalog of revision lists)."""
        params = query.to_params(self.settings.param_names) if query else None
        return self._call(name, RevisionIds, record_id=record_id, params=params, parse=RevisionIds.read).root

    # -- list extensions, one page -------------------------------------------------------------------------

    def list_users(self, query: UserQuery) -> Page[User]:
        """One page of users (``GET /auth/v1/user``)."""
        return self._page(USERS, query)

    def list_groups(self, query: GroupQuery) -> Page[Group]:
        """One page of groups (``GET /settings/v1/groups``)."""
        return self._page(GROUPS, query)

    def list_positions(self, query: PositionQuery) -> Page[Position]:
        """One page of positions (``GET /settings/v1/positions``)."""
        return self._page(POSITIONS, query)

    def list_delegations(self, query: DelegationQuery) -> Page[Delegation]:
        """One page of delegations (``GET /decision/v1/delegations``)."""
        return self._page(DELEGATIONS, query)

    # -- whole lists ---------------------------------------------------------------------------------------

    def iter_pages(
        self, name: str, query: PageQuery | None = None, contract: RecordContract | None = None
    ) -> PageStream[Any]:
        """Every page of the list called ``name`` (`resources.catalog`; `iter_list`, for a stream typed
        by its records), as ``query`` of the list's query model selects (every record without one)."""
        paged = paged_list(name)
        return self.iter_list(paged, query or paged.query(), contract)

    def iter_list(
        self, paged: PagedList[Rec], query: PageQuery, contract: RecordContract | None = None
    ) -> PageStream[Rec]:
        """Every page of a list, fetched concurrently, de-duplicated, safe against drift (see
        `resources.paging`). Unless the query says otherwise: 100 records a page, the settings' tenant,
        and the immutable creation order. The stream exposes ``total`` of page 1 and the totals seen.
        With a ``contract``, records are read under it (`resources.contract`); without, any record off
        the spec fails the read."""
        if not isinstance(query, paged.query):
            raise TypeError(f"{type(query).__name__} is not the query of the {paged.name} list")
        if isinstance(query, DecisionQuery) and query.fields:
            raise ValueError("paging projections is not supported: page full decisions")
        return self._stream(paged, self._for_paging(paged, query), contract)

    def iter_decisions(self, query: DecisionQuery | None = None) -> Iterator[Decision]:
        """Every decision the query selects (E8), each once."""
        return self.iter_list(DECISIONS, query or DecisionQuery()).items()

    def iter_users(self, query: UserQuery | None = None) -> Iterator[User]:
        """Every user the query selects, each once."""
        return self.iter_list(USERS, query or UserQuery()).items()

    def iter_groups(self, query: GroupQuery | None = None) -> Iterator[Group]:
        """Every group of the settings' tenant the query selects, each once."""
        return self.iter_list(GROUPS, query or GroupQuery(tenant_id=self.settings.tenant_id)).items()

    def iter_positions(self, query: PositionQuery | None = None) -> Iterator[Position]:
        """Every position of the settings' tenant, each once."""
        return self.iter_list(POSITIONS, query or PositionQuery(tenant_id=self.settings.tenant_id)).items()

    def iter_delegations(self, query: DelegationQuery | None = None) -> Iterator[Delegation]:
        """Every delegation the query selects, each once."""
        return self.iter_list(DELEGATIONS, query or DelegationQuery()).items()

    def map_concurrent(self, func: Callable[[A], R], items: Iterable[A]) -> Iterator[tuple[A, R]]:
        """``(item, func(item))`` as each completes, at most ``settings.concurrency`` at once, under the
        client's limiter. The first error cancels the calls not yet started and is raised."""
        return bounded_map(self._executor, func, items, self.settings.concurrency)

    def _for_paging(self, kind: PagedList[Any], query: PageQuery) -> PageQuery:
        """The query with the paging defaults filled in where the caller left them open."""
        values = dict(query)
        update: dict[str, Any] = {}
        if "limit" not in query.model_fields_set:
            update["limit"] = MAX_LIMIT
        if "tenant_id" in values and values["tenant_id"] is None:
            update["tenant_id"] = self.settings.tenant_id
        if kind.created is not None and values.get("sort_by") is None:
            update["sort_by"] = kind.created
            update["sort_order"] = values.get("sort_order") or SortOrder.ASC
        return query.model_copy(update=update)

    def _stream(
        self, kind: PagedList[Rec], query: PageQuery, contract: RecordContract | None = None
    ) -> PageStream[Rec]:
        endpoint = ENDPOINTS[kind.endpoint]

        def fetch(number: int, size: int) -> Page[Rec]:
            return self._page(kind, query.model_copy(update={"page": number, "limit": size}), contract)

        return PageStream(
            fetch,
            limit=query.limit,
            record_id=lambda item: canonical_id(item.id),
            mapper=self.map_concurrent,
            order_key=kind.creation_key if _append_only(kind, query) else None,
            updated=kind.updated_of,
            describe=lambda message: PagingDriftError(
                f"{endpoint.name}: {message}", method=endpoint.method, path=endpoint.path
            ),
            past_end=_past_the_end,
        )

    def _page(self, kind: PagedList[T], query: PageQuery, contract: RecordContract | None = None) -> Page[T]:
        params = query.to_params(self.settings.param_names)
        parse = None if contract is None else contract.reader(kind, query.page or 1)
        page = self._call(kind.endpoint, kind.envelope, params=params, parse=parse).data
        # The page number must be the one asked for (offsets would be wrong otherwise); the page size is
        # the service's to choose, and `PageStream` follows it.
        if page.page != (query.page or 1):
            endpoint = ENDPOINTS[kind.endpoint]
            problem = f"page {page.page} when asked for {query.page or 1}"
            raise ResponseFormatError.mismatch(
                endpoint.name, "data.page", problem, method=endpoint.method, path=endpoint.path
            )
        return page

    # -- one request ---------------------------------------------------------------------------------------

    def _call(
        self,
        name: EndpointName,
        model: type[M],
        *,
        record_id: str | None = None,
        params: dict[str, str] | None = None,
        body: RequestModel | None = None,
        parse: Callable[[bytes], M] | None = None,
    ) -> M:
        """One logical call: retries, and one access-key exchange when the token is refused. ``parse``
        reads the body instead of ``model`` (a page read under a record contract)."""
        endpoint = ENDPOINTS[name]
        request = _Request(endpoint, endpoint.url_path(record_id), params, body.to_wire() if body else None)
        read = parse or model.model_validate_json
        if not endpoint.authenticated:
            return self._with_retries(request, read)
        generation = self._credentials.ensure()
        try:
            return self._with_retries(request, read)
        except AuthenticationError:
            if not self._credentials.renewable:
                raise
            logger.info("%s %s: token refused; exchanging the access key once", endpoint.method, request.path)
            self._credentials.renew(generation)
            return self._with_retries(request, read)

    def _with_retries(self, request: _Request, read: Callable[[bytes], M]) -> M:
        return self._retry.call(
            partial(self._attempt, request, read),
            request.endpoint.retry_safe,
            partial(self._retrying, request),
            self.pause,
        )

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` (between two tries, for a write to settle), cut short when the client is
        stopped."""
        self._halt.wait(seconds)

    def _retrying(self, request: _Request, error: BaseException, attempt: int, sleep_s: float) -> None:
        self._metrics.retried()
        # A 429 waits in the shared limiter, not in the retry loop: log the pause the service asked for.
        wait = self._bucket.pause_remaining() if isinstance(error, RateLimitError) else sleep_s
        logger.warning(
            "%s %s: %s; try %d in %.2f s", request.endpoint.method, request.path, error, attempt + 1, wait
        )

    def _attempt(self, request: _Request, read: Callable[[bytes], M]) -> M:
        """One HTTP request: the typed error of a failure, else the validated body."""
        endpoint, path = request.endpoint, request.path
        response = self._send(request)
        context: dict[str, Any] = {"method": endpoint.method, "path": path, "status": response.status_code}
        if response.status_code not in endpoint.success:
            if not response.is_success:
                raise error_for_response(endpoint.method, path, response)
            problem = f"status {response.status_code}, the spec says {sorted(endpoint.success)}"
            raise ResponseFormatError.mismatch(endpoint.name, "<status>", problem, **context)
        try:
            result = read(json_bytes(response))
        except ResponseFormatError as error:
            raise self._envelope_error(request, response) or ResponseFormatError.mismatch(
                endpoint.name, error.field_path, error.message.split(": ", 1)[-1], **context
            ) from None
        except PydanticValidationError as error:
            # `from None`: pydantic's own message quotes the input, which may hold a token.
            raise self._envelope_error(request, response) or ResponseFormatError.from_validation(
                endpoint.name, error, **context
            ) from None
        if isinstance(result, Envelope) and result.status_code >= 400:
            raise self._envelope_error(request, response) or ResponseFormatError.mismatch(
                endpoint.name, "statusCode", f"statusCode {result.status_code} in a success", **context
            )
        self.service_clock.observe(response, result.timestamp if isinstance(result, Envelope) else None)
        return result

    def _envelope_error(self, request: _Request, response: httpx.Response) -> ServiceError | None:
        """The failure a success's body reports (HTTP 200 with ``statusCode: 500``), fed to the limiter as
        the status it is, or None."""
        error = error_in_envelope(request.endpoint.method, request.path, response)
        if isinstance(error, RateLimitError):
            self._bucket.rate_limited(error.retry_after_s)
        return error

    def _send(self, request: _Request) -> httpx.Response:
        """Send under a concurrency slot, following same-origin 307/308 redirects (`resources.transfer`)."""
        endpoint = request.endpoint
        headers = self._credentials.authorization() if endpoint.authenticated else {}
        url: str | httpx.URL = request.path
        params = request.params
        with self._slots:
            for _ in range(MAX_REDIRECTS + 1):
                response = self._transmit(request, url, params, headers)
                target = redirect_target(response, endpoint.method, request.path)
                if target is None:
                    return response
                logger.info(  # the path only: a location may carry user information
                    "%s %s: redirected (%d) to %s", endpoint.method, url, response.status_code, target.path
                )
                url, params = target, None  # the location names the whole address, its query included
        return response

    def _transmit(
        self, request: _Request, url: str | httpx.URL, params: dict[str, str] | None, headers: dict[str, str]
    ) -> httpx.Response:
        """One HTTP exchange within the request deadline, under the tenant's limiter; feed the limiter and
        the metrics."""
        endpoint = request.endpoint
        with self._rate_wait.waiting():
            self._bucket.acquire(self._halt, self._rate_wait.still)
        if self._halt.is_set():
            raise StoppedError("the client was stopped", method=endpoint.method, path=request.path)
        sent_at = self._bucket.now()
        self._metrics.request_sent(endpoint.name)
        started = time.perf_counter()
        try:
            response = send_within(
                self._channel.transport,
                self._channel.request(endpoint.method, url, params, request.body, headers),
                self.settings.request_deadline_s,
                endpoint.name,
            )
        except httpx.RequestError as error:
            failure = error_for_transport(endpoint.method, request.path, error)
            if isinstance(failure, TLSError):
                self._metrics.not_sent(endpoint.name)  # the handshake failed: no API call was made
            raise failure from error
        finally:
            self._metrics.took(endpoint.name, time.perf_counter() - started)
        self._metrics.response_received(len(response.content), response.status_code)
        if response.status_code == 429:
            self._bucket.rate_limited(retry_after_seconds(response), sent_at)
        else:
            self._bucket.succeeded()
        logger.debug(
            "%s %s -> %d (%d bytes)",
            endpoint.method,
            url,
            response.status_code,
            len(response.content),
        )
        return response


def _past_the_end(error: Exception) -> bool:
    """Whether a page's failure says there is no such page: a 404, or a 400 whose message is about the
    page (``page out of range``), as services answer an offset beyond their list."""
    if isinstance(error, NotFoundError):
        return True
    return (
        isinstance(error, ValidationError)
        and error.status == 400
        and bool(_NO_SUCH_PAGE.search(error.message))
    )


_NO_SUCH_PAGE = re.compile(
    r"page.*(out of range|beyond|exceed|does not exist|no such|not found)", re.IGNORECASE
)


def _append_only(kind: PagedList[Any], query: PageQuery) -> bool:
    """Whether the query reads the list in its immutable creation order with only stable filters."""
    values = dict(query)
    in_order = values.get("sort_by") == kind.created and values.get("sort_order") == SortOrder.ASC
    stable = all(value is None for name, value in values.items() if name not in STABLE_QUERY_FIELDS)
    return kind.created is not None and in_order and stable
