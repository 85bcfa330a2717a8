"""Run htsim on the held-out scenarios, one run at a time, and print the README's tables.

    python -m benchmarks.htsim_heldout.run [--suite PKG] run --bin DIR [--only NAME ...] [--timeout S]
        [--nice N]
    python -m benchmarks.htsim_heldout.run [--suite PKG] table [--only NAME ...]

`--suite` names the package of scenarios (default benchmarks.htsim_heldout; the second
held-out set is benchmarks.htsim_heldout2): its SCENARIOS/ALL, REGIMES and folder.

`run`: for every scenario and regime whose CSV is missing, the exact command line of
`command()` runs under `nice -n 10` (`--nice N`) and `/usr/bin/time` in a scratch folder (htsim writes
logout.dat and idmap.txt into its working folder), its output becomes
`<run>.fct.csv` here (convert.py), and `runs.json` keeps the wall and CPU seconds, peak RSS,
the 1-minute load average just before the run, htsim's final counter line and the command.
A run over `--timeout` seconds of wall time is stopped and recorded as skipped, not retried.
`table`: per scenario the README's rows (finished, median, p99 with numpy's method "lower",
max FCT over finished flows, wall, CPU, load) and the command lines.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.htsim_calibration import Scenario, fct_stats, htsim_fct_us, wall_key
from benchmarks.htsim_heldout import ALL, REFERENCE, REGIMES
from benchmarks.htsim_heldout.convert import convert

END_US, QUEUE_PKTS = 20000, 100  # as every shared reference run: 100-packet queues, stop at 20 ms


def command(sc: Scenario, regime: str) -> list[str]:
    """The htsim command line of one run, as the shared reference README writes them."""
    spec = sc.spec
    binary, balance = (("htsim_roce", ["-strat", "ecmp_host", "-paths", "1"]) if regime == "roce_ecmp"
                       else ("htsim_uec", ["-load_balancing_algo", regime.removeprefix("uec_"),
                                           "-paths", "64"]))
    failed = ["-failed", str(sc.failed)] if sc.failed else []
    return [binary, "-tiers", str(spec.tiers), "-q", str(QUEUE_PKTS),
            "-linkspeed", str(int(spec.host_speed_gbps * 1000)), "-nodes", str(spec.hosts),
            *balance, *failed, "-end", str(END_US), "-tm", sc.cm]


def load_runs(ref: Path = REFERENCE) -> dict[str, dict]:
    runs = ref / "runs.json"
    return json.loads(runs.read_text()) if runs.is_file() else {}


def run_one(sc: Scenario, regime: str, bin_dir: Path, timeout_s: float, raw_dir: Path,
            dest: Path = REFERENCE, src: Path = REFERENCE, nice: int = 10) -> dict:
    """One htsim run in a scratch folder on `src`'s .cm, under `nice -n nice`; writes the CSV
    into `dest` and returns its runs.json record."""
    argv = command(sc, regime)
    key = wall_key(sc, regime)
    with tempfile.TemporaryDirectory(prefix="htsim-") as work:
        shutil.copy(src / sc.cm, Path(work) / sc.cm)
        out, timing = raw_dir / f"{key}.out", Path(work) / "time.txt"
        load = os.getloadavg()[0]
        full = ["nice", "-n", str(nice), "/usr/bin/time", "-o", str(timing), "-f", "%e %U %M",
                str(bin_dir / argv[0]), *argv[1:]]
        with open(out, "w") as fh:
            # its own process group, so a timeout stops htsim too (time forks it as a child)
            proc = subprocess.Popen(full, cwd=work, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return {"command": " ".join(argv), "load": round(load, 2),
                        "skipped": f"over {timeout_s:.0f} s of wall time"}
        wall, cpu, rss_kb = timing.read_text().split()[-3:]
    if code != 0:
        raise RuntimeError(f"{key}: htsim exited {code}; output in {out}")
    finished, total = convert(src / sc.cm, out, dest / sc.csv_name(regime))
    lines = out.read_text(errors="replace").splitlines()
    counters = next((ln for ln in reversed(lines) if ln.startswith("New: ")), "")
    return {"command": " ".join(argv), "wall_s": float(wall), "cpu_s": float(cpu),
            "max_rss_mb": round(int(rss_kb) / 1024), "load": round(load, 2),
            "finished": finished, "flows": total, "counters": counters}


def do_run(names: list[str], bin_dir: Path, timeout_s: float, raw_dir: Path,
           suite: tuple[dict[str, Scenario], tuple[str, ...], Path] = (ALL, REGIMES, REFERENCE),
           nice: int = 10) -> None:
    scenarios, regimes, ref = suite
    raw_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        sc = scenarios[name]
        for regime in regimes:
            key = wall_key(sc, regime)
            runs = load_runs(ref)
            if (ref / sc.csv_name(regime)).is_file() or "skipped" in runs.get(key, {}):
                continue
            t0 = time.time()
            rec = run_one(sc, regime, bin_dir, timeout_s, raw_dir, dest=ref, src=ref, nice=nice)
            runs = load_runs(ref)  # re-read: keep every other run's record
            runs[key] = rec
            (ref / "runs.json").write_text(json.dumps(dict(sorted(runs.items())), indent=1) + "\n")
            what = rec.get("skipped") or f"{rec['finished']}/{rec['flows']} finished"
            print(f"{key}: {what} in {time.time() - t0:.1f} s (load {rec['load']})", flush=True)


def table(names: list[str],
          suite: tuple[dict[str, Scenario], tuple[str, ...], Path] = (ALL, REGIMES, REFERENCE)
          ) -> str:
    """The README's table rows and command lines for the scenarios given."""
    scenarios, regimes, ref = suite
    runs = load_runs(ref)
    out = ["| run | finished | median FCT (us) | p99 (us) | max (us) | wall | CPU | load |",
           "|---|---|---|---|---|---|---|---|"]
    cmds = []
    for name in names:
        sc = scenarios[name]
        for regime in regimes:
            key, rec = wall_key(sc, regime), runs.get(wall_key(sc, regime), {})
            cmds.append(" ".join(command(sc, regime)))
            path = ref / sc.csv_name(regime)
            if not path.is_file():
                out.append(f"| {key} | not run: {rec.get('skipped', 'pending')} | | | | | | |")
                continue
            fct, total = htsim_fct_us(path)
            med, p99, mx = fct_stats(fct) if len(fct) else (float("nan"),) * 3
            out.append(f"| {key} | {len(fct)}/{total} | {med:.1f} | {p99:.1f} | {mx:.1f} | "
                       f"{rec['wall_s']:.2f} s | {rec['cpu_s']:.2f} | {rec['load']:.2f} |")
    return "\n".join(out) + "\n\n```\n" + "\n".join(cmds) + "\n```"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="benchmarks.htsim_heldout",
                    help="package declaring the scenarios (SCENARIOS/ALL, REGIMES, REFERENCE)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--bin", type=Path, required=True, help="htsim's build/datacenter folder")
    r.add_argument("--timeout", type=float, default=180.0, help="wall seconds before a run is skipped")
    r.add_argument("--nice", type=int, default=10, help="niceness htsim runs at (nice -n N)")
    r.add_argument("--raw", type=Path, default=Path(tempfile.gettempdir()) / "htsim-heldout-raw",
                   help="where htsim's full output goes (not kept in the repository)")
    t = sub.add_parser("table")
    for p in (r, t):
        p.add_argument("--only", nargs="*", help="default: all, in order")
    args = ap.parse_args(argv)
    mod = importlib.import_module(args.suite)
    scenarios = getattr(mod, "ALL", mod.SCENARIOS)
    suite = (scenarios, tuple(mod.REGIMES), Path(mod.REFERENCE))
    unknown = sorted(set(args.only or ()) - set(scenarios))
    if unknown:
        print(f"{args.suite}: no scenario {', '.join(unknown)}", file=sys.stderr)
        return 2
    names = args.only or list(scenarios)
    if args.cmd == "run":
        for b in ("htsim_roce", "htsim_uec"):
            if not (args.bin / b).is_file():
                print(f"{args.bin / b}: no such binary (build htsim's sim/ first)", file=sys.stderr)
                return 2
        do_run(names, args.bin, args.timeout, args.raw, suite, args.nice)
    else:
        print(table(names, suite))
    return 0


if __name__ == "__main__":
    sys.exit(main())
