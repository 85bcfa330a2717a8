"""`fabtwin simulate` against htsim, process to process, on the shared perm1024 (issue 18).

    python benchmarks/process_speed.py [--bin DIR] [--repeat 5] [--regime roce_ecmp ...]
        [--no-htsim] [--compile]

For each target regime (roce_ecmp as `ecmp`, uec_reps as `ar`, uec_oblivious as `spray`):
htsim's binary runs once on perm1024_2MB.cm with the reference README's command line, under
`nice -n 10`, in a scratch folder (it writes logout.dat and idmap.txt where it runs); then
`fabtwin simulate scenarios/htsim_perm1024_<regime>.toml --fct-csv F --json` runs `--repeat`
times, as a user types it (the console script beside this interpreter). Each side is measured
from start to exit: wall (time.perf_counter around the child) and CPU (user + system seconds of
the child, from os.wait4). Printed: the load before each run, both sides' wall and CPU (the
twin's median and min over its repeats), and htsim's over the twin's median as the ratios;
`x README` divides the README's wall time of that run (load about 1) by the twin's median CPU.
CPU is the figure to compare at the loads of the shared 2 cores (10-20): htsim is
single-threaded, so its CPU is what it costs on a free core. Run by hand, never in tests.

Python compiles a module on every start when its bytecode is not cached and
PYTHONDONTWRITEBYTECODE is set (as in the engineers' shells): an installed package has its .pyc
written at install. `--compile` writes the repository's bytecode first (compileall, into the
__pycache__ folders git ignores); the header says whether the bytecode was cached.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO.parent / "shared" / "reference" / "htsim"
HTSIM_BIN = Path("/tmp/htsim-src/htsim/sim/build/datacenter")
CM = "perm1024_2MB.cm"
# the reference README's command lines for perm1024_2MB (its first table; the 512 KB and 8 MB
# sections print the same lines with their .cm)
COMMON = ["-tiers", "3", "-q", "100", "-linkspeed", "100000", "-nodes", "1024"]
HTSIM = {
    "roce_ecmp": ["htsim_roce", *COMMON, "-strat", "ecmp_host", "-paths", "1"],
    "uec_reps": ["htsim_uec", *COMMON, "-load_balancing_algo", "reps", "-paths", "64"],
    "uec_oblivious": ["htsim_uec", *COMMON, "-load_balancing_algo", "oblivious", "-paths", "64"],
}
MODE = {"roce_ecmp": "ecmp", "uec_reps": "ar", "uec_oblivious": "spray"}
# htsim's wall times in the reference README (one run each on a free core, load about 1): the
# last column divides them by the twin's CPU, the strictest reading of "20x faster"
README_WALL_S = {"roce_ecmp": 9.6, "uec_reps": 12.8, "uec_oblivious": 12.6}
PACKAGES = ("collectors", "twin", "replay", "fabtwin")


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    load: float


def timed(argv: list[str], cwd: Path, stdout: Path) -> Run:
    """Run `argv` to its exit; its wall and CPU (user + system, the child's own rusage)."""
    load = os.getloadavg()[0]
    with open(stdout, "w") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}; output in {stdout}")
    return Run(wall, usage.ru_utime + usage.ru_stime, load)


def bytecode_cached() -> bool:
    """Whether every module of the packages has bytecode as fresh as its source."""
    import importlib.util

    for pkg in PACKAGES:
        for src in (REPO / pkg).rglob("*.py"):
            pyc = Path(importlib.util.cache_from_source(str(src)))
            if not pyc.is_file() or pyc.stat().st_mtime < src.stat().st_mtime:
                return False
    return True


def fabtwin_script() -> str:
    """The `fabtwin` console script of this interpreter's environment (what a user runs)."""
    beside = Path(sys.executable).parent / "fabtwin"
    found = str(beside) if beside.is_file() else shutil.which("fabtwin")
    if not found:
        raise SystemExit("no `fabtwin` console script beside this python or on PATH")
    return found


def twin_runs(regime: str, repeat: int, work: Path) -> tuple[list[Run], dict]:
    """`fabtwin simulate` of the regime's shipped scenario, `repeat` times from this repository."""
    scenario = REPO / "scenarios" / f"htsim_perm1024_{regime}.toml"
    out, csv = work / f"twin_{regime}.json", work / f"twin_{regime}.csv"
    argv = [fabtwin_script(), "simulate", str(scenario), "--fct-csv", str(csv), "--json"]
    env_path = os.environ.get("PYTHONPATH", "")
    if env_path.split(os.pathsep)[0] != str(REPO):  # this checkout's code, not an install's
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env_path) if p)
    runs = [timed(argv, REPO, out) for _ in range(repeat)]
    return runs, json.loads(out.read_text())


def htsim_run(regime: str, bin_dir: Path, work: Path) -> Run:
    """htsim's run of the regime on perm1024_2MB, under nice -n 10 (nice execs it: the child's
    rusage is htsim's own)."""
    argv = HTSIM[regime]
    shutil.copy(REFERENCE / CM, work / CM)
    return timed(["nice", "-n", "10", str(bin_dir / argv[0]), *argv[1:], "-end", "20000",
                  "-tm", CM], work, work / f"htsim_{regime}.out")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, default=HTSIM_BIN, help="htsim's build/datacenter folder")
    ap.add_argument("--repeat", type=int, default=5, help="twin runs per regime (median shown)")
    ap.add_argument("--regime", nargs="*", choices=list(HTSIM), default=list(HTSIM))
    ap.add_argument("--no-htsim", action="store_true", help="time the twin only")
    ap.add_argument("--compile", action="store_true",
                    help="write the repository's bytecode first, as installing the package does")
    args = ap.parse_args(argv)
    if args.compile:
        for pkg in PACKAGES:
            compileall.compile_dir(REPO / pkg, quiet=1)
    print(f"bytecode cached: {'yes' if bytecode_cached() else 'no'}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}; "
          f"twin runs per regime: {args.repeat}")
    print(f"{'regime':<14} {'mode':<5} | {'htsim wall':>10} {'CPU':>6} {'load':>5} | "
          f"{'twin wall':>9} {'min':>5} {'CPU':>5} {'min':>5} {'load':>5} | "
          f"{'x wall':>6} {'x CPU':>6} {'x README':>8} | twin median / p99 us")
    with tempfile.TemporaryDirectory(prefix="process-speed-") as tmp:
        work = Path(tmp)
        for regime in args.regime:
            ref = None if args.no_htsim else htsim_run(regime, args.bin, work)
            runs, out = twin_runs(regime, args.repeat, work)
            wall = statistics.median(r.wall_s for r in runs)
            cpu = statistics.median(r.cpu_s for r in runs)
            load = statistics.median(r.load for r in runs)
            fl = out["flows"]
            htsim_cols = (f"{ref.wall_s:10.2f} {ref.cpu_s:6.2f} {ref.load:5.1f}" if ref
                          else f"{'-':>10} {'-':>6} {'-':>5}")
            ratio = f"{ref.wall_s / wall:6.1f} {ref.cpu_s / cpu:6.1f}" if ref else f"{'-':>6} {'-':>6}"
            ratio += f" {README_WALL_S[regime] / cpu:8.1f}"
            print(f"{regime:<14} {MODE[regime]:<5} | {htsim_cols} | {wall:9.2f} "
                  f"{min(r.wall_s for r in runs):5.2f} {cpu:5.2f} {min(r.cpu_s for r in runs):5.2f} "
                  f"{load:5.1f} | {ratio} | {fl['fct_median_s'] * 1e6:.1f} / "
                  f"{fl['fct_p99_s'] * 1e6:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
