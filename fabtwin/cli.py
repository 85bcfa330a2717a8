"""The `fabtwin` command line: the click group, and the commands of `fabtwin.commands` on it.

Exit codes scripts can trust: 0 done (for `investigate`/`replay`: no incident); 1 an unexpected
internal error (or an ingest's parsing worker killed); 2 bad invocation or unreadable input
(missing bundle, bad manifest, refused or failing SQL, an output that cannot be written, a full
disk, a malformed environment variable); 3 some files failed to load (an I/O error reading
them) while the rest loaded; 4 with `--strict`, some records were rejected (a damaged gzip among
them); 5 `investigate`/`replay` found incidents, `check` findings; 6 `investigate`/`replay` found no telemetry to
diagnose; 130 interrupted (Ctrl-C).

Commands are loaded lazily (click's LazyGroup pattern): a run imports the module of its own
command only, so `fabtwin simulate` does not pay for the store's, the diagnosis' or the TUI's
imports; `fabtwin --help` loads them all to list their help.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys

import click

# OpenBLAS (numpy's and scipy's) starts a thread per core at numpy's import, and after a dense
# product that thread spins waiting for the next one: 0.1-0.2 s of CPU in an `investigate` of a
# 20-minute bundle, whose only dense products (replay.expected's per-window shares) are a few
# hundred elements wide. One thread unless the user set it; read once, at numpy's import, which
# no command has done yet here (results unchanged: investigate --json compared on 9 bundles)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# registered explicitly, one module of fabtwin.commands each: command -> (module, function)
COMMANDS = {
    "check": ("check", "check"),
    "export": ("export", "export"),
    "generate": ("simulate", "generate"),
    "ingest": ("ingest", "ingest"),
    "investigate": ("diagnose", "investigate"),
    "replay": ("diagnose", "replay"),
    "report": ("report", "report"),
    "simulate": ("simulate", "simulate"),
    "sql": ("sql", "sql"),
    "sweep": ("sweep", "sweep"),
    "tui": ("tui", "tui"),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when they are looked up, from `lazy` (name ->
    (module of fabtwin.commands, attribute))."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def main(self, args=None, *rest, **kwargs):  # noqa: ANN001, ANN201 - click's signature
        """click's main; a process running `investigate` or `replay` (args from sys.argv, not a
        test's CliRunner) then ends without the interpreter's teardown (`exit_now`)."""
        if args is not None or sys.argv[1:2] not in ([c] for c in FAST_EXIT):
            return super().main(args, *rest, **kwargs)
        try:
            super().main(args, *rest, **kwargs)
            code = 0
        except SystemExit as exc:
            if exc.code is not None and not isinstance(exc.code, int):
                raise
            code = exc.code or 0
        exit_now(code)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attr = self.lazy[cmd_name]
            command = getattr(importlib.import_module(f"fabtwin.commands.{module}"), attr)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


# commands whose work is all done (the store closed, the result printed) when they return
FAST_EXIT = {"investigate", "replay"}


def exit_now(code: int) -> None:
    """Exit with `code` after the atexit handlers and flushing stdout and stderr, but without
    the interpreter's teardown (freeing every module and object one by one): 0.11-0.16 s of CPU
    after an investigate of a 20-minute bundle, whose store is closed by then."""
    atexit._run_exitfuncs()  # what the interpreter runs before its teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's own exit says 120 then
            code = code or (120 if stream is sys.stdout else 0)
    os._exit(code)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fabtwin")
def main() -> None:
    """Telemetry-driven digital twin and debugging toolkit for RoCE AI training fabrics."""


if __name__ == "__main__":
    main()
