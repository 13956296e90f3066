"""The emulator's ASGI application: FastAPI routes of E1-E14 and the extensions, error handling that
answers every problem with a JSON error body (never a 500 for bad input), and the fault middleware."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from emulator import admin, routes_actions, routes_decisions, routes_other, routes_settings, routes_users
from emulator.middleware import FaultMiddleware
from emulator.service import Emulator, EmulatorOptions, ServiceError
from emulator.state import now
from models.base import ErrorBody

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
}


def create_app(options: EmulatorOptions | None = None) -> FaultMiddleware:
    """The emulator app for ``options``: a FastAPI app wrapped in the fault middleware."""
    emulator = Emulator(options or EmulatorOptions())
    api = FastAPI(
        title="Authority Delegation Management Service (emulator)",
        version="1.0",
        description="Local stand-in of the service: E1-E14, access-key exchange, four list extensions.",
        responses={code: {"model": ErrorBody, "description": reason} for code, reason in _REASONS.items()},
    )
    api.state.emulator = emulator
    routers = [
        module.router
        for module in (routes_users, routes_settings, routes_decisions, routes_actions, routes_other)
    ]
    for router in [*routers, admin.router]:
        api.include_router(router)
    _install_handlers(api)
    middleware = FaultMiddleware(api, emulator, _classifier([r for router in routers for r in router.routes]))
    api.state.fault_middleware = middleware
    return middleware


def _classifier(candidates: list[BaseRoute]) -> Callable[[Scope], str]:
    routes = [route for route in candidates if isinstance(route, Route)]

    def classify(scope: Scope) -> str:
        """The endpoint name (E1..E14, exchange, users, ...) of a request, for counting and targeting."""
        partial = "unmatched"
        for route in routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return route.name
            if match == Match.PARTIAL and partial == "unmatched":
                partial = route.name
        return partial

    return classify


def error_response(status: int, message: str, field: str | None = None) -> Response:
    """The emulator's error body: ``statusCode``, ``message``, ``error`` and the offending ``field``."""
    body = {
        "statusCode": status,
        "message": message,
        "error": _REASONS.get(status, "Error"),
        "timestamp": now(),
    }
    if field is not None:
        body["field"] = field
    # A plain Response: FastAPI deprecates ORJSONResponse, and its warning (an error under strict warning
    # filters) would turn every error answer into a 500.
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _offending_field(error: Mapping[str, Any]) -> str:
    """The field a request validation error names, dotted (``roleIds.0``); ``body`` for the body as a whole.

    A body that is not JSON names the body (its location holds a character offset, not a field). A rule
    across fields (a model validator, located at the body) names the field its message starts with, as in
    "status is required when operation is UPDATE"."""
    if error["type"] == "json_invalid":
        return "body"
    field = ".".join(str(part) for part in error["loc"] if part not in ("body", "path", "query"))
    if field:
        return field
    cause = error.get("ctx", {}).get("error")
    named = str(cause).split(" ", 1)[0] if error["type"] == "value_error" and cause else ""
    return named if named.isidentifier() else "body"


def _install_handlers(api: FastAPI) -> None:
    @api.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> Response:
        return error_response(exc.status, exc.message, exc.field)

    @api.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        error = exc.errors()[0]
        field = _offending_field(error)
        return error_response(400, f"{field}: {error['msg']}", field)

    @api.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> Response:
        return error_response(exc.status_code, str(exc.detail))
