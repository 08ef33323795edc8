"""LangChain objects over graphmem with real langchain-core machinery and the real Neo4j."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from graphmem.errors import InvalidInputError
from graphmem.integrations.langchain import GraphmemChatMessageHistory, GraphmemRetriever, memory_tools
from graphmem.models import LinkType, Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, amem_responder, text_reply

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
def other_scope(scope: Scope, graph: Any) -> Iterator[Scope]:
    """A second user, cleaned up like `scope` (notes, versions and chat sessions)."""
    other = Scope(user_id=scope.user_id + "-other")
    yield other
    graph.q("MATCH (n) WHERE n.user_id = $u DETACH DELETE n", u=other.user_id)


@pytest.fixture
def chat_cleanup(scope: Scope, graph: Any) -> Iterator[None]:
    """Chat nodes of the test scope (the shared scope cleanup removes notes and versions)."""
    yield
    graph.q("MATCH (n) WHERE (n:ChatSession OR n:ChatMessage) AND n.user_id = $u DETACH DELETE n", u=scope.user_id)


@pytest.fixture
def sync_service(scope: Scope, settings: Any, embedder: Any) -> Iterator[MemoryService]:
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        yield svc


# --- retriever ------------------------------------------------------------------------------------


async def test_retriever_documents_and_per_call_options(scope: Scope, make_service: Any) -> None:
    svc, _ = await make_service()
    first = await svc.add("Melanie runs a pottery studio in Portland.", scope, event_time="2023-05-08")
    second = await svc.add("Melanie's pottery studio sells bowls at the Portland market.", scope)
    await svc.add("Jon opened a dance studio downtown.", scope, enrich=False)

    retriever = GraphmemRetriever(service=svc, scope=scope, k=1, mode="vector")
    docs = await retriever.ainvoke("pottery bowls market")
    assert [d.id for d in docs] == [second.note.id]
    doc = docs[0]
    assert isinstance(doc, Document) and doc.page_content == second.note.content
    meta = doc.metadata
    assert meta["found_by"] == ["vector"] and 0 < meta["score"] <= 1
    assert meta["keywords"] == second.note.keywords and meta["tags"] == ["conversation", "personal"]
    assert meta["context"].startswith("A note about") and meta["scope"] == str(scope)
    assert meta["user_id"] == scope.user_id and meta["created_at"]

    assert [d.id for d in await retriever.ainvoke("pottery bowls market", mode="links")] == [second.note.id]  # k counts
    wide = retriever.model_copy(update={"include_links": True})
    linked = await wide.ainvoke("pottery bowls market", mode="links")  # per-call override
    assert [d.id for d in linked] == [second.note.id, first.note.id]
    assert "link" in linked[1].metadata["found_by"]  # also a (lower) vector hit of the ranking pool
    assert linked[1].metadata["linked_via"][0]["type"] == "SUPPORTS"
    assert linked[1].metadata["event_time"].startswith("2023-05-08")

    three = await retriever.ainvoke("studio", k=3)
    assert len(three) == 3
    none = await retriever.ainvoke("studio", k=3, filters={"tags_any": ["no-such-tag"]})
    assert none == []

    with pytest.raises(RuntimeError, match="MemoryService"):
        retriever.invoke("studio")  # blocking call on an async service: a clear refusal, not a deadlock


async def test_retriever_and_history_with_the_blocking_service(
    scope: Scope, sync_service: MemoryService, chat_cleanup: None
) -> None:
    sync_service.add("Gina's bakery sells sourdough bread on Sundays.", scope, enrich=False)
    retriever = GraphmemRetriever(service=sync_service, scope=scope, k=1)
    assert retriever.invoke("sourdough")[0].page_content.startswith("Gina's bakery")
    assert (await retriever.ainvoke("sourdough"))[0].page_content.startswith("Gina's bakery")
    assert len(retriever.batch(["bread", "bakery"])) == 2

    history = GraphmemChatMessageHistory(sync_service, scope, "sync-session")
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    assert [m.content for m in history.messages] == ["hi", "hello"]
    await history.aadd_messages([HumanMessage("again")])
    assert len(await history.aget_messages()) == 3
    history.clear()
    assert history.messages == []


# --- chat message history -------------------------------------------------------------------------


def tricky_messages() -> list[BaseMessage]:
    return [
        SystemMessage("You are terse.", id="sys-1"),
        HumanMessage(
            content=[{"type": "text", "text": "Look at this"}, {"type": "text", "text": "  and this  "}],
            id="h-1",
            name="alice",
            additional_kwargs={"lang": "en"},
        ),
        AIMessage(
            content="",
            id="ai-1",
            tool_calls=[{"name": "recall", "args": {"query": "pottery", "k": 3}, "id": "call-9", "type": "tool_call"}],
            usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
        ),
        ToolMessage(
            content="[n1] Melanie runs a pottery studio.",
            tool_call_id="call-9",
            name="recall",
            artifact={"ids": ["n1"]},
            status="success",
        ),
        AIMessage("Ünïcödé ✓ and a long answer: " + "x" * 50_000, id="ai-2"),
    ]


async def test_history_is_lossless_windowed_and_scoped(
    scope: Scope, other_scope: Scope, make_service: Any, chat_cleanup: None
) -> None:
    svc, _ = await make_service()
    history = GraphmemChatMessageHistory(svc, scope, "session-1")
    written = tricky_messages()
    await history.aadd_messages(written)
    read = await history.aget_messages()
    assert [message_to_dict(m) for m in read] == [message_to_dict(m) for m in written]
    assert read[2].tool_calls[0]["args"] == {"query": "pottery", "k": 3}
    assert len(read[4].content) > 50_000

    await history.aadd_messages([HumanMessage("one more")])
    windowed = GraphmemChatMessageHistory(svc, scope, "session-1", window=2)
    assert [m.content for m in await windowed.aget_messages()] == [written[-1].content, "one more"]

    assert await GraphmemChatMessageHistory(svc, other_scope, "session-1").aget_messages() == []
    assert await GraphmemChatMessageHistory(svc, scope, "session-2").aget_messages() == []
    assert await svc.count(scope) == 0  # a history is not notes

    await history.aclear()
    assert await history.aget_messages() == []
    for bad in ["", "x" * 1025, "nul\x00", "lone \ud800"]:
        with pytest.raises(InvalidInputError, match="session_id"):
            GraphmemChatMessageHistory(svc, scope, bad)


async def test_history_session_ids_of_any_shape(scope: Scope, make_service: Any, chat_cleanup: None) -> None:
    """LangChain apps pass ids like 'user/42/chat 7', 'Zoë', UUIDs with prefixes, long keys."""
    svc, _ = await make_service()
    ids = ["a/b/c", "with space", "Zoë Ångström 名前", "é" * 300, "s" * 1024, "slack:T1/C2/1700000000.0001", "zz\n"]
    for i, sid in enumerate(ids):
        await GraphmemChatMessageHistory(svc, scope, sid).aadd_messages([HumanMessage(f"message {i}")])
    for i, sid in enumerate(ids):
        assert [m.content for m in await GraphmemChatMessageHistory(svc, scope, sid).aget_messages()] == [
            f"message {i}"
        ]
    assert await GraphmemChatMessageHistory(svc, scope, "zz").aget_messages() == []  # not an alias of "zz\n"
    stored = {s.session_id for s in await svc.chats.sessions(scope, limit=20)}
    assert stored == set(ids)  # stored as given
    bad = GraphmemChatMessageHistory(svc, scope, "s1", remember=True)
    with pytest.raises(InvalidInputError, match="Unicode"):
        await bad.aadd_messages([HumanMessage("lone \udc80 surrogate")])
    assert await bad.aget_messages() == [] and await svc.count(scope) == 0  # nothing half-written


async def test_history_remember_turns_chat_into_notes(scope: Scope, make_service: Any, chat_cleanup: None) -> None:
    svc, _ = await make_service()
    history = GraphmemChatMessageHistory(svc, scope, "s-remember", remember=True)
    await history.aadd_messages(
        [
            HumanMessage("I adopted a golden retriever named Max in May.", id="m1"),
            AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "c1", "type": "tool_call"}]),
            ToolMessage("tool output", tool_call_id="c1"),
            AIMessage("Congratulations on adopting Max!", id="m2"),
        ]
    )
    notes = await svc.list(scope)
    assert sorted(n.content for n in notes) == [
        "Congratulations on adopting Max!",
        "I adopted a golden retriever named Max in May.",
    ]
    human = next(n for n in notes if n.content.startswith("I adopted"))
    assert human.metadata == {"role": "human", "session_id": "s-remember"} and human.source_id == "m1"
    assert human.keywords  # enriched the A-MEM way
    assert len(await history.aget_messages()) == 4

    async def follows(content: str) -> set[str]:
        note = next(n for n in await svc.list(scope) if n.content == content)
        return {
            ln.target_id
            for ln in await svc.links(note.id, scope)
            if ln.source_id == note.id and ln.type == LinkType.FOLLOWS
        }

    ids = {n.content: n.id for n in notes}
    # the answer follows its question (the tool messages between them are not notes) ...
    assert await follows("Congratulations on adopting Max!") == {ids["I adopted a golden retriever named Max in May."]}
    assert await follows("I adopted a golden retriever named Max in May.") == set()
    # ... and the chain goes on in a later call, from another history object of the same session
    again = GraphmemChatMessageHistory(svc, scope, "s-remember", remember=True)
    await again.aadd_messages([HumanMessage("Max loves the beach.")])
    assert await follows("Max loves the beach.") == {ids["Congratulations on adopting Max!"]}
    # another session starts its own chain
    await GraphmemChatMessageHistory(svc, scope, "s-other", remember=True).aadd_messages([HumanMessage("Hello.")])
    assert await follows("Hello.") == set()
    # a forgotten previous note does not stop the next message from being remembered
    assert await svc.delete(next(n.id for n in await svc.list(scope) if n.content == "Max loves the beach."), scope)
    await again.aadd_messages([AIMessage("Beaches are great for dogs.")])
    assert await follows("Beaches are great for dogs.") == set()


async def test_runnable_with_message_history(scope: Scope, make_service: Any, chat_cleanup: None) -> None:
    svc, _ = await make_service()
    seen: list[list[BaseMessage]] = []

    def spy(prompt_value: Any) -> Any:
        seen.append(prompt_value.to_messages())
        return prompt_value

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You remember the conversation."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    model = GenericFakeChatModel(messages=iter(["Nice to meet you, Ann.", "Your name is Ann."]))
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(spy) | model,
        lambda session_id: GraphmemChatMessageHistory(svc, scope, session_id),
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "chat-42"}}
    first = await chain.ainvoke({"input": "Hi, I am Ann."}, config=config)
    second = await chain.ainvoke({"input": "What is my name?"}, config=config)
    assert first.content == "Nice to meet you, Ann." and second.content == "Your name is Ann."
    assert [m.content for m in seen[1]] == [
        "You remember the conversation.",
        "Hi, I am Ann.",
        "Nice to meet you, Ann.",
        "What is my name?",
    ]
    stored = await GraphmemChatMessageHistory(svc, scope, "chat-42").aget_messages()
    assert [(m.type, m.content) for m in stored] == [
        ("human", "Hi, I am Ann."),
        ("ai", "Nice to meet you, Ann."),
        ("human", "What is my name?"),
        ("ai", "Your name is Ann."),
    ]


# --- tools ----------------------------------------------------------------------------------------


class ToolDriver:
    """A scripted tool-calling model: each turn is a list of tool calls, the last one plain text."""

    def __init__(self, turns: list[list[dict[str, Any]] | str]) -> None:
        self.turns = list(turns)

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        turn = self.turns.pop(0)
        if isinstance(turn, str):
            return text_reply(turn)
        calls = [
            {"name": c["name"], "args": c["args"], "id": f"call-{i}-{len(self.turns)}", "type": "tool_call"}
            for i, c in enumerate(turn)
        ]
        return AIMessage(content="", tool_calls=calls)


async def run_agent(model: Any, tools: list[Any], question: str) -> list[BaseMessage]:
    """The classic tool loop: model -> tool calls -> ToolMessages -> model, until it answers."""
    by_name = {t.name: t for t in tools}
    bound = model.bind_tools(tools)
    messages: list[BaseMessage] = [HumanMessage(question)]
    for _ in range(10):
        reply = await bound.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return messages
        for call in reply.tool_calls:
            messages.append(await by_name[call["name"]].ainvoke(call))
    raise AssertionError("the agent did not finish")


async def test_tools_driven_by_a_tool_calling_model(
    scope: Scope, other_scope: Scope, make_service: Any, graph: Any
) -> None:
    svc, _ = await make_service()
    theirs = await svc.add("Another user's secret: the safe code is 1234.", other_scope, enrich=False)
    tools = memory_tools(svc, scope)
    assert [t.name for t in tools] == ["remember", "recall", "link", "forget"]
    for t in tools:  # the model never sees (or chooses) a scope
        props = t.tool_call_schema.model_json_schema()["properties"]
        assert not {"user_id", "agent_id", "run_id", "scope"} & set(props), t.name

    driver = ToolDriver(
        [
            [
                {
                    "name": "remember",
                    "args": {"content": "Caroline moved to Sweden in 2022.", "event_time": "2022-06-01"},
                },
                {"name": "remember", "args": {"content": "Caroline learns Swedish at evening classes."}},
            ],
            [{"name": "recall", "args": {"query": "Where does Caroline live?", "k": 2}}],
            "Caroline lives in Sweden.",
        ]
    )
    messages = await run_agent(ScriptedChatModel(driver), tools, "Remember this and tell me where Caroline lives.")
    tool_msgs = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_msgs] == ["remember", "remember", "recall"]
    assert tool_msgs[0].content.startswith("remembered as note ")
    recall = tool_msgs[2]
    assert "Caroline moved to Sweden" in recall.content and "1234" not in recall.content
    assert all(isinstance(d, Document) for d in recall.artifact)
    ids = [d.id for d in recall.artifact]
    assert messages[-1].content == "Caroline lives in Sweden."

    notes = {n.content: n.id for n in await svc.list(scope)}
    assert set(notes) == {"Caroline moved to Sweden in 2022.", "Caroline learns Swedish at evening classes."}
    moved, learns = notes["Caroline moved to Sweden in 2022."], notes["Caroline learns Swedish at evening classes."]
    assert set(ids) <= set(notes.values())

    driver2 = ToolDriver(
        [
            [
                {
                    "name": "link",
                    "args": {"source_id": learns, "target_id": moved, "type": "FOLLOWS", "reason": "after moving"},
                },
                {"name": "link", "args": {"source_id": learns, "target_id": theirs.note.id}},  # another user's note
                {"name": "forget", "args": {"note_id": theirs.note.id}},  # another user's note
                {"name": "forget", "args": {"note_id": moved}},
                {"name": "recall", "args": {"query": "safe code", "k": 5}},
            ],
            "done",
        ]
    )
    messages = await run_agent(ScriptedChatModel(driver2), tools, "Tidy up memory.")
    out = [m for m in messages if isinstance(m, ToolMessage)]
    assert out[0].content == f"linked {learns} -[FOLLOWS]-> {moved}"
    assert out[1].content.startswith("error:") and theirs.note.id in out[1].content  # not found in this scope
    assert out[2].content == f"no note {theirs.note.id} in memory"
    assert out[3].content == f"forgot note {moved}"
    assert "1234" not in out[4].content
    assert graph.q("MATCH (n:Note {id: $id}) RETURN n.user_id AS u", id=theirs.note.id) == [{"u": other_scope.user_id}]
    assert [n.id for n in await svc.list(scope)] == [learns]

    bad = await tools[0].ainvoke({"content": "   "})
    assert bad.startswith("error:") and "empty" in bad
