"""One redaction function for everything a log line, an error message or a client may see.

``redact(text)`` removes the secrets graphmem was given (``register_secret``: the settings register
the Neo4j password, the LLM key and the REST API keys when they are read) and secret-shaped text an
upstream put into its message: Authorization headers and bearer tokens, ``sk-...`` keys,
``api_key=...`` / ``password: ...`` pairs, and the password part of a URI (``bolt://user:pw@host``).
An LLM endpoint that echoes the request's Authorization header in its 401 body (issue 16) is the
case this exists for. ``RedactingFilter`` applies it to log records at the handlers the edge sets up.
"""

from __future__ import annotations

import logging
import re
import threading

MASK = "***"
_MIN_SECRET = 6  # shorter values are not registered: masking them would mangle ordinary words

_known: set[str] = set()
_known_sorted: list[str] = []
_lock = threading.Lock()

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host -> scheme://user:***@host
    (re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]+:)[^\s/@]+@"), rf"\1{MASK}@"),
    # Authorization / Proxy-Authorization header values, with or without a scheme word
    (
        re.compile(
            r"""(?i)(\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',;}]+"""
        ),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), rf"\1 {MASK}"),
    # OpenAI-style keys
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), f"sk-{MASK}"),
    # key=value / "key": "value" pairs whose name says secret
    (
        re.compile(
            r"""(?i)(\b(?:x-api-key|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|password|passwd|secret)"""
            r"""["']?\s*[:=]\s*["']?)[^\s"',;}&]+"""
        ),
        rf"\1{MASK}",
    ),
)


def register_secret(value: str | None) -> None:
    """Remember a secret value: ``redact`` removes it wherever it appears."""
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _known:
            return
        _known.add(value)
        _known_sorted[:] = sorted(_known, key=len, reverse=True)  # longest first: no partial leftovers


def redact(text: str) -> str:
    """``text`` without the registered secrets and without secret-shaped parts."""
    for secret in _known_sorted:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """A handler filter: the record's message (with its arguments) and its traceback, redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_log_redaction(*loggers: logging.Logger) -> None:
    """Add a RedactingFilter to every handler of these loggers (default: the root logger) and of
    uvicorn's, once each."""
    targets = loggers or (logging.getLogger(), logging.getLogger("uvicorn"), logging.getLogger("uvicorn.error"))
    for logger in targets:
        for handler in logger.handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())


__all__ = ["MASK", "RedactingFilter", "install_log_redaction", "redact", "register_secret"]
