"""The LLM layer: chat model factory, prompts, structured outputs, one retry/repair layer."""

from graphmem.llm.calls import LLMCaller
from graphmem.llm.clients import LOCAL_HOST, local_base_url, make_chat_model, structured_method

__all__ = ["LOCAL_HOST", "LLMCaller", "local_base_url", "make_chat_model", "structured_method"]
