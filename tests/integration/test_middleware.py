"""GraphmemMemoryMiddleware and the runtime-scoped memory tools in real ``create_agent`` agents
(scripted chat models, the real Neo4j): recall as ordinary context, turns recorded in the
background, one compiled agent serving two users."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphmem.errors import InvalidInputError
from graphmem.integrations._scope import scope_id
from graphmem.integrations.langchain import memory_tools
from graphmem.integrations.middleware import MEMORY_HEADER, GraphmemMemoryMiddleware
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, amem_responder, step_of, text_reply, tool_reply


@dataclass
class Ctx:
    user_id: str


@pytest.fixture
def people(graph: Any) -> Iterator[tuple[str, str]]:
    tag = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{tag}", f"Bob {tag} (not an id)"
    yield alice, bob
    graph.q("MATCH (n) WHERE n.user_id IN $u DETACH DELETE n", u=[alice, scope_id(bob)])


def agent_model() -> ScriptedChatModel:
    """The agent's model: 'remember: X' -> the remember tool; after a tool result or otherwise, a reply."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return text_reply("I will remember that.")
        text = str(last.content)
        if text.lower().startswith("remember:"):
            return tool_reply("remember", {"content": text.split(":", 1)[1].strip()})
        return text_reply(f"Answer to: {text}")

    return ScriptedChatModel(respond)


def memory_shown(call: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in call if MEMORY_HEADER in str(m.content)]


def test_two_users_one_agent(people: tuple[str, str], settings: Any, embedder: Any) -> None:
    alice, bob = people
    with MemoryService(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder) as svc:
        svc.add("Alice's dog is called Rufus.", Scope(user_id=alice), enrich=False)
        svc.add("Bob's dog is called Max.", Scope(user_id=scope_id(bob)), enrich=False)
        model = agent_model()
        memory = GraphmemMemoryMiddleware(svc, k=3)
        agent = create_agent(
            model, tools=memory_tools(svc), middleware=[memory], context_schema=Ctx, checkpointer=InMemorySaver()
        )

        out = agent.invoke(
            {"messages": [HumanMessage("What is my dog called?")]},
            {"configurable": {"thread_id": "a1"}},
            context=Ctx(user_id=alice),
        )
        shown = memory_shown(model.calls[-1])
        assert len(shown) == 1 and isinstance(shown[0], HumanMessage)  # user-role data, not a system prompt
        assert "Rufus" in str(shown[0].content) and "Max" not in str(shown[0].content)
        assert not any(MEMORY_HEADER in str(m.content) for m in model.calls[-1] if isinstance(m, SystemMessage))
        assert model.calls[-1][-1].content == "What is my dog called?"  # memory comes just before the question
        assert not any(MEMORY_HEADER in str(m.content) for m in out["messages"])  # never written into the state

        agent.invoke(
            {"messages": [HumanMessage("remember: I moved to Oslo in May.")]},
            {"configurable": {"thread_id": "b1"}},
            context=Ctx(user_id=bob),
        )
        shown = memory_shown(model.calls[-2])
        assert "Max" in str(shown[0].content) and "Rufus" not in str(shown[0].content)
        agent.invoke(
            {"messages": [HumanMessage("And what else?")]},
            {"configurable": {"thread_id": "a1"}},
            context=Ctx(user_id=alice),
        )
        memory.flush()
        assert memory.errors == []

        bob_scope = Scope(user_id=scope_id(bob))
        bob_notes = {n.content for n in svc.list(bob_scope)}
        assert "I moved to Oslo in May." in bob_notes  # the tool wrote to bob's scope, read at call time
        assert {"remember: I moved to Oslo in May.", "I will remember that."} <= bob_notes  # the recorded turn
        alice_notes = svc.list(Scope(user_id=alice), limit=50)
        assert not any("Oslo" in n.content for n in alice_notes)
        turns = {n.content: n for n in alice_notes if n.metadata.get("source") == "graphmem-middleware"}
        assert set(turns) == {
            "What is my dog called?",
            "Answer to: What is my dog called?",
            "And what else?",
            "Answer to: And what else?",
        }
        assert turns["What is my dog called?"].metadata == {
            "role": "human",
            "thread_id": "a1",
            "source": "graphmem-middleware",
        }

        def follows(note: Any) -> set[str]:
            return {x.target_id for x in svc.links(note.id, Scope(user_id=alice)) if x.source_id == note.id}

        # answer FOLLOWS its question, the next question FOLLOWS the previous answer
        assert follows(turns["Answer to: What is my dog called?"]) == {turns["What is my dog called?"].id}
        assert follows(turns["And what else?"]) == {turns["Answer to: What is my dog called?"].id}
        # the second turn's recall left out the turns of its own thread (already in the conversation)
        assert "What is my dog called?" not in str(memory_shown(model.calls[-1])[0].content)

        with pytest.raises(InvalidInputError, match="user_id"):
            agent.invoke(
                {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "x"}}, context=Ctx(user_id="")
            )


def test_recording_does_not_delay_the_reply(people: tuple[str, str], settings: Any, embedder: Any) -> None:
    """With enrichment on, recording waits for the LLM; the reply does not wait for the recording."""
    alice, _ = people
    release = threading.Event()
    enrich = amem_responder()

    def slow(messages: list[BaseMessage]) -> AIMessage:
        if step_of(messages) == "enrich":
            assert release.wait(30)
        return enrich(messages)

    with MemoryService(settings, chat_model=ScriptedChatModel(slow), embedder=embedder) as svc:
        memory = GraphmemMemoryMiddleware(svc, enrich=True)
        agent = create_agent(agent_model(), middleware=[memory], context_schema=Ctx)
        out = agent.invoke({"messages": [HumanMessage("I like green tea.")]}, context=Ctx(user_id=alice))
        assert out["messages"][-1].content == "Answer to: I like green tea."
        assert svc.count(Scope(user_id=alice)) == 0  # the reply came back; the recording still waits
        release.set()
        memory.flush(timeout=60)
        notes = svc.list(Scope(user_id=alice))
        assert len(notes) == 2 and all(n.keywords for n in notes)  # enriched by A-MEM


async def test_async_agent(people: tuple[str, str], make_service: Any) -> None:
    alice, bob = people
    svc, _ = await make_service()
    await svc.add("Alice plays chess on Sundays.", Scope(user_id=alice), enrich=False)
    model = agent_model()
    memory = GraphmemMemoryMiddleware(svc)
    agent = create_agent(model, tools=memory_tools(svc), middleware=[memory], context_schema=Ctx)
    await agent.ainvoke({"messages": [HumanMessage("When do I play chess?")]}, context=Ctx(user_id=alice))
    await agent.ainvoke({"messages": [HumanMessage("remember: chess club moved")]}, context={"user_id": bob})
    assert "Sundays" in str(memory_shown(model.calls[0])[0].content)
    await memory.aflush()
    assert memory.errors == []
    assert await svc.count(Scope(user_id=alice)) == 3
    assert "chess club moved" in {n.content for n in await svc.list(Scope(user_id=scope_id(bob)))}
