"""Memory that changes over time (issue 28) on the real local model: a short conversation with two
updates (a move, an instrument switch). Whatever the model answers, the rules hold: a supersession
always goes from the newer note to the older, no note's content, context or tags change (evolution by
words only adds keywords), nothing crosses scopes;
and the two updates of the conversation are found.

Uses the local model server that `graphmem llm start` runs (the default 1.5B); skipped when none
answers on the configured port (this test starts no server).
"""

from __future__ import annotations

import urllib.request
from datetime import UTC
from typing import Any

import pytest

from graphmem.config import Settings
from graphmem.llm.clients import local_base_url
from graphmem.models import Scope
from graphmem.service import AsyncMemoryService

pytestmark = pytest.mark.e2e


def _answers(settings: Settings) -> bool:
    try:
        with urllib.request.urlopen(f"{local_base_url(settings)}/models", timeout=3) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@pytest.fixture
def local_settings(neo4j_server: Any) -> Settings:
    settings: Settings = neo4j_server.settings.model_copy(
        update={"llm_provider": "local", "link_decision": "auto", "enable_evolution": None, "llm_timeout": 900.0}
    )
    if not _answers(settings):
        pytest.skip("no local model server answers (start one with `graphmem llm start`)")
    return settings


TURNS = [
    ("Ann: I live in Lyon, near the old town.", "2021-03-01T10:00:00"),
    ("Bo: I play the violin in a small orchestra.", "2021-03-01T10:01:00"),
    ("Ann: I moved to Berlin in May for a new job.", "2024-06-01T18:00:00"),
    ("Bo: I switched from the violin to the cello last winter.", "2024-06-01T18:01:00"),
]


async def test_two_updates_on_the_local_model(local_settings: Settings, scope: Scope, graph: Any) -> None:
    async with await AsyncMemoryService.create(local_settings) as svc:
        added = []
        for text, when in TURNS:
            added.append(await svc.add(text, scope, event_time=when))
            stored = {
                r["id"]: r
                for r in graph.q(
                    "MATCH (n:Note {user_id: $u}) RETURN n.id AS id, n.content AS content, n.context AS context, "
                    "n.tags AS tags, n.keywords AS keywords, n.version AS version",
                    u=scope.user_id,
                )
            }
            for earlier in added[:-1]:  # no note's words changed by a later add's supersession
                n, now = earlier.note, stored[earlier.note.id]
                assert (now["content"], now["context"], now["tags"]) == (n.content, n.context, n.tags)
                # evolution by words (on by default) may lend a later add's keywords: they only grow,
                # and only they give the note a new version
                assert set(n.keywords) <= set(now["keywords"])
                assert now["version"] == n.version or set(now["keywords"]) > set(n.keywords)
        ids = [a.note.id for a in added]
        pairs = {(ids.index(s.newer_id), ids.index(s.older_id)) for a in added for s in a.superseded}
        for a in added:
            for s in a.superseded:  # the direction is the code's: newer supersedes older
                newer, older = added[ids.index(s.newer_id)].note, added[ids.index(s.older_id)].note
                assert newer.event_time and older.event_time
                assert newer.event_time.replace(tzinfo=UTC) > older.event_time.replace(tzinfo=UTC)
        assert pairs & {(2, 0), (3, 1)}, f"neither update found; recorded {pairs}"
        hits = await svc.search("Where does Ann live now?", scope, k=3)
        assert hits and all(h.timeline is not None for h in hits)
