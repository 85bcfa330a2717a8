"""`fabtwin check`: the fabric against its design (cabling, rails, link ends, PFC/ECN) before
anyone reads an incident. Exit 0 clean, 5 findings (`EXIT_INCIDENTS`), 2 usage or input."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from fabtwin.commands.common import (
    DEFAULT_DB,
    EXIT_INCIDENTS,
    bundle_store,
    command,
    fail,
    progress,
    quiet_option,
    remove_new_store,
    resource_errors,
    store_failure,
)


@command()
@click.argument("bundle", required=False, type=click.Path(path_type=Path))
@click.option("--db", default=None,
              help="DuckDB store (or lake) [default: with BUNDLE as investigate picks it "
                   "(BUNDLE-NAME.fabtwin.duckdb here), without it $FABTWIN_DB or "
                   f"{DEFAULT_DB}].")
@click.option("--json", "as_json", is_flag=True,
              help="Print the findings as one JSON list of {check, severity, entities, "
                   "evidence, summary}.")
@quiet_option
def check(bundle: Path | None, db: str | None, as_json: bool, quiet: bool) -> None:
    """Check the fabric against the rail-optimized multiplane design the twin infers.

    With BUNDLE, ingests it first (reusing what the store has; a store holding another bundle
    is refused). Checks: host NICs on another rail's (or server group's) leaf, missing or
    extra cables against their peers, planes of another shape, link ends disagreeing on speed
    or MTU, pause or ECN counters that never move where the peers' do. One line per finding; the findings replace the store's check_findings table.
    Exit 0 clean, 5 findings, 2 bad invocation, no such bundle or store.
    """
    from collectors.store.ingest import BundleError
    from collectors.store.writer import StoreError
    from replay.checks import describe, run_checks, store_findings
    from replay.investigate import OtherBundles, ingest_alone
    from replay.results import CHECK_DDL, CHECK_TABLES

    if bundle is not None:
        if not bundle.exists():
            fail(f"{bundle}: no such bundle")
        db = bundle_store(bundle, db)
        new_store = not Path(db).exists()
    else:
        new_store = False
        db = db or DEFAULT_DB
        if not Path(db).exists():
            fail(f"{db}: no such store (fabtwin check BUNDLE, or fabtwin ingest BUNDLE --db {db} "
                 "first)")
    from collectors.store.lake import open_for_replay

    try:
        with progress(quiet, f"check {bundle or db}") as steps:
            if bundle is not None:
                ingest_alone(bundle, db, steps.ingest)
            steps.step("check")
            with open_for_replay(db, CHECK_TABLES, CHECK_DDL) as con:
                checked = run_checks(con)
                store_findings(con, checked.findings, datetime.now(UTC).replace(tzinfo=None))
    except (BundleError, StoreError, OtherBundles) as exc:
        remove_new_store(db, new_store)  # a store made for a bundle that could not be read goes
        fail(str(exc))
    except resource_errors() as exc:
        store_failure(db, exc)
    findings = checked.findings
    if as_json:
        click.echo(json.dumps([f.as_json() for f in findings], indent=2, default=str))
    else:
        c = checked
        cabling = (f"{c.cables} cables in {c.planes} plane(s)" if c.cables
                   else f"{c.rows} cabling rows, not a fabric" if c.rows
                   else "no cabling (ingest LLDP or containerlab for the cabling checks)")
        click.echo(f"checked  {cabling}; {c.speeds} ports report a speed, {c.mtus} an MTU")
        click.echo(describe(findings) if findings else "clean: no finding")
    if findings:
        sys.exit(EXIT_INCIDENTS)
