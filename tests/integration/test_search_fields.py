"""What hybrid search's full-text leg reads (``GRAPHMEM_SEARCH_TEXT_FIELDS``): by default the note's own
words and its tags, not the LLM's context and keywords, whose words matched questions about other turns
on LoCoMo (docs/evaluation.md, "What search reads"). Real Neo4j full-text index, real MiniLM vectors."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.models import TEXT_FIELDS, NoteInput, Scope

pytestmark = pytest.mark.asyncio(loop_scope="session")

SAID = ("content", "tags")


def ids(matches: Any) -> list[str]:
    return [m.note.id for m in matches]


async def test_the_full_text_leg_reads_only_the_fields_it_is_given(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(enable_enrichment=False)
    plant, cold = f"{scope.user_id}-plant", f"{scope.user_id}-cold"
    await svc.add_many(
        [
            NoteInput(content="We planted tomatoes on the allotment.", note_id=plant),
            NoteInput(content="The weather turned cold this week.", note_id=cold),
        ],
        scope,
    )
    # What the LLM would have written: a context and keywords the turn never says, and a tag.
    graph.q(
        "MATCH (n:Note {id: $id}) SET n.context = 'A talk about zucchini harvests', n.keywords = ['zucchini']",
        id=cold,
    )
    graph.q("MATCH (n:Note {id: $id}) SET n.tags = ['horticulture']", id=plant)

    assert ids(await svc.store.fulltext_search("zucchini", scope, k=5)) == [cold]  # every field
    assert await svc.store.fulltext_search("zucchini", scope, k=5, fields=SAID) == []
    assert ids(await svc.store.fulltext_search("zucchini", scope, k=5, fields=("keywords",))) == [cold]
    assert ids(await svc.store.fulltext_search("horticulture tomatoes", scope, k=5, fields=SAID)) == [plant]
    assert await svc.store.fulltext_search("horticulture", scope, k=5, fields=("content",)) == []
    assert await svc.store.fulltext_search("zucchini", scope, k=5, fields=()) == []


async def test_words_common_in_other_fields_are_not_common_for_a_search_that_skips_them(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """How common a word is is counted in the fields the search reads: "garden" in the contexts of 20
    notes and the content of one is common for a search of every field (left out: nothing found by
    text) and rare for a search of content and tags (the one note that says it is found)."""
    svc, _ = await make_service(enable_enrichment=False)
    said = f"{scope.user_id}-said"
    await svc.add_many(
        [NoteInput(content=f"Update number {i} from the weekend.") for i in range(20)]
        + [NoteInput(content="The garden party starts at noon.", note_id=said)],
        scope,
    )
    graph.q(
        "MATCH (n:Note {user_id: $u}) WHERE n.id <> $said SET n.context = 'news about the garden'",
        u=scope.user_id,
        said=said,
    )
    assert await svc.store.fulltext_search("garden", scope, k=5, common_share=0.1) == []
    assert ids(await svc.store.fulltext_search("garden", scope, k=5, common_share=0.1, fields=SAID)) == [said]


async def test_search_by_default_finds_notes_by_what_they_say_not_by_their_context(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """The service's hybrid search: by default a context word brings no full-text match; with every
    field (the setting), it does."""
    cold = f"{scope.user_id}-cold"
    notes = [
        NoteInput(content="The weather turned cold this week.", note_id=cold),
        NoteInput(content="We planted tomatoes on the allotment."),
        NoteInput(content="My sister called from Lisbon."),
    ]
    svc, _ = await make_service(enable_enrichment=False)
    assert svc.settings.search_fields == SAID
    await svc.add_many(notes, scope)
    graph.q("MATCH (n:Note {id: $id}) SET n.context = 'A talk about zucchini harvests'", id=cold)

    default = await svc.search("zucchini harvests", scope, k=3, mode="hybrid")
    assert all("fulltext" not in h.found_by for h in default)
    every, _ = await make_service(enable_enrichment=False, search_text_fields=",".join(TEXT_FIELDS))
    hits = {h.note.id: h for h in await every.search("zucchini harvests", scope, k=3, mode="hybrid")}
    assert "fulltext" in hits[cold].found_by
