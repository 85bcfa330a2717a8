"""One way to write a rate: Gb/s for link rates, per second with thousands separators for
counts, in the TUI (plots, heatmap, evidence), the report and `investigate`'s text."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from fabtwin.cli import main
from fabtwin.incident_text import evidence_line, impact_line, incident_lines
from fabtwin.tui.data import Series
from fabtwin.tui.plot import render_plot, render_sparklines
from fabtwin.tui.screens.fabric import cell
from fabtwin.units import field, link_rate, per_second, rate

pytest_plugins = ["tui_fixtures"]

T0 = datetime(2026, 11, 30, 3, 0, 0)
TWO_FAULTS = Path(__file__).resolve().parents[1] / "sample_traces" / "two_faults"


def test_link_rates_in_gbps_and_counts_per_second_with_separators():
    assert link_rate(13.3e9) == "106.4 Gb/s"
    assert rate("tx_bytes_per_s", 50e9) == "400.0 Gb/s"
    assert rate("tx_pause_per_s", 25217.192646228243) == "25,217/s"
    assert per_second(3.5) == "3.5/s" and per_second(0) == "0/s"
    assert field("tx_pause_per_s_peak", 25217.192646228243) == "25,217/s"
    assert field("capacity_lost_gbps", 100.5) == "100.5 Gb/s"
    assert field("intervals", 6) == "6"
    assert field("rx_bytes_per_s_peak", 1.25e9) == "10.0 Gb/s"


def test_no_value_is_written_in_scientific_notation():
    for exponent in range(-2, 13):
        for mantissa in (1.0, 2.5217, 9.99):
            v = mantissa * 10 ** exponent
            for key in ("tx_pause_per_s", "tx_bytes_per_s", "count", "x_gbps"):
                assert "e+" not in field(key, v) and "e-" not in field(key, v), (key, v)


def test_evidence_and_impact_lines_use_the_units():
    ev = {"port": "gpu-node-0011:eth0", "tx_pause_per_s_peak": 25217.19, "intervals": 6,
          "down_at": "2026-11-30T03:02:00.099Z"}
    assert evidence_line(ev, "2026-11-30") == (
        "port=gpu-node-0011:eth0  tx_pause_per_s_peak=25,217/s  intervals=6  down_at=03:02:00.099Z")
    assert impact_line({"jobs": ["1000"], "capacity_lost_gbps": 100.5, "links": []}) == \
        "jobs 1000; capacity lost 100.5 Gb/s"


def test_heatmap_cells_of_one_label_have_one_colour():
    """24.6% and 25.4% both read 25: they were drawn in two colours (the scale's 25% step)."""
    below, above = cell(0.246, "up"), cell(0.254, "up")
    assert below.plain == above.plain == " 25 "
    assert str(below.style) == str(above.style)
    assert str(cell(0.244, "up").style) != str(below.style)  # 24 is the colour below


def test_plot_axis_and_sparkline_peak_in_the_counters_unit():
    ts = [T0 + timedelta(seconds=10 * i) for i in range(20)]
    load = Series("tx_bytes_per_s", ts, [12.5e9] * 20)
    text = render_plot(load, 80, height=4).plain
    assert "100.0│" in text and "observed (Gb/s)" in text and "G│" not in text
    pauses = Series("tx_pause_per_s", ts, [25217.19] * 20)
    assert "25,217│" in render_plot(pauses, 80, height=4).plain
    sparks = render_sparklines([load, pauses], 80).plain
    assert "100.0 Gb/s" in sparks and "25,217/s" in sparks


def test_incident_lines_fit_80_columns_and_carry_evidence_and_impact():
    inc = {"rank": 2, "kind": "pfc_storm", "root_cause": {"type": "port", "id": "gpu-node-0011:eth0"},
           "start": "2026-11-30T03:06:49.830Z", "end": "2026-11-30T03:07:39.756Z", "score": 0.9,
           "summary": "gpu-node-0011:eth0 keeps sending pause frames (25217/s) and pauses 2 "
                      "port(s) upstream",
           "evidence": [{"port": f"leaf-p0-0{i}:swp{i}", "tx_pause_per_s_peak": 1e4 + i}
                        for i in range(7)],
           "impact": {"paused_ports": ["gpu-node-0010:eth0", "leaf-p0-03:swp3"], "jobs": ["1000"]}}
    lines = incident_lines(inc)
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("#2 pfc_storm") and lines[1] == \
        "   2026-11-30T03:06:49.830Z .. 03:07:39.756Z"
    assert "   evidence (7):" in lines
    assert "     port=leaf-p0-00:swp0  tx_pause_per_s_peak=10,000/s" in lines
    assert "     ... 2 more (--json, or SQL: incident_evidence)" in lines
    assert lines[-1] == "   impact: paused ports gpu-node-0010:eth0, leaf-p0-03:swp3; jobs 1000"


def test_investigate_prints_each_incidents_evidence_and_impact(two_faults_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(two_faults_db, db)
    out = CliRunner().invoke(main, ["investigate", str(TWO_FAULTS), "--db", str(db), "-q"])
    assert out.exit_code == 5, out.output
    lines = out.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines[3:]), lines
    flap = lines.index(next(x for x in lines if x.startswith("#1 link_flap")))
    assert lines[flap + 3] == "   evidence (6):"
    assert lines[flap + 4].startswith("     port=spine-p0-01:swp2  down_at=03:02:00.099Z")
    assert "   impact: jobs 1000; plane plane-0; capacity lost 100.5 Gb/s; rerouted links" in lines
    # the storm's root row (replay.roots: role, share of the full-pause rate, the counter that
    # saw it), wrapped at 80 columns under its indent
    root = lines.index("     port=gpu-node-0011:eth0  role=root  tx_pause_per_s_peak=25,217/s")
    assert lines[root + 1] == "       paused_share=1  intervals=6  seen_as=its own tx_pause counter"
