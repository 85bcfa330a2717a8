"""What a report holds: built by build.py, rendered by html.py (neither imports the other's
module for it, so the two stay free of an import cycle)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from fabtwin.report import data


@dataclass
class Picture:
    """One figure of the report; `snapshot` is the heatmap's data (per cable), for readers and tests."""

    name: str  # file name in the output directory
    title: str
    caption: str
    png: bytes
    rank: int | None = None  # the incident it belongs to
    snapshot: pl.DataFrame | None = None


@dataclass
class Report:
    """A store's summary, ranked incidents, pictures and notes, as the page shows them."""

    db: str
    summary: data.Summary
    incidents: list[data.IncidentRow]
    source: str  # stored | computed | undiagnosed | empty (data.incidents)
    pictures: list[Picture] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    window_s: int | None = None
    explanations: dict[int, dict] = field(default_factory=dict)  # by rank (issue 17)
    seconds: float = 0.0
