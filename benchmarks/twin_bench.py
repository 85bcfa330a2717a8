"""Twin speed and memory: scaling with endpoints, the 131K-endpoint 4-plane fabric, and htsim.

    python benchmarks/twin_bench.py [--max-hosts 16384] [--skip-ecmp-large]

Each case runs in a fresh process so that its peak RSS is its own. Printed, not asserted:
- scaling: a ring all-reduce step and a random permutation (adaptive routing, 4 planes, 8 NICs
  per host, 512-port switches, 200G) from 1,024 to 131,072 endpoints per plane;
- the 8,192-endpoint fabric (target: at most 2 s);
- the 1024-host 3-tier fat tree at 100G with htsim's permutation of 2 MB flows, ECMP and
  adaptive routing, against htsim's measured wall times on this kind of machine
  (tests/data/htsim/README.md: 9.6 s ECMP, 15.7 s AR; target at least 20x faster).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASE = r"""
import json, resource, sys, time
import numpy as np
from twin.collectives import Collective
from twin.engine import Flows, simulate
from twin.routing import FabricState
from twin.topology import FabricSpec, build
from twin.workload import read_connection_matrix

kind, arg, mode = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
if kind == "htsim":
    fabric = build(FabricSpec(hosts=1024, tiers=3, leaf_radix=16, spine_radix=16,
                              host_speed_gbps=100, fabric_speed_gbps=100))
    src, dst, start, size = read_connection_matrix(arg)
    t1 = time.perf_counter()
    res = simulate(FabricState(fabric, mode=[mode]), Flows(src, dst, size, start), hop_latency_s=1e-6)
    fct = res.fct * 1e6
    extra = {"median_us": float(np.median(fct)), "p99_us": float(np.percentile(fct, 99))}
else:
    hosts = int(arg)
    fabric = build(FabricSpec(hosts=hosts, nics_per_host=8, planes=4, leaf_radix=512,
                              spine_radix=512, hosts_per_leaf=min(256, hosts),
                              host_speed_gbps=200, fabric_speed_gbps=200))
    t1 = time.perf_counter()
    coll = Collective("allreduce_ring" if kind == "ring" else "permutation", np.arange(hosts), 2**30)
    res = simulate(FabricState(fabric, mode=[mode] * 4), coll.transfers(8))
    extra = {"endpoints_per_plane": hosts * 8, "transfers": hosts * 8,
             "finish_s": float(res.finish.max())}
t2 = time.perf_counter()
print(json.dumps({"build_s": t1 - t0, "simulate_s": t2 - t1, "total_s": t2 - t0,
                  "events": res.events,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}))
"""


def run_case(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CASE, *args], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-hosts", type=int, default=16384, help="hosts (x8 NICs = endpoints/plane)")
    ap.add_argument("--skip-ecmp-large", action="store_true",
                    help="run ECMP only up to 8,192 endpoints per plane")
    ap.add_argument("--htsim", default="tests/data/htsim/perm1024_2MB.cm")
    args = ap.parse_args()
    print(f"{'case':<34}{'endpoints/plane':>16}{'build s':>9}{'sim s':>9}{'total s':>9}"
          f"{'events':>8}{'peak MB':>9}")
    for hosts in [h for h in (128, 512, 1024, 2048, 8192, 16384) if h <= args.max_hosts]:
        for kind, mode in (("ring", "ar"), ("perm", "ar"), ("perm", "ecmp")):
            if mode == "ecmp" and args.skip_ecmp_large and hosts * 8 > 8192:
                continue
            r = run_case(kind, str(hosts), mode)
            print(f"{kind + ' ' + mode + ', 4 planes':<34}{hosts * 8:>16,}{r['build_s']:>9.2f}"
                  f"{r['simulate_s']:>9.2f}{r['total_s']:>9.2f}{r['events']:>8}{r['peak_mb']:>9.0f}")
    for mode, htsim_wall in (("ecmp", 9.6), ("ar", 15.7)):
        r = run_case("htsim", args.htsim, mode)
        print(f"{'htsim 1024-host 3-tier, ' + mode:<34}{1024:>16,}{r['build_s']:>9.2f}"
              f"{r['simulate_s']:>9.2f}{r['total_s']:>9.2f}{r['events']:>8}{r['peak_mb']:>9.0f}"
              f"   median {r['median_us']:.1f} us, p99 {r['p99_us']:.1f} us; "
              f"{htsim_wall / r['total_s']:.0f}x faster than htsim's {htsim_wall} s")


if __name__ == "__main__":
    main()
