"""Print the README's settings table from graphmem.config.Settings (`python scripts/settings_table.py`).

tests/unit/test_readme.py checks that README.md holds exactly this output, so the table cannot drift.
"""

from __future__ import annotations

from pathlib import Path

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from graphmem.config import Settings, _env_name

# Short meanings for fields without a `description=` in config.py.
MEANING = {
    "neo4j_uri": "Bolt URI of Neo4j (also `NEO4J_URL`)",
    "neo4j_username": "Neo4j user",
    "neo4j_password": "Neo4j password; unset = auth off (the local server then runs without auth)",
    "neo4j_database": "database name",
    "neo4j_connect_timeout": "seconds to wait for a connection",
    "neo4j_line": "line of the local server: 5.26 LTS (Java 17 or 21) or 2026 (2026.08.1+, Java 21 or 25)",
    "neo4j_version": "exact Neo4j version the local server fetches from Maven Central; unset = the line's "
    "tested one (5.26.30, 2026.08.1)",
    "neo4j_browser_version": "Neo4j Browser version served by the local server",
    "neo4j_http_port": "HTTP (and Browser) port of the local server",
    "neo4j_heap": "local server JVM heap (-Xms/-Xmx)",
    "neo4j_pagecache": "local server page cache",
    "embedder": "embedding model: local MiniLM or OpenAI",
    "openai_embedding_model": "OpenAI embedding model",
    "embedding_dimensions": "vector size; unset = the embedder's own (384 MiniLM, 1536 OpenAI)",
    "embed_batch_size": "texts per embedding batch",
    "embed_threads": "onnxruntime threads for MiniLM",
    "llm_provider": "auto = local model unless an API key or base URL is set",
    "llm_base_url": "OpenAI-compatible endpoint (provider `compatible`)",
    "llm_api_key": "API key (also `OPENAI_API_KEY`)",
    "llm_model": "chat model name",
    "llm_temperature": "sampling temperature",
    "llm_max_tokens": "max tokens per LLM answer",
    "llm_timeout": "seconds per LLM call (local llama-server: seconds without progress)",
    "llm_seed": "sampling seed where supported",
    "structured_output_method": "how structured output is requested",
    "local_model": "GGUF model of the local LLM server",
    "local_llm_port": "port of the local LLM server",
    "local_llm_threads": "CPU threads of the local LLM server",
    "local_llm_ctx": "context window of the local LLM server (of each slot of llama-server)",
    "local_llm_server": "auto = llama.cpp's llama-server (built by install.sh or `graphmem llm start`), else llama-cpp-python's server",
    "local_llm_parallel": "slots of llama-server: requests decoded together (continuous batching)",
    "local_llm_max_wait": "longest local call while llama-server makes progress (`GRAPHMEM_LLM_TIMEOUT` = longest without)",
    "local_llm_cache_prompt": "llama-server reuses a slot's cached prompt prefix; `false` processes every prompt whole, so the "
    "same prompt always gets the same answer (`graphmem eval` answers so)",
    "neighbour_k": "neighbours considered when linking / evolving a new note",
    "enable_enrichment": "LLM writes keywords, context, tags",
    "enable_links": "LLM links a new note to its neighbours",
    "enable_evolution": "LLM updates neighbours after a new note; unset = on, off for the local model",
    "embed_text_variant": "what is embedded: full note, content only, or A-MEM's concatenation",
    "max_content_chars": "longest note content accepted",
    "search_k": "default number of search hits",
    "search_mode": "default search mode",
    "links_per_hit": "linked notes added per hit (mode `links`, `hybrid`)",
    "link_decision": "how the LLM decides links: `joint` (A-MEM: one call, typed links, evolution), `pairwise` (one yes/no per nearest candidate), `auto` (pairwise for the local model)",
    "over_fetch_ratio": "5.26: vector over-fetch factor before scope filtering",
    "in_index_over_fetch": "2026: in-index SEARCH candidates as a multiple of k",
    "exact_scan_max_notes": "5.26: scopes up to this size are scanned exactly when the over-fetch falls short",
    "context_token_budget": "token budget of the context `ask` builds",
    "auth_disabled": "REST/MCP without API keys (local use only)",
    "mcp_user_id": "scope user of the MCP server",
    "mcp_agent_id": "scope agent of the MCP server",
    "mcp_run_id": "scope run of the MCP server",
}


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = str(info.default_factory())  # type: ignore[call-arg]
        return f"`{value.replace(str(Path.home()), '~')}`"
    if info.default is PydanticUndefined or info.default is None:
        return "(unset)"
    value = str(info.default).lower() if isinstance(info.default, bool) else str(info.default)
    return f"`{value}`"


def table() -> str:
    rows = ["| Setting | Default | Meaning |", "| --- | --- | --- |"]
    for name, info in Settings.model_fields.items():
        meaning = (info.description or MEANING.get(name, "")).replace("|", "\\|")
        rows.append(f"| `{_env_name(name)}` | {_default(info)} | {meaning} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
