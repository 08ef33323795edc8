"""Note commands: add, search, ask, show, list, delete, link, repair, import, export."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from graphmem.config import Settings
from graphmem.interfaces.cli.common import (
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    console,
    console_err,
    make_scope,
    print_json,
    progress_bar,
)
from graphmem.models import (
    LIMITS,
    AddResult,
    IngestItem,
    IngestReport,
    IngestStatus,
    LinkType,
    NoteInput,
    Scope,
    SearchHit,
    SearchMode,
    check_bound,
)

T = TypeVar("T")

app = typer.Typer()


def run_service(work: Callable[[Any], Awaitable[T]], *, llm: bool | Callable[[Settings], bool] = False) -> T:
    """Open the service from settings, run one coroutine with it, close it. ``llm``: the command
    calls the LLM (given the settings), so the local model is started (or reused) first, in a
    worker thread."""
    from graphmem.config import get_settings
    from graphmem.local import chat_model
    from graphmem.service import AsyncMemoryService

    async def main() -> T:
        settings = get_settings()
        needs_llm = llm(settings) if callable(llm) else llm
        model = await asyncio.to_thread(chat_model, settings) if needs_llm else None
        async with await AsyncMemoryService.create(settings, chat_model=model) as svc:
            return await work(svc)

    return asyncio.run(main())


def _hit_json(hit: SearchHit) -> dict[str, Any]:
    return {**hit.model_dump(mode="json", exclude={"note"}), "note": hit.note.public()}


HistoryOpt = Annotated[bool, typer.Option("--history", help="every note, superseded ones marked")]
AsOfOpt = Annotated[str | None, typer.Option("--as-of", help="the state at this ISO date or datetime")]


def _when_line(hit: SearchHit) -> str:
    """Where a hit stands in time, in a few words (empty for a current note with no history)."""
    from graphmem.service.updates import mark_of

    return mark_of(hit.timeline) or ""


def _print_add(result: AddResult) -> None:
    n = result.note
    console.print(f"[bold green]{'added' if result.created else 'already stored'}[/] {n.id}")
    console.print(f"  keywords: {', '.join(n.keywords) or '-'}\n  tags:     {', '.join(n.tags) or '-'}")
    console.print(f"  context:  {n.context or '-'}  [dim]({n.enrichment.value})[/]")
    for link in result.links:
        console.print(f"  [cyan]-[{link.type.value}]->[/] {link.target_id}  [dim]{link.reason}[/]")
    for change in result.evolved:
        console.print(f"  [magenta]evolved[/] {change.note_id}: {change.summary()}")
    for s in result.superseded:
        console.print(f"  [blue]supersedes[/] {s.older_id}  [dim]{s.reason} (p {s.p_yes})[/]")
    for c in result.conflicts:
        console.print(f"  [red]conflicts with[/] {c.other_id}  [dim]same time (p {c.p_yes})[/]")
    for ko in result.knock_on:
        if ko.outdated:
            console.print(f"  [yellow]may be out of date[/] {ko.note_id} (linked to {ko.superseded_id}, p {ko.p_yes})")
    for why in result.rejected:
        console.print(f"  [yellow]rejected[/] {why}")
    u = result.usage
    console.print(f"  [dim]{u.llm_calls} LLM calls, {u.total_tokens} tokens, {u.total_seconds:.2f} s[/]")


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="the memory text; '-' reads standard input")],
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    note_id: Annotated[str | None, typer.Option("--id", help="client-given id (idempotent)")] = None,
    event_time: Annotated[str | None, typer.Option("--time", help="when it happened (ISO or free text)")] = None,
    dedupe: Annotated[bool, typer.Option(help="reuse a note with the same content")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="no LLM calls: store and embed only")] = False,
    follows: Annotated[
        str | None, typer.Option("--follows", help="id of the previous conversation turn (FOLLOWS link)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a memory: construct the note, link it, evolve its neighbours."""
    scope = make_scope(user, agent, run)
    text = sys.stdin.read() if content == "-" else content
    result = run_service(
        lambda svc: svc.add(
            text,
            scope,
            note_id=note_id,
            event_time=event_time,
            dedupe_content=dedupe,
            enrich=False if raw else None,
            follows=follows,
        ),
        llm=lambda s: not raw and s.enable_enrichment,
    )
    if as_json:
        print_json({**result.model_dump(mode="json", exclude={"note"}), "note": result.note.public()})
    else:
        _print_add(result)


@app.command()
def search(
    query: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    k: Annotated[int | None, typer.Option("-k", help="number of primary hits (default GRAPHMEM_SEARCH_K)")] = None,
    mode: Annotated[SearchMode | None, typer.Option(help="search mode (default GRAPHMEM_SEARCH_MODE)")] = None,
    history: HistoryOpt = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the scope's notes; linked notes are expanded one hop. A superseded note gives its place
    to its current note (``--history``: every note, marked; ``--as-of``: the state at a date)."""
    scope = make_scope(user, agent, run)
    hits = run_service(lambda svc: svc.search(query, scope, k=k, mode=mode, history=history, as_of=as_of))
    if as_json:
        print_json([_hit_json(h) for h in hits])
        return
    table = Table("score", "found by", "id", "content", "context")
    for h in hits:
        how = ",".join(h.found_by)
        if h.linked_via:
            how += f" ({h.linked_via[0].type.value} from {h.linked_via[0].from_id[:8]})"
        table.add_row(f"{h.score:.3f}", how, h.note.id[:12], h.note.content[:80], _when_line(h) or h.note.context[:60])
    console.print(table)


@app.command()
def ask(
    question: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    k: Annotated[
        int | None, typer.Option("-k", help="hits the context is packed from (default GRAPHMEM_ANSWER_K)")
    ] = None,
    budget: Annotated[int | None, typer.Option(help="context token budget")] = None,
    history: HistoryOpt = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the scope's memory (current facts by default; see ``search``)."""
    scope = make_scope(user, agent, run)
    # checked before the local model starts (the service checks them again)
    if k is not None:
        check_bound(k, 1, LIMITS.k_max, "k")
    if budget is not None:
        check_bound(budget, LIMITS.token_budget_min, LIMITS.token_budget_max, "token budget")
    result = run_service(
        lambda svc: svc.ask(question, scope, k=k, token_budget=budget, history=history, as_of=as_of), llm=True
    )
    if as_json:
        print_json({**result.model_dump(mode="json", exclude={"notes"}), "notes": [_hit_json(h) for h in result.notes]})
        return
    console.print(f"[bold]{result.answer}[/]")
    for h in result.notes:
        console.print(f"  [dim]{','.join(h.found_by)}[/] {h.note.content[:100]}")
    u = result.usage
    console.print(f"[dim]context {result.context_tokens} tokens; LLM {u.input_tokens} in / {u.output_tokens} out[/]")


@app.command()
def show(
    note_id: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    links_limit: Annotated[int, typer.Option("--links", help="links to show at most")] = 100,
    versions_limit: Annotated[int, typer.Option("--versions", help="versions to show at most")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Show a note with its links and evolution history (the first pages of both)."""
    scope = make_scope(user, agent, run)

    async def work(svc: Any) -> Any:
        return (
            await svc.get(note_id, scope),
            await svc.links(note_id, scope, limit=links_limit),
            await svc.history(note_id, scope, limit=versions_limit),
        )

    note, links, history = run_service(work)
    if as_json:
        print_json(
            {
                "note": note.public(),
                "links": [link.model_dump(mode="json") for link in links],
                "history": [h.model_dump(mode="json") for h in history],
            }
        )
        return
    console.print(f"[bold]{note.id}[/] v{note.version} [dim]{note.scope}[/]\n{note.content}")
    console.print(f"context: {note.context}\nkeywords: {', '.join(note.keywords)}\ntags: {', '.join(note.tags)}")
    for link in links:
        console.print(f"  {link.source_id[:12]} -[{link.type.value}]-> {link.target_id[:12]}  [dim]{link.reason}[/]")
    for h in history:
        console.print(f"  [dim]v{h.version} ({h.changed_by}): {h.context}[/]")


@app.command("list")
def list_notes(
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    limit: int = 50,
    offset: int = 0,
    as_json: JsonOpt = False,
) -> None:
    """List the scope's notes, newest first."""
    scope = make_scope(user, agent, run)
    notes = run_service(lambda svc: svc.list(scope, limit=limit, offset=offset))
    if as_json:
        print_json([n.public() for n in notes])
        return
    table = Table("id", "created", "content", "tags")
    for n in notes:
        table.add_row(n.id[:12], n.created_at.strftime("%Y-%m-%d %H:%M"), n.content[:80], ", ".join(n.tags[:4]))
    console.print(table)


@app.command()
def delete(
    note_id: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Delete a note with its versions and links (nothing dangles)."""
    scope = make_scope(user, agent, run)
    deleted = run_service(lambda svc: svc.delete(note_id, scope))
    if as_json:
        print_json({"deleted": deleted, "id": note_id})
    elif deleted:
        console.print(f"deleted {note_id}")
    else:
        console.print(f"[yellow]no note {note_id} in scope {scope}[/]")
        raise typer.Exit(1)


@app.command()
def link(
    source_id: str,
    target_id: str,
    link_type: Annotated[LinkType, typer.Option("--type", help="the link's type")] = LinkType.RELATED_TO,
    reason: str = "",
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Link two notes of the scope by hand."""
    scope = make_scope(user, agent, run)
    made = run_service(lambda svc: svc.link(source_id, target_id, scope, link_type, reason))
    if as_json:
        print_json(made.model_dump(mode="json"))
    else:
        console.print(f"{made.source_id} -[{made.type.value}]-> {made.target_id}")


@app.command()
def repair(
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    limit: int = 100,
    as_json: JsonOpt = False,
) -> None:
    """Re-run note construction for notes stored raw after an LLM failure."""
    scope = make_scope(user, agent, run)
    check_bound(limit, 1, LIMITS.repair_max, "repair limit")  # before the local model starts
    n = run_service(lambda svc: svc.repair(scope, limit=limit), llm=True)
    print_json({"repaired": n}) if as_json else console.print(f"repaired {n} notes")


@app.command()
def consolidate(
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    apply: Annotated[bool, typer.Option("--apply", help="write the proposed notes (default: a dry run)")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Consolidation that only adds: one synthesis note per supersession chain (its dated history in
    the notes' own words, DERIVED_FROM every source). A dry run unless --apply; sources never change;
    `graphmem undo SYNTHESIS --delete-note` removes one."""
    scope = make_scope(user, agent, run)
    result = run_service(lambda svc: svc.consolidate(scope, dry_run=not apply))
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    head = "proposed (dry run; --apply writes them)" if result.dry_run else "consolidated"
    console.print(f"[bold]{head}[/]: {len(result.syntheses)} supersession chains")
    for p in result.syntheses:
        extra = f", supersedes {p.replaces}" if p.replaces else ""
        console.print(f"  [{p.status}] {p.note_id}{extra}\n    {p.content[:300]}")
        console.print(f"    [dim]DERIVED_FROM {', '.join(p.sources)}[/]")


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="JSONL file to write ('-' for stdout)")],
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
) -> None:
    """Export the scope's notes (with embeddings and links) as JSONL; `import` restores them exactly."""
    scope = make_scope(user, agent, run)
    records = run_service(lambda svc: svc.export_notes(scope))
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if str(out) == "-":
        sys.stdout.write(lines)
    else:
        out.write_text(lines, encoding="utf-8")
        console.print(f"exported {len(records)} notes to {out}")


def _jsonl_records(path: Path) -> list[Any]:
    from graphmem.errors import InvalidInputError

    records = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{i}: not JSON ({exc.msg})") from None
    return records


def note_inputs(records: list[Any], path: Path) -> list[NoteInput]:
    """JSONL lines as notes to add: ``content`` plus optional ``note_id`` (or an export's ``id``),
    ``event_time`` (or ``event_time_text``), ``category``, ``source_id``, ``metadata``, ``follows``.
    Other fields (an export's enrichment, links, embedding) are not used: the LLM writes them anew."""
    from pydantic import ValidationError

    from graphmem.errors import InvalidInputError

    items = []
    for i, rec in enumerate(records, 1):
        if not isinstance(rec, dict) or "content" not in rec:
            raise InvalidInputError(f"{path}:{i}: a JSON object with a 'content' field is needed")
        fields = {
            "content": rec["content"],
            "note_id": rec.get("note_id", rec.get("id")),
            "event_time": rec.get("event_time_text") or rec.get("event_time"),
            "category": rec.get("category"),
            "source_id": rec.get("source_id"),
            "metadata": rec.get("metadata") or {},
            "follows": rec.get("follows"),
        }
        try:
            items.append(NoteInput.model_validate(fields))
        except ValidationError as exc:
            raise InvalidInputError(f"{path}:{i}: {exc.errors()[0]['msg']}") from None
    return items


def _run_ingest(items: list[NoteInput], scope: Scope, concurrency: int | None, as_json: bool) -> IngestReport:
    """The agentic ingest with a progress bar (rate, ETA) and each failed item printed as it fails."""

    out = console_err if as_json else console  # --json: standard output holds the JSON only

    def work(svc: Any) -> Awaitable[IngestReport]:
        n = concurrency or svc.settings.resolved_ingest_concurrency
        out.print(f"[dim]agentic import of {len(items)} notes into {scope}, {n} in flight[/]")

        def seen(item: IngestItem) -> None:
            if item.status in (IngestStatus.ADDED, IngestStatus.EXISTING):
                bar.update(task, advance=1)
            else:
                failed.append(item)
                bar.update(task, advance=1, description=f"importing [red]({len(failed)} failed)[/]")
                bar.console.print(f"[yellow]item {item.index} {item.status.value}:[/] {item.error}")

        def judged(done: int, total: int) -> None:
            # the supersession pass after the last item: a bar of its own, so "done" above means done
            if "judged" not in tasks:
                tasks["judged"] = bar.add_task("checking for changed facts", total=total)
            bar.update(tasks["judged"], completed=done)

        return cast("Awaitable[IngestReport]", svc.ingest(items, scope, concurrency=n, on_item=seen, on_judged=judged))

    failed: list[IngestItem] = []
    tasks: dict[str, Any] = {}
    with progress_bar(to=out) as bar:
        task = bar.add_task("importing", total=len(items))
        return run_service(work, llm=lambda s: s.enable_enrichment)


@app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL (a graphmem export, or one note per line), or LoCoMo JSON")],
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    fmt: Annotated[str, typer.Option("--format", help="jsonl | locomo")] = "jsonl",
    agentic: Annotated[
        bool,
        typer.Option(
            "--agentic",
            help="add every note the A-MEM way (LLM enrichment, links, evolution), several at once, "
            "in order; resumable: a rerun skips what is stored",
        ),
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency", "-j", min=1, max=1024, help="notes in flight (default GRAPHMEM_INGEST_CONCURRENCY)"
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import notes: graphmem JSONL (exact round trip) or LoCoMo conversations (one note per turn, raw);
    with --agentic, each note is enriched, linked and evolves its neighbours (exit code 1 when an item
    failed: rerun to retry it)."""
    from graphmem.errors import InvalidInputError

    scope = make_scope(user, agent, run)
    if not path.is_file():
        raise InvalidInputError(f"no such file: {path}")
    if fmt not in ("jsonl", "locomo"):
        raise InvalidInputError("--format must be jsonl or locomo")
    if agentic:
        if fmt == "jsonl":
            items = note_inputs(_jsonl_records(path), path)
        else:
            from graphmem.evaluation.locomo import load_locomo, scope_tag, turn_inputs

            items = [item for conv in load_locomo(path) for item in turn_inputs(conv, tag=scope_tag(scope))]
        report = _run_ingest(items, scope, concurrency, as_json)
        summary = report.summary()
        if as_json:
            print_json(
                {
                    **summary,
                    "failed_items": [x.model_dump(mode="json") for x in report.failed],
                    "warnings": report.warnings,
                }
            )
        else:
            for warning in report.warnings:
                console.print(f"[yellow]warning:[/] {warning}")
            console.print(
                f"added {summary['added']}, already stored {summary['existing']}, failed {summary['failed']}, "
                f"skipped {summary['skipped']} ({summary['pending']} stored raw for `graphmem repair`); "
                f"{summary['links']} links, {summary['evolved']} evolutions; {summary['notes_per_s']} notes/s"
            )
        if report.failed:
            raise typer.Exit(1)
        return
    if fmt == "jsonl":
        records = _jsonl_records(path)
        n = run_service(lambda svc: svc.import_notes(records, scope))
    elif fmt == "locomo":
        from graphmem.evaluation.locomo import load_locomo, scope_tag, turn_inputs

        conversations = load_locomo(path)
        # ids derive from the scope: the same file imports into two scopes, and twice into one idempotently
        items = [item for conv in conversations for item in turn_inputs(conv, tag=scope_tag(scope))]
        with Progress(
            TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console
        ) as bar:
            task = bar.add_task("import", total=len(items))
            ids = run_service(
                lambda svc: svc.add_many(
                    items, scope, batch_size=256, progress=lambda d, t: bar.update(task, completed=d)
                )
            )
        n = len(ids)
    print_json({"imported": n}) if as_json else console.print(f"imported {n} notes into {scope}")
