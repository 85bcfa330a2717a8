"""What Just Happened drops on a port's drill-down: each aggregate the switch reported (packets,
reason, severity, its first and last drop), newest first (StoreData.drops_of)."""

from __future__ import annotations

from datetime import datetime

from fabtwin.tui.counts import plural
from fabtwin.tui.records import wjh_fields
from fabtwin.tui.rowgrid import KeyedGrid
from fabtwin.units import count


def _when(t: datetime | None) -> str:
    return f"{t:%m-%d %H:%M:%S}" if t else "-"


def drop_text(message: str | None) -> str:
    """A drop event's record as one line for the events table: `Source MAC is multicast,
    Error, 283 packets` (the parts the record has); a message that is not a record: its text."""
    reason, severity, n, _first, _last = wjh_fields(message)
    packets = None if n is None else f"{count(n)} packet{'' if n == 1 else 's'}"
    return ", ".join(p for p in (reason, severity, packets) if p)


def fill_drops(table: KeyedGrid, rows: list[tuple]) -> None:
    """`rows` (drops_of's) into `table`; the table hides when the ports reported none."""
    # packets before the reason: at 80 columns a long reason would push the count off screen
    table.set_rows(["reported", "port", "packets", "reason", "severity", "first", "last"],
                   [(_when(ts), port, "-" if n is None else count(n), reason or "", severity or "",
                     _when(first), _when(last))
                    for ts, port, reason, severity, n, first, last in rows],
                   [f"{i}|port|{r[1]}" for i, r in enumerate(rows)])
    total = sum(r[4] or 0 for r in rows)
    table.border_title = (f"What Just Happened: {plural(len(rows), 'drop report')}, "
                          f"{plural(round(total), 'packet')}")
    table.display = bool(rows)
