"""Slow steps of a command, said before they run: a newcomer never looks at a silent terminal.

``Waiting(console).step("starting Neo4j", hint="...")`` announces the step, shows a spinner with the
elapsed time while it runs (on a terminal; elsewhere, a plain line before and after), lets the step
report progress lines (``step.update("[ 42%] ...")``) and closes with how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn


@dataclass
class Step:
    """One running step: ``update`` replaces its progress line; ``seconds`` once it is over."""

    what: str
    _say: Console
    _progress: Progress | None = None
    _task: TaskID | None = None
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)

    def update(self, line: str) -> None:
        self.lines.append(line)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=f"{escape(self.what)}: {escape(line[:100])}")


class Waiting:
    """Announce, time and close slow steps on ``console``."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def step(self, what: str, *, hint: str = "") -> Iterator[Step]:
        """Run the ``with`` body as the step ``what`` (``hint``: why it may take long, shown with it)."""
        label = f"{what} ({hint})" if hint else what
        step = Step(what, self.console)
        started = time.monotonic()
        if self.console.is_terminal:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            with Progress(*columns, console=self.console, transient=True) as progress:
                step._progress, step._task = progress, progress.add_task(escape(label), total=None)
                try:
                    yield step
                finally:
                    step.seconds = time.monotonic() - started
        else:  # a log or a pipe: no spinner, the line is printed before the step runs
            self.console.print(f"[dim]waiting for:[/] {escape(label)} ...")
            try:
                yield step
            finally:
                step.seconds = time.monotonic() - started
        self.console.print(f"[green]done[/] {escape(what)} [dim]in {step.seconds:.1f} s[/]")
