"""investigate against careful hand rules, process to process, on the same bundles.

    python benchmarks/diagnosis_speed.py [BUNDLE ...] [--minutes 20] [--scenarios scenarios/gen]
                                         [--out bench_out/diagnosis_speed] [--repeat 1]

Issue 17's speed target: `fabtwin investigate` from nothing (a fresh store, a fresh process) at
most 4x careful hand rules in pure Python (`benchmarks/hand_rules.py`, a fresh process) on the same
20-minute bundle. Without BUNDLE arguments it writes one bundle per scenario of `--scenarios`
with the project's writer, its telemetry stretched to `--minutes`. Prints per bundle the wall
time and the CPU time (user + system of the child and its workers) of both and their ratios:
wall is what a user waits for; CPU is the fair figure on a machine that other jobs share.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
FABTWIN = [PY, "-m", "fabtwin.cli"]
TARGET = 4.0


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (children: the command and its workers) and exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False).returncode
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def stretched(scenario: Path, minutes: float, out: Path) -> Path:
    """A copy of `scenario` whose [telemetry] lasts `minutes`."""
    text = scenario.read_text()
    head, sep, tail = text.partition("[telemetry]")
    if not sep:
        raise SystemExit(f"{scenario}: no [telemetry] table to stretch")
    tail, n = re.subn(r"(?m)^duration_s\s*=\s*[\d.]+", f"duration_s = {minutes * 60:g}", tail, count=1)
    if not n:
        tail = f"\nduration_s = {minutes * 60:g}" + tail
    path = out / f"{scenario.stem}.toml"
    path.write_text(head + sep + tail)
    return path


def make_bundles(scenarios: Path, minutes: float, out: Path) -> list[Path]:
    """One project bundle per scenario file, `minutes` long (reused when already written)."""
    out.mkdir(parents=True, exist_ok=True)
    bundles = []
    for sc in sorted(scenarios.glob("*.toml")):
        bundle = out / sc.stem
        if not (bundle / "labels.json").exists():
            toml = stretched(sc, minutes, out)
            rc = subprocess.run([*FABTWIN, "generate", str(toml), "--out", str(bundle), "-q"],
                                check=False).returncode
            if rc != 0:
                raise SystemExit(f"generate {toml} failed ({rc})")
        bundles.append(bundle)
    return bundles


def compile_bytecode() -> None:
    """Compile the project's modules to bytecode first, as installing a package does: with
    PYTHONDONTWRITEBYTECODE set (as on the team's machines) a source checkout compiles its 71
    modules again in every process, about 0.2 s of CPU that no installed fabtwin spends."""
    import compileall

    for package in ("collectors", "twin", "replay", "fabtwin"):
        compileall.compile_dir(REPO / package, quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundles", nargs="*", type=Path)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--scenarios", type=Path, default=REPO / "scenarios" / "gen")
    ap.add_argument("--out", type=Path, default=REPO / "bench_out" / "diagnosis_speed")
    ap.add_argument("--repeat", type=int, default=1, help="runs per bundle; the fastest counts")
    args = ap.parse_args(argv)
    bundles = args.bundles or make_bundles(args.scenarios, args.minutes, args.out)
    compile_bytecode()
    stores = args.out / "stores"
    stores.mkdir(parents=True, exist_ok=True)
    print(f"{'bundle':28} {'rules s':>8} {'cpu':>6} | {'investigate s':>13} {'cpu':>6} | "
          f"{'x wall':>6} {'x cpu':>6}")
    ratios_wall, ratios_cpu = [], []
    for bundle in bundles:
        rules, inv = [], []
        for _ in range(args.repeat):
            rules.append(timed([PY, str(REPO / "benchmarks" / "hand_rules.py"), str(bundle)]))
            db = stores / f"{bundle.name}.duckdb"
            for p in (db, db.with_suffix(".duckdb.wal")):
                p.unlink(missing_ok=True)
            shutil.rmtree(db.with_suffix(".duckdb.tmp"), ignore_errors=True)
            inv.append(timed([*FABTWIN, "investigate", "-q", str(bundle), "--db", str(db), "--json"]))
        r, i = min(rules), min(inv)
        if i[2] not in (0, 5):
            print(f"{bundle.name}: investigate exited {i[2]}", file=sys.stderr)
        ratios_wall.append(i[0] / r[0])
        ratios_cpu.append(i[1] / r[1])
        print(f"{bundle.name[:28]:28} {r[0]:8.2f} {r[1]:6.2f} | {i[0]:13.2f} {i[1]:6.2f} | "
              f"{ratios_wall[-1]:6.1f} {ratios_cpu[-1]:6.1f}")
    print(f"median ratio: wall {statistics.median(ratios_wall):.1f}x, cpu "
          f"{statistics.median(ratios_cpu):.1f}x (target <= {TARGET:g}x); max wall "
          f"{max(ratios_wall):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
