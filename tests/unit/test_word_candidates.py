"""Link candidates beyond the nearest notes (issue 27): the earlier note that shares the new note's
rarer words is judged even when the embedding ranks other notes nearer. In-memory store (its
full-text stand-in drops words common in the scope, as Neo4j's does), scripted pairwise model."""

from __future__ import annotations

from graphmem.config import Settings
from graphmem.models import Scope
from graphmem.service.memory import AsyncMemoryService
from tests.fakes import ScriptedChatModel, noted, pairwise_responder, step_of
from tests.memory_store import MemoryNoteStore, WordEmbeddings

SCOPE = Scope(user_id="words")
# Many notes share the common words ("really love my weekend ..."); one names the rare "Riverside".
COMMON = [f"Tom: I really love my weekend pottery class, lesson {i} was great fun." for i in range(12)]
RIVERSIDE = "Priya: Anika sells her bowls at the Riverside farmers market."
NEW = "Tom: I really love my weekend, I walked along Riverside with friends."


async def judged_for(new: str, **overrides: object) -> list[str]:
    """The earlier notes the pairwise decision was asked about when ``new`` was added."""
    model = ScriptedChatModel(pairwise_responder(lambda a, b: 0.1))
    settings = Settings(
        link_decision="pairwise", enable_evolution=False, enable_supersession=False, link_candidates=1, **overrides
    )  # type: ignore[arg-type]
    svc = AsyncMemoryService(settings, MemoryNoteStore(), WordEmbeddings(), model)
    for text in [RIVERSIDE, *COMMON]:
        await svc.add(text, SCOPE)
    model.calls.clear()
    await svc.add(new, SCOPE)
    return [noted(m)[0] for m in model.calls if step_of(m) == "related"]


async def test_the_note_sharing_a_rare_word_is_judged_beside_the_nearest() -> None:
    judged = await judged_for(NEW, link_word_candidates=1)
    assert len(judged) == 2
    assert judged[0] in COMMON  # the embedding's nearest: the shared common words
    assert RIVERSIDE in judged  # found by the rare word, not by the embedding


async def test_without_word_candidates_only_the_nearest_are_judged() -> None:
    judged = await judged_for(NEW, link_word_candidates=0)
    assert len(judged) == 1 and RIVERSIDE not in judged


async def test_words_common_in_the_scope_find_nothing_extra() -> None:
    # every word of this note is common in the scope: the word candidate is simply the next nearest
    judged = await judged_for("Tom: I really love my weekend pottery class.", link_word_candidates=1)
    assert RIVERSIDE not in judged
