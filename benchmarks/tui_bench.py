"""How fast `fabtwin tui` opens and switches screens on a big store, driven by Pilot.

    python benchmarks/tui_bench.py [--db /tmp/tui_bench.duckdb] [--samples 20000000]

Builds the store when it is missing: `sample_traces/two_faults` ingested and investigated
(incidents, replay windows, cabling, events, jobs), then its samples copied forward in time,
one copy per 10 minutes of trace, until the store holds --samples samples (same fabric and
counters, so every query the UI makes scans realistic data; only the first 10 minutes hold the
faults). Then, each in the same process:

- first paint in a real terminal: `fabtwin tui --db DB` started in tmux until the incidents
  table is on screen (process start, imports, store open, first paint), three runs;
- import: importing the app module (Textual and the screens);
- open: from constructing the app to the incidents table filled;
- first visit and return to each screen (2 Fabric, 3 Events, 4 SQL, 1 Incidents), timed from
  the key press to the screen showing its data (the fabric heatmap drawn, the events listed);
- incident detail and drill-down (Enter, r) to the plot drawn;
- SQL over all samples: first page, and 20 more pages fetched by scrolling.

Prints the figures; run by hand, never from the tests. Budget (issue 6): open <= 1.5 s,
screen switch <= 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "sample_traces" / "two_faults"


def build_store(db: Path, samples: int) -> None:
    """two_faults investigated, then its samples repeated forward in time up to `samples`."""
    import duckdb

    from fabtwin.tui.prepare import prepare_bundle

    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.duckdb"
        prepare_bundle(BUNDLE, small)
        shutil.copy(small, db)
    con = duckdb.connect(str(db))
    con.execute("SET preserve_insertion_order = true")
    base, t0, t1 = con.execute("SELECT count(*), min(ts), max(ts) FROM samples").fetchone()
    period = int((t1 - t0).total_seconds()) + 1
    copies = -(-samples // base) - 1
    t = time.perf_counter()
    # one copy at a time keeps the table in time order, so min/max zone maps prune ts ranges
    for k in range(1, copies + 1):
        con.execute("INSERT INTO samples SELECT ts + to_seconds(?::BIGINT), device, ifname, counter, "
                    "metric, qualifier, value, file_id, line FROM samples "
                    "WHERE ts <= ?", [k * period, t1])
    con.execute("CHECKPOINT")
    n = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    con.close()
    print(f"built {db}: {n:,} samples ({copies + 1} copies of two_faults' {base:,}) "
          f"in {time.perf_counter() - t:.1f} s")


async def _until(pilot, ready, timeout: float = 30.0, what: str = "") -> None:
    """Wait until `ready()` is true (polled between Textual's message processing)."""
    t = time.perf_counter()
    while not ready():
        if time.perf_counter() - t > timeout:
            raise TimeoutError(f"{what or 'the screen'} did not get ready in {timeout} s")
        await pilot.pause(0.005)


class Clock:
    """Wall time and this process's CPU time (all threads) since start(): the machine this
    runs on is shared, so the CPU time is the better estimate of the wall time on an idle one."""

    def __init__(self) -> None:
        self.figures: dict[str, tuple[float, float]] = {}

    def start(self) -> None:
        self.t, self.c = time.perf_counter(), time.process_time()

    def stop(self, name: str) -> None:
        self.figures[name] = (time.perf_counter() - self.t, time.process_time() - self.c)


async def measure(db: Path) -> dict[str, tuple[float, float]]:
    clock = Clock()
    clock.start()
    from textual.widgets import DataTable

    from fabtwin.tui.app import FabtwinApp
    from fabtwin.tui.results import PAGE, ResultsGrid
    clock.stop("import the app (Textual, screens)")

    def rows(selector: str):
        return lambda: len(app.screen.query(selector)) > 0 and \
            app.screen.query_one(selector, DataTable).row_count > 0

    clock.start()
    app = FabtwinApp(str(db))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, rows("#incidents"), what="incidents")
        clock.stop("open: incidents shown")
        await pilot.pause(1.0)  # the user reads; the fabric is discovered in the background
        for visit in ("first", "again"):
            for key, name, ready in (("2", "fabric", rows("#heatmap")),
                                     ("3", "events", rows("#events")),
                                     ("4", "sql", lambda: len(app.screen.query("#editor")) > 0),
                                     ("f2", "incidents", rows("#incidents"))):
                clock.start()
                await pilot.press(key)
                await _until(pilot, ready, what=name)
                clock.stop(f"switch to {name} ({visit})")
        clock.start()
        await pilot.press("x")  # a key nothing binds: Pilot's own cost per press
        clock.stop("a key press that does nothing")
        await pilot.press("2")
        await pilot.pause()

        def head() -> str:
            return str(app.screen.query_one("#head").render())

        before = head()
        clock.start()
        await pilot.press("left_square_bracket")
        await _until(pilot, lambda: head() != before and "..." not in head(), what="window")
        clock.stop("fabric: step a window")
        await pilot.press("1")
        clock.start()
        await pilot.press("enter")
        await _until(pilot, lambda: len(app.screen.query("#plot")) > 0
                     and app.screen.series is not None, what="incident")
        clock.stop("incident detail, plot drawn")
        clock.start()
        await pilot.press("r")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntityScreen"
                     and app.screen.series is not None, what="drill-down")
        clock.stop("drill-down on the root cause, plot drawn")
        await pilot.press("escape", "escape", "f5")
        app.screen.query_one("#editor").text = "SELECT * FROM samples"
        grid = app.screen.query_one(ResultsGrid)
        clock.start()
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: grid.row_count > 0, what="sql")
        clock.stop("sql: first page of SELECT * FROM samples")
        grid.focus()
        target = grid.row_count + 20 * PAGE
        clock.start()
        for _ in range(200):
            if grid.row_count >= target:
                break
            await pilot.press("ctrl+end")
        else:
            raise TimeoutError(f"scrolling fetched only {grid.row_count} rows")
        clock.stop("sql: 20 more pages by scrolling (all 20)")
        held = grid.row_count
    print(f"sql result rows held by the grid after scrolling: {held:,}")
    return clock.figures


def first_paint_in_a_terminal(db: Path, runs: int = 3) -> list[float]:
    """Seconds from starting `fabtwin tui --db DB` in a real terminal (tmux, 120x40) to the
    incidents table on screen: process start, imports, store open and first paint."""
    if shutil.which("tmux") is None:
        return []
    fabtwin = Path(sys.executable).parent / "fabtwin"
    times = []
    for i in range(runs):
        name = f"tui_bench_{os.getpid()}_{i}"
        t = time.perf_counter()
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                        f"{fabtwin} tui --db {db}"], check=True)
        try:
            while time.perf_counter() - t < 30:
                screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name],
                                        capture_output=True, text=True).stdout
                if "root cause" in screen and "score" in screen:
                    times.append(time.perf_counter() - t)
                    break
                time.sleep(0.01)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], check=False)
        time.sleep(0.5)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "tui_bench.duckdb")
    ap.add_argument("--samples", type=int, default=20_000_000)
    args = ap.parse_args()
    if not args.db.exists():
        build_store(args.db, args.samples)
    import duckdb

    con = duckdb.connect(str(args.db), read_only=True)
    n = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    con.close()
    print(f"store {args.db}: {n:,} samples")
    paints = first_paint_in_a_terminal(args.db)
    if paints:
        print("first paint of `fabtwin tui` in tmux (s): " + ", ".join(f"{t:.2f}" for t in paints))
    figures = asyncio.run(measure(args.db))
    print(f"{'':<44} {'wall ms':>8} {'cpu ms':>8}")
    for name, (wall, cpu) in figures.items():
        print(f"{name:<44} {wall * 1000:>8.0f} {cpu * 1000:>8.0f}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
