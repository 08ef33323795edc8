"""The pairwise link decision and the decision-quality evaluation through the real service and Neo4j,
with scripted models whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphmem.evaluation.decisions import DecisionsConfig, run_decisions_eval
from graphmem.models import LinkType
from graphmem.service.wording import content_words
from tests.fakes import pairwise_responder, step_of


def shares(a: str, b: str) -> float:
    """P(yes) of a model that links notes sharing a content word other than the speaker."""
    speakers = {"ann", "bo"}
    return 0.9 if (content_words(a) & content_words(b)) - speakers else 0.1


async def test_pairwise_links_the_judged_neighbours_the_model_says_yes_to(make_service: Any, scope: Any) -> None:
    svc, model = await make_service(
        pairwise_responder(shares, reason=lambda a, b: "Rufus the beagle"),
        link_decision="pairwise",
        link_candidates=2,
        enable_evolution=False,
    )
    dog = await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    await svc.add("Bo: I am learning to play the cello.", scope)
    added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)

    assert [(lk.target_id, lk.type) for lk in added.links] == [(dog.note.id, LinkType.RELATED_TO)]
    # the reason is the words both notes say, asked of no model (GRAPHMEM_LINK_REASONS=shared-words)
    assert added.links[0].reason == "both mention Rufus" and added.links[0].strength == 0.9
    assert len(added.candidates) == 2  # the two nearest neighbours were judged, one question each
    judged = [m for m in model.calls if step_of(m) == "related"]
    assert len(judged) == 1 + 2  # the second note judged one neighbour, the third two
    assert not [m for m in model.calls if step_of(m) == "reason"]
    assert {lk.target_id for lk in await svc.links(added.note.id, scope)} == {dog.note.id}


async def test_the_model_names_the_reason_when_asked_to(make_service: Any, scope: Any) -> None:
    svc, model = await make_service(
        pairwise_responder(shares, reason=lambda a, b: "Rufus the beagle"),
        link_decision="pairwise",
        link_reasons="llm",
        enable_evolution=False,
    )
    await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)
    assert [lk.reason for lk in added.links] == ["Rufus the beagle"]
    assert len([m for m in model.calls if step_of(m) == "reason"]) == 1  # one call per link


async def test_a_pasted_reason_is_replaced_by_the_shared_words_and_reported(make_service: Any, scope: Any) -> None:
    svc, _ = await make_service(
        pairwise_responder(shares, reason=lambda a, b: b),  # pastes the new note as its reason
        link_decision="pairwise",
        link_reasons="llm",
        enable_evolution=False,
    )
    await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)
    (link,) = added.links
    assert link.reason == "both mention Rufus"  # the speaker's name is not something both notes say
    assert any("copies a note's text" in r for r in added.rejected)


async def test_an_evolution_that_drifts_to_another_note_is_refused(make_service: Any, scope: Any, graph: Any) -> None:
    def context(earlier: str, later: str) -> str:
        if "cello" in earlier:  # the model rewrites the cello note with the dog's story: drift
            return "Ann's dog Rufus is scared of storms and sleeps beneath her bed."
        return "Ann adopted Rufus, a beagle who hides under the bed when thunderstorms come."

    svc, _ = await make_service(
        pairwise_responder(lambda a, b: 0.9, reason=lambda a, b: "Ann's beagle Rufus", context=context),
        link_decision="pairwise",
        link_candidates=2,
        evolution_neighbours=0,  # both linked neighbours get a new context proposed
        evolution_words=False,  # the model's evolutions only
    )
    dog = await svc.add("Ann: I adopted a beagle called Rufus.", scope)
    cello = await svc.add("Bo: I am learning to play the cello.", scope)
    added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)

    evolved = {e.note_id: e for e in added.evolved}
    assert dog.note.id in evolved and cello.note.id not in evolved
    assert any(cello.note.id in r and "drift" in r for r in added.rejected)
    stored = graph.q("MATCH (n:Note {id: $id}) RETURN n.context AS c", id=cello.note.id)[0]["c"]
    assert stored == cello.note.context  # the cello note still says what it said


RUFUS = (
    "Ann: I adopted a beagle called Rufus.",
    "Ann: Rufus loves long walks in the park by the river.",
    "Ann: Rufus eats his dinner far too fast.",
)


def _rufus_context(earlier: str, later: str) -> str:
    return earlier.removeprefix("Ann: ").replace("I ", "Ann ", 1) + " Rufus also hates thunderstorms."


async def test_an_add_evolves_only_the_neighbour_of_its_strongest_link(make_service: Any, scope: Any) -> None:
    # every earlier note is linked; the beagle note has the highest P(yes), though it is not the nearest
    def related(earlier: str, later: str) -> float:
        return 0.95 if "beagle" in earlier else 0.6

    for at_most, expected in ((1, 1), (2, 2), (0, 3)):
        svc, model = await make_service(
            pairwise_responder(related, context=_rufus_context),
            link_decision="pairwise",
            link_candidates=3,
            link_word_candidates=0,
            enable_evolution=True,
            enable_supersession=False,
            evolution_words=False,
            evolution_neighbours=at_most,
        )
        earlier = [(await svc.add(text, scope)).note for text in RUFUS]
        before = len(model.calls)
        added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)
        asked = [m for m in model.calls[before:] if step_of(m) == "evolve_one"]
        assert len(added.links) == 3 and len(asked) == expected, at_most
        if at_most == 1:  # the one question is about the strongest link's neighbour
            assert earlier[0].content in str(asked[0][-1].content)
            assert {e.note_id for e in added.evolved} <= {earlier[0].id}
        for note in (*earlier, added.note):  # the next round starts from an empty scope
            assert await svc.delete(note.id, scope)


async def test_the_decision_eval_scores_a_tiny_gold_file(make_service: Any, tmp_path: Path) -> None:
    gold = {
        "format": "graphmem.decisions-gold/1",
        "conversations": [
            {
                "id": "tiny",
                "turns": [
                    {
                        "n": 1,
                        "time": "2024-01-01T10:00:00",
                        "speaker": "Ann",
                        "text": "I adopted a beagle called Rufus.",
                        "keep": ["beagle"],
                    },
                    {
                        "n": 2,
                        "time": "2024-01-01T10:01:00",
                        "speaker": "Bo",
                        "text": "I am learning to play the cello.",
                        "keep": ["cello"],
                    },
                    {
                        "n": 3,
                        "time": "2024-01-01T10:02:00",
                        "speaker": "Ann",
                        "text": "Rufus hates thunderstorms.",
                        "keep": ["Rufus"],
                    },
                    {
                        "n": 4,
                        "time": "2024-01-01T10:03:00",
                        "speaker": "Bo",
                        "text": "My cello teacher is strict.",
                        "keep": ["cello"],
                    },
                ],
                "related": [[3, 1], [4, 2]],
                "acceptable": [],
                "contradicts": [],
            }
        ],
    }
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold))
    # Links every judged pair: right for (3,1) and (4,2), wrong for the others it is shown.
    svc, _ = await make_service(
        pairwise_responder(lambda a, b: 0.8),
        link_decision="pairwise",
        link_candidates=2,
        link_word_candidates=0,  # the nearest only, as the counts below assume
        enable_evolution=False,
    )
    result = await run_decisions_eval(svc, DecisionsConfig(gold=path, run_id="t"))
    (conv,) = result["conversations"]
    pairs = {(lk["from"], lk["to"]) for lk in conv["link_list"]}
    # turn 2 judged 1, turn 3 judged 2, turn 4 judged 3: its two nearest (the cello note and one other)
    assert (3, 1) in pairs and (4, 2) in pairs and (2, 1) in pairs and len(pairs) == 5
    wrong = len(pairs - {(3, 1), (4, 2)})
    assert conv["links"]["precision"] == (5 - wrong) / 5
    assert conv["links"]["recall"] == 1.0
    assert result["overall"]["llm_calls_per_note"] > 0
    assert await svc.count(result_scope(result, "tiny")) == 0  # the run's notes were removed


def result_scope(result: dict[str, Any], conv: str) -> Any:
    from graphmem.models import Scope

    return Scope(user_id="eval-decisions", agent_id=conv, run_id=result["config"]["run_id"])


async def test_enrichment_words_that_echo_the_prompt_are_dropped_and_reported(
    make_service: Any, scope: Any, graph: Any
) -> None:
    def enrich(text: str) -> dict[str, Any]:  # the 1.5B's habit: the prompt's "atomic memory" as a keyword
        return {
            "keywords": ["atomic memory", "pottery class"],
            "context": "Priya started a pottery class.",
            "tags": ["memory notes", "hobbies"],
        }

    svc, _ = await make_service(pairwise_responder(lambda a, b: 0.1, enrich=enrich), link_decision="pairwise")
    added = await svc.add("Priya: I just signed up for a pottery class.", scope)

    assert added.note.keywords == ["pottery class"] and added.note.tags == ["hobbies"]
    assert any("'atomic memory' only repeats the instructions" in r for r in added.rejected)
    assert any("'memory notes' only repeats the instructions" in r for r in added.rejected)
    stored = graph.q("MATCH (n:Note {id: $id}) RETURN n.keywords AS k, n.tags AS t", id=added.note.id)[0]
    assert stored == {"k": ["pottery class"], "t": ["hobbies"]}


async def test_a_tag_taken_from_a_refused_context_is_not_stored_and_is_reported(
    make_service: Any, scope: Any, graph: Any
) -> None:
    def enrich(text: str) -> dict[str, Any]:  # what the 1.5B wrote for the demo's mugs turn, 7 December
        return {
            "keywords": ["mugs", "lessons"],
            "context": "Tom has been learning to make coffee in his new mugs.",
            "tags": ["coffee", "pottery", "praise"],
        }

    svc, _ = await make_service(pairwise_responder(lambda a, b: 0.1, enrich=enrich), link_decision="pairwise")
    added = await svc.add("Tom: Eight mugs after only three months of lessons is impressive.", scope)

    assert added.note.tags == ["pottery", "praise"]
    assert any("tag 'coffee' repeats a refused sentence" in r for r in added.rejected)
    stored = graph.q("MATCH (n:Note {id: $id}) RETURN n.tags AS t, n.context AS c", id=added.note.id)[0]
    assert stored == {"t": ["pottery", "praise"], "c": ""}
    (hit,) = await svc.search("coffee", scope)
    assert "fulltext" not in hit.found_by  # found by its vector only, not by the invented tag


async def test_evolution_by_words_lends_an_add_keywords_to_the_neighbours_it_links_without_a_call(
    make_service: Any, scope: Any
) -> None:
    for on in (True, False):
        svc, model = await make_service(
            pairwise_responder(lambda earlier, later: 0.9 if "Rufus" in earlier else 0.1),
            link_decision="pairwise",
            link_candidates=3,
            link_word_candidates=0,
            enable_evolution=False,
            enable_supersession=False,
            evolution_words=on,
        )
        stored = [(await svc.add(text, scope)).note for text in (*RUFUS, "Ann: My sister paints tulips.")]
        # as they stand before the add (earlier adds may have lent them words already)
        earlier = [n for n in [await svc.get(x.id, scope) for x in stored] if n is not None]
        vectors = {r["id"]: r["embedding"] for r in await svc.export_notes(scope)}
        before = len(model.calls)
        added = await svc.add("Ann: Rufus hates thunderstorms and hides under the bed.", scope)
        assert not [m for m in model.calls[before:] if step_of(m) == "evolve_one"]  # no call for it
        linked = {x.target_id for x in added.links}
        assert linked == {n.id for n in earlier if "Rufus" in n.content}, on
        evolved = {e.note_id: e for e in added.evolved}
        assert set(evolved) == (linked if on else set())
        new_words = {w.lower() for w in added.note.keywords}
        for n in earlier:
            now = await svc.get(n.id, scope)
            assert now is not None and now.context == n.context and now.tags == n.tags
            if n.id in evolved:  # its own keywords first, then the add's it lacked; a new version
                assert now.keywords[: len(n.keywords)] == n.keywords and now.version == n.version + 1
                lent = now.keywords[len(n.keywords) :]
                assert lent and {w.lower() for w in lent} <= new_words
                assert evolved[n.id].after["keywords"] == now.keywords
                assert (await svc.history(n.id, scope))[-1].keywords == n.keywords
            else:
                assert now.keywords == n.keywords and now.version == n.version
        # the search vectors stay where the notes were stored
        after = {r["id"]: r["embedding"] for r in await svc.export_notes(scope)}
        assert all(after[i] == vectors[i] for i in vectors)
        for note in (*earlier, added.note):
            assert await svc.delete(note.id, scope)
