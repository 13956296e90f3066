"""Request and response plumbing shared by the routes: caller, envelopes, pages, query parsing."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError

from emulator.encoding import dumps
from emulator.service import Caller, Emulator, ServiceError
from emulator.state import now
from models.base import RequestModel

Q = TypeVar("Q", bound=BaseModel)
JSON = "application/json"

bearer = HTTPBearer(auto_error=False, scheme_name="accessToken")


# The dependencies and every route are coroutines, though none of them awaits: FastAPI runs a plain
# function in a worker thread, three hops a request (the caller, the emulator, the route) that cost more
# than the route's own work. Nothing here blocks (the latency faults sleep in the middleware), and the
# emulator's state is now changed by one request at a time.
async def emulator_of(request: Request) -> Emulator:
    """The emulator serving this app."""
    emulator: Emulator = request.app.state.emulator
    return emulator


EmulatorDep = Annotated[Emulator, Depends(emulator_of)]


async def current_caller(
    request: Request,
    emulator: EmulatorDep,
    _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)] = None,
) -> Caller:
    """The authenticated caller; 401 without a valid bearer token."""
    return emulator.authenticate(request.headers.get("authorization"))


CallerDep = Annotated[Caller, Depends(current_caller)]


def envelope_bytes(data: bytes, status: int = 200) -> Response:
    """The success envelope around already-serialised ``data``."""
    head = b'{"statusCode":%d,"timestamp":"%s","message":"Success","data":' % (status, now().encode())
    return Response(content=head + data + b"}", status_code=status, media_type=JSON)


def envelope(data: Any, status: int = 200) -> Response:
    """The success envelope around a JSON-ready value."""
    return envelope_bytes(dumps(data), status)


def page(items: list[bytes], number: int, limit: int, total: int) -> Response:
    """A page object ``{page, limit, total, data}`` inside the envelope."""
    body = b'{"page":%d,"limit":%d,"total":%d,"data":[%s]}' % (number, limit, total, b",".join(items))
    return envelope_bytes(body)


def bare(data: Any) -> Response:
    """A bare JSON body without envelope (the revision-id lists)."""
    return Response(content=dumps(data), media_type=JSON)


def parse_query(request: Request, model: type[Q], ignored: list[str] | None = None) -> Q:
    """The request's query parameters as ``model``. Unknown parameters are ignored, as servers do;
    ``ignored`` names known ones to ignore as well (simulates a service that does not support a filter)."""
    names = {field.alias or name for name, field in model.model_fields.items()} - set(ignored or [])
    raw: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        if key in names:
            raw[key] = [*raw[key], value] if key in raw else [value]
    try:
        return model.model_validate(
            {key: values if len(values) > 1 else values[0] for key, values in raw.items()}
        )
    except ValidationError as exc:
        raise invalid(exc) from exc


def invalid(exc: ValidationError) -> ServiceError:
    """A 400 naming the first offending field and the rule it breaks."""
    error = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in error["loc"] if part != "body") or "body"
    return ServiceError(400, f"{field}: {error['msg']}", field)


def sliced(ids: list[str], number: int, limit: int) -> list[str]:
    """The ids of one page."""
    start = (number - 1) * limit
    return ids[start : start + limit]


def query_docs(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI ``parameters`` of a query model (the routes parse the query themselves)."""
    schema = _inline(
        model.model_json_schema(by_alias=True), model.model_json_schema(by_alias=True).get("$defs", {})
    )
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema["properties"].items():
        parameter_schema = _without_null(prop)
        if _is_object_list(prop):
            parameter_schema = {"type": "string", "description": "JSON array"}
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": parameter_schema,
                "style": "form",
                "explode": False,
            }
        )
    return {"parameters": parameters}


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """A parameter schema without the null option: a query parameter is absent, never null."""
    options = [option for option in prop.get("anyOf", [prop]) if option.get("type") != "null"]
    chosen = options[0] if len(options) == 1 else {"anyOf": options}
    return {key: value for key, value in chosen.items() if key not in ("title", "default")}


def _is_object_list(prop: dict[str, Any]) -> bool:
    options = prop.get("anyOf", [prop])
    return any(
        option.get("type") == "array" and option.get("items", {}).get("type") == "object"
        for option in options
    )


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """Replace local ``$ref``s by their definitions: query parameters cannot refer to ``$defs``."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {key: _inline(value, defs) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    return node


def body_fields(body: RequestModel) -> dict[str, Any]:
    """The fields a write body sets, by wire name; 400 for an explicit null (no writable field is null)."""
    wire = body.to_wire()
    for key, value in wire.items():
        if value is None:
            raise ServiceError(400, f"{key}: must not be null", key)
    return wire
