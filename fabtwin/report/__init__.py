"""`fabtwin report`: a self-contained HTML page (and its PNGs) to paste into a postmortem.

The store summary, the ranked incidents, per-plane link utilization heatmaps (the busiest window
and each incident's) and, per top incident, the load of the ports involved around it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from collectors.store.readonly import OutputError, StoreError, check_output, check_output_dir


@click.command()
@click.option("--db", default=os.environ.get("FABTWIN_DB", "fabtwin.duckdb"), show_default=True,
              help="DuckDB store file (opened read-only).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for report.html and the PNGs (created; earlier report PNGs replaced).")
@click.option("--top", default=5, show_default=True, type=click.IntRange(0),
              help="Incidents that get pictures (the table lists them all).")
@click.option("--diagnose", "diagnose_now", is_flag=True,
              help="No diagnosis stored: run the telemetry detectors now (slow on a large store).")
def report(db: str, out: Path, top: int, diagnose_now: bool) -> None:
    """Write DIR/report.html: store summary, incidents, heatmaps and timelines, images inline.

    Reads the incidents the latest `fabtwin investigate`/`replay` stored; a store without a
    stored diagnosis gets heatmaps only, unless --diagnose runs the telemetry detectors now
    (read-only). The page says which.
    """
    from fabtwin.report.build import build, write

    try:
        check_output(out, db)  # checked before the (slow) build: never into the input lake
        check_output_dir(out)
        rep = build(db, top=top, diagnose_now=diagnose_now)
    except (FileNotFoundError, StoreError, OutputError) as exc:
        _fail(str(exc))
    try:
        path = write(rep, out)
    except OSError as exc:  # name the file or folder that failed, not only --out
        _fail(f"{exc.filename or out}: {exc.strerror or exc}")
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1024:.0f} KiB): {len(rep.incidents)} incident(s), "
               f"{len(rep.pictures)} picture(s), in {rep.seconds:.1f} s")
    for note in rep.notes:
        click.echo(f"note: {note}", err=True)


def _fail(message: str) -> None:
    click.echo(f"fabtwin: error: {message}", err=True)
    sys.exit(2)


__all__ = ["report"]
