"""`fabtwin tui`: the click command, kept light (Textual is imported only when it runs)."""

from __future__ import annotations

from pathlib import Path

import click

from fabtwin.commands.common import (
    DEFAULT_DB,
    EXIT_NO_TELEMETRY,
    bundle_store,
    command,
    fail,
    remove_new_store,
)


@command()
@click.argument("bundle", required=False, type=click.Path(path_type=Path))
@click.option("--db", default=None,
              help="DuckDB store (a BUNDLE is ingested and diagnosed into it first) [default: "
                   "with BUNDLE, $FABTWIN_DB, else BUNDLE-NAME.fabtwin.duckdb here, as "
                   f"investigate; without, {DEFAULT_DB}].")
def tui(bundle: Path | None, db: str | None) -> None:
    """Investigate a store in a terminal UI: incidents, fabric heatmap, events, SQL, checks.

    Keys: 1-5 (or F2-F6) switch screens, / filters, Enter drills down, Esc goes back (in the
    SQL editor Esc leaves it first), ? lists every key, Ctrl+P opens the command palette.
    """
    from collectors.store.ingest import BundleError
    from collectors.store.writer import StoreError

    if bundle is not None and not bundle.exists():  # before a store is made for it
        fail(f"{bundle}: no such bundle")
    if bundle is not None:
        from fabtwin.tui.prepare import prepare_bundle
        from replay.investigate import NoTelemetry, OtherBundles, WindowError

        # the store investigate would use: one per bundle, so that a second bundle opened
        # here never lands in (and is refused by) the first one's store
        db = bundle_store(bundle, db)
        click.echo(f"ingesting and diagnosing {bundle} into {db}...", err=True)
        new_store = not Path(db).exists()
        try:
            prepare_bundle(bundle, db)
        except NoTelemetry as exc:
            remove_new_store(db, new_store)
            fail(str(exc), EXIT_NO_TELEMETRY)
        except (BundleError, StoreError, OtherBundles, WindowError) as exc:
            remove_new_store(db, new_store)
            fail(str(exc))
    db = db or DEFAULT_DB
    if not Path(db).exists():
        fail(f"{db}: no such store (give a BUNDLE, or run `fabtwin ingest BUNDLE --db {db}`)")
    from fabtwin.tui.app import FabtwinApp

    try:
        app = FabtwinApp(db)
    except StoreError as exc:
        fail(str(exc))
    app.run()
