"""The default (hybrid) search ranks by meaning: common words shared with the question, and words
common in the scope, do not outrank the note that answers it (issue 14). Real MiniLM vectors, real Neo4j full-text index."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.models import NoteInput, Scope

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Each case: five first-person notes of one user (the answer first) and a question. The other four
# say "I", "my", "do", "have", "what" more often than the answer does.
CASES = [
    (
        "What kind of dog do I have?",
        [
            "My beagle Biscuit loves chasing squirrels in the park.",
            "I have a meeting with my manager every Monday and I have to prepare the slides.",
            "I do yoga before work because I have a bad back and I do not sleep well.",
            "I have two sisters and I do visit them whenever I have a free weekend.",
            "What I like about my job is that I do something different every day I have it.",
        ],
    ),
    (
        "Which instrument do I play?",
        [
            "Cello lessons every Thursday evening, and the teacher says my bowing is getting better.",
            "I do my groceries on Saturday, and I do them early so I can have the afternoon.",
            "Which of my friends do I call first? I do not know, I have too many.",
            "I have to do my taxes before April, which I do every year at the last minute.",
            "Do I have time for a holiday? I do hope so, I have not had one since 2021.",
        ],
    ),
    (
        "Where do I work?",
        [
            "My job: night-shift nurse at St Mary's hospital since last spring.",
            "Where do I put my keys? I do always lose them, I do.",
            "I do like to cook where I can, and I do it with what I have.",
            "I do run on Sundays where the river is, when I have the energy.",
            "Do I want a bigger flat? I do, where I live now I have no room.",
        ],
    ),
    (
        "What is my favourite food?",
        [
            "Ramen with extra chashu is the food I love most, above all on a cold evening.",
            "What is my plan for the week? My plan is to rest, that is my favourite plan.",
            "My sister is my favourite person, and what she says is what I do.",
            "What is the best time for my run? My favourite is early morning.",
            "My favourite colour is green and my car is green, which is what I like.",
        ],
    ),
]


async def assert_answer_first(svc: Any, scope: Scope, question: str, notes: list[str], modes: tuple[str, ...]) -> None:
    """Store ``notes`` (the answer first) and check that each mode ranks the answer first."""
    ids = [f"{scope.user_id}-{i}" for i in range(len(notes))]
    await svc.add_many([NoteInput(content=c, note_id=i) for c, i in zip(notes, ids, strict=True)], scope)
    for mode in modes:
        hits = await svc.search(question, scope, k=5, mode=mode)
        assert hits[0].note.id == ids[0], (mode, [h.note.content for h in hits])


@pytest.mark.parametrize(("question", "notes"), CASES, ids=[c[0] for c in CASES])
async def test_first_person_question_ranks_the_answer_first(
    make_service: Any, scope: Scope, question: str, notes: list[str]
) -> None:
    svc, _ = await make_service()
    await assert_answer_first(svc, scope, question, notes, ("vector", "hybrid", "links"))


async def test_a_question_of_stop_words_only_still_finds_notes_by_meaning(make_service: Any, scope: Scope) -> None:
    svc, _ = await make_service()
    await svc.add_many([NoteInput(content="I have what you have."), NoteInput(content="Quarterly report.")], scope)
    hits = await svc.search("what do you have", scope, k=2)
    assert len(hits) == 2 and hits[0].found_by == ["vector"]


# Conversation turns: the speaker's name opens every turn and the other speaker says it too, so the
# full-text index's statistics (over every scope) call it rare and BM25 favours the shortest turns
# that say it. The answer is the first turn and shares no other word with the question.
NAMED_CASES = [
    (
        "What pet does Tim have?",
        [
            "Tim: My new puppy Rufus chewed through another shoe this morning.",
            "John: Tim, hey!",
            "Tim: Hi John, Tim here.",
            "John: Tim, how was the trip?",
            "Tim: Great, we saw castles in Scotland.",
            "John: I joined a basketball league.",
            "Tim: John, that's awesome.",
            "John: Tim, what are you reading?",
            "Tim: A fantasy novel with dragons.",
            "John: Tim, want to meet Friday?",
            "Tim: Sure John.",
        ],
    ),
    (
        "Which sport does Dev play?",
        [
            "Dev: Scored two goals in our football match on Saturday, the coach was thrilled!",
            "Lena: Dev, hi!",
            "Dev: Hey Lena, Dev here.",
            "Lena: Dev, what's new?",
            "Dev: Got a new phone.",
            "Lena: I'm learning Spanish.",
            "Dev: Lena, nice.",
            "Lena: Dev, how is your mum?",
            "Dev: She's well, thanks.",
            "Lena: Dev, lunch next week?",
            "Dev: Sure Lena.",
        ],
    ),
]


@pytest.mark.parametrize(("question", "notes"), NAMED_CASES, ids=[c[0] for c in NAMED_CASES])
async def test_a_name_common_in_the_scope_does_not_outrank_the_answer(
    make_service: Any, scope: Scope, question: str, notes: list[str]
) -> None:
    svc, _ = await make_service()
    await assert_answer_first(svc, scope, question, notes, ("vector", "hybrid"))


async def test_full_text_leaves_out_words_common_in_this_scope_only(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """How common a word is counts per scope: "Melanie" is in most notes of one scope and one note of
    another; only the first search leaves it out (and with it the notes only it matches). In a small
    scope a word must be in 3 notes to be common."""
    svc, _ = await make_service(enable_enrichment=False)
    chatty = [f"Melanie: update number {i} on the garden." for i in range(20)]
    await svc.add_many(
        [NoteInput(content=c, note_id=f"{scope.user_id}-m{i}") for i, c in enumerate(chatty)]
        + [NoteInput(content="We went camping by the lake.", note_id=f"{scope.user_id}-camp")],
        scope,
    )
    other = Scope(user_id=scope.user_id, agent_id="other")
    try:
        await svc.add_many(
            [NoteInput(content=f"Notes on chapter {i} of the novel.") for i in range(12)]
            + [NoteInput(content="Melanie lent me her tent.", note_id=f"{scope.user_id}-tent")],
            other,
        )
        common = await svc.store.fulltext_search("Melanie camping", scope, k=20, common_share=0.1)
        assert [m.note.id for m in common] == [f"{scope.user_id}-camp"]
        every = await svc.store.fulltext_search("Melanie camping", scope, k=50)
        assert len(every) == 21  # without the share, the name matches every note
        rare = await svc.store.fulltext_search("Melanie camping", other, k=20, common_share=0.1)
        assert [m.note.id for m in rare] == [f"{scope.user_id}-tent"]
        await svc.add_many([NoteInput(content="Melanie called.")], other)
        few = await svc.store.fulltext_search("Melanie", other, k=20, common_share=0.1)
        assert len(few) == 2  # 2 of 14 notes: over a tenth, but too few notes to call the name common
        await svc.add_many([NoteInput(content="Melanie called again.")], other)
        assert await svc.store.fulltext_search("Melanie", other, k=20, common_share=0.1) == []
    finally:
        graph.q("MATCH (n:Note {user_id: $u, agent_id: 'other'}) DETACH DELETE n", u=scope.user_id)
