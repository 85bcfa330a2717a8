"""Sweep speed: single spine-link failures of an 8,192-endpoint fabric on local processes and
on Ray, the per-task overhead of each, and a projection for the 131,072-endpoint fabric.

    python benchmarks/sweep_bench.py [--tasks 64 | --all] [--no-ray] [--large-probe]

The fabric: 1,024 hosts x 8 NICs (8,192 endpoints, 1 plane), leaves with 64 x 400G host ports
and 32 x 800G uplinks, 32 spines of 128 x 800G (102.4T), 2 tiers: 4,096 leaf-spine cables. The
workload: a permutation of 64 MiB per NIC (most bytes cross the spine) with ECMP; each variant
fails one leaf-spine cable at 0.2 ms (50 ms convergence). The full sweep is 4,096 simulations;
by default an evenly spaced `--tasks` of them (plus the baseline) is timed and the full sweep's
time is extrapolated from the measured per-task cost (labelled so). Every executor's ranking is
checked to be identical. Printed, not asserted. The CPU may be shared: `uptime` load is shown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from twin.parallel import ray_init, ray_module, run_tasks
from twin.sweep import Sweep, load_sweep, rank, simulate_variant

SWEEP_8K = """
[fabric]
hosts = 1024
nics_per_host = 8
planes = 1
tiers = 2
leaf_radix = 96
spine_radix = 128
hosts_per_leaf = 64
host_speed_gbps = 400
fabric_speed_gbps = 800

[balancing]
mode = "ecmp"
convergence_ms = 50

[[jobs]]
name = "perm"
collective = "permutation"
hosts = "all"
size = "64MiB"

[sweep]
fail = "each_spine_link"
at_ms = 0.2
"""

# One task of the 131,072-endpoint fabric of benchmarks/twin_bench.py (16,384 hosts x 8 NICs,
# 4 planes, 512-port 200G switches): the baseline and one leaf-spine failure, timed in a fresh
# process (peak RSS its own).
LARGE_PROBE = r"""
import json, resource, sys, time
import numpy as np
from twin.collectives import Collective
from twin.engine import LinkChange, simulate
from twin.routing import FabricState
from twin.topology import FabricSpec, build
t0 = time.perf_counter()
f = build(FabricSpec(hosts=16384, nics_per_host=8, planes=4, leaf_radix=512, spine_radix=512,
                     hosts_per_leaf=256, host_speed_gbps=200, fabric_speed_gbps=200))
build_s = time.perf_counter() - t0
tr = Collective("permutation", np.arange(16384), 2**26).transfers(8)
spine = np.flatnonzero(f.cable_tier == 1)
out = {"build_s": build_s, "tasks": int(spine.size)}
for name, ch in (("baseline", []), ("failure", [LinkChange(2e-4, int(spine[len(spine) // 3]), 0.0)])):
    t, c = time.perf_counter(), time.process_time()
    simulate(FabricState(f, mode=[sys.argv[1]] * 4), tr, changes=ch, convergence_s=0.05)
    out[name + "_s"] = time.perf_counter() - t
    out[name + "_cpu_s"] = time.process_time() - c
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def cpu_timed(task: tuple) -> tuple[dict, float]:
    """A sweep task and the CPU seconds it used (the wall time on a shared CPU is not its cost)."""
    c = time.process_time()
    out = simulate_variant(task)
    return out, time.process_time() - c


def sweep_cpu(sw: Sweep, **kw) -> tuple[dict, float]:
    """run_sweep's report (without its run) and the tasks' total CPU seconds."""
    got = run_tasks(cpu_timed, [(sw.scenario, v) for v in sw.variants], **kw)
    return rank(sw, [g[0] for g in got]), sum(g[1] for g in got)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def subset(sw: Sweep, k: int | None) -> Sweep:
    """The baseline and `k` evenly spaced variants (all of them for None)."""
    rest = sw.variants[1:]
    if k is None or k >= len(rest):
        return sw
    step = len(rest) / k
    return Sweep(sw.scenario, [sw.variants[0], *[rest[int(i * step)] for i in range(k)]])


def timed(fn, *args, **kw) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=64, help="failures timed (evenly spaced)")
    ap.add_argument("--all", action="store_true", help="time all 4,096 failures (hours on 2 cores)")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--trivial", type=int, default=1000, help="trivial tasks for the overhead")
    ap.add_argument("--large-probe", action="store_true",
                    help="time one 131,072-endpoint task (minutes) for the projection")
    ap.add_argument("--large-mode", default="ecmp")
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--cores-per-node", type=int, default=32)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep8k.toml"
        path.write_text(SWEEP_8K)
        full = load_sweep(path)
    sw = subset(full, None if args.all else args.tasks)
    n_full, n = len(full.variants) - 1, len(sw.variants)
    print(f"sweep: {n_full:,} single spine-link failures of an 8,192-endpoint fabric; timing "
          f"{n - 1} of them + the baseline ({n} tasks); {os.cpu_count()} CPUs, load {load()}")
    print(f"{'executor':<20}{'wall s':>8}{'s/task':>8}{'speedup':>8}{'cpu s/task':>11}"
          f"{'full sweep s':>13}  load 1/5/15 min")
    reports, cpu = {}, {}

    def row(name: str, wall: float, base: float | None, cpu_s: float, note: str = "") -> None:
        speed = f"{base / wall:>8.2f}" if base else f"{'1.00':>8}"
        tag = "" if n == n_full + 1 else " (extrapolated)"
        print(f"{name:<20}{wall:>8.2f}{wall / n:>8.3f}{speed}{cpu_s / n:>11.3f}"
              f"{wall / n * (n_full + 1):>13,.0f}  {load()}{tag}{note}")

    wall1, (reports["local x1"], cpu["local x1"]) = timed(sweep_cpu, sw, workers=1)
    row("local, 1 worker", wall1, None, cpu["local x1"])
    wall2, (reports["local x2"], cpu["local x2"]) = timed(sweep_cpu, sw, workers=2)
    row("local, 2 workers", wall2, wall1, cpu["local x2"])
    ray_init_s = None
    if not args.no_ray:
        ray_init_s, _ = timed(ray_init, "local", 2)
        wall_r, (reports["ray x2"], cpu["ray"]) = timed(sweep_cpu, sw, executor="ray", workers=2)
        row("Ray local, 2 CPUs", wall_r, wall1, cpu["ray"], f"  (+ ray.init {ray_init_s:.1f} s)")
    print("cpu s/task: the CPU a task used; far below its wall time when the cores are shared")
    same = all(r == reports["local x1"] for r in reports.values())
    print(f"identical rankings across executors: {'yes' if same else 'NO'}")
    top = reports["local x1"]["variants"][0]
    print(f"worst failure timed: {top['fail']}: slowdown {top['impact']:.2f}x")

    # per-task overhead: trivial tasks (abs of an int), pool/cluster start excluded
    print(f"\noverhead, {args.trivial} trivial tasks{'':<8}{'start s':>9}{'ms/task':>9}  load")
    t_in, _ = timed(run_tasks, abs, list(range(args.trivial)), workers=1)
    print(f"{'in-process':<34}{0:>9.2f}{t_in / args.trivial * 1e3:>9.3f}  {load()}")
    start_l, _ = timed(run_tasks, abs, [1, 2], workers=2)
    t_l, _ = timed(run_tasks, abs, list(range(args.trivial)), workers=2)
    over_local = max(t_l - start_l, 0) / args.trivial
    print(f"{'local processes, 2 workers':<34}{start_l:>9.2f}{over_local * 1e3:>9.3f}  {load()}")
    over_ray = None
    if not args.no_ray:
        t_r, _ = timed(run_tasks, abs, list(range(args.trivial)), executor="ray", workers=2)
        over_ray = t_r / args.trivial
        print(f"{'Ray local, 2 CPUs':<34}{ray_init_s:>9.2f}{over_ray * 1e3:>9.3f}  {load()}")
        ray_module().shutdown()

    # projection for the 131,072-endpoint fabric on a cluster
    if args.large_probe:
        out = subprocess.run([sys.executable, "-c", LARGE_PROBE, args.large_mode], capture_output=True,
                             text=True, check=True)
        big = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"\n131,072-endpoint fabric (4 planes, {args.large_mode}), one task measured here: build "
              f"{big['build_s']:.1f} s, baseline {big['baseline_s']:.1f} s wall "
              f"({big['baseline_cpu_s']:.1f} s CPU), one failure {big['failure_s']:.1f} s wall "
              f"({big['failure_cpu_s']:.1f} s CPU), peak {big['peak_mb']:,.0f} MB; load {load()}")
        workers = args.nodes * args.cores_per_node
        # a dedicated core per task: its CPU time, plus Ray's per-task overhead
        per = big["failure_cpu_s"] + (over_ray or over_local)
        for w, label in ((args.nodes, "1 task per node"), (workers, f"{args.cores_per_node} per node")):
            total = big["tasks"] * per / w
            print(f"PROJECTION: {big['tasks']:,} failures x {per:.1f} s / {w:,} workers ({args.nodes} nodes, "
                  f"{label}) = {total:,.0f} s ({total / 3600:.1f} h); memory {big['peak_mb'] / 1024:.1f} GB "
                  f"per task x {w // args.nodes} per node")


if __name__ == "__main__":
    main()
