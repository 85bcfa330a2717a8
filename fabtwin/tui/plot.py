"""A counter over time in text cells: observed as bars, the twin's expectation as a line, the
fault window shaded. Drawn with block characters, so it needs no plotting dependency and reads
the same in a snapshot, over ssh and at 80 columns."""

from __future__ import annotations

from datetime import datetime

from rich.text import Span, Text

from fabtwin.tui.data import Series
from fabtwin.units import axis_number, rate, unit_of

BLOCKS = " ▁▂▃▄▅▆▇█"
AXIS = 9  # width of the y labels


def plot_height(screen_rows: int) -> int:
    """Bar rows of a screen's main plot: 8 on a tall terminal, fewer below 26 rows, so that the
    tables under it keep rows at 80x24 (the plot adds 4 lines: title, axis, times, legend)."""
    return max(2, min(8, screen_rows - 18))


def merge_spans(text: Text) -> Text:
    """`text` with adjacent spans of one style made one: the plots are built a cell at a time,
    and Textual converts Rich text span by span (a plot of 1,000 spans took 100 ms)."""
    spans: list[Span] = []
    for span in sorted(text.spans, key=lambda s: s.start):
        last = spans[-1] if spans else None
        if last is not None and last.end == span.start and last.style == span.style:
            spans[-1] = Span(last.start, span.end, span.style)
        else:
            spans.append(span)
    text.spans = spans
    return text


def _columns(ts: list[datetime], values: list[float | None], t0: float, span: float,
             width: int, hold: bool) -> list[float | None]:
    """Max of the values falling in each of `width` columns; `hold` repeats a value until the
    next one (a sample's rate, and a replay window's expectation, last until the next)."""
    cols: list[float | None] = [None] * width
    for t, v in zip(ts, values, strict=True):
        if v is None:
            continue
        c = min(width - 1, max(0, int((t.timestamp() - t0) / span * width)))
        cols[c] = v if cols[c] is None else max(cols[c], v)
    if hold:
        last = None
        for c in range(width):
            last = cols[c] if cols[c] is not None else last
            cols[c] = last
    return cols


def shaded_columns(fault: tuple[datetime | None, datetime | None] | None, t0: float, span: float,
                   width: int) -> list[bool]:
    """Which of `width` columns over [t0, t0 + span] (epoch s) the fault window covers, half a
    column of slack each side so a short window still shows; a window without an end lasts."""
    if not fault or fault[0] is None:
        return [False] * width
    f0 = fault[0].timestamp()
    f1 = fault[1].timestamp() if fault[1] is not None else t0 + span
    half = span / width / 2
    return [f0 - half <= t0 + (c + 0.5) / width * span <= f1 + half for c in range(width)]


def render_plot(series: Series, width: int, height: int = 8,
                fault: tuple[datetime | None, datetime | None] | None = None,
                title: str = "") -> Text:
    """The plot as Rich text of `height` rows plus a time axis and a legend."""
    out = Text()
    if title:
        out.append(title + "\n", style="bold")
    width = max(10, width - AXIS - 1)
    times = series.ts + series.expected_ts
    if not times:
        out.append("no samples for this counter\n", style="dim")
        return out
    if fault and fault[0] is not None:
        times = times + [t for t in fault if t is not None]
    t0, t1 = min(times).timestamp(), max(times).timestamp()
    span = max(t1 - t0, 1e-6)
    obs = _columns(series.ts, series.observed, t0, span, width, hold=True)
    exp = _columns(series.expected_ts, series.expected, t0, span, width, hold=True) \
        if series.expected else [None] * width
    top = max([v for v in obs + exp if v is not None] or [0.0]) or 1.0
    shade = shaded_columns(fault, t0, span, width)
    for row in range(height, 0, -1):
        label = axis_number(series.counter, top * row / height) if row in (height, (height + 1) // 2) else ""
        out.append(f"{label:>{AXIS}}│", style="dim")
        for c in range(width):
            bg = " on #5f0000" if shade[c] else ""
            v, e = obs[c], exp[c]
            eighths = 0 if v is None else round(v / top * height * 8)
            fill = min(8, max(0, eighths - (row - 1) * 8))
            if e is not None and round(e / top * height - 0.5) == row - 1:
                out.append("━", style="bold yellow" + bg)
            else:
                out.append(BLOCKS[fill], style="cyan" + bg)
        out.append("\n")
    out.append(" " * AXIS + "└", style="dim")
    for c in range(width):  # the fault window marked on the axis too (readable without colour)
        out.append("▀", style="bold red") if shade[c] else out.append("─", style="dim")
    out.append("\n")
    left = min(times).strftime("%m-%d %H:%M:%S")
    right = max(times).strftime("%H:%M:%S")
    out.append(" " * (AXIS + 1) + left + " " * max(1, width - len(left) - len(right)) + right + "\n",
               style="dim")
    out.append(" " * (AXIS + 1))
    out.append(f"▆ observed ({unit_of(series.counter)})", style="cyan")
    if series.expected:
        out.append("  ━ expected (twin)", style="bold yellow")
    if fault and fault[0] is not None:
        out.append("  ", style="")
        out.append("▀▀▀", style="bold red on #5f0000")
        out.append(" fault window")
    return merge_spans(out)


def render_sparklines(series: list[Series], width: int) -> Text:
    """One line per counter over a shared time axis: name, a sparkline, its peak."""
    out = Text()
    times = [t for s in series for t in s.ts]
    if not times:
        out.append("no counters for this entity in this hour", style="dim")
        return out
    t0, t1 = min(times).timestamp(), max(times).timestamp()
    label = max(len(s.counter) for s in series) + 1
    cols = max(10, width - label - 13)
    for s in series:
        out.append(f"{s.counter:<{label}}", style="bold")
        values = _columns(s.ts, s.observed, t0, max(t1 - t0, 1e-6), cols, hold=True)
        peak = max([v for v in values if v is not None] or [0.0])
        for v in values:
            if v is None:
                out.append(" ")
            elif not v or not peak:
                out.append("▁", style="dim")  # a flat zero, not a gap in the data
            else:
                out.append(BLOCKS[max(1, round(v / peak * 8))], style="cyan")
        out.append(f" {rate(s.counter, peak if s.ts else None):>12}\n", style="dim")
    return merge_spans(out)
