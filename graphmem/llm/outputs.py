"""Pydantic schemas the LLM must fill (via with_structured_output), and their lenient readers.

Small local models sometimes return one bad item among good ones; `lenient` keeps the good items
and names the bad ones instead of failing the whole answer.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from graphmem.models import LinkType

_MAX_ITEMS = 12
_MAX_WORD = 60
_MAX_REASON = 120  # characters, in the JSON schema of a link's reason
_MAX_CONTEXT = 300  # characters, in the JSON schema of an evolved context
# Lone surrogates (a JSON "\ud800" escape decodes to one; the driver cannot encode it) and C0 controls.
_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_unsafe(text: str) -> str:
    """Model output made storable: no lone surrogates, no control characters except tab and newlines."""
    return _UNSAFE.sub("", text)


def clean_text(text: str) -> str:
    """Model output as one storable line."""
    return " ".join(strip_unsafe(text).split())


def _clean_words(values: Any) -> list[str]:
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


class _LLMOutput(BaseModel):
    """A schema the LLM fills: its JSON schema compact (``compact_schema``)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema: dict[str, Any] = compact_schema(super().model_json_schema(*args, **kwargs))
        return schema


class NoteEnrichment(_LLMOutput):
    """A-MEM note construction: keywords, one-line context, tags."""

    # Descriptions short: the system prompt says what each field holds (the schema reaches a hosted
    # model's prompt too; a repeat there costs tokens on every call).
    keywords: list[str] = Field(description="3-7 key concepts")
    context: str = Field(description="one sentence")
    tags: list[str] = Field(description="3-6 broad categories")

    @field_validator("keywords", "tags", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str]:
        return _clean_words(v)

    @field_validator("context", mode="before")
    @classmethod
    def _context(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError("context must be a string")
        return clean_text(v)[:500]

    def is_usable(self) -> bool:
        return bool(self.keywords) and bool(self.context)


class ProposedLink(_LLMOutput):
    # reason comes before type: a model filling the schema in order names the connection first, then
    # picks the type that fits it (small models otherwise pick a type, then justify it with any text)
    target_id: str = Field(description="a shown neighbour id")
    # maxLength only in the schema (grammar-constrained servers such as llama.cpp enforce it, keeping
    # a small model from copying whole notes until the output limit cuts the reply); longer text from
    # other providers is cleaned and kept, not rejected.
    reason: str = Field(
        description="what both notes are about, a few words",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    type: LinkType = Field(description="relation of the new note to the neighbour")
    strength: float = Field(0.5, ge=0.0, le=1.0, description="0..1")
    # A CONTRADICTS link must name the two statements that cannot both be true; the service checks
    # each against its note and keeps the link as RELATED_TO when they are missing or not found.
    new_statement: str | None = Field(
        None,
        description="CONTRADICTS only: the new note's conflicting statement, quoted",
        json_schema_extra={"maxLength": _MAX_REASON},
    )
    neighbour_statement: str | None = Field(
        None,
        description="CONTRADICTS only: the neighbour's conflicting statement, quoted",
        json_schema_extra={"maxLength": _MAX_REASON},
    )

    @field_validator("strength", mode="before")
    @classmethod
    def _strength(cls, v: Any) -> Any:
        # A JSON-schema grammar (llama-server) does not bound numbers, and small models answer on
        # other scales (10, 85): clamp rather than lose the link.
        return min(max(v, 0.0), 1.0) if isinstance(v, int | float) and not isinstance(v, bool) else v

    @field_validator("reason", mode="after")
    @classmethod
    def _reason(cls, v: str) -> str:
        return clean_text(v)

    @field_validator("new_statement", "neighbour_statement", mode="after")
    @classmethod
    def _statement(cls, v: str | None) -> str | None:
        return clean_text(v) or None if v is not None else None


class ProposedUpdate(_LLMOutput):
    note_id: str = Field(description="a shown neighbour id")
    context: str | None = Field(
        None,
        description="its new context sentence, or null",
        json_schema_extra={"maxLength": _MAX_CONTEXT},
    )
    # Additions only (the service never removes a neighbour's tags or keywords): the model names the
    # new words, not the whole list again.
    tags: list[str] | None = Field(None, description="tags to add, or null")
    keywords: list[str] | None = Field(None, description="keywords to add, or null")

    @field_validator("tags", "keywords", mode="before")
    @classmethod
    def _words(cls, v: Any) -> list[str] | None:
        return None if v is None else _clean_words(v)

    @field_validator("context", mode="after")
    @classmethod
    def _context(cls, v: str | None) -> str | None:
        return None if v is None else clean_text(v)


class EvolutionDecision(_LLMOutput):
    """A-MEM link generation + memory evolution, with real ids instead of list positions."""

    links: list[ProposedLink] = Field(default_factory=list)
    neighbour_updates: list[ProposedUpdate] = Field(default_factory=list)

    @classmethod
    def lenient(cls, data: Any) -> tuple[EvolutionDecision, list[str]]:
        """Keep every valid item; return the reasons the others were rejected."""
        rejected: list[str] = []
        links: list[ProposedLink] = []
        updates: list[ProposedUpdate] = []
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        for item in data.get("links") or []:
            try:
                links.append(ProposedLink.model_validate(item))
            except ValidationError as exc:
                rejected.append(f"link {str(item)[:80]}: {exc.errors()[0]['msg']}")
        for item in data.get("neighbour_updates") or []:
            try:
                updates.append(ProposedUpdate.model_validate(item))
            except ValidationError as exc:
                rejected.append(f"update {str(item)[:80]}: {exc.errors()[0]['msg']}")
        return cls(links=links, neighbour_updates=updates), rejected


class Answer(BaseModel):
    answer: str = Field(description="the short answer")
