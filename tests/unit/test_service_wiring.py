"""How the service is put together: the add steps built once from the store, the embedder, the chat
models and a decider; one chat model per role when asked; the renamed chat histories."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.service.linking import JointDecider, PairwiseDecider
from graphmem.service.memory import AsyncMemoryService
from tests.fakes import ScriptedChatModel, amem_responder, tool_reply
from tests.memory_store import MemoryNoteStore, WordEmbeddings


def make(**kw: object) -> AsyncMemoryService:
    return AsyncMemoryService(
        Settings(link_decision="joint"),
        MemoryNoteStore(),
        WordEmbeddings(),
        ScriptedChatModel(amem_responder()),
        **kw,  # type: ignore[arg-type]
    )


async def test_one_chat_model_serves_every_role_unless_one_is_given() -> None:
    svc = make()
    assert isinstance(svc.steps.decider, JointDecider)
    assert (await svc.steps.enrich_llm()) is (await svc.llm_caller())
    assert (await svc.steps.decider.llm()) is (await svc.llm_caller())  # type: ignore[attr-defined]
    links = ScriptedChatModel(amem_responder())
    own = make(link_model=links)
    assert (await own.steps.decider.llm()).model is links  # type: ignore[attr-defined]
    assert (await own.steps.enrich_llm()) is (await own.llm_caller())
    assert (await svc.answer_caller()) is (await svc.llm_caller())
    answers = ScriptedChatModel(amem_responder())
    third = make(answer_model=answers)
    assert (await third.answer_caller()).model is answers
    assert (await third.llm_caller()).model is not answers
    await svc.close()
    await own.close()
    await third.close()


async def test_the_evaluation_judge_asks_the_answering_model() -> None:
    """The evaluation's answering model is the one without the prompt cache: its verdicts repeat."""
    from graphmem.evaluation.qa_answers import judge_answer

    answers = ScriptedChatModel(lambda _: tool_reply("JudgeVerdict", {"reason": "same", "label": "CORRECT"}))
    svc = make(answer_model=answers)
    verdict = await judge_answer(svc, {"question": "Who?", "gold": "Pixel", "prediction": "Pixel"})
    assert verdict == "CORRECT" and len(answers.calls) == 1
    await svc.close()


def test_a_given_decider_is_used_as_it_is() -> None:
    decider = PairwiseDecider(lambda: None, candidates=1, threshold=0.5)  # type: ignore[arg-type,return-value]
    assert make(link_decider=decider).steps.decider is decider


def test_chats_and_the_deprecated_histories() -> None:
    chats = object()
    svc = make(chats=chats)
    assert svc.chats is chats
    with pytest.warns(DeprecationWarning, match="use .chats"):
        assert svc.histories is chats
    with pytest.raises(RuntimeError, match="without a chat-history store"):
        _ = make().chats


def test_the_embedder_is_the_add_steps_embedder() -> None:
    svc = make()
    other = WordEmbeddings(16)
    svc.embedder = other
    assert svc.steps.embedder is other and svc.embedder is other
