"""The A-MEM core against the real Neo4j, with a scripted chat model: what lands in the graph."""

from __future__ import annotations

import math
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from graphmem.errors import InvalidInputError, NoteNotFoundError
from graphmem.models import FOLLOWS_REASON, EnrichmentStatus, LinkType, Scope, SearchFilters, SearchHit
from graphmem.service.text import embed_text
from tests.fakes import EVOLVED_SUFFIX, amem_responder, noted, shown_ids, step_of, text_reply, tool_reply

pytestmark = pytest.mark.asyncio(loop_scope="session")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_add_writes_enriched_note_with_embedding(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service()
    result = await svc.add(
        "Caroline adopted a golden retriever named Max in May.", scope, event_time="1:56 pm on 8 May, 2023"
    )
    assert result.created
    rows = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=result.note.id)
    node = rows[0]["n"]
    assert node["content"] == "Caroline adopted a golden retriever named Max in May."
    assert (node["user_id"], node["agent_id"], node["run_id"]) == (scope.user_id, scope.agent_id, scope.run_id)
    assert node["keywords"] and node["tags"] == ["conversation", "personal"]
    assert node["context"].startswith("A note about")
    assert node["enrichment"] == "done" and node["version"] == 1 and node["retrieval_count"] == 0
    assert node["event_time_text"] == "1:56 pm on 8 May, 2023"
    assert node["event_time"].year == 2023 and node["event_time"].month == 5
    assert len(node["embedding"]) == 384
    expected = await svc.embedder.aembed_query(embed_text(result.note, "full"))
    assert cosine(list(node["embedding"]), expected) > 0.9999
    assert result.usage.llm_calls == 1 and result.usage.input_tokens == 100  # no neighbours: no evolve call


async def test_with_evolution_reembed_the_neighbour_is_embedded_from_its_evolved_text(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    svc, _ = await make_service(amem_responder(), evolution_reembed=True, evolution_words=False)
    first = await svc.add("Melanie runs a pottery studio in Portland.", scope)
    old_embedding = graph.q("MATCH (n:Note {id: $id}) RETURN n.embedding AS e", id=first.note.id)[0]["e"]
    await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope)
    neighbour = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=first.note.id)[0]["n"]
    assert neighbour["version"] == 2
    new_embedding = list(neighbour["embedding"])
    assert cosine(new_embedding, list(old_embedding)) < 0.9999
    evolved = first.note.model_copy(update={"context": neighbour["context"], "tags": neighbour["tags"]})
    assert cosine(new_embedding, await svc.embedder.aembed_query(embed_text(evolved, "full"))) > 0.9999


async def test_links_and_evolution_land_in_one_add(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, model = await make_service(amem_responder(link_type="SUPPORTS"))
    first = await svc.add("Melanie runs a pottery studio in Portland.", scope)
    old_embedding = graph.q("MATCH (n:Note {id: $id}) RETURN n.embedding AS e", id=first.note.id)[0]["e"]
    second = await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope)

    evolve_prompt = [m for m in model.calls if step_of(m) == "evolve"][-1]
    assert shown_ids(evolve_prompt) == [first.note.id]  # real ids, never positions

    rel = graph.q(
        "MATCH (a:Note {id: $a})-[r]->(b:Note {id: $b}) WHERE type(r) <> 'PREVIOUS_VERSION' RETURN type(r) AS t, properties(r) AS r",
        a=second.note.id,
        b=first.note.id,
    )
    assert [r["t"] for r in rel] == ["SUPPORTS"]
    props = rel[0]["r"]
    assert props["reason"].startswith("same subject: ") and props["strength"] == 0.8
    assert props["caused_by"] == second.note.id and props["created_at"] is not None
    assert props["user_id"] == scope.user_id

    neighbour = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=first.note.id)[0]["n"]
    assert neighbour["version"] == 2
    assert neighbour["context"] == "Melanie runs a pottery studio in Portland." + EVOLVED_SUFFIX
    assert neighbour["tags"] == ["conversation", "personal", "evolved"]  # tags only grow
    assert neighbour["content"] == "Melanie runs a pottery studio in Portland."  # content never evolves
    versions = graph.q("MATCH (:Note {id: $id})-[:PREVIOUS_VERSION]->(v:NoteVersion) RETURN v", id=first.note.id)
    assert len(versions) == 1
    v = versions[0]["v"]
    assert v["version"] == 1 and v["tags"] == first.note.tags and v["context"] == first.note.context
    assert v["changed_by"] == second.note.id
    # Its search vector stays what the note was stored as (evolution_reembed off, the default).
    assert cosine(list(neighbour["embedding"]), list(old_embedding)) > 0.9999
    assert [c.note_id for c in second.evolved] == [first.note.id]
    assert [x.type for x in second.links] == [LinkType.SUPPORTS]
    history = await svc.history(first.note.id, scope)
    assert [h.version for h in history] == [1]


async def test_hallucinated_id_and_unknown_type_are_rejected(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service(amem_responder(bad_id=True, bad_type=True, evolve=False), evolution_words=False)
    a = await svc.add("Jon lost his job as a banker.", scope)
    b = await svc.add("Jon opened a dance studio after losing his banking job.", scope)
    assert len(b.links) == 1
    assert any("invented-id" in r for r in b.rejected)
    assert any("LOVES" in r or "type" in r for r in b.rejected)
    rels = graph.q("MATCH (n:Note {user_id: $u})-[r]-() RETURN DISTINCT type(r) AS t", u=scope.user_id)
    assert {r["t"] for r in rels} == {"SUPPORTS"}
    assert graph.q("MATCH (n:Note {id: 'invented-id-0000'}) RETURN n") == []
    assert a.note.id in {x.target_id for x in b.links}


async def test_ids_echoed_with_the_prompt_label_are_matched_exactly(make_service: Any, scope: Scope) -> None:
    """Small models echo "id: <id>" or quote it; that still names exactly one shown id. A near miss does not."""
    base = amem_responder(evolve=False)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) != "evolve":
            return base(messages)
        real = shown_ids(messages)[0]
        return tool_reply(
            "EvolutionDecision",
            {
                "links": [
                    {"target_id": f"id:{real}x", "type": "RELATED_TO", "reason": "near miss", "strength": 0.5},
                    {"target_id": f"'ID: {real.upper()}'", "type": "SUPPORTS", "reason": "Jon's job", "strength": 0.7},
                ],
                "neighbour_updates": [],
            },
        )

    svc, _ = await make_service(respond)
    a = await svc.add("Jon lost his job as a banker.", scope)
    b = await svc.add("Jon opened a dance studio after losing his banking job.", scope)
    assert [(x.type.value, x.target_id) for x in b.links] == [("SUPPORTS", a.note.id)]
    assert len(b.rejected) == 1 and f"{a.note.id}x" in b.rejected[0]


async def test_update_that_pastes_another_notes_context_is_refused(make_service: Any, scope: Scope) -> None:
    """A small model "evolves" a neighbour by pasting the new note's (or another neighbour's) context over
    its own: refused as a whole, so the neighbour keeps what it was about; a real update still lands."""
    base = amem_responder(evolve=False)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) != "evolve":
            return base(messages)
        ids = shown_ids(messages)
        new_context = str(messages[-1].content).split("context: ", 1)[1].split("\n", 1)[0]
        updates = [{"note_id": i, "context": f"  {new_context.upper()} ", "tags": ["copied"]} for i in ids]
        if len(ids) > 1:
            own = noted(messages)[len(ids)]  # the last neighbour's own text: an update that stays about it
            updates[-1] = {"note_id": ids[-1], "context": f"Still true: {own}", "tags": None}
        return tool_reply("EvolutionDecision", {"links": [], "neighbour_updates": updates})

    svc, _ = await make_service(respond)
    a = await svc.add("Jon lost his job as a banker.", scope)
    b = await svc.add("Jon opened a dance studio after losing his banking job.", scope)
    assert b.evolved == [] and len(b.rejected) == 1 and "copies another note's context" in b.rejected[0]
    assert (await svc.get(a.note.id, scope)).context == a.note.context
    c = await svc.add("Jon's dance studio opened in Brooklyn.", scope)
    assert len(c.evolved) == 1 and len(c.rejected) == 1
    evolved = await svc.get(c.evolved[0].note_id, scope)
    assert evolved.context == f"Still true: {evolved.content}" and evolved.version == 2


async def test_no_cross_scope_neighbours_or_hits(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, model = await make_service()
    other = Scope(user_id=scope.user_id + "-other")
    try:
        theirs = await svc.add("Gina's bakery sells sourdough bread every Sunday.", other)
        mine = await svc.add("Gina's bakery sells sourdough bread on Sundays.", scope)
        assert mine.links == [] and mine.evolved == []
        assert all(theirs.note.id not in shown_ids(m) for m in model.calls if step_of(m) == "evolve")
        hits = await svc.search("sourdough bread bakery", scope, mode="hybrid")
        assert [h.note.id for h in hits] == [mine.note.id]
        with pytest.raises(NoteNotFoundError):
            await svc.get(theirs.note.id, scope)
        assert await svc.delete(theirs.note.id, scope) is False
        assert graph.q("MATCH (n:Note {id: $id}) RETURN count(n) AS c", id=theirs.note.id)[0]["c"] == 1
    finally:
        graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=other.user_id)


async def test_delete_leaves_nothing_dangling(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service()
    a = await svc.add("Audrey adopted three dogs from the shelter.", scope)
    b = await svc.add("Audrey's dogs love the new dog park near her home.", scope)
    assert b.links and b.evolved
    assert await svc.delete(a.note.id, scope) is True
    assert graph.q("MATCH (n {id: $id}) RETURN n", id=a.note.id) == []
    assert graph.q("MATCH (v:NoteVersion {note_id: $id}) RETURN v", id=a.note.id) == []
    assert graph.q("MATCH (n:Note {id: $id})-[r]-() RETURN r", id=b.note.id) == []
    assert await svc.delete(a.note.id, scope) is False


async def test_idempotent_add_by_id_and_by_content(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service()
    first = await svc.add("Nate won a video game tournament.", scope, note_id="turn-1")
    again = await svc.add("Nate won a video game tournament.", scope, note_id="turn-1")
    assert first.created and not again.created and again.note.id == "turn-1"
    same = await svc.add("Nate won a video game tournament.", scope, dedupe_content=True)
    assert not same.created and same.note.id == "turn-1"
    assert await svc.count(scope) == 1
    # A dedupe add takes an id derived from the content (concurrent ones agree); once that note's
    # content changed, the same content again takes the next id.
    first_d = await svc.add("Nate plays chess.", scope, dedupe_content=True, enrich=False)
    assert first_d.created and first_d.note.id.startswith("c-")
    await svc.update(first_d.note.id, scope, "Nate plays chess on Sundays.")  # re-enriched, no evolution
    second_d = await svc.add("Nate plays chess.", scope, dedupe_content=True, enrich=False)
    assert second_d.created and second_d.note.id == first_d.note.id + "-2"
    assert not (await svc.add("Nate plays chess.", scope, dedupe_content=True, enrich=False)).created
    for nid in (first_d.note.id, second_d.note.id):
        await svc.delete(nid, scope)
    # Ids are unique per scope (issue 16): another scope's id is neither refused nor revealed.
    other = Scope(user_id=scope.user_id, agent_id="other-agent")
    try:
        theirs = await svc.add("Someone else's note.", other, note_id="turn-1")
        assert theirs.created and theirs.note.scope == other
        assert (await svc.get("turn-1", scope)).content == "Nate won a video game tournament."
        assert (await svc.get("turn-1", other)).content == "Someone else's note."
        assert (
            graph.q("MATCH (n:Note {id: 'turn-1'}) WHERE n.user_id = $u RETURN count(n) AS c", u=scope.user_id)[0]["c"]
            == 2
        )
        assert await svc.delete("turn-1", other) and (await svc.get("turn-1", scope)).version == 1
    finally:
        await svc.delete("turn-1", other)


@pytest.mark.parametrize(
    "content, note_id, message",
    [
        ("", None, "empty"),
        ("   \n ", None, "empty"),
        ("x" * 9001, None, "over the limit"),
        ("binary \x00\x01 data", None, "control characters"),
        ("lone \udcff surrogate", None, "UTF-8"),
        ("fine", "bad id with spaces", "note id"),
        ("fine", "x" * 200, "note id"),
        ("fine", "id'}) DETACH DELETE n //", "note id"),
    ],
)
async def test_bad_input_is_refused_and_stores_nothing(
    make_service: Any, scope: Scope, content: str, note_id: str | None, message: str
) -> None:
    svc, model = await make_service(max_content_chars=9000)
    with pytest.raises((InvalidInputError, ValueError), match=message):
        await svc.add(content, scope, note_id=note_id)
    assert await svc.count(scope) == 0
    assert model.calls == []


async def test_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="user_id"):
        Scope(user_id="")
    with pytest.raises(ValueError, match="agent_id"):
        Scope(user_id="u", agent_id="a b")
    with pytest.raises(ValueError):
        Scope.parse("a/b/c/d")


async def test_failing_llm_stores_raw_and_repair_enriches(make_service: Any, scope: Scope, graph: Any) -> None:
    broken = {"on": True}
    good = amem_responder()

    def flaky(messages: list[BaseMessage]) -> AIMessage:
        if broken["on"]:
            return AIMessage(content="I cannot produce JSON today, sorry.")
        return good(messages)

    svc, _ = await make_service(flaky, llm_repair_attempts=1)
    result = await svc.add("Joanna wrote a screenplay about her hometown.", scope)
    assert result.created and result.note.enrichment == EnrichmentStatus.PENDING
    assert result.usage.llm_calls == 2 and result.usage.repairs == 1
    node = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=result.note.id)[0]["n"]
    assert node["enrichment"] == "pending" and node["keywords"] == [] and len(node["embedding"]) == 384
    broken["on"] = False
    assert await svc.repair(scope) == 1
    repaired = await svc.get(result.note.id, scope)
    assert repaired.enrichment == EnrichmentStatus.DONE and repaired.keywords and repaired.version == 2


async def test_fenced_json_in_content_is_repaired_without_a_second_call(make_service: Any, scope: Scope) -> None:
    def fenced(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) == "enrich":
            return text_reply('Sure!\n```json\n{"keywords": ["tea"], "context": "About tea.", "tags": ["food"]}\n```')
        return tool_reply("EvolutionDecision", {"links": [], "neighbour_updates": []})

    svc, model = await make_service(fenced)
    result = await svc.add("Tim drinks green tea every morning.", scope)
    assert result.note.keywords == ["tea"] and result.note.enrichment == EnrichmentStatus.DONE
    assert len(model.calls) == 1 and result.usage.repairs == 1


async def test_search_modes_report_how_hits_were_found(make_service: Any, scope: Scope) -> None:
    svc, _ = await make_service()
    a = await svc.add("Evan bought a vintage red convertible car.", scope)
    b = await svc.add("Evan drove his convertible to the coast on the weekend.", scope)
    await svc.add("The weather in Oslo was cold and snowy.", scope)
    vector = await svc.search("red convertible", scope, k=1, mode="vector")
    assert len(vector) == 1 and vector[0].found_by == ["vector"] and -1.0 <= vector[0].score <= 1.0
    # b is the second-best hit and linked from the first: at k=2 it carries both sources
    linked = await svc.search("red convertible", scope, k=2, mode="links")
    assert linked[0].note.id == vector[0].note.id
    via = [h for h in linked if "link" in h.found_by]
    assert (
        via
        and via[0].linked_via[0].type == LinkType.SUPPORTS
        and via[0].linked_via[0].reason.startswith("same subject: ")
    )
    assert {h.note.id for h in linked} >= {a.note.id, b.note.id}
    hybrid = await svc.search("Oslo snowy", scope, k=2, mode="hybrid")
    assert any("fulltext" in h.found_by for h in hybrid)
    with pytest.raises(InvalidInputError):
        await svc.search("", scope)
    with pytest.raises(InvalidInputError):
        await svc.search("x", scope, k=0)


async def test_one_hop_search_in_one_query_equals_search_then_expand(
    make_service: Any, scope: Scope, neo4j_driver: Any, settings: Any
) -> None:
    """The links mode's single query (search/vector_links) returns what vector search followed by
    expand_links returns, also when another scope's near-identical notes crowd the index (the
    over-fetch loop) and with a filter. The exact scan of small scopes is off here, so that 5.26 grows
    the over-fetch (tests/integration/test_store.py covers the scan)."""
    from graphmem import queries
    from graphmem.models import NoteInput
    from graphmem.service.retrieve import rank_with_links

    svc, _ = await make_service(exact_scan_max_notes=0)
    other = Scope(user_id=scope.user_id + "-crowd")
    try:
        topics = ["sailing boat", "violin lessons", "mountain hike", "sourdough bread", "chess club"]
        items, prev = [], None
        for i in range(40):
            nid = f"{scope.user_id}-n{i}"
            items.append(
                NoteInput(
                    content=f"Mia talked about her {topics[i % 5]} on day {i}.",
                    note_id=nid,
                    tags=["even" if i % 2 == 0 else "odd"],
                    follows=prev,
                )
            )
            prev = nid
        await svc.add_many(items, scope)
        await svc.link(f"{scope.user_id}-n1", f"{scope.user_id}-n20", scope, "SUPPORTS", "lessons on the boat", 0.9)
        # 300 near-copies in another scope outrank this scope's notes for most queries
        await svc.add_many(
            [
                NoteInput(content=f"Mia talked about her sailing boat on day {i}!", note_id=f"{other.user_id}-{i}")
                for i in range(300)
            ],
            other,
        )
        per_hit = svc.settings.links_per_hit
        fetches: list[int] = []
        query_fn = svc.store.run_auto

        async def counting(name: str, /, **params: Any) -> Any:
            if name == "search/vector_links":
                fetches.append(params["fetch_k"])
            return await query_fn(name, **params)

        svc.store.run_auto = counting
        for query, flt in [("sailing boat", None), ("violin", None), ("bread", SearchFilters(tags_any=["odd"]))]:
            for k in (1, 5, 12):
                one = await svc.search(query, scope, k=k, mode="links", filters=flt)
                vec = await svc.embedder.aembed_query(query)
                pool = max(k, svc.settings.search_pool)
                found = await svc.store.vector_search(
                    vec, scope, pool, filters=flt, over_fetch=svc.settings.over_fetch_ratio
                )
                ids = [n.id for n, _ in found]
                two = rank_with_links(
                    [SearchHit(note=n, score=s, found_by=["vector"]) for n, s in found],
                    await svc.store.expand_links(ids, scope, per_hit, exclude_ids=[]),
                    k,
                )
                assert [(h.note.id, h.found_by, [(v.from_id, v.type) for v in h.linked_via]) for h in one] == [
                    (h.note.id, h.found_by, [(v.from_id, v.type) for v in h.linked_via]) for h in two
                ]
                assert [round(h.score, 6) for h in one] == [round(h.score, 6) for h in two]
                assert all(h.note.scope == scope for h in one)
                assert sum("vector" in h.found_by for h in one) >= k  # k hits and the ones a link lifted
                assert k == 1 or any("link" in h.found_by for h in one)
        size = max(12, svc.settings.search_pool)  # the links mode asks for the whole ranking pool
        if svc.store.line == "2026":  # the scope is filtered inside the index: the crowd costs nothing
            assert max(fetches) <= size * svc.settings.in_index_over_fetch
        else:
            assert max(fetches) > size * svc.settings.over_fetch_ratio  # the crowd made the over-fetch grow
        violin = await svc.search("Mia talked about her violin lessons on day 1.", scope, k=1, mode="links")
        assert violin[0].note.id == f"{scope.user_id}-n1"
        # the turns around it (strength 1) tie its score; the SUPPORTS link (0.9) ranks n20 by score
        assert {(h.note.id, v.type, v.reason) for h in violin[1:] for v in h.linked_via} >= {
            (f"{scope.user_id}-n0", LinkType.FOLLOWS, FOLLOWS_REASON),
            (f"{scope.user_id}-n2", LinkType.FOLLOWS, FOLLOWS_REASON),
        }
        every = await svc.search("Mia talked about her violin lessons on day 1.", scope, k=40, mode="links")
        n20 = next(h for h in every if h.note.id == f"{scope.user_id}-n20")
        assert (f"{scope.user_id}-n1", LinkType.SUPPORTS, "lessons on the boat") in {
            (v.from_id, v.type, v.reason) for v in n20.linked_via
        }
    finally:
        q = queries.load("admin/delete_scope")
        neo4j_driver.execute_query(q.text, q.bind(**other.params()), database_=settings.neo4j_database)


async def test_ask_answers_with_notes_and_tokens(make_service: Any, scope: Scope) -> None:
    svc, model = await make_service(amem_responder(answer="Max, a golden retriever"))
    await svc.add("Caroline adopted a golden retriever named Max.", scope)
    result = await svc.ask("What is the name of Caroline's dog?", scope, token_budget=200)
    assert result.answer == "Max, a golden retriever"
    assert result.notes and "Max" in result.notes[0].note.content
    assert 0 < result.context_tokens <= 200
    assert result.usage.llm_calls == 1 and result.usage.total_tokens == 105
    prompt = str(model.calls[-1][-1].content)
    assert "golden retriever named Max" in prompt


async def test_ask_leaves_the_llm_context_out_when_told(make_service: Any, scope: Scope) -> None:
    # The enriched note's context reaches the answer prompt by default and not with the setting off.
    for shown in (True, False):
        svc, model = await make_service(amem_responder(answer="Max"), answer_shows_context=shown)
        added = await svc.add(f"Caroline adopted a golden retriever named Max ({shown}).", scope)
        assert added.note.context
        await svc.ask(f"What is the name of Caroline's dog ({shown})?", scope, token_budget=400)
        prompt = str(model.calls[-1][-1].content)
        assert f"named Max ({shown})" in prompt
        assert (f"(context: {added.note.context}" in prompt) is shown


async def test_ask_can_leave_the_linked_notes_out_of_its_context(make_service: Any, scope: Scope) -> None:
    # The search keeps its links; the answer context brings as many per hit as answer_links_per_hit (and, to
    # fill what the budget leaves, answer_fill_links_per_hit: off here).
    for per_hit in (None, 0):
        svc, _ = await make_service(
            amem_responder(answer="a car"), answer_links_per_hit=per_hit, answer_fill_links_per_hit=0
        )
        await svc.add(f"Evan bought a vintage red convertible car ({per_hit}).", scope)
        await svc.add(f"Evan drove his convertible to the coast on the weekend ({per_hit}).", scope)
        await svc.add(f"The weather in Oslo was cold and snowy ({per_hit}).", scope)
        query = f"red convertible ({per_hit})"
        assert any("link" in h.found_by for h in await svc.search(query, scope, k=2, mode="links"))
        assert not any("link" in h.found_by for h in await svc.search(query, scope, k=2, mode="links", links_per_hit=0))
        asked = await svc.ask(query, scope, k=2, mode="links")
        assert any("link" in h.found_by for h in asked.notes) is (per_hit is None)


async def test_update_keeps_version_and_reembeds(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service()
    a = await svc.add("Sam likes hiking in the Alps.", scope)
    updated = await svc.update(a.note.id, scope, "Sam likes climbing in the Dolomites.")
    assert updated.note.version == 2
    node = graph.q("MATCH (n:Note {id: $id}) RETURN n", id=a.note.id)[0]["n"]
    assert node["content"] == "Sam likes climbing in the Dolomites."
    expected = await svc.embedder.aembed_query(embed_text(updated.note, "full"))
    assert cosine(list(node["embedding"]), expected) > 0.9999
    history = await svc.history(a.note.id, scope)
    assert history[0].content == "Sam likes hiking in the Alps."


async def test_raw_mode_makes_no_llm_call(make_service: Any, scope: Scope) -> None:
    svc, model = await make_service(enable_enrichment=False)
    result = await svc.add("Plain note without enrichment.", scope)
    assert result.note.enrichment == EnrichmentStatus.RAW and model.calls == []


async def test_export_import_round_trip(make_service: Any, scope: Scope, graph: Any) -> None:
    svc, _ = await make_service()
    await svc.add("Dave restores classic cars.", scope, event_time="2023-05-08T13:56:00")
    await svc.add("Dave's restored Mustang won a car show.", scope)
    exported = await svc.export_notes(scope)
    assert len(exported) == 2 and sum(len(r["links"]) for r in exported) == 1
    target = Scope(user_id=scope.user_id, agent_id="copy")
    try:
        # ids are unique per scope: the copy keeps them beside the originals (issue 16)
        assert await svc.import_notes(exported, target) == 2
        again = await svc.export_notes(target)
        assert again == exported
        assert await svc.export_notes(scope) == exported
    finally:
        graph.q("MATCH (n) WHERE n.user_id = $u AND n.agent_id = 'copy' DETACH DELETE n", u=scope.user_id)


async def test_an_add_is_three_separately_callable_steps(make_service: Any, scope: Scope) -> None:
    """construct_note and decide_links store nothing; write_note stores what they decided."""
    svc, _ = await make_service()
    first = await svc.add("Ana takes violin lessons on Tuesdays.", scope)
    built = await svc.steps.construct_note("Ana's violin teacher praised her bowing.", scope, event_time="2024-03-03")
    assert built.note.enrichment == EnrichmentStatus.DONE and built.note.keywords and len(built.embedding) == 384
    assert built.usage.llm_calls == 1 and await svc.count(scope) == 1
    plan = await svc.steps.decide_links(built)
    assert [(x.target_id, x.type) for x in plan.links] == [(first.note.id, LinkType.SUPPORTS)]
    assert [u.before.id for u in plan.updates] == [first.note.id] and await svc.count(scope) == 1
    assert (await svc.get(first.note.id, scope)).version == 1
    result = await svc.steps.write_note(built, plan, follows=first.note.id)
    assert result.created and await svc.count(scope) == 2
    assert {(x.target_id, x.type) for x in result.links} == {
        (first.note.id, LinkType.SUPPORTS),
        (first.note.id, LinkType.FOLLOWS),
    }
    assert [c.note_id for c in result.evolved] == [first.note.id]
    assert (await svc.get(first.note.id, scope)).version == 2
    again = await svc.steps.write_note(built, plan)  # idempotent by id: nothing written twice
    assert not again.created and len(await svc.links(first.note.id, scope)) == 2


class _RacedStore:
    """A note store (the port) whose first idempotency check finds nothing and, before answering,
    lets another caller's add of the same note complete: the race of issue 16 item 5, made certain."""

    def __init__(self, inner: Any, racer: Any) -> None:
        self._inner, self._racer, self.raced = inner, racer, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _race(self, found: Any) -> Any:
        if found is None and not self.raced:
            self.raced = True
            await self._racer()
        return found

    async def get(self, note_id: str, scope: Scope, **kw: Any) -> Any:
        return await self._race(await self._inner.get(note_id, scope, **kw))

    async def find_by_content(self, content: str, scope: Scope) -> Any:
        return await self._race(await self._inner.find_by_content(content, scope))


async def test_an_add_racing_another_add_of_its_id_or_content_is_idempotent(make_service: Any, scope: Scope) -> None:
    """Issue 16 item 5: the caller whose check ran before another's write got ConflictError ("already
    in use") for its own id, and a dedupe_content add made a second note."""
    from graphmem.service.memory import AsyncMemoryService

    other, _ = await make_service(enable_enrichment=False)
    for kwargs in ({"note_id": "raced-1"}, {"dedupe_content": True}):
        text = f"Raced note {sorted(kwargs)}."

        async def racer(kw: dict[str, Any] = kwargs, t: str = text) -> None:
            assert (await other.add(t, scope, **kw)).created

        raced = _RacedStore(other.store, racer)
        svc = AsyncMemoryService(other.settings, raced, other.embedder, chat_model=None)
        result = await svc.add(text, scope, enrich=False, **kwargs)
        assert raced.raced and not result.created and result.note.content == text
    assert await other.count(scope) == 2


async def test_a_scope_stored_through_the_newline_hole_does_not_break_scopes(
    make_service: Any, scope: Scope, graph: Any
) -> None:
    """Before issue 16 item 2, "zz\\n" was accepted as a scope part; such notes may be in a database.
    They cannot be named any more; listing scopes skips them instead of failing for every user."""
    svc, _ = await make_service()
    await svc.add("A valid note.", scope, enrich=False)
    bad = scope.user_id + "\n"
    graph.q("CREATE (:Note {id: 'old-1', user_id: $u, agent_id: 'default', run_id: 'default', content: 'x'})", u=bad)
    try:
        assert await svc.scopes(scope.user_id) == [scope]
        assert scope in await svc.scopes()
    finally:
        graph.q("MATCH (n:Note {user_id: $u}) DETACH DELETE n", u=bad)


async def test_every_number_is_bounded_at_the_python_api(make_service: Any, scope: Scope) -> None:
    """Issue 16 item 6, for the Python API (the same bounds as REST, MCP and the CLI: models.LIMITS)."""
    from graphmem.models import LIMITS, NoteInput

    svc, _ = await make_service()
    nid = (await svc.add("A bounded note.", scope, enrich=False)).note.id
    calls = [
        lambda: svc.list(scope, offset=2**63),
        lambda: svc.list(scope, offset=2**63 - 1),
        lambda: svc.list(scope, limit=LIMITS.page_max + 1),
        lambda: svc.links(nid, scope, offset=2**63),
        lambda: svc.links(nid, scope, limit=LIMITS.links_page_max + 1),
        lambda: svc.history(nid, scope, limit=0),
        lambda: svc.history(nid, scope, offset=-1),
        lambda: svc.repair(scope, limit=2**63),
        lambda: svc.search("x", scope, k=LIMITS.k_max + 1),
        lambda: svc.search("x", scope, k=True),
        lambda: svc.ask("x", scope, token_budget=LIMITS.token_budget_max + 1),
        lambda: svc.add_many([NoteInput(content="x")], scope, batch_size=0),
        lambda: svc.add_many([NoteInput(content="x")], scope, batch_size=2**63),
        lambda: svc.items.search(scope, ("ns",), offset=2**63),  # the LangGraph store's items
        lambda: svc.items.search(scope, ("ns",), limit=-1),  # any count is taken, read in pages (issue 29)
        lambda: svc.items.namespaces(scope, offset=2**63 - 1),
        lambda: svc.items.scopes(limit=2**64),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(InvalidInputError):
            await call()
        assert await svc.count(scope) == 1, i
