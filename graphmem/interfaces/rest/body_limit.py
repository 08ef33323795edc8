"""An ASGI middleware that answers 413 for request bodies over a limit."""

from __future__ import annotations

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from graphmem.interfaces.rest.errors import error_response

DEFAULT_MAX_BODY_BYTES = 1_048_576


class BodyLimit:
    """413 for bodies over the limit, by Content-Length or while streaming (chunked uploads)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = error_response(413, "payload_too_large", f"request body over the limit of {self.max_bytes} bytes")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    await error_response(400, "bad_request", "invalid Content-Length")(scope, receive, send)
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
                    raise BodyTooLargeError(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLargeError:
            if not started:
                await too_big(scope, receive, send)


class BodyTooLargeError(StarletteHTTPException):
    """An HTTPException, so FastAPI's body reader passes it through to the JSON error handler."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body over the limit of {max_bytes} bytes")
