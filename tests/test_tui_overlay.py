"""The incident drill-down's overlay (fabtwin/tui/overlay.py) keeps its legend on one line."""

from __future__ import annotations

from datetime import datetime, timedelta

from fabtwin.tui.data import Series
from fabtwin.tui.overlay import Line, render_overlay
from fabtwin.tui.plot import AXIS


def test_the_legend_of_a_64_port_leafs_long_ids_stays_on_one_line_at_80_columns():
    t0 = datetime(2026, 11, 30, 3, 0)
    ts = [t0 + timedelta(seconds=45 * k) for k in range(20)]
    own = ["leaf-p0-17:swp33", "spine-p0-05:swp17"]
    lines = [Line(p, Series("tx_bytes_per_s", ts, [1e10 * (k % 3) for k in range(20)]), True)
             for p in own]
    lines += [Line(f"leaf-p0-17:swp{34 + i}", Series("tx_bytes_per_s", ts, [1.6e10] * 20),
                   False) for i in range(31)]
    fault = (ts[5], ts[9])
    for width in (78, 118):  # the drill screen's plot at 80 and 120 columns
        text = render_overlay(lines, width, 6, (ts[0], ts[-1]), fault).plain
        rows = text.rstrip("\n").split("\n")
        assert max(len(r) for r in rows) <= width
        legend = rows[-1]
        assert all(p in legend for p in own) and "31 peers" in legend
        assert legend.endswith("▀▀ incident")
    # where it fits, it starts under the plot as before
    assert render_overlay(lines, 118, 6, (ts[0], ts[-1]), fault).plain.rstrip("\n") \
        .split("\n")[-1].startswith(" " * (AXIS + 1) + "Gb/s  ●")
