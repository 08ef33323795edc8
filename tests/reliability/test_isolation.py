"""Isolation between scopes, REST auth, and secrets in logs.

Scope A and three neighbours hold the SAME texts: another user whose id extends A's ("<u>x"), the same
user with another agent, the same user and agent with another run. Hypothesis runs sequences of
operations on A (search in every mode, link expansion, add with a greedy model that links to and
evolves everything it sees and names the neighbours' ids, update, repair, ask, export, LangGraph
store calls, and calls naming the neighbours' ids); no result may hold a note of another scope and
the neighbours must be left exactly as they were (content, enrichment, versions, links, even
retrieval counts).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import SecretStr
from starlette.testclient import TestClient

from graphmem.config import Settings
from graphmem.errors import ConfigError, InvalidInputError, LLMError, NoteNotFoundError, StoreUnavailableError
from graphmem.integrations.langgraph import GraphmemStore
from graphmem.interfaces.rest import create_app
from graphmem.models import Scope
from graphmem.service.sync import MemoryService
from tests.fakes import ScriptedChatModel, shown_ids, step_of, text_reply, tool_reply
from tests.reliability.support import FULL, ArgvWatch, ClusterEmbedder, FaultyOpenAI, Reply, record, scripted_app

TEXTS = [
    "Alice moved to Lisbon in March topic-0.",
    "Alice's sister Maria is a nurse topic-0.",
    "The project deadline is Friday topic-1.",
    "Alice prefers green tea over coffee topic-1.",
    "The vault code is 4711 topic-2.",
    "Bob repairs bicycles on weekends topic-2.",
]
EXAMPLES = 300 if FULL else 20
_LINK_TYPES = "RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC"


class World:
    """Scope A, its neighbours, their notes, and the ids the greedy model will try to reach."""

    def __init__(self, user: str) -> None:
        self.a = Scope(user_id=user, agent_id="agent-a", run_id="run-a")
        self.others = [
            Scope(user_id=user + "x", agent_id="agent-a", run_id="run-a"),
            Scope(user_id=user, agent_id="agent-b", run_id="run-a"),
            Scope(user_id=user, agent_id="agent-a", run_id="run-b"),
        ]
        self.other_ids: list[str] = []
        self.a_ids: list[str] = []


def greedy(world: World) -> Any:
    """Links to and evolves every neighbour shown, and every id of the other scopes it knows."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        step = step_of(messages)
        if step == "enrich":
            return tool_reply(
                "NoteEnrichment", {"keywords": ["alice", "fact"], "context": "A fact about Alice.", "tags": ["people"]}
            )
        if step == "evolve":
            targets = shown_ids(messages) + world.other_ids
            return tool_reply(
                "EvolutionDecision",
                {
                    "links": [
                        {"target_id": t, "type": "RELATED_TO", "reason": "greedy", "strength": 0.9} for t in targets
                    ],
                    "neighbour_updates": [
                        {
                            "note_id": t,
                            "context": f"Evolved {uuid.uuid4().hex[:6]}",
                            "tags": ["evolved"],
                            "keywords": None,
                        }
                        for t in targets
                    ],
                },
            )
        return text_reply("The answer mentions " + ", ".join(world.other_ids))

    return respond


@pytest.fixture(scope="module")
def world(settings: Settings, neo4j_driver: Any) -> Iterator[tuple[MemoryService, World, Any]]:
    user = f"rel-iso-{uuid.uuid4().hex[:8]}"
    w = World(user)
    svc = MemoryService(settings, chat_model=ScriptedChatModel(greedy(w)), embedder=ClusterEmbedder(clusters=3))
    try:
        for sc in w.others:  # enriched, linked and evolved among themselves first: they have something to lose
            for t in TEXTS:
                w.other_ids.append(svc.add(t, sc).note.id)
        w.other_ids.clear()  # (ids are told to the greedy model only after the neighbours are built)
        for sc in w.others:
            w.other_ids.extend(n.id for n in svc.list(sc, limit=100))
        for t in TEXTS:
            w.a_ids.append(svc.add(t, w.a, enrich=False).note.id)
        yield svc, w, GraphmemStore(svc, user_label=1, agent_label=2, run_label=3)
    finally:
        svc.close()
        neo4j_driver.execute_query(
            "MATCH (n) WHERE (n:Note OR n:NoteVersion OR n:StoreItem) AND n.user_id STARTS WITH $u DETACH DELETE n",
            {"u": user},
            database_=settings.neo4j_database,
        )


def snapshot(neo4j_driver: Any, settings: Settings, scopes: list[Scope]) -> list[dict[str, Any]]:
    """Everything about the given scopes' notes that an operation on A must not change."""
    rows, _, _ = neo4j_driver.execute_query(
        "UNWIND $scopes AS s MATCH (n:Note {user_id: s.user_id, agent_id: s.agent_id, run_id: s.run_id}) "
        "OPTIONAL MATCH (n)-[r]-(m) "
        "WITH n, collect([type(r), startNode(r) = n, m.id, m.user_id, m.agent_id, m.run_id]) AS rels "
        "RETURN n.id AS id, n.content AS content, n.context AS context, n.tags AS tags, n.keywords AS keywords, "
        "n.version AS version, n.enrichment AS enrichment, n.retrieval_count AS touched, "
        "n.updated_at AS updated, rels ORDER BY id",
        {"scopes": [s.params() for s in scopes]},
        database_=settings.neo4j_database,
    )
    out = []
    for r in rows:
        d = r.data()
        d["rels"] = sorted(map(str, d["rels"]))
        out.append(d)
    return out


OPS = [
    "search",
    "ask",
    "add",
    "update",
    "repair",
    "export",
    "link_other",
    "get_other",
    "delete_other",
    "history_other",
    "lg_search",
    "lg_get",
    "lg_put",
    "lg_list",
]


@hsettings(
    max_examples=EXAMPLES, deadline=None, derandomize=not FULL, suppress_health_check=list(HealthCheck), database=None
)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(OPS),
            st.sampled_from([*TEXTS, "vault code", "Alice", "x"]),
            st.sampled_from(["vector", "links", "hybrid"]),
            st.integers(1, 20),
            st.integers(0, 10**6),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_no_operation_on_a_scope_reaches_another(
    world: Any, neo4j_driver: Any, settings: Settings, ops: list[tuple[str, str, str, int, int]]
) -> None:
    svc, w, store = world
    before = snapshot(neo4j_driver, settings, w.others)
    ns_a = ("graphmem", w.a.user_id, w.a.agent_id, w.a.run_id)
    for op, text, mode, k, n in ops:
        other_id = w.other_ids[n % len(w.other_ids)]
        if op == "search":
            hits = svc.search(text, w.a, k=k, mode=mode)  # type: ignore[arg-type]
            assert all(h.note.scope == w.a for h in hits)
            assert all(v.from_id not in w.other_ids for h in hits for v in h.linked_via)
        elif op == "ask":
            res = svc.ask(text, w.a, k=k)
            assert all(h.note.scope == w.a for h in res.notes)
        elif op == "add":
            res = svc.add(f"{text} (added {n})", w.a)
            assert all(x.target_id not in w.other_ids for x in res.links)
            assert all(c.note_id not in w.other_ids for c in res.evolved)
        elif op == "update":
            res = svc.update(w.a_ids[n % len(w.a_ids)], w.a, f"{text} (updated {n})")
            assert res.note.scope == w.a
        elif op == "repair":
            svc.repair(w.a)
        elif op == "export":
            records = svc.export_notes(w.a)
            ids = {r["id"] for r in records}
            assert not ids & set(w.other_ids)
            assert all(x["target_id"] in ids for r in records for x in r["links"])
        elif op == "link_other":
            with pytest.raises(NoteNotFoundError):
                svc.link(w.a_ids[0], other_id, w.a)
        elif op == "get_other":
            with pytest.raises(NoteNotFoundError):
                svc.get(other_id, w.a)
        elif op == "delete_other":
            assert svc.delete(other_id, w.a) is False
        elif op == "history_other":
            with pytest.raises(NoteNotFoundError):
                svc.history(other_id, w.a)
        elif op == "lg_search":
            items = store.search(ns_a, query=text, limit=k)
            assert all(tuple(i.namespace) == ns_a for i in items)
            assert store.scope_of(ns_a) == w.a
        elif op == "lg_get":
            assert store.get(ns_a, other_id) is None  # a note's id is no item key: items are not notes
        elif op == "lg_put":
            store.put(ns_a, f"k{n % 5}", {"text": f"{text} {n}"})
        elif op == "lg_list":
            spaces = store.list_namespaces(prefix=("graphmem", w.a.user_id))
            assert ("graphmem", w.others[0].user_id, "agent-a", "run-a") not in spaces  # "<u>x" is not under "<u>"
    assert snapshot(neo4j_driver, settings, w.others) == before


def test_isolation_record(world: Any, neo4j_driver: Any, settings: Settings) -> None:
    """After the property runs: A's links all stay in A (and the numbers for the report)."""
    _, w, _ = world
    rows, _, _ = neo4j_driver.execute_query(
        f"MATCH (a:Note)-[r:{_LINK_TYPES}]-(b:Note) WHERE a.user_id STARTS WITH $u "
        "RETURN count(r) AS n, sum(CASE WHEN [a.user_id, a.agent_id, a.run_id] <> [b.user_id, b.agent_id, b.run_id] "
        "THEN 1 ELSE 0 END) AS crossing",
        {"u": w.a.user_id},
        database_=settings.neo4j_database,
    )
    assert rows[0]["crossing"] == 0
    record(
        "isolation",
        {
            "examples": EXAMPLES,
            "links_checked": rows[0]["n"],
            "crossing": rows[0]["crossing"],
            "table": {
                "scenario": "scope isolation (hypothesis)",
                "injected": "3 neighbour scopes with identical texts (user-id prefix, other agent, other run); greedy "
                "model linking/evolving every id it sees or knows",
                "operations": f"{EXAMPLES} sequences of 1-4 ops: search x3 modes, ask, add, update, repair, export, "
                "LangGraph search/get/put/list, calls naming other scopes' ids",
                "lost": "0 notes of other scopes returned or changed (not even retrieval counts)",
                "notes": f"{rows[0]['n'] // 2} links checked, 0 crossing a scope",
            },
        },
    )


# --- REST: keys required, bound keys confined -------------------------------------------------------

KEY = "iso-key-0123456789abcdef-xyz"
BOUND = "iso-bound-0123456789abcdef-x"


def test_rest_requires_a_key_by_default(settings: Settings) -> None:
    with pytest.raises(ConfigError):
        create_app(settings.model_copy(update={"api_keys": None, "auth_disabled": False}))
    app = scripted_app(
        settings.model_copy(update={"api_keys": SecretStr(KEY), "auth_disabled": False}), embedder=ClusterEmbedder()
    )
    routes = [
        ("GET", "/v1/notes"),
        ("POST", "/v1/notes"),
        ("GET", "/v1/notes/x1"),
        ("PUT", "/v1/notes/x1"),
        ("PATCH", "/v1/notes/x1"),
        ("DELETE", "/v1/notes/x1"),
        ("GET", "/v1/notes/x1/links"),
        ("POST", "/v1/notes/x1/links"),
        ("GET", "/v1/notes/x1/history"),
        ("POST", "/v1/search"),
        ("POST", "/v1/ask"),
    ]
    with TestClient(app) as client:
        for method, path in routes:
            for headers in (
                {},
                {"X-API-Key": "wrong-key-but-long-enough"},
                {"Authorization": "Bearer nope-nope-nope-nope"},
                {"X-API-Key": ""},
            ):
                r = client.request(method, path, headers={**headers, "X-User-Id": "someone"}, json={"content": "x"})
                assert r.status_code == 401, (method, path, headers, r.status_code)
                assert r.json()["error"]["code"] == "unauthorized"


def test_rest_bound_key_cannot_reach_another_scope(settings: Settings, neo4j_driver: Any) -> None:
    user = f"rel-rest-{uuid.uuid4().hex[:8]}"
    mine, theirs = Scope(user_id=user, agent_id="a1"), Scope(user_id=user + "-other")
    keys = f"{KEY},{BOUND}={mine.user_id}/{mine.agent_id}/{mine.run_id}"
    app = scripted_app(
        settings.model_copy(update={"api_keys": SecretStr(keys), "auth_disabled": False}), embedder=ClusterEmbedder()
    )
    try:
        with TestClient(app) as client:
            admin = {"X-API-Key": KEY}
            their_id = client.post(
                "/v1/notes",
                json={"content": "Their secret: vault code 4711 topic-2.", "user_id": theirs.user_id},
                headers=admin,
            ).json()["note"]["id"]
            b = {"X-API-Key": BOUND}
            my_id = client.post("/v1/notes", json={"content": "My note about the vault topic-2."}, headers=b).json()[
                "note"
            ]["id"]
            other_scope_forms = [
                {"headers": {"X-User-Id": theirs.user_id}},
                {"headers": {"X-Agent-Id": "default"}},
                {"headers": {"X-Run-Id": "other"}},
                {"params": {"user_id": theirs.user_id}},
                {"json_extra": {"user_id": theirs.user_id}},
                {"json_extra": {"agent_id": "a2"}},
            ]
            for form in other_scope_forms:
                for method, path, body in [
                    ("GET", "/v1/notes", None),
                    ("POST", "/v1/notes", {"content": "sneaky"}),
                    ("POST", "/v1/search", {"query": "vault code"}),
                    ("POST", "/v1/ask", {"question": "vault code?"}),
                    ("GET", f"/v1/notes/{my_id}", None),
                    ("DELETE", f"/v1/notes/{my_id}", None),
                    ("POST", f"/v1/notes/{my_id}/links", {"target_id": their_id}),
                ]:
                    if "json_extra" in form and body is None:
                        continue
                    r = client.request(
                        method,
                        path,
                        headers={**b, **form.get("headers", {})},
                        params=form.get("params"),
                        json={**body, **form.get("json_extra", {})} if body is not None else None,
                    )
                    assert r.status_code == 403, (form, method, path, r.status_code, r.text[:200])
            # their note by id, with the bound key: not found, not revealed, not changed
            for method, path, body in [
                ("GET", f"/v1/notes/{their_id}", None),
                ("GET", f"/v1/notes/{their_id}/links", None),
                ("GET", f"/v1/notes/{their_id}/history", None),
                ("PUT", f"/v1/notes/{their_id}", {"content": "pwned"}),
                ("DELETE", f"/v1/notes/{their_id}", None),
                ("POST", f"/v1/notes/{my_id}/links", {"target_id": their_id}),
            ]:
                r = client.request(method, path, headers=b, json=body)
                assert r.status_code == 404 and "4711" not in r.text, (method, path, r.status_code)
            hits = client.post("/v1/search", json={"query": "vault code 4711", "mode": "hybrid"}, headers=b).json()[
                "hits"
            ]
            assert [h["note"]["id"] for h in hits] == [my_id]
            kept = client.get(f"/v1/notes/{their_id}", headers={**admin, "X-User-Id": theirs.user_id}).json()
            assert kept["content"].startswith("Their secret") and kept["version"] == 1
    finally:
        neo4j_driver.execute_query(
            "MATCH (n) WHERE n.user_id STARTS WITH $u DETACH DELETE n", {"u": user}, database_=settings.neo4j_database
        )


# --- secrets never logged ------------------------------------------------------------------------------


def test_secrets_never_reach_logs_or_errors(
    settings: Settings, caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    """Provoke failures that carry secrets nearby; no log record, error, response or process argument
    (``ps``) contains one."""
    neo4j_pw, llm_key, api_key = (
        "neo4j-secret-PW-51f3",
        "sk-proj-SECRET-llm-key-93ab27",
        "api-SECRET-key-0123456789-xyz",
    )
    echoed_key, uri_pw = "plainkey-ECHOED-by-the-llm-4f1d2c", "uri-SECRET-pw-77aa"
    caplog.set_level(logging.DEBUG)  # everything, third-party loggers included (driver, httpx, openai)
    seen: list[str] = []
    argv = ArgvWatch(neo4j_pw, llm_key, api_key, echoed_key, uri_pw).__enter__()

    # 1. Neo4j unreachable, with a password set
    from socket import socket

    with socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bad = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{port}", "neo4j_password": SecretStr(neo4j_pw)})
    with pytest.raises(StoreUnavailableError) as err:
        MemoryService(bad, embedder=ClusterEmbedder())
    seen += [str(err.value), repr(err.value), repr(bad), str(bad), bad.model_dump_json()]

    # 2. the LLM refuses the key (401 echoing it masked, as OpenAI does) and then fails (500)
    def script(body: dict[str, Any]) -> Reply:
        auth = body["_headers"].get("authorization", "")
        if len(script.calls) % 2 == 0:  # type: ignore[attr-defined]
            script.calls.append(1)  # type: ignore[attr-defined]
            return Reply(
                status=401,
                body={
                    "error": {
                        "message": f"Incorrect API key provided: {auth[7:12]}***{auth[-4:]}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
        script.calls.append(1)  # type: ignore[attr-defined]
        return Reply(status=500, body={"error": {"message": "internal"}})

    script.calls = []  # type: ignore[attr-defined]
    with FaultyOpenAI(script) as stub:
        llm_settings = settings.model_copy(
            update={
                "llm_provider": "compatible",
                "llm_base_url": stub.base_url,
                "llm_api_key": SecretStr(llm_key),
                "llm_max_retries": 1,
                "llm_timeout": 5.0,
            }
        )
        svc = MemoryService(llm_settings, embedder=ClusterEmbedder())
        user = Scope(user_id=f"rel-sec-{uuid.uuid4().hex[:8]}")
        try:
            for i in range(2):
                res = svc.add(f"Secret handling test note {i}.", user)
                seen.append(res.model_dump_json())
            try:
                svc.ask("anything?", user)
            except LLMError as exc:
                seen += [str(exc), repr(exc)]
        finally:
            svc.aio.store._driver  # noqa: B018 - keep the service alive until here
            svc.close()
    assert stub.requests and all(r["_headers"].get("authorization") == f"Bearer {llm_key}" for r in stub.requests)

    # 3. REST: wrong keys, a right key, a malformed key list
    app = scripted_app(
        settings.model_copy(update={"api_keys": SecretStr(f"{api_key}={user.user_id}"), "auth_disabled": False}),
        embedder=ClusterEmbedder(),
    )
    with TestClient(app) as client:
        for headers in (
            {"X-API-Key": api_key + "x"},
            {"Authorization": f"Bearer {api_key[:-1]}"},
            {"X-API-Key": api_key},
        ):
            r = client.get("/v1/notes", headers=headers)
            seen.append(r.text)
    with pytest.raises(ConfigError) as cerr:
        create_app(settings.model_copy(update={"api_keys": SecretStr(f"{api_key},short"), "auth_disabled": False}))
    seen += [str(cerr.value)]
    with pytest.raises((ConfigError, InvalidInputError)) as cerr2:
        create_app(settings.model_copy(update={"api_keys": SecretStr(f"{api_key}=bad scope!"), "auth_disabled": False}))
    seen += [str(cerr2.value)]

    # 4. an LLM endpoint that echoes the whole Authorization header (401) and the key (500), over REST
    def echo(body: dict[str, Any]) -> Reply:
        auth = body["_headers"].get("authorization", "")
        echo.calls.append(1)  # type: ignore[attr-defined]
        if len(echo.calls) % 2:  # type: ignore[attr-defined]
            return Reply(status=401, body={"error": {"message": f"bad credentials in Authorization: {auth}"}})
        return Reply(status=500, body={"error": {"message": f"upstream said api_key={echoed_key} {auth}"}})

    echo.calls = []  # type: ignore[attr-defined]
    with FaultyOpenAI(echo) as stub:
        rest_llm = Settings(  # validated, as `graphmem serve` reads them: the key is registered for redaction
            neo4j_uri=settings.neo4j_uri,
            neo4j_database=settings.neo4j_database,
            neo4j_password=settings.neo4j_password,
            llm_provider="compatible",
            llm_base_url=stub.base_url,
            llm_api_key=SecretStr(echoed_key),
            llm_max_retries=0,
            auth_disabled=True,
        )
        with TestClient(create_app(rest_llm)) as client:
            h = {"X-User-Id": user.user_id}
            seen.append(client.post("/v1/notes", json={"content": "Enriched or stored raw."}, headers=h).text)
            for _ in range(2):
                r = client.post("/v1/ask", json={"question": "anything?"}, headers=h)
                assert r.status_code == 502
                seen.append(r.text)
    assert stub.requests and all(r["_headers"]["authorization"] == f"Bearer {echoed_key}" for r in stub.requests)

    # 5. a password in NEO4J_URI (`graphmem serve` refuses it without printing it)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "GRAPHMEM_"))}
    env |= {"NEO4J_URI": f"bolt://neo4j:{uri_pw}@127.0.0.1:{port}", "GRAPHMEM_AUTH_DISABLED": "true"}
    out = subprocess.run(
        [str(Path(sys.executable).parent / "graphmem"), "serve", "--port", str(port)],
        env=env | {"GRAPHMEM_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr[-1000:]
    seen.append(out.stdout + out.stderr)

    argv.__exit__(None, None, None)
    assert argv.found == [], argv.found
    logged = caplog.text + "\n".join(str(r.args) for r in caplog.records)
    everything = logged + "\n".join(seen)
    for secret in (neo4j_pw, llm_key, api_key, api_key[:-1], api_key + "x", echoed_key, uri_pw):
        assert secret not in everything, f"secret {secret[:6]}... found"
    record(
        "secrets",
        {
            "log_records": len(caplog.records),
            "responses_and_errors": len(seen),
            "argv_scans": argv.scans,
            "processes_scanned": len(argv.processes),
            "table": {
                "scenario": "secrets in logs, responses and argv",
                "injected": "unreachable Neo4j with NEO4J_PASSWORD; LLM 401 (key echoed masked) and 500 with an API key; "
                "an LLM echoing the whole Authorization header and key through REST add/ask; a password in "
                "NEO4J_URI at `graphmem serve`; REST wrong/right/malformed keys; DEBUG logging of every logger",
                "operations": f"{len(caplog.records)} log records, {len(seen)} errors/responses, "
                f"{argv.scans} scans of {len(argv.processes)} processes' argv",
                "lost": "0 secrets found",
                "notes": "NEO4J_PASSWORD, LLM keys, GRAPHMEM_API_KEYS and a URI password absent from logs, errors, "
                "reprs, responses and command lines",
            },
        },
    )
