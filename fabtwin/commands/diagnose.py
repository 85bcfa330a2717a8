"""`fabtwin replay` and `fabtwin investigate`: the stored telemetry through the twin, diagnosed.

Exit 0 no incident, 5 incidents (`EXIT_INCIDENTS`), 6 no telemetry (`EXIT_NO_TELEMETRY`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import click

from fabtwin.commands.common import (
    DEFAULT_DB,
    EXIT_INCIDENTS,
    EXIT_NO_TELEMETRY,
    bundle_store,
    check_order,
    command,
    fail,
    progress,
    quiet_option,
    remove_new_store,
    resource_errors,
    store_failure,
    window_options,
)
from fabtwin.startup import defer_numpy_tools, keep_freed_memory

defer_numpy_tools()  # before replay imports scipy (fabtwin.startup says why)
keep_freed_memory()  # the replay's big temporary arrays reuse freed memory (fabtwin.startup)


def _diagnosis_failures() -> tuple[type[Exception], ...]:
    from replay.investigate import NoTelemetry, WindowError

    return NoTelemetry, WindowError


def _exit_for(incidents: list) -> None:
    """Exit 5 when the diagnosis found incidents (scripts: `if fabtwin investigate ...`)."""
    if incidents:
        sys.exit(EXIT_INCIDENTS)


@command()
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
@quiet_option
def replay(db: str, t_from, t_to, window_s, routing: str, chunk_windows: int | None,
           workers: int, ray_address: str | None, as_json: bool, quiet: bool) -> None:
    """Replay the store (a DuckDB file or a Parquet lake) through the twin and diagnose it.

    Stores the expected-versus-observed load of every port and window (table expected_ports,
    run in replay_runs) and the ranked incidents (incidents, incident_evidence). A long window
    splits into chunks that run on local processes or on Ray (same rows, see the README for the
    rounding). Exit 0 no incident, 5 incidents, 6 no telemetry in the window (the stored
    diagnosis is then kept as it was).
    """
    from collectors.store.writer import StoreError
    from replay.investigate import replay_and_diagnose
    from replay.results import open_results
    from twin.parallel import ExecutorError

    check_order(t_from, t_to)
    if not Path(db).exists():
        fail(f"{db}: no such store (fabtwin ingest BUNDLE --db {db} first)")
    parallel = {"executor": "ray" if ray_address else "local", "workers": workers,
                "address": ray_address, "chunk_windows": chunk_windows}
    no_telemetry, bad_window = _diagnosis_failures()
    try:
        with progress(quiet, f"replay {db}"), open_results(db) as con:
            summary, incidents = replay_and_diagnose(con, t_from, t_to, window_s, routing,
                                                     what=str(db), **parallel)
    except no_telemetry as exc:
        fail(str(exc), EXIT_NO_TELEMETRY)
    except (ExecutorError, StoreError, bad_window) as exc:
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    if as_json:
        out = {k: (v.isoformat() if isinstance(v, datetime) else v)
               for k, v in asdict(summary).items()}
        click.echo(json.dumps({"replay": out, "incidents": [
            i.as_json(r) for r, i in enumerate(incidents, 1)]}, indent=2, default=str))
        _exit_for(incidents)
        return
    s = summary
    if s.status == "ok":
        click.echo(f"replay   {s.windows} windows of {s.window_s:g} s, {s.t_from} .. {s.t_to}; "
                   f"{s.planes} plane(s), {s.tiers} tiers, {s.ports} ports; {s.rows} rows in "
                   f"expected_ports ({s.seconds:.1f} s)")
    else:
        click.echo(f"replay   {s.status}: {s.note}; detectors ran on the telemetry alone")
    _print_incidents([i.as_json(r) for r, i in enumerate(incidents, 1)])
    _exit_for(incidents)


@command()
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--db", default=None,
              help="DuckDB store (or lake) holding this bundle and no other [default: "
                   "$FABTWIN_DB, else BUNDLE-NAME.fabtwin.duckdb here, one per bundle].")
@window_options
@click.option("--json", "as_json", is_flag=True, help="Print the ranked incidents as one JSON object.")
@quiet_option
def investigate(bundle: Path, db: str | None, t_from, t_to, window_s, as_json: bool,
                quiet: bool) -> None:
    """Ingest BUNDLE, replay it through the twin, diagnose it and print the ranked incidents.

    Exit 0 healthy, 5 incidents found, 6 no telemetry in the bundle (or the window), 2 a bad
    bundle or a store that holds another bundle.
    """
    from collectors.store.ingest import BundleError
    from collectors.store.writer import StoreError
    from replay.investigate import OtherBundles
    from replay.investigate import investigate as run_investigation

    check_order(t_from, t_to)
    if not bundle.exists():  # before a store is made for it
        fail(f"{bundle}: no such bundle")
    db = bundle_store(bundle, db)
    new_store = not Path(db).exists()
    no_telemetry, bad_window = _diagnosis_failures()
    try:
        with progress(quiet, f"investigate {bundle}") as steps:
            result = run_investigation(bundle, db, t_from, t_to, window_s,
                                       ingest_progress=steps.ingest, step=steps.step)
    except no_telemetry as exc:
        remove_new_store(db, new_store)
        fail(str(exc), EXIT_NO_TELEMETRY)
    except (BundleError, StoreError, OtherBundles, bad_window) as exc:
        remove_new_store(db, new_store)
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    else:
        w = result["window"]
        click.echo(f"store    {result['store']}")
        click.echo(f"bundle   {result['bundle']}")
        click.echo(f"window   {w['start']} .. {w['end']}")
        _print_incidents(result["incidents"])
    _exit_for(result["incidents"])


def _print_incidents(incidents: list[dict]) -> None:
    """Each incident: its header, summary, evidence (the first rows) and impact, at 80 columns."""
    from fabtwin.incident_text import incident_lines

    if not incidents:
        click.echo("healthy: no incident found")
        return
    for inc in incidents:
        click.echo("\n".join(incident_lines(inc)))
