"""Progress of the long commands on stderr (rich), and the `-q/--quiet` option that silences it.

stdout stays the command's result (text or JSON a script reads); the progress line is drawn on
stderr only when it is a terminal, and erased when the work ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

quiet_option = click.option("--quiet", "-q", is_flag=True,
                            help="No progress on stderr (results and errors are still printed).")


class Steps:
    """What a command reports while it works: a step's name, or bytes done of a total."""

    def __init__(self, update: Callable[..., None] | None = None) -> None:
        self._update = update

    def step(self, text: str) -> None:
        """A new step, of unknown length: `text` with a spinner and the time elapsed."""
        if self._update:
            self._update(description=text, completed=0, total=None)

    def done_of(self, text: str, done: float, total: float) -> None:
        """`done` of `total` (a bar), e.g. bytes ingested."""
        if self._update:
            self._update(description=text, completed=done, total=total)

    def ingest(self, rel: str, done: int, total: int) -> None:
        """`collectors.ingest.ingest_bundle`'s progress callback."""
        self.done_of(f"ingest {rel}", done, total)


@contextmanager
def progress(quiet: bool, text: str) -> Iterator[Steps]:
    """A transient progress line on stderr for the block: `text`, a spinner or a bar, the time
    elapsed. Nothing when `quiet` or when stderr is not a terminal (a log file, a pipe)."""
    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield Steps()
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(text, total=None)
        yield Steps(lambda **kw: bar.update(task, **kw))
