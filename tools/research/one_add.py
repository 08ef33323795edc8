"""One add's write, the per-statement path (``Neo4jNoteStore.add``: create, one statement per
evolved neighbour, the links) against the grouped statement (``add_group([write])``), side by side in
one process on one server, interleaved, so load on the machine hits both alike (issue 25).

    PYTHONPATH=. .venv/bin/python tools/research/one_add.py --n 50

Each round writes one note with two links and one evolved neighbour into a scope holding 20 notes
(what a typical A-MEM add writes), once per path; the time is the store call alone, then the full
``svc.add`` with a scripted model (tests/fakes.py) whose store writes through the path under test.
Medians and p90 in ms; the scopes are deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from graphmem.config import load_settings
from graphmem.embeddings import make_embedder
from graphmem.models import AddOutcome, AddWrite, Link, LinkType, NeighbourUpdate, Note, NoteInput, Scope
from graphmem.service import AsyncMemoryService
from graphmem.store import Neo4jNoteStore
from tests.fakes import ScriptedChatModel, amem_responder

Write = Callable[[AddWrite], Awaitable[AddOutcome]]


def summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median_ms": round(statistics.median(xs) * 1000, 2),
        "p90_ms": round(xs[int(0.9 * (len(xs) - 1))] * 1000, 2),
    }


async def main(n: int) -> dict[str, Any]:
    settings = load_settings()
    embedder = make_embedder(settings)
    svc = await AsyncMemoryService.create(settings, chat_model=ScriptedChatModel(amem_responder()), embedder=embedder)
    store = svc.store
    assert isinstance(store, Neo4jNoteStore)
    original_add = store.add

    async def grouped(write: AddWrite) -> AddOutcome:
        (outcome,) = await store.add_group([write])
        return outcome

    paths: dict[str, Write] = {"statements": original_add, "grouped": grouped}
    scope = Scope(user_id=f"one-add-{uuid.uuid4().hex[:8]}")
    base = [f"Note {i}: Ana's garden has tomatoes, beans and {i} sunflowers." for i in range(20)]
    ids = await svc.add_many([NoteInput(content=c, note_id=f"n{i}") for i, c in enumerate(base)], scope)
    vec = (await embedder.aembed_documents(["Ana's garden"]))[0]
    store_times: dict[str, list[float]] = {k: [] for k in paths}
    add_times: dict[str, list[float]] = {k: [] for k in paths}
    try:
        for i in range(n + 3):  # the first 3 rounds warm up
            for name, path in paths.items():
                note_id = f"{name}-{i}"
                write = AddWrite(
                    note=Note(id=note_id, content=f"Ana picked tomatoes, round {i}.", scope=scope),
                    embedding=vec,
                    links=[
                        Link(source_id=note_id, target_id=ids[i % 20], type=LinkType.ELABORATES, reason="garden"),
                        Link(source_id=note_id, target_id=ids[(i + 1) % 20], type=LinkType.RELATED_TO, reason="ana"),
                    ],
                    updates=[
                        NeighbourUpdate(
                            note_id=ids[(i + 2) % 20],
                            context=f"Ana's garden, round {i}.",
                            tags=["garden"],
                            keywords=["tomatoes"],
                            embedding=vec,
                        )
                    ],
                )
                t0 = time.perf_counter()
                await path(write)
                if i >= 3:
                    store_times[name].append(time.perf_counter() - t0)
                store.add = path  # type: ignore[method-assign]
                t0 = time.perf_counter()
                await svc.add(f"Ana watered the beans ({name}, round {i}).", scope)
                if i >= 3:
                    add_times[name].append(time.perf_counter() - t0)
                store.add = original_add  # type: ignore[method-assign]
    finally:
        await store.run_write("admin/delete_scope", **scope.params())
        await svc.close()
    return {
        "n": n,
        "server": str(settings.neo4j_uri),
        "load_avg": os.getloadavg(),
        "store_write": {k: summary(v) for k, v in store_times.items()},
        "svc_add": {k: summary(v) for k, v in add_times.items()},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50)
    print(json.dumps(asyncio.run(main(parser.parse_args().n)), indent=2))
