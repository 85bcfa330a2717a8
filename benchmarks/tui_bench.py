"""How fast `fabtwin tui` opens, switches screens and steps the fabric on a store of real size
(tmux, and Pilot).

    python benchmarks/tui_bench.py [--db bench_out/tui_bench/store.duckdb] [--runs 3]
        [--read 1.0] [--part all|terminal|pilot|cold] [--empty-cache]

Builds the store when it is missing (cached under bench_out/, gitignored): the 256-switch
fabric of `scenarios/large/fabric256_1h.toml` (2 planes of 96 leaves x 32 spines, 3,072
hosts, rail-optimized, 64-port leaves; a link flap and a PFC storm) sampled every 45 s instead
of 10 s, which makes about 20M samples, generated (`fabtwin generate`) and investigated
(`fabtwin investigate`: replay windows, incidents). Then --runs times each (medians printed,
and every run):

- in a real terminal (tmux 120x40, its output read as tmux copies it): `fabtwin tui --db DB`
  from the command's start to the incidents table written (process start, imports, store
  open, first paint); after --read seconds (the user reads the incidents), from each key sent
  to the next screen written with its data: first visit and return to Fabric (its heatmap
  drawn), Events, SQL, Incidents; then an incident's detail (plot drawn) and the
  drill-down on its root cause (every counter drawn); wall time and the UI process's CPU
  (all its threads, /proc, 10 ms ticks); `--empty-cache`: with an empty XDG_CACHE_HOME (a
  cabling never drawn on this machine), else the user's;
- driven by Pilot in a fresh process: importing the app, then from constructing it to the
  first frame with the incidents; when the background build of the other screens is done;
  the same keys, timed from the key event to the first frame composed with the data (not
  Pilot's `press`, which waits for the app to go idle, 40-60 ms), the fabric drawn (load and
  outages; when its error counters are checked too, apart); every one of 10 fabric window
  steps; the drill-down on a 64-port leaf; for the first two incidents (the storm's port,
  the flap's link) the detail, the root cause's drill-down and the incident drill-down (`d`:
  its ends and their equal-cost peers); the SQL console's first page of all samples, 5
  Page Downs and each of 20 pages more read by scrolling to the end. Wall and CPU time (all threads): on a shared
  machine the CPU time says what the work costs.

--part cold times a first-ever fabric visit instead (an empty XDG_CACHE_HOME per run, `2`
--read seconds after the first paint; `--read 0`: at the first paint): from the key, the
fabric's frame, a switch to Events and back while its cells are built, and the heatmap.

Prints the figures against issue 21's targets (first paint <= 1.5 s, every switch and step
<= 200 ms) and the load average; run by hand, never from the tests. The fabric's first visit
reads its cells from $XDG_CACHE_HOME/fabtwin/fabric when this cabling was drawn before on this
machine (fabtwin/tui/layout_cache.py): an empty XDG_CACHE_HOME times a first-ever visit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = ROOT / "bench_out" / "tui_bench" / "store.duckdb"


SCENARIO = ROOT / "scenarios" / "large" / "fabric256_1h.toml"
SAMPLE_S = 45  # instead of the scenario's 10 s: ~20M samples instead of 92M
LEAF = "leaf-p0-17"  # a 64-port leaf (32 hosts, 32 spines), the flap's


def build_store(db: Path) -> None:
    """fabric256_1h sampled every SAMPLE_S, generated and investigated into `db`."""
    fabtwin = Path(sys.executable).parent / "fabtwin"
    work = db.parent
    work.mkdir(parents=True, exist_ok=True)
    scenario, bundle = work / "fabric256_1h_45s.toml", work / "bundle"
    scenario.write_text(re.sub(r"(?m)^sample_s = \d+$", f"sample_s = {SAMPLE_S}",
                               SCENARIO.read_text()))
    t = time.perf_counter()
    if not bundle.exists():
        subprocess.run([str(fabtwin), "generate", str(scenario), "--out", str(bundle)], check=True)
    done = subprocess.run([str(fabtwin), "investigate", str(bundle), "--db", str(db)],
                          stdout=subprocess.DEVNULL)
    if done.returncode not in (0, 5):  # 5: incidents found (the flap and the storm)
        sys.exit(f"fabtwin investigate {bundle} failed with exit code {done.returncode}")
    print(f"built {db} from {scenario.name} in {time.perf_counter() - t:.0f} s")


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

    def stop(self, name: str, at: float | None = None) -> None:
        self.figures[name] = ((at or time.perf_counter()) - self.t, time.process_time() - self.c)


class Frames:
    """The time of the first frame the app composes in which `ready()` holds: what a user
    sees, not when a test harness gets round to looking (Pilot's press alone waits for the
    app to go idle, 40-60 ms)."""

    def __init__(self, app) -> None:
        self.ready = None
        self.at = 0.0
        self.shown = asyncio.Event()
        self.painted: tuple | None = None  # (ready, time): an earlier frame to note on the way
        display = app._display

        def hook(screen, renderable) -> None:  # every frame goes through App._display
            display(screen, renderable)  # which drops it while updates are held (a batch)
            if renderable is None or app._batch_count:
                return
            if self.painted and not self.painted[1] and self.painted[0]():
                self.painted = (self.painted[0], (time.perf_counter(), time.process_time()))
            if self.ready is not None and self.ready():
                self.ready, self.at = None, time.perf_counter()
                self.shown.set()

        app._display = hook

    def expect(self, ready) -> None:
        self.shown.clear()
        self.ready = ready

    async def wait(self, what: str, timeout: float = 30.0) -> float:
        try:
            await asyncio.wait_for(self.shown.wait(), timeout)
        except TimeoutError:
            raise TimeoutError(f"{what} was not shown in {timeout} s") from None
        return self.at


def send_key(app, key: str) -> None:
    """A key press as the terminal driver delivers it (Pilot's, without its waits)."""
    from textual import events
    from textual.keys import _character_to_key

    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    char = key if len(key) == 1 else {"enter": "\r", "escape": "\x1b",
                                       "left_square_bracket": "[",
                                       "right_square_bracket": "]"}.get(key)
    app._driver.send_message(events.Key(key, char))


def _probes(app_of):
    """rows(selector): a DataTable or a line grid (the heatmap) of the screen has rows;
    screen_is(name, ready): the screen shown is a `name` and ready() holds."""

    def rows(selector: str):
        return lambda: len(app_of().screen.query(selector)) > 0 and \
            app_of().screen.query_one(selector).row_count > 0

    def screen_is(name: str, ready=lambda: True):
        return lambda: type(app_of().screen).__name__ == name and ready()

    return rows, screen_is


async def measure_cold(db: Path, read_s: float = 0.0) -> dict[str, tuple[float, float]]:
    """A first-ever visit of the fabric (run with an empty XDG_CACHE_HOME): `2` `read_s` after
    the first paint, while the app builds the fabric's cells; from the key: its screen painted,
    a switch to Events and back while the build goes on (the UI answers meanwhile), the
    heatmap."""
    from fabtwin.tui.app import FabtwinApp

    clock = Clock()
    clock.start()
    app = FabtwinApp(str(db))
    rows, screen_is = _probes(lambda: app)
    frames = Frames(app)
    frames.expect(rows("#incidents"))

    def head() -> str:
        return str(app.screen.query_one("#head").render())

    async with app.run_test(size=(120, 40)) as pilot:
        clock.stop("open: incidents shown", await frames.wait("incidents"))
        await asyncio.sleep(read_s)
        built = app.data.cells_ready
        early = "" if built() else " (cells still building)"  # else the figures say little
        def drawn() -> bool:
            return type(app.screen).__name__ == "FabricScreen" and rows("#heatmap")() \
                and "busiest" in head()

        frames.painted = (drawn, None)  # noted on whichever frame first shows it
        clock.start()
        t, c = clock.t, clock.c
        frames.expect(screen_is("FabricScreen"))
        send_key(app, "2")
        clock.stop(f"fabric first-ever{early}: its frame painted", await frames.wait("fabric"))
        for key, name, ready in (("3", "events", rows("#events")),
                                 ("2", "fabric", screen_is("FabricScreen"))):
            if built():
                break
            await pilot.pause()
            frames.expect(ready)
            clock.start()
            send_key(app, key)
            clock.stop(f"fabric first-ever: while it builds, switch to {name}",
                       await frames.wait(name))
        if type(app.screen).__name__ != "FabricScreen":
            await pilot.press("2")
        await _until(pilot, lambda: frames.painted[1] is not None, 60, "the heatmap")
        at, cpu = frames.painted[1]
        clock.figures[f"fabric first-ever{early}: heatmap drawn, from the key"] = (
            at - t, cpu - c)
    return clock.figures


async def measure(db: Path, read_s: float = 1.0) -> dict[str, tuple[float, float]]:
    clock = Clock()
    clock.start()
    from fabtwin.tui.app import FabtwinApp
    clock.stop("import the app (Textual, first screen)")

    rows, screen_is = _probes(lambda: app)

    clock.start()
    app = FabtwinApp(str(db))
    frames = Frames(app)
    frames.expect(rows("#incidents"))
    async with app.run_test(size=(120, 40)) as pilot:
        clock.stop("open: incidents shown", await frames.wait("incidents"))

        def built() -> bool:  # the screens the app builds in the background, data loaded
            try:
                (fabric,) = app.get_screen_stack("fabric")
                return bool(app.get_screen_stack("sql")) and bool(fabric.maps)
            except (KeyError, ValueError):
                return False

        clock.start()  # the user reads; the app builds the other screens meanwhile
        while not built() and time.perf_counter() - clock.t < read_s:
            await asyncio.sleep(0.005)
        if built():
            clock.stop("(background: other screens built, after open)")
        await asyncio.sleep(max(0.0, read_s - (time.perf_counter() - clock.t)))

        async def timed(key: str, ready, name: str, painted=None) -> None:
            """From the key to the first frame where `ready()` holds; with `painted`, also
            to the first frame where it holds (the screen's frame, before its data)."""
            await pilot.pause()  # idle before the key, as a user's press finds it
            frames.expect(ready)
            frames.painted = (painted, None) if painted else None
            clock.start()
            send_key(app, key)
            t, c = clock.t, clock.c
            clock.stop(name, await frames.wait(name))
            if painted and frames.painted and frames.painted[1]:
                at, cpu = frames.painted[1]
                clock.figures[f"({name}: its frame painted)"] = (at - t, cpu - c)

        def head() -> str:
            return str(app.screen.query_one("#head").render())

        for visit in ("first", "again"):
            for key, name, ready in (
                    ("2", "fabric", lambda: rows("#heatmap")() and "busiest" in head()),
                    ("3", "events", rows("#events")),
                    ("4", "sql", screen_is("SqlScreen")),
                    ("f2", "incidents", rows("#incidents"))):
                # the fabric's screen paints before its heatmap when its cells are still
                # being built ("building the fabric view..."): both times are figures
                await timed(key, ready, f"switch to {name} ({visit})",
                            screen_is("FabricScreen") if name == "fabric" else None)
                if name == "fabric" and "checking" in head():  # drawn, its errors not yet
                    await _until(pilot, lambda: "checking" not in head(), what="errors")
                    clock.stop(f"(fabric {visit}: error counters checked, after the key)")

        await pilot.press("2")
        await _until(pilot, lambda: "busiest" in head() and "checking" not in head(),
                     what="fabric")
        for k, key in enumerate(["left_square_bracket"] * 5 + ["right_square_bracket"] * 5):
            before = head()
            await timed(key, lambda b=before: "busiest" in head() and head() != b
                        and "checking" not in head(),
                        f"fabric: window step {k + 1} ({'back' if k < 5 else 'on'})")
        await pilot.pause()
        frames.expect(screen_is("EntityScreen", lambda: bool(app.screen.all_series)))
        frames.painted = (screen_is("EntityScreen"), None)
        clock.start()
        t, c = clock.t, clock.c
        app.open_entity("device", LEAF, app.screen.windows[app.screen.index])
        clock.stop(f"drill-down on {LEAF} (64 ports), plots drawn",
                   await frames.wait("the leaf's drill-down"))
        if frames.painted[1]:
            clock.figures[f"(drill-down on {LEAF}: its frame painted)"] = (
                frames.painted[1][0] - t, frames.painted[1][1] - c)
        frames.painted = None
        await pilot.press("escape")
        await pilot.press("1")
        incidents = app.screen.query_one("#incidents")
        for row in range(min(2, incidents.row_count)):  # the storm's port, the flap's link
            incidents.move_cursor(row=row)
            await pilot.pause()
            kind = str(incidents.get_row_at(row)[1])
            await timed("enter", screen_is("IncidentScreen", lambda: app.screen.series is not None),
                        f"incident detail ({kind}), plot drawn", screen_is("IncidentScreen"))
            await timed("r", screen_is("EntityScreen", lambda: app.screen.series is not None
                                       and bool(app.screen.all_series)),
                        f"drill-down on the root cause ({kind}), plots drawn",
                        screen_is("EntityScreen"))
            await timed("escape", screen_is("IncidentScreen"), f"back to the incident ({kind})")
            await timed("d", screen_is("DrillScreen", lambda: bool(app.screen.lines)),
                        f"incident drill-down ({kind}: its ends and their peers), lines drawn",
                        screen_is("DrillScreen"))
            await timed("escape", screen_is("IncidentScreen"), f"back to the incident ({kind})")
            await timed("escape", screen_is("IncidentsScreen"), "back to the incidents")
        await pilot.press("f5")
        from fabtwin.tui.resultview import ResultsGrid

        app.screen.query_one("#editor").text = "SELECT * FROM samples"
        grid = app.screen.query_one(ResultsGrid)
        await timed("ctrl+r", lambda: grid.row_count > 0, "sql: first page of SELECT * FROM samples")
        grid.focus()
        for k in range(5):  # a screen down, within the rows read
            y = grid.scroll_offset.y
            await timed("pagedown", lambda y=y: grid.scroll_offset.y > y,
                        f"sql: page down {k + 1} (a screen of rows)")
        for k in range(20):
            count = grid.row_count
            await timed("ctrl+end", lambda c=count: grid.row_count > c,
                        f"sql: page {k + 2} read by scrolling to the end")
        held = grid.row_count
    print(f"sql result rows held by the grid after scrolling: {held:,}")
    return clock.figures


# what each screen writes once its data is in (a pattern of the terminal output);
# F2 for the incidents: in the SQL editor digits are typed. The fabric's head says "busiest
# N%" in the frame that draws its cells; at 120 columns, while the errors are being checked,
# the head wraps before N (cursor moves and spaces in between): `busiest \d` alone matched
# only once the error check ended (seconds later) and timed that instead
TERM_GAP = r"(?:\s|\x1b\[[0-9;?]*[A-Za-z])*"  # blanks and escape sequences between two words
SHOWN = (("2", "fabric", r"busiest" + TERM_GAP + r"\d"), ("3", "events", r"device: any"),
         ("4", "sql", r"Ctrl\+R all"), ("F2", "incidents", r"· Incidents ·"))
DETAIL = (("Enter", "incident detail, plot drawn", r"▆ observed"),
          ("r", "drill-down on the root cause, plots drawn", r"errors_per_s"))


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) process `pid` has used (/proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_a_terminal(db: Path, read_s: float = 1.0, cache: str | None = None
                  ) -> dict[str, tuple[float, float]]:
    """`fabtwin tui --db DB` in a real terminal (tmux, 120x40): (wall, CPU) seconds from the
    command's start to the incidents table written (process start, imports, store open,
    first paint), then, after `read_s`, from each key sent to the next screen written with
    its data; `cache`: the XDG_CACHE_HOME it runs with (default: the user's).

    The terminal's output is read as tmux copies it to a file (pipe-pane), so waiting costs
    no CPU; polling the screen with capture-pane starts a process every few milliseconds,
    which on two cores slows the UI it measures. The CPU is the UI process's own (all its
    threads, /proc in clock ticks of 10 ms), read when the key is sent and when the screen
    is seen written."""
    fabtwin = Path(sys.executable).parent / "fabtwin"
    name = f"tui_bench_{os.getpid()}"
    times: dict[str, tuple[float, float]] = {}
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        pid = 0

        def wait_for(pattern: str, sent: tuple[float, float, int], what: str
                     ) -> tuple[float, float]:
            t, cpu, since = sent
            found = re.compile(pattern.encode())
            while time.perf_counter() - t < 30:
                out.seek(since)
                if found.search(out.read()):
                    return time.perf_counter() - t, process_cpu(pid) - cpu
                time.sleep(0.002)
            raise TimeoutError(f"{what} not written in 30 s")

        def send(key: str) -> tuple[float, float, int]:
            since = os.path.getsize(out.name)
            cpu = process_cpu(pid)
            t = time.perf_counter()
            subprocess.run(["tmux", "send-keys", "-t", name, key], check=True)
            return t, cpu, since

        env = f"XDG_CACHE_HOME={cache} " if cache else ""
        # the shell waits for Enter, so the output is captured from the command's start
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                        f"read go; {env}exec {fabtwin} tui --db {db}"], check=True)
        try:
            subprocess.run(["tmux", "pipe-pane", "-t", name, f"cat >> {out.name}"], check=True)
            pid = int(subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_pid}"],
                                     capture_output=True, text=True, check=True).stdout)
            times["first paint"] = wait_for("root cause", send("Enter"), "the incidents table")
            time.sleep(read_s)
            for visit in ("first", "again"):
                for key, screen, pattern in SHOWN:
                    times[f"switch to {screen} ({visit})"] = wait_for(pattern, send(key), screen)
                    time.sleep(0.3)
            for key, what, pattern in DETAIL:
                times[what] = wait_for(pattern, send(key), what)
                time.sleep(0.3)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], check=False)
    return times


def target(name: str) -> str:
    """Issue 21's budget for a figure, and whether the median meets it ("" : none)."""
    if name.startswith(("first paint", "open:")):
        return "<= 1500"
    if name.startswith(("switch", "fabric:", "drill-down", "incident", "back", "sql: page")) \
            or name.startswith("fabric first-ever") and "heatmap" not in name:
        return "<= 200"  # a first-ever fabric visit: its frame (the heatmap follows, no target)
    return ""


def judged(name: str, ms: float) -> str:
    budget = target(name)
    return f"{budget:>8} {'ok' if not budget or ms <= float(budget[3:]) else 'OVER':<4}"


def median_of(runs: list[dict[str, float]]) -> dict[str, tuple[float, list[float]]]:
    """Per figure, the median over the runs that have it, and those runs' values."""
    names = list(dict.fromkeys(k for r in runs for k in r))
    return {k: (statistics.median(r[k] for r in runs if k in r), [r[k] for r in runs if k in r])
            for k in names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=BENCH_DB)
    ap.add_argument("--runs", type=int, default=3, help="runs of each part (medians printed)")
    ap.add_argument("--read", type=float, default=1.0,
                    help="seconds the user reads the incidents before the first key")
    ap.add_argument("--part", choices=("all", "terminal", "pilot", "cold"), default="all",
                    help="cold: only the first-ever fabric visit (an empty cache per run)")
    ap.add_argument("--empty-cache", action="store_true",
                    help="terminal: run with an empty XDG_CACHE_HOME (the fabric's cells "
                         "never drawn on this machine)")
    ap.add_argument("--pilot-once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cold-once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pilot_once or args.cold_once:  # one run in a fresh process (imports not cached)
        figures = asyncio.run(measure_cold(args.db, args.read) if args.cold_once
                              else measure(args.db, args.read))
        print(json.dumps({k: list(v) for k, v in figures.items()}))
        return
    if not args.db.exists():
        build_store(args.db)
    import duckdb

    con = duckdb.connect(str(args.db), read_only=True)
    n = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    con.close()
    print(f"store {args.db}: {n:,} samples; {args.runs} runs of each, medians "
          f"(load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    if args.part in ("all", "terminal") and shutil.which("tmux"):
        runs = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:  # --empty-cache: a first-ever visit
                runs.append(in_a_terminal(args.db, args.read,
                                          cache if args.empty_cache else None))
            time.sleep(0.5)
        walls = median_of([{k: v[0] for k, v in r.items()} for r in runs])
        cpus = median_of([{k: v[1] for k, v in r.items()} for r in runs])
        cache = "an empty XDG_CACHE_HOME" if args.empty_cache else "the user's cache"
        print(f"\n`fabtwin tui` in tmux 120x40, {cache} (ms, key sent -> data on screen)\n"
              f"  {'':<42} {'wall':>6} {'cpu':>5}   target       wall runs")
        for name, (med, all_) in walls.items():
            print(f"  {name:<42} {med * 1000:>6.0f} {cpus[name][0] * 1000:>5.0f} "
                  f"{judged(name, med * 1000)}  " + " ".join(f"{t * 1000:.0f}" for t in all_))
    if args.part == "terminal":
        return
    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:  # cold: a cache of cells never written
            env = {**os.environ, "XDG_CACHE_HOME": cache} if args.part == "cold" else None
            out = subprocess.run([sys.executable, __file__, "--db", str(args.db), "--read",
                                  str(args.read), "--cold-once" if args.part == "cold"
                                  else "--pilot-once"], capture_output=True, text=True, env=env)
        if out.returncode:
            sys.exit(out.stderr)
        runs.append(json.loads(out.stdout.splitlines()[-1]))
    walls = median_of([{k: v[0] for k, v in r.items()} for r in runs])
    cpus = median_of([{k: v[1] for k, v in r.items()} for r in runs])
    print(f"\nPilot, 120x40 (ms, key sent -> first frame with the data){'':<9}wall  cpu"
          "   target       wall runs")
    for name, (wall, all_) in walls.items():
        print(f"  {name:<56} {wall * 1000:>6.0f} {cpus[name][0] * 1000:>5.0f} "
              f"{judged(name, wall * 1000)}  "
              + " ".join(f"{t * 1000:.0f}" for t in all_))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
