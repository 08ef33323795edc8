"""graphmem: A-MEM agentic memory on Neo4j."""

from graphmem._version import __version__
from graphmem.config import Settings, load_settings
from graphmem.errors import GraphmemError
from graphmem.models import AddResult, AskResult, Link, LinkType, Note, Scope, SearchHit, Usage

__all__ = [
    "AddResult",
    "AskResult",
    "GraphmemError",
    "Link",
    "LinkType",
    "Note",
    "Scope",
    "SearchHit",
    "Settings",
    "Usage",
    "__version__",
    "load_settings",
]


def __getattr__(name: str) -> object:
    # The service pulls in the driver and the LLM stack: import it only when asked for.
    if name in ("AsyncMemoryService", "MemoryService"):
        from graphmem.service import memory, sync

        return {"AsyncMemoryService": memory.AsyncMemoryService, "MemoryService": sync.MemoryService}[name]
    raise AttributeError(name)
