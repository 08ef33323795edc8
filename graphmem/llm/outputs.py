"""Pydantic schemas the LLM must fill (via with_structured_output), and their lenient readers.

Small local models sometimes return one bad item among good ones; `lenient` keeps the good items
and names the bad ones instead of failing the whole answer.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

_MAX_ITEMS = 12
_MAX_WORD = 60
# Lone surrogates (a JSON "\ud800" escape decodes to one; the driver cannot encode it) and C0 controls.
_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_unsafe(text: str) -> str:
    """Model output made storable: no lone surrogates, no control characters except tab and newlines."""
    return _UNSAFE.sub("", text)


def clean_text(text: str) -> str:
    """Model output as one storable line."""
    return " ".join(strip_unsafe(text).split())


def clean_words(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [v for v in values.replace(";", ",").split(",")]
    if not isinstance(values, list):
        return []
    out: list[str] = []
    for v in values:
        if not isinstance(v, str):
            continue
        v = clean_text(v)[:_MAX_WORD]
        if v and v.lower() not in {o.lower() for o in out}:
            out.append(v)
    return out[:_MAX_ITEMS]


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without what the model need not read: the root keeps its title (the tool's
    name) and loses its description (the class docstring; the system prompt says what to do); nested
    schemas lose their titles (the property names say it) and enum definitions their description
    (the link-type docstring: the prompt gives the meanings). The schema reaches a hosted model's
    prompt on every call."""

    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: strip(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if "enum" in out:
            out.pop("description", None)
        return out

    root = {k: strip(v) for k, v in schema.items() if k != "description"}
    if "$defs" in schema:  # definitions keep their enum values, lose titles and descriptions
        root["$defs"] = {name: strip(d) for name, d in schema["$defs"].items()}
    return root


class LLMOutput(BaseModel):
    """A schema the LLM fills: its JSON schema compact (``compact_schema``)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema: dict[str, Any] = compact_schema(super().model_json_schema(*args, **kwargs))
        return schema


class NoteEnrichment(LLMOutput):
    """A-MEM note construction: keywords, one-line context, tags."""

    # Descriptions short: the system prompt says what each field holds (the schema reaches a hosted
    # model's prompt too; a repeat there costs tokens on every call).
    keywords: list[str] = Field(description="3-7 key concepts")
    context: str = Field(description="one sentence")
    tags: list[str] = Field(description="3-6 broad categories")

    @field_validator("keywords", "tags", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str]:
        return clean_words(v)

    @field_validator("context", mode="before")
    @classmethod
    def _context(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("context must be a string")
        return clean_text(v)[:500]

    def is_usable(self) -> bool:
        return bool(self.keywords) and bool(self.context)


class Answer(BaseModel):
    answer: str = Field(description="the short answer")
