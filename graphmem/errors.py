"""Typed failures. Interfaces map them to exit codes (CLI) and 4xx/503 answers (REST, MCP)."""

from __future__ import annotations


class GraphmemError(Exception):
    """Base of every error graphmem raises on purpose."""


class ConfigError(GraphmemError):
    """A setting is missing or invalid; the message names it."""


class InvalidInputError(GraphmemError, ValueError):
    """The caller passed something graphmem refuses (empty or oversized content, bad id, bad scope)."""


class NoteNotFoundError(GraphmemError, LookupError):
    """No note with this id in the caller's scope (notes of other scopes are never revealed)."""

    def __init__(self, note_id: str) -> None:
        super().__init__(f"no note with id {note_id!r} in this scope")
        self.note_id = note_id


class VersionNotFoundError(NoteNotFoundError):
    """The note is in the caller's scope but has no such (earlier) version."""

    def __init__(self, note_id: str, version: int) -> None:
        GraphmemError.__init__(self, f"note {note_id!r} has no earlier version {version}")
        self.note_id = note_id
        self.version = version


class ConflictError(GraphmemError):
    """The write conflicts with existing data (e.g. a client-given id already used elsewhere)."""


class StaleWriteError(ConflictError):
    """A write planned on a neighbour's state found it changed (or gone): nothing was written."""


class StoreUnavailableError(GraphmemError):
    """Neo4j cannot be reached or refused the credentials; the message says which and how to fix it."""


class SchemaMismatchError(GraphmemError):
    """The database holds an index incompatible with the configured embedder (e.g. other dimensions)."""


class LLMError(GraphmemError):
    """The LLM failed after every retry (transport) or never produced valid output (format)."""


class LocalServiceError(GraphmemError):
    """A local service (Neo4j, the local LLM) could not be fetched, started or stopped."""
