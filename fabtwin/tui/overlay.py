"""Several series of one counter on one time axis, as text: the incident's ports drawn bright
over their peers (dim), the fault window shaded. The drill-down's plot (screens/drill.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text

from fabtwin.tui.counts import plural
from fabtwin.tui.data import Series
from fabtwin.tui.plot import AXIS, _columns, merge_spans, shaded_columns
from fabtwin.units import axis_number, unit_of

# the incident's own ports, in order (a link's two ends); peers share one dim style, since
# what matters is whether the incident's ports leave the band the peers draw
END_STYLES = (("●", "bold cyan"), ("◆", "bold magenta"), ("▲", "bold green"), ("■", "bold yellow"))
PEER_MARK, PEER_STYLE = "·", "grey62"
SHADE = " on #5f0000"


@dataclass
class Line:
    """One series of the overlay: a port's counter and whether it is the incident's own."""

    label: str
    series: Series
    own: bool


def render_overlay(lines: list[Line], width: int, height: int, view: tuple[datetime, datetime],
                   fault: tuple[datetime | None, datetime | None] | None = None,
                   title: str = "") -> Text:
    """The overlay as Rich text: `height` rows over [view[0], view[1]], a time axis with the
    fault window marked (readable without colour), and a legend."""
    out = Text()
    if title:
        out.append(title + "\n", style="bold")
    full, width = width, max(10, width - AXIS - 1)
    t0, t1 = view[0].timestamp(), view[1].timestamp()
    span = max(t1 - t0, 1e-6)
    cols = []
    for line in lines:
        inside = [(t, v) for t, v in zip(line.series.ts, line.series.observed, strict=True)
                  if t0 <= t.timestamp() <= t1]
        cols.append(_held(_columns([t for t, _ in inside], [v for _, v in inside], t0, span,
                                   width, hold=True), inside, t0, span, width))
    values = [v for c in cols for v in c if v is not None]
    if not values:
        out.append("no samples for this counter in this range\n", style="dim")
        return out
    top = max(values) or 1.0
    shade = shaded_columns(fault, t0, span, width)
    grid: list[list[tuple[str, str] | None]] = [[None] * width for _ in range(height)]
    # peers first, then the incident's own ports over them (the last end drawn wins a cell)
    order = [i for i, ln in enumerate(lines) if not ln.own] + \
        [i for i, ln in enumerate(lines) if ln.own]
    ends = {i: END_STYLES[k % len(END_STYLES)]
            for k, i in enumerate(i for i, ln in enumerate(lines) if ln.own)}
    for i in order:
        mark = ends.get(i, (PEER_MARK, PEER_STYLE))
        for c, v in enumerate(cols[i]):
            if v is not None:
                grid[min(height - 1, max(0, round(v / top * (height - 1))))][c] = mark
    for row in range(height - 1, -1, -1):
        label = axis_number(lines[0].series.counter, top * row / (height - 1)) \
            if row in (height - 1, (height - 1) // 2, 0) else ""
        out.append(f"{label:>{AXIS}}│", style="dim")
        for c in range(width):
            bg = SHADE if shade[c] else ""
            cell = grid[row][c]
            out.append(cell[0] if cell else " ", style=(cell[1] if cell else "") + bg)
        out.append("\n")
    out.append(" " * AXIS + "└", style="dim")
    for c in range(width):
        out.append("▀", style="bold red") if shade[c] else out.append("─", style="dim")
    out.append("\n")
    left, right = view[0].strftime("%m-%d %H:%M:%S"), view[1].strftime("%H:%M:%S")
    out.append(" " * (AXIS + 1) + left + " " * max(1, width - len(left) - len(right)) + right
               + "\n", style="dim")
    _legend(out, lines, ends, fault is not None and fault[0] is not None, full)
    return merge_spans(out)


def _legend(out: Text, lines: list[Line], ends: dict[int, tuple[str, str]], fault: bool,
            width: int) -> None:
    """The legend on one line of `width`: under the plot, else from the left edge, else with
    single spaces between its items (a 64-port leaf's two long port ids at 80 columns)."""
    items = [(f"{unit_of(lines[0].series.counter)}", "dim")]
    items += [(f"{ends[i][0]} {ln.label}", ends[i][1]) for i, ln in enumerate(lines) if ln.own]
    peers = sum(1 for ln in lines if not ln.own)
    if peers:
        items.append((f"{PEER_MARK} {plural(peers, 'peer')}", PEER_STYLE))
    if fault:
        items.append(("▀▀ incident", ""))
    gap = 2 if sum(len(t) for t, _ in items) + 2 * (len(items) - 1) <= width else 1
    size = sum(len(t) for t, _ in items) + gap * (len(items) - 1)
    out.append(" " * max(0, min(AXIS + 1, width - size)), style="dim")
    for k, (text, style) in enumerate(items):
        if text.startswith("▀▀"):  # the mark as the axis shades the incident's window
            out.append("▀▀", style="bold red" + SHADE)
            out.append(text[2:])
        else:
            out.append(text, style=style)
        if k < len(items) - 1:
            out.append(" " * gap, style=style)


def _held(cols: list[float | None], inside: list, t0: float, span: float,
          width: int) -> list[float | None]:
    """`cols` (each sample's rate held until the next) cut after the last sample: a port that
    stopped reporting is not drawn as if it went on."""
    if not inside:
        return cols
    last = min(width - 1, int((inside[-1][0].timestamp() - t0) / span * width))
    return cols[:last + 1] + [None] * (width - last - 1)
