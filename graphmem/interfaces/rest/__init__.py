"""REST API (FastAPI) over AsyncMemoryService.

    uvicorn --factory graphmem.interfaces.rest:create_app      # or: graphmem serve

Auth: API keys from ``GRAPHMEM_API_KEYS`` (comma-separated; ``key=user/agent/run`` binds a key to a
scope), sent as ``X-API-Key: <key>`` or ``Authorization: Bearer <key>``. With no key configured the
app refuses to start unless ``GRAPHMEM_AUTH_DISABLED=true`` (for local use only).

Scope: a key bound to a scope always uses it (asking for another one is 403). Otherwise the request
names it: headers ``X-User-Id`` / ``X-Agent-Id`` / ``X-Run-Id``, query parameters ``user_id`` /
``agent_id`` / ``run_id``, or the same fields in a JSON body; agent and run default to ``default``.

Errors are JSON ``{"error": {"code", "message", "details"?}}`` with a 4xx status for every bad
request (422 invalid input, 404 unknown note, 413 body too large, 401/403 auth) and
503 / 502 when Neo4j / the LLM fail. Request bodies are limited (1 MiB by default). Keys are never
logged: logs name a key by a short hash.

Layout: ``app.py`` assembles; ``routers/`` (meta, notes, retrieval); ``deps.py`` (key, service,
scope); ``auth.py``; ``errors.py`` (status table, handlers); ``body_limit.py``; ``schemas.py``.
"""

from graphmem.interfaces.rest.app import create_app
from graphmem.interfaces.rest.auth import key_fingerprint, parse_api_keys
from graphmem.interfaces.rest.body_limit import DEFAULT_MAX_BODY_BYTES

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app", "key_fingerprint", "parse_api_keys"]
