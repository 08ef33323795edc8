"""REST API (FastAPI) over AsyncMemoryService.

    uvicorn --factory graphmem.interfaces.rest:create_app      # or: graphmem serve

Auth: API keys from ``GRAPHMEM_API_KEYS`` (comma-separated; ``key=user/agent/run`` binds a key to a
scope), sent as ``X-API-Key: <key>`` or ``Authorization: Bearer <key>``. With no key configured the
app refuses to start unless ``GRAPHMEM_AUTH_DISABLED=true`` (for local use only).

Scope: a key bound to a scope always uses it (asking for another one is 403). Otherwise the request
names it: headers ``X-User-Id`` / ``X-Agent-Id`` / ``X-Run-Id``, query parameters ``user_id`` /
``agent_id`` / ``run_id``, or the same fields in a JSON body; agent and run default to ``default``.

Errors are JSON ``{"error": {"code", "message", "details"?}}`` with a 4xx status for every bad
request (422 invalid input, 404 unknown note, 409 conflict, 413 body too large, 401/403 auth) and
503 / 502 when Neo4j / the LLM fail. Request bodies are limited (1 MiB by default). Keys are never
logged: logs name a key by a short hash.
"""

import hashlib
import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from graphmem import __version__
from graphmem.config import Settings, load_settings
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
from graphmem.interfaces.rest_schemas import (
    AddResultOut,
    AskRequest,
    AskResultOut,
    Health,
    HistoryResponse,
    LinkCreate,
    LinksResponse,
    NoteCreate,
    NoteOut,
    NotePage,
    NoteUpdate,
    ScopeFields,
    SearchRequest,
    SearchResponse,
    hit_out,
    note_out,
)
from graphmem.models import Link, Scope
from graphmem.service.memory import AsyncMemoryService

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1_048_576
MIN_KEY_CHARS = 16
_SCOPE_PARTS = ("user_id", "agent_id", "run_id")


# --- auth -----------------------------------------------------------------------------------------


def parse_api_keys(raw: str | None) -> dict[str, Scope | None]:
    """'k1,k2=alice/agent/run' -> {k1: None, k2: Scope(alice, agent, run)}. ConfigError when malformed."""
    keys: dict[str, Scope | None] = {}
    for n, entry in enumerate((raw or "").split(","), 1):
        entry = entry.strip()
        if not entry:
            continue
        key, sep, scope_text = entry.partition("=")
        key = key.strip()
        if len(key) < MIN_KEY_CHARS:
            raise ConfigError(
                f"GRAPHMEM_API_KEYS: key #{n} is shorter than {MIN_KEY_CHARS} characters "
                "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        if any(c.isspace() for c in key):
            raise ConfigError(f"GRAPHMEM_API_KEYS: key #{n} contains whitespace")
        bound: Scope | None = None
        if sep:
            try:
                bound = Scope.parse(scope_text.strip())
            except ValueError as exc:
                raise ConfigError(f"GRAPHMEM_API_KEYS: key #{n} has an invalid scope: {exc}") from None
        keys[key] = bound
    return keys


def key_fingerprint(key: str) -> str:
    """What logs may say about a key."""
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:8]


class Principal(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # key fingerprint, or "anonymous" when auth is disabled
    scope: Scope | None = None  # a bound key's scope


class ApiError(Exception):
    def __init__(self, status_code: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.headers = headers


def _error(
    status_code: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if details is not None:
        body["error"]["details"] = details
    return JSONResponse(status_code=status_code, content=body, headers=headers)


def _msg(error: Any) -> str:
    """A pydantic error message without pydantic's 'Value error, ' prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def _merge(given: dict[str, str], source: dict[str, str | None]) -> None:
    for part, value in source.items():
        if value is None:
            continue
        if part in given and given[part] != value:
            raise ApiError(400, "conflicting_scope", f"{part} is given twice with different values")
        given[part] = value


# --- body size limit ------------------------------------------------------------------------------


class BodyLimit:
    """413 for bodies over the limit, by Content-Length or while streaming (chunked uploads)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = _error(413, "payload_too_large", f"request body over the limit of {self.max_bytes} bytes")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    await _error(400, "bad_request", "invalid Content-Length")(scope, receive, send)
                    return
                if length > self.max_bytes:
                    await too_big(scope, receive, send)
                    return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await too_big(scope, receive, send)


class _BodyTooLarge(StarletteHTTPException):
    """An HTTPException, so FastAPI's body reader passes it through to the JSON error handler."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body over the limit of {max_bytes} bytes")


# --- the app --------------------------------------------------------------------------------------

_STATUS_OF: list[tuple[type[GraphmemError], int, str]] = [
    (NoteNotFoundError, 404, "not_found"),
    (InvalidInputError, 422, "invalid_input"),
    (ConflictError, 409, "conflict"),
    (StoreUnavailableError, 503, "store_unavailable"),
    (LLMError, 502, "llm_failed"),
    (LocalServiceError, 503, "local_service_unavailable"),
    (SchemaMismatchError, 503, "schema_mismatch"),
    (ConfigError, 503, "misconfigured"),
]


def create_app(
    settings: Settings | None = None,
    service: AsyncMemoryService | None = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """Build the API. With `service` given the app uses it and leaves closing it to the caller;
    otherwise it creates one at start-up (Neo4j must be reachable) and closes it at shutdown.

    Raises ConfigError when no API key is configured and auth is not explicitly disabled.
    """
    settings = settings or (service.settings if service is not None else load_settings())
    keys = (
        {}
        if settings.auth_disabled
        else parse_api_keys(settings.api_keys.get_secret_value() if settings.api_keys else None)
    )
    if not settings.auth_disabled and not keys:
        raise ConfigError(
            "the REST API needs API keys: set GRAPHMEM_API_KEYS='<key>' (comma-separated; "
            "'<key>=user/agent/run' binds a key to a scope), or GRAPHMEM_AUTH_DISABLED=true for local use. "
            "Make a key with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if service is not None:
            app.state.service = service
            yield
            return
        svc = await AsyncMemoryService.create(settings)
        app.state.service = svc
        try:
            yield
        finally:
            await svc.close()

    app = FastAPI(
        title="graphmem",
        version=__version__,
        description="A-MEM agentic memory on Neo4j: notes, typed links, evolution, retrieval.",
        lifespan=lifespan,
    )
    if service is not None:
        app.state.service = service
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    # --- error handlers ---

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status_code, exc.code, exc.message, headers=exc.headers)

    @app.exception_handler(GraphmemError)
    async def _graphmem_error(request: Request, exc: GraphmemError) -> JSONResponse:
        for cls, code_status, code in _STATUS_OF:
            if isinstance(exc, cls):
                if code_status >= 500:
                    log.warning("%s %s failed: %s", request.method, request.url.path, exc)
                return _error(code_status, code, str(exc))
        log.warning("%s %s failed: %s", request.method, request.url.path, exc)
        return _error(500, "error", str(exc))

    @app.exception_handler(ValidationError)
    async def _pydantic_error(request: Request, exc: ValidationError) -> JSONResponse:
        messages = [_msg(e) for e in exc.errors()]
        details = [{"loc": [str(p) for p in e["loc"]], "msg": _msg(e)} for e in exc.errors()]
        return _error(422, "invalid_input", "; ".join(messages), details)

    @app.exception_handler(RequestValidationError)
    async def _request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            details.append({"loc": loc, "msg": e.get("msg", "invalid"), "type": e.get("type")})
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        where = ".".join(first["loc"][1:] if len(first["loc"]) > 1 else first["loc"]) or "request"
        msg = first["msg"]
        if first.get("type") == "json_invalid":
            msg = "request body is not valid JSON"
        return _error(422, "invalid_request", f"{where}: {msg}", details)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
            413: "payload_too_large",
        }
        return _error(
            exc.status_code,
            codes.get(exc.status_code, "http_error"),
            str(exc.detail),
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(ValueError)
    async def _value_error(request: Request, exc: ValueError) -> JSONResponse:
        # The service validates ids with plain ValueError (models.check_id): bad input, not a crash.
        return _error(422, "invalid_input", str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s: unexpected error", request.method, request.url.path)
        return _error(500, "internal_error", "internal error (see the server log)")

    # --- dependencies ---

    api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")
    bearer = HTTPBearer(auto_error=False, description="an API key as a bearer token")

    def principal(
        x_api_key: Annotated[str | None, Depends(api_key_header)],
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if settings.auth_disabled:
            return Principal(name="anonymous")
        given = x_api_key or (credentials.credentials if credentials else None)
        if not given:
            raise ApiError(
                401,
                "unauthorized",
                "missing API key: send X-API-Key or Authorization: Bearer",
                headers={"WWW-Authenticate": "Bearer"},
            )
        found: tuple[str, Scope | None] | None = None
        for key, bound in keys.items():  # compare with every key, in constant time
            if hmac.compare_digest(key.encode(), given.encode()):
                found = (key, bound)
        if found is None:
            log.info("rejected API key %s", key_fingerprint(given))
            raise ApiError(401, "unauthorized", "invalid API key", headers={"WWW-Authenticate": "Bearer"})
        return Principal(name=key_fingerprint(found[0]), scope=found[1])

    def service_of(request: Request) -> AsyncMemoryService:
        svc: AsyncMemoryService = request.app.state.service
        return svc

    Auth = Annotated[Principal, Depends(principal)]
    Svc = Annotated[AsyncMemoryService, Depends(service_of)]

    def scope_given(
        x_user_id: Annotated[str | None, Header(max_length=128, description="scope: user id")] = None,
        x_agent_id: Annotated[str | None, Header(max_length=128, description="scope: agent id")] = None,
        x_run_id: Annotated[str | None, Header(max_length=128, description="scope: run id")] = None,
        user_id: Annotated[str | None, Query(max_length=128, description="scope: user id")] = None,
        agent_id: Annotated[str | None, Query(max_length=128, description="scope: agent id")] = None,
        run_id: Annotated[str | None, Query(max_length=128, description="scope: run id")] = None,
    ) -> dict[str, str]:
        """Scope parts named by headers or query parameters (a JSON body may name them too)."""
        given: dict[str, str] = {}
        _merge(given, {"user_id": x_user_id, "agent_id": x_agent_id, "run_id": x_run_id})
        _merge(given, {"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        return given

    Given = Annotated[dict[str, str], Depends(scope_given)]

    def resolve_scope(who: Principal, given: dict[str, str], body: ScopeFields | None = None) -> Scope:
        given = dict(given)
        if body is not None:
            _merge(given, {p: getattr(body, p) for p in _SCOPE_PARTS})
        if who.scope is not None:
            bound = who.scope.params()
            for part, value in given.items():
                if value != bound[part]:
                    raise ApiError(403, "forbidden", f"this API key is bound to scope {who.scope}; {part} differs")
            return who.scope
        if "user_id" not in given:
            raise ApiError(
                422,
                "missing_scope",
                "user_id is required: send the X-User-Id header, a user_id query parameter or a user_id body field",
            )
        try:
            return Scope(**given)
        except ValidationError as exc:
            raise ApiError(422, "invalid_scope", "; ".join(_msg(e) for e in exc.errors())) from None

    # --- routes ---

    @app.get("/health", response_model=Health, tags=["meta"])
    async def health(request: Request) -> JSONResponse:
        """Is the API up and Neo4j reachable? No auth; reveals no data."""
        svc: AsyncMemoryService | None = getattr(request.app.state, "service", None)
        if svc is None:
            return JSONResponse(status_code=503, content=Health(status="starting", version=__version__).model_dump())
        try:
            server = (await svc.health())["neo4j"]
        except StoreUnavailableError as exc:
            body = Health(status="unavailable", version=__version__, detail=str(exc))
            return JSONResponse(status_code=503, content=body.model_dump())
        return JSONResponse(content=Health(status="ok", version=__version__, neo4j=server).model_dump())

    @app.post(
        "/v1/notes",
        response_model=AddResultOut,
        status_code=201,
        tags=["notes"],
        responses={200: {"description": "already stored (same note_id, or same content with dedupe_content)"}},
    )
    async def addnote_out(body: NoteCreate, who: Auth, given: Given, svc: Svc, response: Response) -> AddResultOut:
        """Add a memory the A-MEM way: construct the note, link it, evolve its neighbours."""
        scope = resolve_scope(who, given, body)
        result = await svc.add(
            body.content,
            scope,
            note_id=body.note_id,
            event_time=body.event_time,
            category=body.category,
            source_id=body.source_id,
            metadata=body.metadata,
            dedupe_content=body.dedupe_content,
            enrich=body.enrich,
            follows=body.follows,
        )
        if not result.created:
            response.status_code = 200
        return AddResultOut.model_validate({**result.model_dump(exclude={"note"}), "note": note_out(result.note)})

    @app.get("/v1/notes", response_model=NotePage, tags=["notes"])
    async def list_notes(
        who: Auth,
        given: Given,
        svc: Svc,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> NotePage:
        """The scope's notes, newest first."""
        scope = resolve_scope(who, given)
        notes = await svc.list(scope, limit=limit, offset=offset)
        total = await svc.count(scope)
        nxt = offset + len(notes)
        return NotePage(
            notes=[note_out(n) for n in notes],
            total=total,
            limit=limit,
            offset=offset,
            next_offset=nxt if nxt < total else None,
        )

    @app.get("/v1/notes/{note_id}", response_model=NoteOut, tags=["notes"])
    async def getnote_out(note_id: str, who: Auth, given: Given, svc: Svc) -> NoteOut:
        return note_out(await svc.get(note_id, resolve_scope(who, given)))

    async def _update(
        note_id: str, body: NoteUpdate, who: Principal, given: dict[str, str], svc: AsyncMemoryService
    ) -> AddResultOut:
        result = await svc.update(note_id, resolve_scope(who, given, body), body.content)
        return AddResultOut.model_validate({**result.model_dump(exclude={"note"}), "note": note_out(result.note)})

    @app.put("/v1/notes/{note_id}", response_model=AddResultOut, tags=["notes"])
    async def putnote_out(note_id: str, body: NoteUpdate, who: Auth, given: Given, svc: Svc) -> AddResultOut:
        """Replace the content: re-enrich, re-embed, keep the previous values as a version."""
        return await _update(note_id, body, who, given, svc)

    @app.patch("/v1/notes/{note_id}", response_model=AddResultOut, tags=["notes"])
    async def patchnote_out(note_id: str, body: NoteUpdate, who: Auth, given: Given, svc: Svc) -> AddResultOut:
        """Same as PUT: content is the only field a client may change."""
        return await _update(note_id, body, who, given, svc)

    @app.delete("/v1/notes/{note_id}", status_code=204, tags=["notes"])
    async def deletenote_out(note_id: str, who: Auth, given: Given, svc: Svc) -> Response:
        """Delete a note with its versions and links."""
        if not await svc.delete(note_id, resolve_scope(who, given)):
            raise NoteNotFoundError(note_id)
        return Response(status_code=204)

    @app.get("/v1/notes/{note_id}/links", response_model=LinksResponse, tags=["notes"])
    async def note_links(note_id: str, who: Auth, given: Given, svc: Svc) -> LinksResponse:
        return LinksResponse(links=await svc.links(note_id, resolve_scope(who, given)))

    @app.post("/v1/notes/{note_id}/links", response_model=Link, status_code=201, tags=["notes"])
    async def add_link(note_id: str, body: LinkCreate, who: Auth, given: Given, svc: Svc) -> Link:
        """Link this note to another note of the scope."""
        scope = resolve_scope(who, given, body)
        return await svc.link(note_id, body.target_id, scope, body.type, body.reason, body.strength)

    @app.get("/v1/notes/{note_id}/history", response_model=HistoryResponse, tags=["notes"])
    async def note_history(note_id: str, who: Auth, given: Given, svc: Svc) -> HistoryResponse:
        """Previous versions (evolution by later notes, updates), oldest first."""
        return HistoryResponse(versions=await svc.history(note_id, resolve_scope(who, given)))

    @app.post("/v1/search", response_model=SearchResponse, tags=["retrieval"])
    async def search(body: SearchRequest, who: Auth, given: Given, svc: Svc) -> SearchResponse:
        """Top-k notes of the scope; `links` and `hybrid` add linked notes (found_by: link)."""
        scope = resolve_scope(who, given, body)
        filters = body.filters.to_search() if body.filters else None
        hits = await svc.search(body.query, scope, k=body.k, mode=body.mode, filters=filters)
        return SearchResponse(hits=[hit_out(h) for h in hits])

    @app.post("/v1/ask", response_model=AskResultOut, tags=["retrieval"])
    async def ask(body: AskRequest, who: Auth, given: Given, svc: Svc) -> AskResultOut:
        """Answer a question from the scope's notes (within a token budget), with the notes used."""
        scope = resolve_scope(who, given, body)
        filters = body.filters.to_search() if body.filters else None
        result = await svc.ask(
            body.question, scope, k=body.k, mode=body.mode, token_budget=body.token_budget, filters=filters
        )
        return AskResultOut.model_validate(
            {**result.model_dump(exclude={"notes"}), "notes": [hit_out(h) for h in result.notes]}
        )

    return app


__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app", "key_fingerprint", "parse_api_keys"]
