"""Version commands: history (with --diff), rollback, undo (of everything one add caused)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from graphmem.interfaces.cli.common import AgentOpt, JsonOpt, RunOpt, UserOpt, console, make_scope, print_json
from graphmem.interfaces.cli.notes import run_service
from graphmem.models import LIMITS, FieldDiff, RollbackResult, UndoResult, VersionDiff, describe_change

app = typer.Typer()

_STYLE = {"equal": "", "delete": "red strike", "insert": "bold green"}
# Without colours (a pipe, NO_COLOR) the changes are marked the way `git diff --word-diff` marks them.
_MARK = {"equal": ("", ""), "delete": ("[-", "-]"), "insert": ("{+", "+}")}
_KEEP = 40  # characters shown at each end of a long unchanged run


def _put(out: Text, op: str, text: str) -> None:
    start, end = _MARK[op] if console.no_color or console.color_system is None else ("", "")
    out.append(f"{start}{text}{end}", style=_STYLE[op])


def _short(text: str, keep: int = _KEEP) -> str:
    return text if len(text) <= 2 * keep + 3 else f"{text[:keep]} … {text[-keep:]}"


def field_text(change: FieldDiff) -> Text:
    """One field's change as styled text (user text is never parsed as markup)."""
    out = Text()
    if isinstance(change.before, str):  # content, context: the word diff
        for op in change.ops:
            _put(out, op.op, _short(op.text) if op.op == "equal" else op.text)
        return out
    for item in change.added:
        _put(out, "insert", item)
        out.append(" ")
    for item in change.removed:
        _put(out, "delete", item)
        out.append(" ")
    if not change.added and not change.removed:
        out.append(f"reordered: {', '.join(change.after)}")
    return out


def print_diff(diff: VersionDiff) -> None:
    when = diff.changed_at.strftime("%Y-%m-%d %H:%M:%S") if diff.changed_at else "-"
    head = Text(f"v{diff.from_version} → v{diff.to_version}  ", style="bold")
    head.append(describe_change(diff.changed_by), style="magenta")
    head.append(f"  {when}", style="dim")
    console.print(head)
    if not diff.fields:
        console.print("  [dim](no change of content, context, tags or keywords)[/]")
    for change in diff.fields:
        line = Text(f"  {change.field:<9}")
        line.append_text(field_text(change))
        console.print(line)


@app.command()
def history(
    note_id: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    diff: Annotated[bool, typer.Option("--diff", help="what changed at each step, word by word")] = False,
    limit: Annotated[
        int, typer.Option(help="versions (or steps, with --diff) per page", min=1, max=LIMITS.history_page_max)
    ] = LIMITS.history_page_max,
    offset: Annotated[int, typer.Option(help="skip this many, oldest first", min=0)] = 0,
    as_json: JsonOpt = False,
) -> None:
    """A note's earlier versions, oldest first; with --diff, the change at each step and its cause."""
    scope = make_scope(user, agent, run)
    if diff:
        steps: list[VersionDiff] = run_service(lambda svc: svc.history_diff(note_id, scope, limit=limit, offset=offset))
        if as_json:
            print_json({"note_id": note_id, "diffs": [d.model_dump(mode="json") for d in steps]})
            return
        if not steps:
            console.print(f"[dim]no changes of {note_id} on this page[/]")
        for step in steps:
            print_diff(step)
        return

    async def work(svc: Any) -> Any:
        return await svc.get(note_id, scope), await svc.history(note_id, scope, limit=limit, offset=offset)

    note, versions = run_service(work)
    if as_json:
        print_json(
            {"note_id": note_id, "version": note.version, "versions": [v.model_dump(mode="json") for v in versions]}
        )
        return
    table = Table("version", "replaced", "by", "content", "context", "tags")
    for v in versions:
        table.add_row(
            f"v{v.version}",
            v.replaced_at.strftime("%Y-%m-%d %H:%M"),
            describe_change(v.changed_by),
            _short(v.content, 30),
            _short(v.context, 30),
            ", ".join(v.tags[:4]),
        )
    table.add_row(
        f"v{note.version} (now)", "", "", _short(note.content, 30), _short(note.context, 30), ", ".join(note.tags[:4])
    )
    console.print(table)


@app.command()
def rollback(
    note_id: str,
    version: Annotated[int, typer.Argument(help="the earlier version whose values come back", min=1)],
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Roll a note back to an earlier version, re-embedded, as a new version (nothing is lost)."""
    scope = make_scope(user, agent, run)
    result: RollbackResult = run_service(lambda svc: svc.rollback(note_id, scope, version))
    if as_json:
        print_json({**result.model_dump(mode="json", exclude={"note"}), "note": result.note.public()})
        return
    console.print(
        f"[bold green]rolled back[/] {note_id} to the values of v{result.restored_version}: now v{result.note.version}"
    )
    print_diff(result.diff)


def print_undo(result: UndoResult) -> None:
    would = "would " if result.dry_run else ""
    console.print(
        Text(
            f"undo of the add of {result.note_id}" + (" (dry run: nothing written)" if result.dry_run else ""),
            style="bold",
        )
    )
    if not result.links_removed:
        console.print(f"  [dim]no link of its add {would}to remove[/]")
    for link in result.links_removed:
        line = Text(f"  {would}remove link ")
        line.append(f"{link.source_id} -[{link.type.value}]-> {link.target_id}", style="cyan")
        line.append(f"  {link.reason}", style="dim")
        console.print(line)
    for n in result.neighbours:
        if n.status == "reverted":
            now = f" as v{n.new_version}" if n.new_version is not None else ""
            line = Text(f"  {would}revert ", style="green")
            line.append(f"{n.note_id}: v{n.current_version} back to the values of v{n.restored_version}{now}")
        elif n.status == "already_undone":
            line = Text(f"  unchanged {n.note_id}: ", style="dim")
            line.append(n.reason, style="dim")
        else:
            line = Text("  refused ", style="bold yellow")
            line.append(f"{n.note_id}: {n.reason}")
        console.print(line)
    if result.note_deleted:
        extra = (
            f", with {result.links_removed_with_note} links of other notes" if result.links_removed_with_note else ""
        )
        console.print(f"  [bold red]{would}delete[/] the note {result.note_id}{extra}")


@app.command()
def undo(
    note_id: str,
    user: UserOpt = "default",
    agent: AgentOpt = "default",
    run: RunOpt = "default",
    delete_note: Annotated[bool, typer.Option("--delete-note", help="delete the note itself too")] = False,
    keep_follows: Annotated[
        bool, typer.Option("--keep-follows", help="keep its FOLLOWS link (its place in the conversation)")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="say what would be undone; write nothing")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Undo everything one add caused: the links it made and its evolutions of other notes (each
    reverted only if nothing changed that note since; otherwise refused and said why)."""
    scope = make_scope(user, agent, run)
    result: UndoResult = run_service(
        lambda svc: svc.undo_add(note_id, scope, delete_note=delete_note, keep_follows=keep_follows, dry_run=dry_run)
    )
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        print_undo(result)
