"""Diagnosis accuracy: generated scenarios with known faults, investigated blind.

    python benchmarks/accuracy.py [--count 60] [--out bench_out/accuracy] [--seed 1000]
                                  [--kinds load_imbalance,healthy] [--reuse]

Scenarios are drawn with seeds used nowhere else (from --seed on): 1 to 4 planes, 2 and 3
tiers, 16 to 512 hosts, adaptive-routing and ECMP fabrics, every fault kind at severities from
blatant to subtle, some with two faults at once, some healthy. Prints top-1 accuracy (kind and
root cause right, time overlapping), recall at 3, false incidents per healthy bundle (score above
0.5) and time per bundle, by fault kind. investigate never reads labels.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from replay.investigate import investigate
from twin.synth import generate
from twin.topology import FabricSpec, build

KINDS = ("link_down", "link_flap", "link_degraded", "congestion", "pfc_storm", "load_imbalance")


def draw(rng: np.random.Generator, i: int) -> tuple[str, list[str]]:
    """A scenario TOML and the fault kinds in it."""
    planes = int(rng.choice([1, 1, 2, 4]))
    tiers = int(rng.choice([2, 2, 2, 3]))
    if tiers == 3:
        hosts, leaf_radix, spine_radix, hpl = 128, 8, 8, None
    else:
        hosts = int(rng.choice([16, 32, 64, 128, 256, 512]))
        hpl = int(min(16, max(4, hosts // 8)))
        leaf_radix = 2 * hpl
        spine_radix = max(leaf_radix, hosts // hpl)
    mode = str(rng.choice(["ar", "ar", "ecmp"]))
    spec = FabricSpec(hosts=hosts, planes=planes, tiers=tiers, leaf_radix=leaf_radix,
                      spine_radix=spine_radix, hosts_per_leaf=hpl)
    f = build(spec)
    n_faults = int(rng.choice([0, 1, 1, 1, 1, 2], p=[0.12, 0.22, 0.22, 0.22, 0.11, 0.11]))
    kinds = list(rng.choice(KINDS, size=n_faults, replace=False))
    if mode == "ecmp":  # a fabric already in ECMP has no single switch left in it
        kinds = [k for k in kinds if k != "load_imbalance"]
    fabric_links = [f.link_id(c) for c in np.flatnonzero(f.cable_tier == 1)]
    host_names = [f.node_name[h] for h in range(hosts)]
    leaves = sorted(f.node_name[n] for n in f.leaf_up_cables)
    lines = [f"[fabric]\nhosts = {hosts}\nplanes = {planes}\ntiers = {tiers}\nleaf_radix = {leaf_radix}",
             f"spine_radix = {spine_radix}"]
    if hpl:
        lines.append(f"hosts_per_leaf = {hpl}")
    job = "alltoall" if "load_imbalance" in kinds else "allreduce_ring"
    lines += [f'\n[balancing]\nmode = "{mode}"', f'\n[[jobs]]\nname = "train"\ncollective = "{job}"',
              'hosts = "all"\nsize = "1GiB"',
              '\n[telemetry]\nstart = "2026-11-30T03:00:00Z"\nduration_s = 300\nsample_s = 10']
    for k in kinds:
        at = int(rng.integers(60, 180))
        dur = int(rng.integers(20, 90))
        if k == "load_imbalance":
            at, dur = 0, 300  # a misconfiguration lasts
        lines.append(f'\n[[faults]]\nkind = "{k}"\nat_s = {at}\nduration_s = {dur}')
        if k in ("link_down", "link_flap", "link_degraded"):
            lines.append(f'link = "{fabric_links[int(rng.integers(len(fabric_links)))]}"')
            if k == "link_flap":
                lines.append(f"repeat = {int(rng.integers(1, 4))}\nperiod_s = {dur + 20}")
            if k == "link_degraded":
                lines.append(f"loss = {float(rng.choice([1e-4, 1e-3, 1e-2]))}")
        elif k in ("congestion", "pfc_storm"):
            lines.append(f'host = "{host_names[int(rng.integers(len(host_names)))]}"')
            if k == "congestion":
                lines.append(f"senders = {int(rng.integers(3, min(16, hosts - 1)))}")
        else:
            lines.append(f'device = "{leaves[int(rng.integers(len(leaves)))]}"')
    return "\n".join(lines) + "\n", kinds


def overlaps(inc: dict, fault: dict) -> bool:
    return inc["start"] <= fault["end"] and (inc["end"] is None or inc["end"] >= fault["start"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--out", type=Path, default=Path("bench_out/accuracy"))
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--kinds", default="", help="only scenarios with one of these comma-separated "
                    "fault kinds ('healthy' for none); for working on one detector")
    ap.add_argument("--reuse", action="store_true",
                    help="keep bundles already generated in --out (same seeds, same bytes)")
    args = ap.parse_args()
    only = set(filter(None, args.kinds.split(",")))
    args.out.mkdir(parents=True, exist_ok=True)
    stats: dict[str, dict] = defaultdict(lambda: {"n": 0, "top1": 0, "at3": 0})
    healthy, false_on_healthy, times = 0, [], []
    for i in range(args.count):
        rng = np.random.default_rng(args.seed + i)
        toml, kinds = draw(rng, i)
        if only and not (only & set(kinds) or ("healthy" in only and not kinds)):
            continue
        scen = args.out / f"s{i:03d}.toml"
        scen.write_text(toml)
        bundle = args.out / f"b{i:03d}"
        if not (args.reuse and (bundle / "labels.json").exists()):
            generate(scen, bundle, seed=args.seed + i)
        truth = json.loads((bundle / "labels.json").read_text())["faults"]
        db = args.out / f"b{i:03d}.duckdb"
        for p in (db, Path(f"{db}.wal")):
            p.unlink(missing_ok=True)
        t = time.perf_counter()
        result = investigate(bundle, db)
        times.append(time.perf_counter() - t)
        incs = result["incidents"]
        if not truth:
            healthy += 1
            false_on_healthy.append(sum(1 for x in incs if x["score"] > 0.5))
        for f in truth:
            s = stats[f["kind"]]
            s["n"] += 1
            hits = [r for r, x in enumerate(incs) if x["kind"] == f["kind"] and
                    x["root_cause"] == f["root_cause"] and overlaps(x, f)]
            # with two faults, either may rank first: top-1 means ranked within the fault count
            s["top1"] += bool(hits and hits[0] < len(truth))
            s["at3"] += bool(hits and hits[0] < 3)
        got = [(x["kind"], x["root_cause"]["id"]) for x in incs[:3]]
        print(f"{i:3d} {toml.splitlines()[1]:<14} faults {[(f['kind'], f['root_cause']['id']) for f in truth]} "
              f"-> {got} ({times[-1]:.1f} s)")
    print(f"\n{'kind':<16}{'cases':>6}{'top-1':>8}{'recall@3':>10}")
    total = {"n": 0, "top1": 0, "at3": 0}
    for k in KINDS:
        s = stats[k]
        for key in total:
            total[key] += s[key]
        if s["n"]:
            print(f"{k:<16}{s['n']:>6}{s['top1'] / s['n']:>8.0%}{s['at3'] / s['n']:>10.0%}")
    print(f"{'all':<16}{total['n']:>6}{total['top1'] / max(total['n'], 1):>8.0%}"
          f"{total['at3'] / max(total['n'], 1):>10.0%}")
    clean = sum(1 for x in false_on_healthy if x == 0)
    print(f"healthy bundles: {healthy}, with no false incident above 0.5: {clean} "
          f"({clean / max(healthy, 1):.0%}); false incidents per healthy bundle: "
          f"{np.mean(false_on_healthy) if false_on_healthy else 0:.2f}")
    print(f"investigate time per bundle: median {np.median(times):.2f} s, max {max(times):.2f} s")


if __name__ == "__main__":
    main()
