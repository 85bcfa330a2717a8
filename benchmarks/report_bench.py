"""Time `fabtwin report` on a store, phase by phase, and print it.

    python benchmarks/report_bench.py --db STORE.duckdb [--out DIR] [--top 5]

Phases: summary and incidents (the detectors run here when no diagnosis is stored), the fabric
layout, the per-window utilization table, then the whole build (pictures included) and the page.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from collectors.store.writer import open_readonly
from fabtwin.report import data
from fabtwin.report.build import build, write


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--diagnose", action="store_true", help="run the detectors when none stored")
    args = ap.parse_args()
    con = open_readonly(args.db)
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        print(f"{name:<28} {now - t:7.2f} s")
        t = now

    s = data.summary(con)
    lap("summary")
    incs, source = data.incidents(con, s, args.diagnose)
    lap(f"incidents ({source})")
    data.cache_down_intervals(con)
    lap("down intervals")
    lay = data.layout(con)
    lap("layout (twin.discover)")
    if not isinstance(lay, str) and not s.empty:
        width = data.window_seconds(s.start, s.end, data.sample_interval(con))
        lap("sample interval")
        win = data.Windows(con, lay, s.start, width)
        lap(f"port windows ({width} s)")
        w = win.busiest()
        lap("busiest window")
        win.snapshot(w)
        lap("one snapshot")
        data.timeline(con, sorted(lay.cables["dev_lo"].unique())[:6], s.start, s.end)
        lap("timeline of 6 devices")
    con.close()
    print(f"store: {s.samples:,} samples, {s.switches} switches, {s.hosts} hosts, {len(incs)} incidents")
    t0 = time.perf_counter()
    rep = build(args.db, top=args.top, diagnose_now=args.diagnose)
    built = time.perf_counter() - t0
    out = args.out or Path(tempfile.mkdtemp(prefix="report_bench_"))
    page = write(rep, out)
    total = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"build {built:.2f} s, page written {total:.2f} s: {len(rep.pictures)} pictures, "
          f"{page.stat().st_size / 1024:.0f} KiB, peak RSS {rss:.0f} MiB -> {page}")


if __name__ == "__main__":
    main()
