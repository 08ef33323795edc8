"""The LLM layer: chat model factory, prompts, structured outputs, one retry/repair layer."""

from graphmem.llm.calls import LLMCaller
from graphmem.llm.clients import local_base_url, make_chat_model, structured_method

__all__ = ["LLMCaller", "local_base_url", "make_chat_model", "structured_method"]
