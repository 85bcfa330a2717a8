"""Outages merged across the ends of a cable or the ports of an incident: the replay, the
detectors and the report count the same seconds down. Plain Python: the TUI may import it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime


def merge_outages(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """Down intervals (start, end) of one cable or of a set of ports as disjoint outages, in
    time order: both ends report each transition, a little apart, so intervals that overlap or
    touch are one outage (down while either end says so)."""
    merged: list[list[datetime]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]
