"""The one table of the service's endpoints: name, method, path and success codes (spec section 4,
public-reference.md for the exchange and the four list extensions). No other module holds a URL path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

EndpointName = Literal[
    "exchange",
    "E1",
    "E2",
    "E3",
    "E4",
    "E5",
    "E6",
    "E7",
    "E8",
    "E9",
    "E10",
    "E11",
    "E12",
    "E13",
    "E14",
    "users",
    "groups",
    "positions",
    "delegations",
]


@dataclass(frozen=True)
class Endpoint:
    """One endpoint. ``path`` may hold one ``{id}``; ``success`` lists the status codes of success."""

    name: EndpointName
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    success: frozenset[int] = frozenset({200})
    authenticated: bool = True
    retry_safe_write: bool = False
    """A non-GET that may be retried like a read (the exchange: a second token duplicates nothing)."""

    @property
    def retry_safe(self) -> bool:
        """Whether any failure may be retried (reads), or only failures known to precede sending."""
        return self.method == "GET" or self.retry_safe_write

    def url_path(self, record_id: str | None = None) -> str:
        """The path with the record id filled in, percent-encoded so an id cannot change the path."""
        if "{id}" not in self.path:
            return self.path
        if not record_id:
            raise ValueError(f"{self.name} needs a record id")
        return self.path.replace("{id}", quote(record_id, safe=""))


ENDPOINTS: dict[EndpointName, Endpoint] = {
    endpoint.name: endpoint
    for endpoint in (
        Endpoint(
            "exchange",
            "POST",
            "/auth/v1/tenants/access-key/exchange",
            frozenset({200, 201}),
            authenticated=False,
            retry_safe_write=True,
        ),
        Endpoint("E1", "PATCH", "/auth/v1/user/update-entities/{id}"),
        Endpoint("E2", "DELETE", "/actions/v1/actions"),
        Endpoint("E3", "PATCH", "/settings/v1/groups/{id}"),
        Endpoint("E4", "POST", "/report/v1/report/bulk-status-update", frozenset({201})),
        Endpoint("E5", "PATCH", "/actions/v1/actions/validate-action"),
        Endpoint("E6", "PATCH", "/actions/v1/actions/{id}"),
        Endpoint("E7", "PUT", "/matrix/v1/matrix/{id}"),
        Endpoint("E8", "GET", "/decision/v1/decisions"),
        Endpoint("E9", "GET", "/auth/v1/user/positions"),
        Endpoint("E10", "GET", "/settings/v1/action-templates/{id}"),
        Endpoint("E11", "GET", "/decision/v1/delegations/{id}/changelog/revision-ids"),
        Endpoint("E12", "GET", "/document/v1/documents/{id}/changelog/revision-ids"),
        Endpoint("E13", "PATCH", "/notification/v1/notifications/{id}/toggle-status"),
        # The spec shows 200 in the sample and 201 in the summary: both are success.
        Endpoint("E14", "POST", "/v1/notifications/mark-all-read", frozenset({200, 201})),
        Endpoint("users", "GET", "/auth/v1/user"),
        Endpoint("groups", "GET", "/settings/v1/groups"),
        Endpoint("positions", "GET", "/settings/v1/positions"),
        Endpoint("delegations", "GET", "/decision/v1/delegations"),
    )
}
