"""Running the REST API under uvicorn, as ``graphmem serve`` does: limits for clients from the settings
and log handlers that redact secrets.

uvicorn bounds header size (``h11_max_incomplete_event_size``) and idle keep-alive time, but not how
long a client may take to send a request: 100 sockets dripping their headers or bodies one byte
every 2 s stayed open for ever (issue 16). ``guarded_protocol`` is uvicorn's h11 protocol with a
deadline for each request's headers and one for its body (a 408 and the connection closed when one
passes), and a limit on open connections (a 503 and closed at once above it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from graphmem.config import Settings
from graphmem.redaction import RedactingFilter, install_log_redaction


def _answer(status: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 response with the API's error body, written straight to the socket."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return head.encode() + b"connection: close\r\n\r\n" + body


_TIMEOUT = _answer("408 Request Timeout", "request_timeout", "the request did not arrive in time")
_TOO_MANY = _answer("503 Service Unavailable", "too_many_connections", "too many open connections; retry later")


def guarded_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's H11Protocol with a deadline per request phase and a limit on open connections."""

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _phase: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_TOO_MANY)
                transport.close()
                return
            self._arm(header_timeout, "headers")  # also a client that connects and sends nothing

        def data_received(self, data: bytes) -> None:
            if self._phase is None and self.conn.their_state is h11.IDLE:
                self._arm(header_timeout, "headers")  # the next request on a kept-alive connection
            super().data_received(data)
            state = self.conn.their_state
            if state is h11.SEND_BODY and self._phase != "body":
                self._arm(body_timeout, "body")
            elif state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
                self._disarm()  # the request is in: the app's time is not the client's

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, seconds: float, phase: str) -> None:
            self._disarm()
            self._phase = phase
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline, self._phase = None, None

        def _expired(self) -> None:
            self._deadline, self._phase = None, None
            if self.transport.is_closing():
                return
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(_TIMEOUT)
            self.transport.close()

    return GuardedH11Protocol


def uvicorn_config(
    app: Any, settings: Settings, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info", **extra: Any
) -> uvicorn.Config:
    """The uvicorn configuration of ``graphmem serve`` (the load tests use it too)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        reload=False,  # one process owns the Neo4j driver
        server_header=False,
        http=guarded_protocol(settings.http_header_timeout, settings.http_body_timeout, settings.http_max_connections),
        timeout_keep_alive=settings.http_keepalive_timeout,
        h11_max_incomplete_event_size=settings.http_max_header_bytes,
        **extra,
    )
    _redacting_logs(log_level)
    return config


def _redacting_logs(log_level: str) -> None:
    """uvicorn's handlers (set up by its Config) and a root handler for everything else (graphmem's
    own warnings, the driver's, the LLM client's) redact secrets."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:    %(name)s: %(message)s"))
        handler.addFilter(RedactingFilter())
        root.addHandler(handler)
        root.setLevel(log_level.upper())
    install_log_redaction(root, *(logging.getLogger(n) for n in ("uvicorn", "uvicorn.error", "uvicorn.access")))


def serve(app: Any, settings: Settings, **kwargs: Any) -> None:
    """Run the app until interrupted (``graphmem serve``)."""
    uvicorn.Server(uvicorn_config(app, settings, **kwargs)).run()


__all__ = ["guarded_protocol", "serve", "uvicorn_config"]
