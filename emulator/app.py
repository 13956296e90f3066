"""The emulator's ASGI application: FastAPI routes of E1-E14 and the extensions, error handling that
answers every problem with a JSON error body (never a 500 for bad input), and the fault middleware."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import ORJSONResponse
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


def error_response(status: int, message: str, field: str | None = None) -> ORJSONResponse:
    """The emulator's error body: ``statusCode``, ``message``, ``error`` and the offending ``field``."""
    body = {
        "statusCode": status,
        "message": message,
        "error": _REASONS.get(status, "Error"),
        "timestamp": now(),
    }
    if field is not None:
        body["field"] = field
    return ORJSONResponse(body, status_code=status)


def _install_handlers(api: FastAPI) -> None:
    @api.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> ORJSONResponse:
        return error_response(exc.status, exc.message, exc.field)

    @api.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> ORJSONResponse:
        error = exc.errors()[0]
        field = (
            ".".join(str(part) for part in error["loc"] if part not in ("body", "path", "query")) or "body"
        )
        return error_response(400, f"{field}: {error['msg']}", field)

    @api.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> ORJSONResponse:
        return error_response(exc.status_code, str(exc.detail))
