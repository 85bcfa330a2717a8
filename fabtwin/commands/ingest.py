"""`fabtwin ingest`: a trace bundle into the store, every record loaded or kept as a reject."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fabtwin.commands.common import DEFAULT_DB, command, err, fail, resource_errors, store_failure

if TYPE_CHECKING:  # the command imports what it uses: `fabtwin --help` stays quick
    from collectors.store.ingest import IngestSummary
    from collectors.store.writer import Store


@command()
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB store file.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--strict", is_flag=True, help="Exit 4 when any record was rejected.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes parsing files [default: FABTWIN_INGEST_WORKERS, else the cores].")
@click.option("--follow-symlinks", is_flag=True,
              help="Read files that symbolic links point to outside the bundle (else listed as "
                   "skipped).")
@click.option("--host", default=None, metavar="H",
              help="The host the files came from, for output that does not name it "
                   "(ibdev2netdev, lldpctl -f json0, a bare ethtool -S); overrides the manifest. "
                   "Files named after their host (nic/HOST/DEV.KIND, HOST__DEV.KIND) keep it.")
@click.option("--time", "at", default=None, metavar="T",
              help="When the files were collected (ISO-8601 with offset, or epoch seconds), for "
                   "output without times of its own (a plain scrape, a bare ethtool -S); "
                   "overrides the manifest.")
@click.option("--interface", default=None, metavar="I",
              help="The NIC a bare ethtool -S or show_counters was run on (the manifest's "
                   "'interface'); overrides the manifest. Files named HOST__DEV.KIND keep DEV.")
def ingest(bundle: Path, db: str, as_json: bool, strict: bool, quiet: bool,
           workers: int | None, follow_symlinks: bool, host: str | None,
           at: str | None, interface: str | None) -> None:
    """Load a trace bundle (directory or file) into the store at --db.

    Files are recognized by content; the same content twice adds nothing, a file that grew
    replaces its earlier version. Every rejected record is kept in the `rejects` table with
    file, line, reason and raw text. Files are parsed on every core; the store is the same
    whatever the number of workers. Nothing outside the bundle is read without
    --follow-symlinks. Context a file lacks (its host, when it was collected) comes from
    --host/--time, the bundle's manifest.json, the file's name, and as a last resort (times
    only) the file's modification time, which the summary names.
    """
    from concurrent.futures.process import BrokenProcessPool

    from collectors.core.timeparse import TimeError
    from collectors.store.child import ChildDied
    from collectors.store.ingest import DISK_FULL, BundleError, parse_time
    from collectors.store.lake import (  # a directory: a Parquet lake
        is_lake,
        lake_totals,
        open_for_ingest,
    )
    from collectors.store.writer import StoreError

    kept = ("the store keeps the files loaded before it; the same ingest again loads the rest")
    try:
        collected_at = parse_time(at) if at is not None else None
    except TimeError as exc:
        raise click.BadParameter(str(exc), param_hint="--time") from None
    if host is not None and not host.strip():
        raise click.BadParameter("must not be empty", param_hint="--host")
    if interface is not None and not interface.strip():
        raise click.BadParameter("must not be empty", param_hint="--interface")
    try:
        with open_for_ingest(db) as store:
            for path in store.interrupted:
                click.echo(f"fabtwin: removed {path}: an earlier ingest was interrupted while "
                           "loading it", err=True)
            summary = _ingest_with_progress(store, bundle, not quiet and err().is_terminal,
                                             workers, follow_symlinks, host, collected_at,
                                             interface)
        if is_lake(db):
            summary.totals = lake_totals(db)
    except (BundleError, StoreError) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    except KeyboardInterrupt:
        fail(f"interrupted; {kept}", 130)
    except (BrokenProcessPool, ChildDied):
        fail(f"a parsing worker process died (killed from outside, or out of memory); {kept}",
             1)
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        fail(f"{db}: no space left on device while ingesting ({exc.strerror}); {kept} once "
             "there is room (the store's directory, and the system's temporary directory)")
    if as_json:
        click.echo(json.dumps(summary.as_json(), indent=2))
    else:
        _print_summary(summary)
    failed = [f for f in summary.files if f.status == "failed"]
    for f in failed:
        click.echo(f"fabtwin: error: {f.reason}", err=True)
    if failed:
        sys.exit(3)
    if strict and any(f.rejected for f in summary.files):
        sys.exit(4)


def _ingest_with_progress(store: Store, bundle: Path, show: bool,
                          workers: int | None = None,
                          follow_symlinks: bool = False, host: str | None = None,
                          collected_at: int | None = None,
                          interface: str | None = None) -> IngestSummary:
    from functools import partial

    from collectors.store.ingest import ingest_bundle

    run = partial(ingest_bundle, store, bundle, workers=workers, follow_symlinks=follow_symlinks,
                  host=host, collected_at=collected_at, interface=interface)
    if not show:
        return run()
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("ingest"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
               TextColumn("{task.description}"))
    with Progress(*columns, console=err(), transient=True) as bar:
        task = bar.add_task("", total=None)

        def on_progress(rel: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=rel)

        return run(progress=on_progress)


def _print_summary(summary: IngestSummary) -> None:
    s = summary.as_json()
    t = s["store"]
    click.echo(f"bundle   {s['bundle']}  ->  {s['db']}")
    click.echo(f"files    {s['files_loaded']} loaded, {s['files_unchanged']} unchanged, "
               f"{s['files_skipped']} skipped")
    click.echo(f"records  {s['records_read']} read = {s['loaded']} loaded + {s['rejected']} rejected")
    click.echo(f"store    {t['samples']} samples, {t['events']} events, {t['logs']} log lines, "
               f"{t['links']} links, {t['jobs']} jobs, {t['devices']} devices, {t['rejects']} rejects")
    click.echo(f"time     {t['start'] or '-'} .. {t['end'] or '-'}")
    for f in summary.files:
        if f.status == "loaded" and f.rejected:
            click.echo(f"rejected {f.rejected} of {f.records_read} records in {f.path}; "
                       f"first: {f.first_reject}")
        if f.superseded:
            click.echo(f"replaced {f.path}: its earlier version's rows (it grew or changed)")
        if f.status == "loaded" and f.reason:
            click.echo(f"note     {f.path}: {f.reason}")
        if f.status == "loaded" and f.broken:
            click.echo(f"partial  {f.broken}")
    if t.get("jobs_merged"):  # listings merged, not records rejected: each was read and loaded
        n = t["jobs_merged"]
        click.echo(f"merged   {n} job{'s' if n > 1 else ''} listed more than once ({t['job_rows']} "
                   f"rows in jobs for {t['jobs']} job{'s' if t['jobs'] > 1 else ''}: sacct and squeue, "
                   "or several captures): "
                   "job_spans has one row per job, sacct's fields winning where both give them")
    guessed = [f.path for f in summary.files if f.status == "loaded" and f.time_source == "mtime"]
    if guessed:  # a guessed time must never pass for a measured one
        click.echo(f"guessed  {len(guessed)} file{'s' if len(guessed) > 1 else ''} timed by "
                   f"{'their' if len(guessed) > 1 else 'its'} modification time (no time in the "
                   f"file, the manifest or --time): {', '.join(guessed)}")
    for f in summary.skipped:
        click.echo(f"skipped  {f.path}: {f.reason}")
    if s["rejected"]:
        click.echo("see them: fabtwin sql \"SELECT path, line, reason, raw FROM rejects\"")

