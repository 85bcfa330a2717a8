"""`fabtwin report`: a self-contained HTML page (and its PNGs) to paste into a postmortem
(built by `fabtwin.report`)."""

from __future__ import annotations

from pathlib import Path

import click

from fabtwin.commands.common import DEFAULT_DB, command, fail, os_failure, progress, quiet_option


@command()
@click.option("--db", default=DEFAULT_DB, show_default=True,
              help="DuckDB store file (opened read-only).")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for report.html and the PNGs (created; earlier report PNGs replaced).")
@click.option("--top", default=5, show_default=True, type=click.IntRange(0),
              help="Incidents that get pictures (the table lists them all).")
@click.option("--diagnose", "diagnose_now", is_flag=True,
              help="No diagnosis stored: run the telemetry detectors now (slow on a large store).")
@quiet_option
def report(db: str, out: Path, top: int, diagnose_now: bool, quiet: bool) -> None:
    """Write DIR/report.html: store summary, incidents, heatmaps and timelines, images inline.

    Reads the incidents the latest `fabtwin investigate`/`replay` stored; a store without a
    stored diagnosis gets heatmaps only, unless --diagnose runs the telemetry detectors now
    (read-only). The page says which.
    """
    from collectors.store.readonly import OutputError, StoreError, check_output, check_output_dir
    from fabtwin.report.build import build, write

    with progress(quiet, f"report {db}") as steps:
        try:
            check_output(out, db)  # checked before the (slow) build: never into the input lake
            check_output_dir(out)
            rep = build(db, top=top, diagnose_now=diagnose_now)
        except (FileNotFoundError, StoreError, OutputError) as exc:
            fail(str(exc))
        steps.step(f"report: writing {out}")
        try:
            path = write(rep, out)
        except OSError as exc:  # PermissionError and the like: the path that failed, one line
            os_failure(exc, out)
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1024:.0f} KiB): {len(rep.incidents)} incident(s), "
               f"{len(rep.pictures)} picture(s), in {rep.seconds:.1f} s")
    for note in rep.notes:
        click.echo(f"note: {note}", err=True)

