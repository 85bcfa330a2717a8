"""The `fabtwin` command line: the click group, and the commands of `fabtwin.commands` on it.

Exit codes scripts can trust: 0 done (for `investigate`/`replay`: no incident); 1 an unexpected
internal error (or an ingest's parsing worker killed); 2 bad invocation or unreadable input
(missing bundle, bad manifest, refused or failing SQL, an output that cannot be written, a full
disk, a malformed environment variable); 3 some files failed to load (an I/O error reading
them) while the rest loaded; 4 with `--strict`, some records were rejected (a damaged gzip among
them); 5 `investigate`/`replay` found incidents, `check` findings; 6 `investigate`/`replay` found no telemetry to
diagnose; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import click

from fabtwin.commands.check import check
from fabtwin.commands.diagnose import investigate, replay
from fabtwin.commands.export import export
from fabtwin.commands.ingest import ingest
from fabtwin.commands.report import report
from fabtwin.commands.simulate import generate, simulate
from fabtwin.commands.sql import sql
from fabtwin.commands.sweep import sweep
from fabtwin.commands.tui import tui


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fabtwin")
def main() -> None:
    """Telemetry-driven digital twin and debugging toolkit for RoCE AI training fabrics."""


# registered explicitly, one module of fabtwin.commands each (click lists them sorted)
for command in (check, export, generate, ingest, investigate, replay, report, simulate, sql, sweep, tui):
    main.add_command(command)


if __name__ == "__main__":
    main()
