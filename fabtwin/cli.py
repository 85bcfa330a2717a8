"""The `fabtwin` command line.

Exit codes scripts can trust: 0 done; 1 an unexpected internal error (or an ingest's parsing
worker killed); 2 bad invocation or unreadable input (missing bundle, bad manifest, refused or
failing SQL, a full disk); 3 some files failed to load (an I/O error reading them) while the
rest loaded; 4 with `--strict`, some records were rejected (a damaged gzip among them); 130
interrupted (Ctrl-C).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

if TYPE_CHECKING:  # the commands import what they use: `fabtwin --help` stays quick
    import pyarrow as pa

    from collectors.store.ingest import IngestSummary
    from collectors.store.writer import Store

DEFAULT_DB = os.environ.get("FABTWIN_DB", "fabtwin.duckdb")
err = Console(stderr=True)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fabtwin")
def main() -> None:
    """Telemetry-driven digital twin and debugging toolkit for RoCE AI training fabrics."""


# -- ingest ---------------------------------------------------------------------------------

@main.command()
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
def ingest(bundle: Path, db: str, as_json: bool, strict: bool, quiet: bool,
           workers: int | None, follow_symlinks: bool) -> None:
    """Load a trace bundle (directory or file) into the store at --db.

    Files are recognized by content; the same content twice adds nothing, a file that grew
    replaces its earlier version. Every rejected record is kept in the `rejects` table with
    file, line, reason and raw text. Files are parsed on every core; the store is the same
    whatever the number of workers. Nothing outside the bundle is read without
    --follow-symlinks.
    """
    from concurrent.futures.process import BrokenProcessPool

    from collectors.store.child import ChildDied
    from collectors.store.ingest import DISK_FULL, BundleError
    from collectors.store.lake import (  # a directory: a Parquet lake
        is_lake,
        lake_totals,
        open_for_ingest,
    )
    from collectors.store.writer import StoreError

    kept = ("the store keeps the files loaded before it; the same ingest again loads the rest")
    try:
        with open_for_ingest(db) as store:
            for path in store.interrupted:
                click.echo(f"fabtwin: removed {path}: an earlier ingest was interrupted while "
                           "loading it", err=True)
            summary = _ingest_with_progress(store, bundle, not quiet and err.is_terminal,
                                             workers, follow_symlinks)
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
                          follow_symlinks: bool = False) -> IngestSummary:
    from collectors.store.ingest import ingest_bundle

    if not show:
        return ingest_bundle(store, bundle, workers=workers, follow_symlinks=follow_symlinks)
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("ingest"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
               TextColumn("{task.description}"))
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("", total=None)

        def on_progress(rel: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=rel)

        return ingest_bundle(store, bundle, progress=on_progress, workers=workers,
                             follow_symlinks=follow_symlinks)


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
    for f in summary.skipped:
        click.echo(f"skipped  {f.path}: {f.reason}")
    if s["rejected"]:
        click.echo("see them: fabtwin sql \"SELECT path, line, reason, raw FROM rejects\"")


# -- sql ------------------------------------------------------------------------------------

@main.command()
@click.argument("query")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB store file.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]),
              default="table", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the result to this file, replaced when the query succeeds (required "
                   "for parquet; never the store or a file inside it).")
@click.option("--max-rows", default=50, show_default=True,
              help="Rows shown by the table format (the others write every row).")
def sql(query: str, db: str, fmt: str, output: Path | None, max_rows: int) -> None:
    """Run a read-only SQL QUERY on the store (tables and views: see the README); `-` reads
    the query from stdin."""
    from collectors.store.query import QueryRefused, run_query
    from collectors.store.readonly import OutputError, check_output, check_output_folder
    from collectors.store.writer import StoreError

    if query == "-":
        query = sys.stdin.read()
    if fmt == "parquet" and output is None:
        fail("--format parquet needs --output FILE")
    try:
        if output is not None:
            check_output(output, db)
            check_output_folder(output)
        result = run_query(db, query, fmt=fmt)
    except (FileNotFoundError, StoreError, OutputError, QueryRefused) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    with result:
        try:
            _write_result(result.reader, fmt, output, max_rows)
        except OSError as exc:  # the output's folder refused the file: name the output
            fail(f"{output or 'stdout'}: {exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - DuckDB or Arrow failing mid-stream: one line
            import duckdb
            import pyarrow as pa

            if not isinstance(exc, duckdb.Error | pa.ArrowException):
                raise
            fail(f"{'SQL error' if isinstance(exc, duckdb.Error) else 'cannot write the result'}: "
                 f"{' '.join(str(exc).split())}")


def _write_result(reader: pa.RecordBatchReader, fmt: str, output: Path | None, max_rows: int) -> None:
    """Stream `reader` as `fmt` to stdout, or to `output` (replaced only once complete)."""
    if output is None:
        _write_stream(reader, fmt, sys.stdout.buffer, max_rows)
        sys.stdout.buffer.flush()
        return
    from collectors.store.readonly import replacing

    with replacing(output) as tmp:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetWriter(tmp, reader.schema, compression="zstd") as w:
                for batch in reader:
                    w.write_batch(batch)
        else:
            with open(tmp, "xb") as fh:
                _write_stream(reader, fmt, fh, max_rows)


def _write_stream(reader: pa.RecordBatchReader, fmt: str, fh, max_rows: int) -> None:
    import orjson

    if fmt == "csv":
        import pyarrow.csv as pacsv

        with pacsv.CSVWriter(fh, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
    elif fmt == "json":
        fh.write(b"[")
        first = True
        for batch in reader:
            for row in batch.to_pylist():
                fh.write((b"" if first else b",\n") + orjson.dumps(
                    row, default=str, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z))
                first = False
        fh.write(b"]\n")
    else:
        _print_table(reader, fh, max_rows)


def _print_table(reader: pa.RecordBatchReader, fh, max_rows: int) -> None:
    import polars as pl
    import pyarrow as pa

    batches, shown, total = [], 0, 0
    for batch in reader:
        total += batch.num_rows
        if shown < max_rows:
            batches.append(batch.slice(0, max_rows - shown))
            shown += batches[-1].num_rows
    table = pa.Table.from_batches(batches, schema=reader.schema)
    df = pl.from_arrow(table)
    with pl.Config(tbl_rows=max_rows, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=False):
        fh.write((str(df) + "\n").encode())
    note = f"{total} rows" + (f" ({shown} shown; --max-rows or --format csv for all)" if total > shown else "")
    fh.write((note + "\n").encode())


# -- replay and investigate ----------------------------------------------------------------

def _when(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """An ISO-8601 time (`2026-11-30T03:12:00Z`; no zone means UTC) as naive UTC."""
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO-8601 time (2026-11-30T03:12:00Z)") from None
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


_window_options = [
    click.option("--from", "t_from", callback=_when, help="Start of the window (ISO-8601, UTC)."),
    click.option("--to", "t_to", callback=_when, help="End of the window (ISO-8601, UTC)."),
    click.option("--window", "window_s", type=click.FloatRange(min=0.001), default=None,
                 help="Replay window in seconds [default: six sample intervals]."),
]


def window_options(f):
    for option in reversed(_window_options):
        f = option(f)
    return f


@main.command()
@click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB store file.")
@window_options
@click.option("--routing", type=click.Choice(["ar", "spray", "ecmp"]), default="ar",
              show_default=True, help="Load balancing the expectation assumes.")
@click.option("--chunk-windows", type=click.IntRange(min=1), default=None,
              help="Split the replay into chunks of this many windows [default: one chunk, or "
                   "four per worker with --workers/--ray].")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local processes for the twin's part.")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Run the chunks on Ray: 'local' starts one here, else a cluster address.")
@click.option("--json", "as_json", is_flag=True, help="Print the run and incidents as one JSON object.")
def replay(db: str, t_from, t_to, window_s, routing: str, chunk_windows: int | None,
           workers: int, ray_address: str | None, as_json: bool) -> None:
    """Replay the store (a DuckDB file or a Parquet lake) through the twin and diagnose it.

    Stores the expected-versus-observed load of every port and window (table expected_ports,
    run in replay_runs) and the ranked incidents (incidents, incident_evidence). A long window
    splits into chunks that run on local processes or on Ray, with the same rows either way.
    """
    from collectors.store.lake import open_for_replay
    from collectors.store.writer import StoreError
    from replay.investigate import replay_and_diagnose
    from twin.parallel import ExecutorError

    if not Path(db).exists():
        fail(f"{db}: no such store (fabtwin ingest BUNDLE --db {db} first)")
    parallel = {"executor": "ray" if ray_address else "local", "workers": workers,
                "address": ray_address, "chunk_windows": chunk_windows}
    try:
        with open_for_replay(db) as con:
            summary, incidents = replay_and_diagnose(con, t_from, t_to, window_s, routing,
                                                     **parallel)
    except (ExecutorError, StoreError) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    if as_json:
        out = {k: (v.isoformat() if isinstance(v, datetime) else v)
               for k, v in asdict(summary).items()}
        click.echo(json.dumps({"replay": out, "incidents": [
            i.as_json(r) for r, i in enumerate(incidents, 1)]}, indent=2, default=str))
        return
    s = summary
    if s.status == "ok":
        click.echo(f"replay   {s.windows} windows of {s.window_s:g} s, {s.t_from} .. {s.t_to}; "
                   f"{s.planes} plane(s), {s.tiers} tiers, {s.ports} ports; {s.rows} rows in "
                   f"expected_ports ({s.seconds:.1f} s)")
    else:
        click.echo(f"replay   {s.status}: {s.note}; detectors ran on the telemetry alone")
    _print_incidents([i.as_json(r) for r, i in enumerate(incidents, 1)])


@main.command()
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--db", default=DEFAULT_DB, show_default=True, help="DuckDB store (reused when the bundle is in it).")
@window_options
@click.option("--json", "as_json", is_flag=True, help="Print the ranked incidents as one JSON object.")
def investigate(bundle: Path, db: str, t_from, t_to, window_s, as_json: bool) -> None:
    """Ingest BUNDLE, replay it through the twin, diagnose it and print the ranked incidents."""
    from collectors.store.ingest import BundleError
    from collectors.store.writer import StoreError
    from replay.investigate import investigate as run_investigation

    try:
        result = run_investigation(bundle, db, t_from, t_to, window_s)
    except (BundleError, StoreError) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
        return
    w = result["window"]
    click.echo(f"bundle   {result['bundle']}  window {w['start']} .. {w['end']}")
    _print_incidents(result["incidents"])


def _print_incidents(incidents: list[dict]) -> None:
    if not incidents:
        click.echo("healthy: no incident found")
        return
    for inc in incidents:
        rc = inc["root_cause"]
        click.echo(f"#{inc['rank']} {inc['kind']:<15} {rc['type']} {rc['id']}  score {inc['score']:.2f}  "
                   f"{inc['start']} .. {inc['end'] or 'still'}")
        click.echo(f"   {inc['summary']}")


# -- simulate -------------------------------------------------------------------------------

@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
def simulate(scenario: Path, as_json: bool) -> None:
    """Run a what-if SCENARIO.toml on the twin (format: twin/scenario.py, examples in scenarios/)."""
    from twin.scenario import ScenarioError, load, run
    from twin.topology import TopologyError

    try:
        outcome = run(load(scenario))
    except (ScenarioError, TopologyError) as exc:
        fail(str(exc))
    out = outcome.as_json()
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    fab = out["fabric"]
    click.echo(f"fabric   {fab['hosts']} hosts, {fab['endpoints']} endpoints, {fab['planes']} plane(s), "
               f"{fab['tiers']} tiers, {fab['switches']} switches, {fab['links']} links; "
               f"balancing {'/'.join(out['balancing']['modes'])}, NIC {out['balancing']['nic']}")
    for j in out["jobs"]:
        t = j["completion_s"]
        click.echo(f"job      {j['name']}: {j['collective']} of {j['size_bytes'] / 2**20:.1f} MiB on "
                   f"{j['ranks']} ranks: " + (f"{t * 1e3:.3f} ms, algbw {j['algbw_GBps']:.2f} GB/s, "
                                               f"busbw {j['busbw_GBps']:.2f} GB/s" if t else "did not finish"))
    fl = out["flows"]
    if fl["fct_median_s"] is not None:
        click.echo(f"flows    {fl['finished']} of {fl['count']} finished; completion median "
                   f"{fl['fct_median_s'] * 1e6:.1f} us, p99 {fl['fct_p99_s'] * 1e6:.1f} us")
    for link in out["busiest_links"][:5]:
        click.echo(f"busiest  {link['link']}  {link['utilization'] * 100:.1f}%")
    click.echo(f"took     {out['wall_s']:.3f} s wall, {out['events']} events")


# -- generate -------------------------------------------------------------------------------

@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write the bundle into (replaced).")
@click.option("--seed", default=0, show_default=True, help="Same scenario and seed: same bytes.")
def generate(scenario: Path, out: Path, seed: int) -> None:
    """Write a synthetic trace bundle for SCENARIO.toml, with labels.json (format: twin/generate.py)."""
    from twin.generate import generate as write_bundle
    from twin.scenario import ScenarioError
    from twin.topology import TopologyError

    try:
        g = write_bundle(scenario, out, seed=seed)
    except (ScenarioError, TopologyError) as exc:
        fail(str(exc))
    kinds = ", ".join(f["kind"] for f in g.labels["faults"]) or "none (healthy)"
    click.echo(f"wrote {g.files} files to {out}: faults {kinds}; "
               f"{g.labels['malformed_lines']} malformed lines (see labels.json)")


# -- commands in modules of their own ------------------------------------------------------

from fabtwin.lake_cli import export  # noqa: E402
from fabtwin.report import report  # noqa: E402
from fabtwin.sweep_cli import sweep  # noqa: E402
from fabtwin.tui.command import tui  # noqa: E402

main.add_command(export)
main.add_command(report)
main.add_command(sweep)
main.add_command(tui)


if __name__ == "__main__":
    main()
