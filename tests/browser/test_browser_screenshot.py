"""Neo4j Browser shows graphmem's graph: the saved browse queries run, and the real Browser (headless
Chromium driven by Playwright) renders one of them with graphmem's GraSS style.

The screenshot lands in test-artifacts/browser.png (GRAPHMEM_TEST_ARTIFACTS overrides the folder).
Waits are generous and nothing is timed: a slow machine only makes the test slower.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from graphmem.models import Scope
from tests.fakes import ScriptedChatModel, amem_responder, step_of, tool_reply

ROOT = Path(__file__).resolve().parents[2]
BROWSE = ROOT / "cypher" / "browse"
CHROMIUM = os.environ.get("GRAPHMEM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
NOTES = {  # content -> keywords the scripted model gives it (the first one becomes the caption)
    "Melanie runs a pottery studio in Portland.": ["pottery studio", "Portland"],
    "Melanie's pottery studio sells bowls at the Portland market.": ["bowls", "market"],
    "Melanie teaches a weekend pottery class for beginners.": ["pottery class", "teaching"],
    "Melanie's pottery class fills up every spring.": ["spring", "class"],
    "Melanie runs a ceramics studio in Portland, Oregon.": ["ceramics", "Oregon"],
}


def responder(messages: list[BaseMessage]) -> AIMessage:
    """The well-behaved A-MEM script, with readable keywords for the screenshot."""
    reply = amem_responder()(messages)
    if step_of(messages) == "enrich":
        prompt = str(messages[-1].content)
        keywords = next(kw for text, kw in NOTES.items() if text in prompt)
        args = {**reply.tool_calls[0]["args"], "keywords": keywords}
        return tool_reply("NoteEnrichment", args)
    return reply


def browse_query(name: str) -> str:
    """A saved query as one line for the Browser editor (comment lines dropped)."""
    lines = [x for x in (BROWSE / f"{name}.cypher").read_text().splitlines() if not x.lstrip().startswith("//")]
    return " ".join(x.strip() for x in lines if x.strip())


def grass_one_line() -> str:
    return re.sub(r"\s+", " ", (BROWSE / "graphmem.grass").read_text()).strip()


@pytest.fixture
def memory(scope: Scope, settings: Any, embedder: Any) -> Iterator[dict[str, str]]:
    """A few linked, evolved notes in the test scope (A-MEM adds with a scripted model)."""
    from graphmem.service.sync import MemoryService

    texts = list(NOTES)
    with MemoryService(settings, chat_model=ScriptedChatModel(responder), embedder=embedder) as svc:
        ids = [svc.add(text, scope, event_time=f"2023-05-0{i + 1}").note.id for i, text in enumerate(texts[:4])]
        svc.update(ids[0], scope, texts[4])
    yield {"first": ids[0], "last": ids[-1]}


def test_browse_queries_run(memory: dict[str, str], scope: Scope, graph: Any) -> None:
    params = {
        **scope.params(),
        "note_id": memory["first"],
        "tag": "Personal",
        "since": "2023-05-01T00:00:00Z",
        "until": "2023-05-03T00:00:00Z",
        "name": "Melanie",
    }
    names = sorted(p.stem for p in BROWSE.glob("*.cypher"))
    assert names == [
        "conflicts",
        "demo",
        "evolution_history",
        "latest_notes",
        "most_linked",
        "neighbourhood",
        "notes_by_tag",
        "supersession_chain",
        "time_range",
        "what_changed",
    ]
    results = {}
    for name in names:
        text = (BROWSE / f"{name}.cypher").read_text()
        wanted = set(re.findall(r"\$([A-Za-z_]\w*)", re.sub(r"//[^\n]*", "", text)))
        results[name] = graph.q(text, **{k: params[k] for k in wanted})
    assert len({r["n"]["id"] for r in results["latest_notes"]}) == 4
    assert any(r["link"] is not None for r in results["latest_notes"])
    assert {r["n"]["id"] for r in results["notes_by_tag"]} == {r["n"]["id"] for r in results["latest_notes"]}
    assert len({r["n"]["id"] for r in results["time_range"]}) == 2
    assert results["most_linked"][0]["degree"] >= 2
    assert any(r["path"] is not None for r in results["neighbourhood"])
    versions = [r["version"] for r in results["evolution_history"] if r["version"] is not None]
    assert len(versions) >= 2  # evolved by a later note, then updated


@pytest.mark.browser
def test_browser_renders_a_note_graph(memory: dict[str, str], scope: Scope, settings: Any) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download needed)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    http = f"http://127.0.0.1:{settings.neo4j_http_port}"
    try:
        urllib.request.urlopen(f"{http}/browser/", timeout=10).close()
    except OSError as exc:
        pytest.fail(f"Neo4j Browser is not served at {http}/browser/: {exc}")
    out_dir = Path(os.environ.get("GRAPHMEM_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / "browser.png"
    shot.unlink(missing_ok=True)

    auth = settings.neo4j_auth  # None: the server runs without auth (graphmem's local default)
    url = f"{http}/browser/?dbms={settings.neo4j_uri}" + ("&preselectAuthMethod=NO_AUTH" if auth is None else "")
    profile = tempfile.mkdtemp(prefix="graphmem-chromium-")
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 1000},
            )
            try:
                page = browser.pages[0] if browser.pages else browser.new_page()
                page.set_default_timeout(120_000)
                page.goto(url)
                editor = page.locator("#monaco-main-editor")
                editor.wait_for()
                connect = page.locator('button[data-testid="connect"]')
                if auth is not None:  # selectors from neo4j-browser's e2e_tests/support/commands.ts
                    page.locator('input[data-testid="username"]').fill(auth[0])
                    page.locator('input[data-testid="password"]').fill(auth[1])
                    connect.first.click()
                elif connect.count() and connect.first.is_visible():
                    connect.first.click()
                page.get_by_text("You are connected as", exact=False).or_(
                    page.get_by_text("server auth is disabled", exact=False)
                ).first.wait_for()

                def run(command: str) -> None:
                    editor.click()
                    page.keyboard.press("Control+A")
                    page.keyboard.press("Delete")
                    page.keyboard.insert_text(command)
                    page.locator('[data-testid="editor-Run"]').click()

                run(":style " + grass_one_line())
                page.locator('[data-testid="frameContents"]').first.wait_for()
                params = ", ".join(f"{k}: '{v}'" for k, v in scope.params().items())
                run(":params {" + params + "}")
                run(browse_query("latest_notes"))
                nodes = page.locator('[data-testid="frameContents"] svg g.node')
                page.wait_for_function(
                    "n => document.querySelectorAll('[data-testid=\"frameContents\"] svg g.node').length >= n",
                    arg=4,
                )
                page.wait_for_timeout(4000)  # let the force layout settle before the picture
                frame = page.locator('[data-testid="frameContents"]').filter(has=page.locator("svg g.node")).first
                frame.screenshot(path=str(shot))
                rels = page.locator('[data-testid="frameContents"] svg g.relationship')
                assert nodes.count() >= 4
                assert rels.count() >= 1
                captions = " ".join(frame.locator("svg g.node text").all_text_contents())
                assert "ceramics" in captions and "bowls" in captions  # GraSS caption: the keywords
                rel_text = " ".join(rels.locator("text").all_text_contents())
                assert "SUPPORTS" in rel_text
            finally:
                browser.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert shot.is_file() and shot.stat().st_size > 10_000
