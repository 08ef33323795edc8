"""`graphmem demo`: agentic memory end to end on the embedded defaults (local Neo4j, local LLM)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from graphmem.interfaces.cli.common import console, print_json
from graphmem.interfaces.cli.waiting import Waiting

app = typer.Typer()

# What a newcomer waits for, measured on a quiet 2-core machine (issue 29; README "Quickstart").
BUILD_HINT = "once: compiles llama.cpp, about 4 min on 2 idle cores"
FETCH_HINT = "once: fetches the jars with Maven"


def first_run_steps(settings: Any) -> list[str]:
    """The one-time steps this run has to take before its first note (nothing is started here)."""
    from graphmem.errors import LocalServiceError
    from graphmem.local.llama_build import LlamaBuild
    from graphmem.local.llm_server import LocalLLM
    from graphmem.local.neo4j_server import LocalNeo4j, neo4j_answers

    steps: list[str] = []
    if not neo4j_answers(settings, timeout=1.0):
        try:
            fetched = LocalNeo4j(settings).dist.complete()
        except LocalServiceError:  # not a server graphmem manages: _ensure_neo4j says so
            fetched = True
        if not fetched:
            steps.append(f"fetch Neo4j {settings.neo4j_server_version} with Maven")
    if settings.resolved_llm_provider == "local":
        llm = LocalLLM(settings, show_progress=False)
        status = llm.status()
        if not status.running:
            if not status.model_ready:
                steps.append(f"assemble the model {llm.spec.file_name} from its packages")
            if settings.local_llm_server != "llama-cpp-python" and not LlamaBuild(settings.home).is_built():
                steps.append(f"build llama-server ({BUILD_HINT.removeprefix('once: ')})")
    return steps


def _first_run_notice(settings: Any) -> None:
    steps = first_run_steps(settings)
    if steps:
        console.print(
            Panel(
                "\n".join(f"- {s}" for s in steps)
                + "\n\nEach step shows what it waits for and the time it has taken; later runs skip them.",
                title="first run: before the first note, graphmem will",
                title_align="left",
            )
        )


def _ensure_neo4j(settings: Any, waiting: Waiting) -> str:
    """Start the managed local Neo4j unless one already answers; return the Browser URL."""
    from graphmem.local.neo4j_server import LocalNeo4j, endpoints, neo4j_answers

    ends = endpoints(settings)
    if neo4j_answers(settings):
        console.print(f"[green]Neo4j[/] answering at {settings.neo4j_uri}")
    elif ends.host in ("127.0.0.1", "localhost"):
        fetch = not LocalNeo4j(settings).dist.complete()
        what = "fetching and starting Neo4j" if fetch else "starting Neo4j"
        with waiting.step(what, hint=FETCH_HINT if fetch else "waits until Bolt answers") as step:
            result = LocalNeo4j(settings, report=step.update).start()
        how = "already running" if result.already_running else f"started in {result.seconds:.1f} s"
        console.print(f"[green]Neo4j[/] {result.status.version or ''} {how}: {ends.bolt_uri}")
    return ends.browser_url


def background_build(settings: Any) -> Any:
    """The llama-server build ``scripts/install.sh --build-in-background`` is running for this home,
    or None (built already, not started, another provider or server)."""
    from graphmem.local.llama_build import LlamaBuild

    if settings.resolved_llm_provider != "local" or settings.local_llm_server == "llama-cpp-python":
        return None
    build = LlamaBuild(settings.home)
    return None if build.is_built() else build.background()


async def raw_first(settings: Any, scope: Any, minutes_building: float) -> dict[str, Any]:
    """While llama-server compiles on a new machine, the demo's turns stored as they are (embedded,
    full-text indexed, each FOLLOWS the one before; no LLM call) and its questions answered by search
    alone: the memory works in the first minutes, and the A-MEM run after it shows what the model adds."""
    from graphmem.demo.sample import CONVERSATION, QUESTIONS, as_note_text
    from graphmem.service import AsyncMemoryService

    console.print(
        Panel(
            f"llama-server has been compiling for {minutes_building:.0f} min ({BUILD_HINT.removeprefix('once: ')}). "
            "Meanwhile, the memory without the model: each turn stored as it is (embedded, full-text indexed, "
            "linked to the turn before it) and each question answered by search alone. The A-MEM run follows "
            "when the model is ready.",
            title="while the model builds",
            title_align="left",
        )
    )
    started = time.perf_counter()
    first_note_at = 0.0
    service = await AsyncMemoryService.create(settings)  # no model: raw adds and search call none
    async with service as svc:
        previous: tuple[int, str] | None = None
        for i, turn in enumerate(CONVERSATION, 1):
            text = as_note_text(turn)
            after = previous[1] if previous and previous[0] == turn.session else None
            result = await svc.add(
                text, scope, event_time=turn.date, source_id=f"S{turn.session}:{i}", follows=after, enrich=False
            )
            previous = (turn.session, result.note.id)
            first_note_at = first_note_at or time.perf_counter() - started
            console.print(f"[bold cyan]{i:2d}[/] [dim]{turn.date}[/] {text}  [dim](stored raw)[/]")
        found: dict[str, list[str]] = {}
        for q in QUESTIONS:
            hits = await svc.search(q, scope, k=3)
            found[q] = [h.note.content for h in hits]
            table = Table(box=None, show_header=False)
            for h in hits:
                table.add_row(f"[dim]{','.join(h.found_by)}[/]", h.note.content[:90])
            console.print(Panel(table, title=f"search: {q}", title_align="left"))
    return {"scope": str(scope), "notes": len(CONVERSATION), "first_note_seconds": first_note_at, "found": found}


def _wait_for_build(build: Any, waiting: Waiting) -> None:
    """Wait for the background build to finish (or stop), showing the compiler's progress line."""
    with waiting.step("llama-server compiling", hint=f"log {build.log_file}") as step:
        while build.running():
            line = build.last_line()
            if line:
                step.update(line)
            time.sleep(2.0)


def _assemble_model(llm: Any, waiting: Waiting) -> None:
    """Join the model's weights from their packages once (seconds), saying so."""
    if not llm.model_ready():
        with waiting.step(f"assembling the model {llm.spec.file_name}", hint="once: joined from its packages"):
            llm.ensure_model()


def _start_local_model(settings: Any, waiting: Waiting) -> Any:
    """The local chat model, its server started or reused; each slow step said before it runs
    (assembling the weights, building llama-server once, loading the model)."""
    from graphmem.llm import make_chat_model
    from graphmem.local.llama_build import LlamaBuild
    from graphmem.local.llm_server import LocalLLM

    llm = LocalLLM(settings, show_progress=False)
    status = llm.status()
    if status.running:
        result = llm.start(allow_build=False)
    else:
        _assemble_model(llm, waiting)
        build = settings.local_llm_server != "llama-cpp-python" and not LlamaBuild(settings.home).is_built()
        what = "building llama-server, then starting the LLM server" if build else "starting the LLM server"
        with waiting.step(what, hint=BUILD_HINT if build else f"loads {llm.model_name}") as step:
            result = llm.start(progress=step.update, allow_build=True)
    if result.note:
        console.print(f"[yellow]{result.note}[/]")
    how = "reused" if result.reused else f"started in {result.seconds:.1f} s"
    console.print(f"[green]LLM[/] {llm.model_name} ({result.server}, {how}) at port {settings.local_llm_port}")
    return make_chat_model(settings, base_url=result.base_url, model=llm.model_name, local_server=llm.server)


@app.command()
def demo(
    model: Annotated[str, typer.Option(help="local model: 1.5b (default) or 0.5b")] = "1.5b",
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON summary at the end")] = False,
) -> None:
    """Ingest a sample conversation, show notes, typed links, evolution and answers with their cost."""
    from graphmem.config import get_settings

    settings = get_settings()
    if model not in ("1.5b", "0.5b"):
        raise typer.BadParameter("--model must be 1.5b or 0.5b")
    settings = settings.model_copy(update={"local_model": f"qwen2.5-coder-{model}"})
    waiting = Waiting(console)
    _first_run_notice(settings)
    browser_url = _ensure_neo4j(settings, waiting)
    run_id = "run-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    preview: dict[str, Any] | None = None
    building = background_build(settings)
    if building is not None:  # a new machine's first run: show the memory while llama-server compiles
        from graphmem.models import Scope

        raw_scope = Scope(user_id="demo", agent_id="demo", run_id=f"{run_id}-raw")
        preview = asyncio.run(raw_first(settings, raw_scope, (time.time() - building.started) / 60))
        from graphmem.local.llm_server import LocalLLM

        _assemble_model(LocalLLM(settings, show_progress=False), waiting)  # meanwhile, not after the build
        _wait_for_build(building, waiting)
    if settings.resolved_llm_provider == "local":
        chat_model = _start_local_model(settings, waiting)
    else:
        chat_model = None
        console.print(f"[green]LLM[/] {settings.resolved_llm_provider}: {settings.llm_model}")
    summary = asyncio.run(_run(settings, browser_url, chat_model, waiting, run_id))
    if preview is not None:
        summary["while_building"] = preview
    if as_json:
        print_json(summary)


async def _run(settings: Any, browser_url: str, chat_model: Any, waiting: Waiting, run_id: str) -> dict[str, Any]:
    from graphmem.demo.sample import BROWSER_QUERY, CONVERSATION, QUESTIONS, as_note_text
    from graphmem.models import FOLLOWS_REASON, LinkType, Scope, Usage
    from graphmem.service import AsyncMemoryService

    scope = Scope(user_id="demo", agent_id="demo", run_id=run_id)
    total = Usage()
    ingest = Usage()
    notes: dict[str, str] = {}
    links_out: list[dict[str, Any]] = []
    evolved_out: list[dict[str, Any]] = []
    per_note: list[float] = []
    with waiting.step(f"loading the embedder ({settings.embedder}) and the Neo4j schema"):
        service = await AsyncMemoryService.create(settings, chat_model=chat_model)
    async with service as svc:
        console.rule(f"[bold]Ingesting {len(CONVERSATION)} turns into scope {scope}")
        previous: tuple[int, str] | None = None  # (session, note id): each turn FOLLOWS the one before it
        for i, turn in enumerate(CONVERSATION, 1):
            text = as_note_text(turn)
            started = time.perf_counter()
            after = previous[1] if previous and previous[0] == turn.session else None
            with console.status(f"note {i}/{len(CONVERSATION)}: construct, link, evolve ..."):
                result = await svc.add(
                    text, scope, event_time=turn.date, source_id=f"S{turn.session}:{i}", follows=after
                )
            previous = (turn.session, result.note.id)
            per_note.append(time.perf_counter() - started)
            total.add(result.usage)
            ingest.add(result.usage)
            n = result.note
            notes[n.id] = text
            console.print(f"[bold cyan]{i:2d}[/] [dim]{turn.date}[/] {text}")
            console.print(f"    keywords: {', '.join(n.keywords) or '-'}")
            console.print(f"    tags:     {', '.join(n.tags) or '-'}")
            console.print(f"    context:  {n.context or '-'}  [dim]({n.enrichment.value})[/]")
            for link in result.links:
                target = notes.get(link.target_id, link.target_id)
                console.print(f"    [green]-[{link.type.value}]->[/] {target[:70]}  [dim]because {link.reason}[/]")
                links_out.append({"from": text, "to": target, "type": link.type.value, "reason": link.reason})
            for change in result.evolved:
                evolved_out.append(
                    {"note": notes.get(change.note_id, change.note_id), **change.model_dump(mode="json")}
                )
                console.print(f"    [magenta]evolved[/] {notes.get(change.note_id, change.note_id)[:70]}")
                console.print(f"      {change.summary()}")
            for why in result.rejected:
                console.print(f"    [yellow]rejected proposal:[/] {why}")
            console.print(
                f"    [dim]{result.usage.llm_calls} LLM calls, {result.usage.total_tokens} tokens, {per_note[-1]:.1f} s[/]"
            )

        console.rule("[bold]Questions that need several sessions")
        answers = []
        for q in QUESTIONS:
            with console.status(f"asking: {q}"):
                res = await svc.ask(q, scope)
            total.add(res.usage)
            console.print(Panel(res.answer, title=q, title_align="left"))
            table = Table("how found", "note", box=None, show_header=False)
            for h in res.notes:
                how = ",".join(h.found_by)
                if h.linked_via:
                    how += f" via {h.linked_via[0].type.value}"
                table.add_row(f"[dim]{how}[/]", h.note.content[:90])
            console.print(table)
            console.print(
                f"[dim]context {res.context_tokens} tokens; LLM {res.usage.input_tokens} in / "
                f"{res.usage.output_tokens} out; {res.usage.total_seconds:.1f} s[/]"
            )
            answers.append(
                {
                    "question": q,
                    "answer": res.answer,
                    "notes": [h.note.content for h in res.notes],
                    "context_tokens": res.context_tokens,
                    "input_tokens": res.usage.input_tokens,
                    "output_tokens": res.usage.output_tokens,
                }
            )

    calls_per_note = ingest.llm_calls / len(CONVERSATION)
    llm_links = sum(1 for x in links_out if x["type"] != LinkType.FOLLOWS or x["reason"] != FOLLOWS_REASON)
    console.rule("[bold]Summary")
    ordered = sorted(per_note)
    console.print(
        f"{len(CONVERSATION)} notes, {llm_links} typed links chosen by the LLM (+{len(links_out) - llm_links} FOLLOWS "
        f"between consecutive turns), {len(evolved_out)} neighbour evolutions; "
        f"{ingest.llm_calls} LLM calls to ingest ({calls_per_note:.1f} per note), {total.repairs} of all calls "
        f"needed repair; median {ordered[len(ordered) // 2]:.1f} s per note"
    )
    console.print(f"\nOpen Neo4j Browser: [link]{browser_url}[/link]\nthen paste:")
    console.print(f":param user_id => 'demo'\n:param run_id => '{run_id}'", markup=False)
    console.print(BROWSER_QUERY, markup=False)
    return {
        "scope": str(scope),
        "notes": len(CONVERSATION),
        "links": links_out,
        "llm_links": llm_links,
        "evolved": evolved_out,
        "answers": answers,
        "llm_calls": total.llm_calls,
        "llm_calls_per_note": round(calls_per_note, 2),
        "repairs": total.repairs,
        "median_seconds_per_note": ordered[len(ordered) // 2],
        "browser_url": browser_url,
    }
