"""Errors as JSON ``{"error": {"code", "message", "details"?}}``: one table from graphmem's typed
errors to HTTP statuses, and the app's exception handlers."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphmem.errors import (
    ConfigError,
    ConflictError,
    GraphmemError,
    InvalidInputError,
    LLMError,
    LocalServiceError,
    NoteNotFoundError,
    SchemaMismatchError,
    StoreUnavailableError,
)
from graphmem.interfaces.rest.schemas import ErrorBody
from graphmem.redaction import redact

log = logging.getLogger("graphmem.interfaces.rest")

STATUS_OF: list[tuple[type[GraphmemError], int, str]] = [
    (NoteNotFoundError, 404, "not_found"),
    (InvalidInputError, 422, "invalid_input"),
    (ConflictError, 409, "conflict"),
    (StoreUnavailableError, 503, "store_unavailable"),
    (LLMError, 502, "llm_failed"),
    (LocalServiceError, 503, "local_service_unavailable"),
    (SchemaMismatchError, 503, "schema_mismatch"),
    (ConfigError, 503, "misconfigured"),
]
_HTTP_CODES = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


# What each error status means, for the OpenAPI declarations (``error_responses``).
ERROR_MEANINGS: dict[int, str] = {
    400: "bad request: the scope named twice with different values, or an invalid Content-Length",
    401: "missing or invalid API key",
    403: "the API key is bound to another scope",
    404: "no such note in this scope",
    409: "the note id is already in use",
    413: "request body over the limit",
    422: "invalid input: a field, a parameter or the scope (details list each problem)",
    500: "internal error (see the server log)",
    502: "the LLM failed after its retries",
    503: "Neo4j or the local model is unavailable, or the API is still starting",
}
# Every authenticated route can answer these.
COMMON_ERRORS = (400, 401, 403, 413, 422, 500, 503)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error statuses, each with the one error body the API sends."""
    return {status: {"model": ErrorBody, "description": ERROR_MEANINGS[status]} for status in statuses}


class ApiError(Exception):
    """A refusal decided by the API layer itself (auth, scope)."""

    def __init__(self, status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.headers = headers


def error_response(
    status_code: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if details is not None:
        body["error"]["details"] = details
    return JSONResponse(status_code=status_code, content=body, headers=headers)


def pydantic_message(error: Any) -> str:
    """A pydantic error message without pydantic's 'Value error, ' prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status_code, exc.code, exc.message, headers=exc.headers)


async def _graphmem_error(request: Request, exc: Exception) -> JSONResponse:
    message = redact(str(exc))  # the same text for the log and the client, secrets removed
    for cls, code_status, code in STATUS_OF:
        if isinstance(exc, cls):
            if code_status >= 500:
                log.warning("%s %s failed: %s", request.method, request.url.path, message)
            return error_response(code_status, code, message)
    log.warning("%s %s failed: %s", request.method, request.url.path, message)
    return error_response(500, "error", message)


async def _pydantic_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    messages = [pydantic_message(e) for e in exc.errors()]
    details = [{"loc": [str(p) for p in e["loc"]], "msg": pydantic_message(e)} for e in exc.errors()]
    return error_response(422, "invalid_input", "; ".join(messages), details)


async def _request_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    details = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ())]
        details.append({"loc": loc, "msg": e.get("msg", "invalid"), "type": e.get("type")})
    first = details[0] if details else {"loc": [], "msg": "invalid request"}
    where = ".".join(first["loc"][1:] if len(first["loc"]) > 1 else first["loc"]) or "request"
    msg = first["msg"]
    if first.get("type") == "json_invalid":
        msg = "request body is not valid JSON"
    return error_response(422, "invalid_request", f"{where}: {msg}", details)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None))


async def _value_error(request: Request, exc: Exception) -> JSONResponse:
    # The service validates ids with plain ValueError (models.check_id): bad input, not a crash.
    return error_response(422, "invalid_input", redact(str(exc)))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    trace = redact("".join(traceback.format_exception(exc)))
    log.error("%s %s: unexpected error\n%s", request.method, request.url.path, trace)
    return error_response(500, "internal_error", "internal error (see the server log)")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(GraphmemError, _graphmem_error)
    app.add_exception_handler(ValidationError, _pydantic_error)
    app.add_exception_handler(RequestValidationError, _request_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ValueError, _value_error)
    app.add_exception_handler(Exception, _unexpected)
