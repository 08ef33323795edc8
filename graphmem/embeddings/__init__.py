"""Embedding models: MiniLM through onnxruntime (torch-free, the default) or OpenAI embeddings.

Both are LangChain ``Embeddings``; the service and the schema bootstrap see nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings
from pydantic import SecretStr

from graphmem.embeddings.minilm import MiniLMEmbeddings
from graphmem.errors import ConfigError

if TYPE_CHECKING:
    from graphmem.config import Settings

__all__ = ["MiniLMEmbeddings", "embedding_dimensions", "make_embedder"]

# Native sizes of OpenAI's embedding models, so bootstrap needs no API call to size the index.
_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def make_embedder(settings: Settings) -> Embeddings:
    """The embedder ``GRAPHMEM_EMBEDDER`` selects; nothing is loaded or called yet.

    Raises:
        ConfigError: ``openai`` without an API key or base URL.
    """
    if settings.embedder == "minilm":
        return MiniLMEmbeddings(
            cache_dir=settings.cache_dir,
            batch_size=settings.embed_batch_size,
            threads=settings.embed_threads,
        )
    if settings.embedder == "openai":
        from langchain_openai import OpenAIEmbeddings

        if settings.llm_api_key is not None:
            api_key = settings.llm_api_key
        elif settings.llm_base_url:
            # OpenAI-compatible local servers ignore the key, but the openai client refuses None
            api_key = SecretStr("not-needed")
        else:
            raise ConfigError("GRAPHMEM_EMBEDDER=openai needs OPENAI_API_KEY (or GRAPHMEM_LLM_API_KEY)")
        return OpenAIEmbeddings(
            model=settings.openai_embedding_model,
            dimensions=settings.embedding_dimensions,
            # field names, not the aliases api_key/base_url/timeout, so that mypy can check them
            openai_api_key=api_key,
            openai_api_base=settings.llm_base_url,
            request_timeout=settings.llm_timeout,
            # True would count tokens with tiktoken, which downloads its tables on first use
            check_embedding_ctx_length=False,
        )
    raise ConfigError(f"GRAPHMEM_EMBEDDER: unknown embedder {settings.embedder!r}")


def embedding_dimensions(embedder: Embeddings) -> int:
    """Length of the vectors ``embedder`` returns, for sizing the vector index.

    Read from the embedder when it says (``dimensions``, or ``size`` as LangChain's fake
    embeddings have), from the known OpenAI model sizes, and only as a last resort by embedding
    a probe text (one API call for an unknown remote model).
    """
    for attr in ("dimensions", "size"):
        value = getattr(embedder, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    model = getattr(embedder, "model", None)
    if isinstance(model, str) and model in _OPENAI_DIMENSIONS:
        return _OPENAI_DIMENSIONS[model]
    return len(embedder.embed_query("dimension probe"))
