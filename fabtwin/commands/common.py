"""What every command shares: one-line failures and their exit codes, the store's default,
the window options and their time forms, and progress on stderr with `-q/--quiet`.

stdout stays the command's result (text or JSON a script reads); the progress line is drawn on
stderr only when it is a terminal, and erased when the work ends.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from collectors.settings import SettingError, check_all, db_override
from collectors.settings import db as default_db

DEFAULT_DB = default_db()  # read once, as click shows it in --help
EXIT_INCIDENTS = 5  # investigate / replay: the diagnosis found incidents
EXIT_NO_TELEMETRY = 6  # investigate / replay: nothing to diagnose in the bundle or window


def err():
    """rich's Console on stderr, made only when a command may draw progress: importing rich
    costs about 50 ms of CPU that `-q` never needs."""
    from rich.console import Console

    return Console(stderr=True)


def may_be_terminal() -> bool:
    """False when rich's Console would certainly not see stderr as a terminal (the variables
    it reads first, TTY_COMPATIBLE and FORCE_COLOR, unset or saying no, and stderr no tty):
    then progress needs no Console, and a run with stderr to a file or a pipe does not import
    rich (20-30 ms of CPU, a tenth of `fabtwin simulate`'s start-up)."""
    tty = os.environ.get("TTY_COMPATIBLE", "")
    if tty in ("0", "1"):
        return tty == "1"
    if os.environ.get("FORCE_COLOR") is not None:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def terminal_err():
    """`err()` when stderr may be a terminal and rich agrees it is one, else None."""
    if not may_be_terminal():
        return None
    console = err()
    return console if console.is_terminal else None


class Command(click.Command):
    """A fabtwin command: the environment variables (collectors.settings) are checked once its
    arguments are parsed (`--help` still works) and before it does anything, so a malformed
    one is one line naming it, exit 2, and no file is made."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            check_all()
        except SettingError as exc:
            fail(str(exc))
        return super().invoke(ctx)


def command(**kwargs: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """`click.command` making a `Command`."""
    return click.command(cls=Command, **kwargs)


def resource_errors() -> tuple[type[Exception], ...]:
    """DuckDB failing for want of disk or memory mid-query, or on a file it cannot write: the
    commands print them as one line naming the store and what to change (imported only when
    one is raised: `fabtwin --help` does not load DuckDB)."""
    import duckdb

    return (duckdb.IOException, duckdb.OutOfMemoryException)


def store_failure(db: str, exc: BaseException) -> None:
    """`fail` with DuckDB's error about the store at `db`, as one actionable line."""
    from collectors.store.readonly import describe_store_error

    fail(describe_store_error(db, exc))


def fail(message: str, code: int = 2) -> None:
    """Print a one-line error and exit with `code`."""
    click.echo(f"fabtwin: error: {message}", err=True)
    sys.exit(code)


def bundle_store(bundle: Path, db: str | None) -> str:
    """The store a command given BUNDLE uses: --db, else $FABTWIN_DB, else investigate's one
    per bundle (`replay.investigate.default_store`), so that two bundles never share one."""
    from replay.investigate import default_store  # lazily: `fabtwin tui` stays light to start

    return db or db_override() or str(default_store(bundle))


def remove_new_store(db: str, new: bool) -> None:
    """A store file this command created for a bundle it then could not diagnose goes again
    (never one that was there before)."""
    path = Path(db)
    if new and path.is_file():
        for p in (path, Path(f"{db}.wal")):
            p.unlink(missing_ok=True)


def os_failure(exc: OSError, path: object = None) -> None:
    """`fail` with an OSError (permission denied, no space, read-only file system) as one line
    naming the path (the error's own, else `path`), exit 2."""
    where = exc.filename if exc.filename is not None else path or ""
    fail(f"{where}: {exc.strerror or exc}" if where else str(exc))


# -- time windows ----------------------------------------------------------------------------

RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)([smhd])")
UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
TIME_FORMS = "ISO-8601 (2026-11-30T03:12:00Z), epoch seconds (1796008320) or -30m/-1h/-2d"


def parse_when(value: str) -> datetime | timedelta:
    """A window bound: ISO-8601 (no zone means UTC) or epoch seconds, as naive UTC; or `-30m`,
    `-1h`, `-90s`, `-2d`: that long before the end of the data (a timedelta, resolved by
    `replay.investigate.resolve_window`). ValueError for anything else."""
    text = value.strip()
    if m := RELATIVE.fullmatch(text):
        return -timedelta(seconds=float(m[1]) * UNIT_S[m[2]])
    try:
        epoch = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(epoch):
            raise ValueError(value)
        return datetime(1970, 1, 1) + timedelta(seconds=epoch)  # OverflowError: out of range
    t = datetime.fromisoformat(text)
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def _when(ctx: click.Context, param: click.Parameter,
          value: str | None) -> datetime | timedelta | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except (ValueError, OverflowError):
        raise click.BadParameter(f"{value!r} is not a time: {TIME_FORMS}") from None


_window_options = [
    click.option("--from", "t_from", callback=_when,
                 help="Start of the window: ISO-8601 (UTC), epoch seconds, or -1h (before the "
                      "end of the data)."),
    click.option("--to", "t_to", callback=_when,
                 help="End of the window, in the same forms as --from."),
    # at most about 3 years: a window far beyond that runs dates past year 9999 (OverflowError)
    click.option("--window", "window_s", type=click.FloatRange(min=0.001, max=1e8), default=None,
                 help="Replay window in seconds [default: six sample intervals]."),
]


def window_options(f):
    """--from, --to and --window, as replay and investigate take them."""
    for option in reversed(_window_options):
        f = option(f)
    return f


def check_order(t_from, t_to) -> None:
    """Exit 2 when both window bounds are times and --from is not before --to."""
    if isinstance(t_from, datetime) and isinstance(t_to, datetime) and t_from >= t_to:
        fail(f"--from {t_from.isoformat()} is not before --to {t_to.isoformat()}")


# -- progress --------------------------------------------------------------------------------

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
        """`collectors.store.ingest.ingest_bundle`'s progress callback."""
        self.done_of(f"ingest {rel}", done, total)


@contextmanager
def progress(quiet: bool, text: str) -> Iterator[Steps]:
    """A transient progress line on stderr for the block: `text`, a spinner or a bar, the time
    elapsed. Nothing when `quiet` or when stderr is not a terminal (a log file, a pipe)."""
    console = None if quiet else terminal_err()
    if console is None:
        yield Steps()
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task(text, total=None)
        yield Steps(lambda **kw: bar.update(task, **kw))
