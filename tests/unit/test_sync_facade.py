"""The blocking facade cannot drift from the async service: every public coroutine of
AsyncMemoryService has a MemoryService method of the same name, parameters, defaults and
annotations, and the facade has no method the service lacks."""

from __future__ import annotations

import inspect

import pytest

from graphmem.service.add_steps import AddSteps
from graphmem.service.memory import AsyncMemoryService
from graphmem.service.sync import MemoryService

# Not mirrored, on purpose: `create` is the facade's constructor; `llm_caller` and `answer_caller`
# return an object whose methods are coroutines, useless without an event loop.
ASYNC_ONLY = {"create", "llm_caller", "answer_caller"}
SYNC_ONLY = {"close", "run", "loop", "settings", "aio"}  # the facade's own lifecycle and loop access


def public_coroutines() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(AsyncMemoryService, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in ASYNC_ONLY
    }


def test_the_service_has_the_expected_public_api() -> None:
    assert {
        "add",
        "add_many",
        "ingest",
        "ingest_scopes",
        "search",
        "ask",
        "flush",
    } <= set(public_coroutines())


def test_the_add_steps_are_not_facade_methods() -> None:
    """The add's steps live on their own object (``svc.steps``, ``service/add_steps.py``), used by
    add, update, repair and ingest; neither facade mirrors them."""
    steps = {"construct_note", "neighbours", "decide_links", "embed_updates", "write_note", "write_notes"}
    assert not steps & {n for n, _ in inspect.getmembers(AsyncMemoryService)}
    assert not steps & {n for n, _ in inspect.getmembers(MemoryService)}
    assert steps <= {n for n, _ in inspect.getmembers(AddSteps)}


@pytest.mark.parametrize("name", sorted(public_coroutines()))
def test_facade_method_matches(name: str) -> None:
    facade = getattr(MemoryService, name, None)
    assert facade is not None and not inspect.iscoroutinefunction(facade), f"MemoryService.{name} is missing"
    want, got = public_coroutines()[name], inspect.signature(facade)
    assert list(got.parameters.values()) == list(want.parameters.values()), name
    assert got.return_annotation == want.return_annotation, name


def test_facade_has_nothing_the_service_lacks() -> None:
    facade = {n for n, _ in inspect.getmembers(MemoryService) if not n.startswith("_")}
    assert facade - set(public_coroutines()) - SYNC_ONLY == set()
