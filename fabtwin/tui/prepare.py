"""`fabtwin tui BUNDLE`: ingest the bundle and diagnose it, so the store holds its incidents."""

from __future__ import annotations

from pathlib import Path


def prepare_bundle(bundle: str | Path, db: str | Path) -> int:
    """Ingest and investigate `bundle` into `db` (`replay.investigate.investigate` stores the
    replay and the incidents); returns the number of incidents found."""
    from replay.investigate import investigate

    return len(investigate(bundle, db)["incidents"])
