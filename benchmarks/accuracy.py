"""Diagnosis accuracy: bundles with known faults from two independent writers, investigated blind.

    python benchmarks/accuracy.py [--count 60] [--out bench_out/accuracy] [--seed 1000]
                                  [--kinds load_imbalance,healthy] [--reuse]
                                  [--writer project|writer2|both] [--count2 40] [--seed2 1]

The project's writer (twin.synth): scenarios drawn with seeds used nowhere else (from --seed
on): 1 to 4 planes, 2 and 3 tiers, 16 to 512 hosts, adaptive-routing and ECMP fabrics, every
fault kind at severities from blatant to subtle, some with two faults at once, some healthy,
every third one of issue 17's hard cases in turn (`HARD`), all with a real fleet's noise.
writer2 (benchmarks/writer2, no code shared with twin/): every kind, the hard cases of issue 17,
two concurrent faults and healthy bundles, cycling (`--count2` bundles from `--seed2`).
Prints, by writer and by fault kind (and hard case): bundles, top-1 accuracy (kind and root
cause right, time overlapping), recall at 3, false incidents per healthy bundle (score above
0.5), median and max seconds per bundle. investigate never reads labels.json; each bundle gets
a fresh store. A crash of investigate is printed with its traceback and counted as a miss.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replay.investigate import investigate
from twin.synth import generate
from twin.topology import FabricSpec, build

try:
    from benchmarks import writer2
except ImportError:  # run as `python benchmarks/accuracy.py`: this folder is on the path
    import writer2  # type: ignore[no-redef]

KINDS = ("link_down", "link_flap", "link_degraded", "congestion", "pfc_storm", "load_imbalance")


# issue 17's hard cases, each a variant of one kind, as fault keys of the project's generator
HARD = {
    "silent_device": "link_down",  # the spine at one end exports nothing (silent_root)
    "silent_storm": "pfc_storm",  # the storming NIC's host exports nothing (silent_root)
    "silent_loss": "link_degraded",  # the receiver counts fewer packets, no error counter moves
    "low_speed": "link_degraded",  # negotiated a lower speed than its peers, the whole bundle
    "short_flap": "link_flap",  # down for less than a sample, no syslog line
    "loud_victims": "congestion",  # the spine ports it pauses mark more ECN than the root
    "mild_imbalance": "load_imbalance",  # fixed uplink weights with a CV of about 0.2
}
VENDOR_MIXES = (["cumulus"], ["sonic"], ["eos"], ["cumulus", "sonic"], ["cumulus", "sonic", "eos"])
SAMPLE_S = 10


def draw(rng: np.random.Generator, i: int) -> tuple[str, list[str]]:
    """A scenario TOML and the fault kinds in it. Every third scenario is one of the hard cases
    (in turn); all carry a real fleet's noise: clock skew of up to 3 s, sampling jitter,
    missing and duplicated samples, counter clears, malformed lines, stray FCS errors, pauses
    and ECN microbursts, mixed vendors, carrier and speed counters."""
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
    hard = list(HARD)[(i // 3) % len(HARD)] if i % 3 == 2 else ""
    if hard:
        kinds = [HARD[hard]]
        mode = "ar" if hard == "mild_imbalance" else mode
    else:
        n_faults = int(rng.choice([0, 1, 1, 1, 1, 2], p=[0.12, 0.22, 0.22, 0.22, 0.11, 0.11]))
        kinds = list(rng.choice(KINDS, size=n_faults, replace=False))
    if mode == "ecmp":  # a fabric already in ECMP has no single switch left in it
        kinds = [k for k in kinds if k != "load_imbalance"]
    lines = [f"[fabric]\nhosts = {hosts}\nplanes = {planes}\ntiers = {tiers}\nleaf_radix = {leaf_radix}",
             f"spine_radix = {spine_radix}"]
    if hpl:
        lines.append(f"hosts_per_leaf = {hpl}")
    job = "alltoall" if "load_imbalance" in kinds or hard == "silent_loss" else "allreduce_ring"
    mix = VENDOR_MIXES[int(rng.integers(len(VENDOR_MIXES)))]
    lines += [f'\n[balancing]\nmode = "{mode}"', f'\n[[jobs]]\nname = "train"\ncollective = "{job}"',
              'hosts = "all"\nsize = "1GiB"',
              f'\n[telemetry]\nstart = "2026-11-30T03:00:00Z"\nduration_s = 300\nsample_s = {SAMPLE_S}',
              f"skew_ms = {int(rng.choice([300, 1000, 2000, 3000]))}\nvendors = {mix}",
              'counters = "full"\nnoise = true\njitter = "read"']
    for k in kinds:
        lines += _fault(rng, f, k, hard)
    return "\n".join(lines) + "\n", kinds


def _fault(rng: np.random.Generator, f, k: str, hard: str) -> list[str]:
    """The `[[faults]]` lines of one fault of kind `k` (the hard case `hard`, if any)."""
    at = int(rng.integers(60, 180))
    dur = int(rng.integers(20, 90))
    if k == "load_imbalance":
        at, dur = 0, 300  # a misconfiguration lasts
    if hard == "low_speed":  # negotiated so before the bundle, and still so after it
        at, dur = 0, 3600
    if hard == "short_flap":  # between two samples, whatever the clock skew (3 s at most)
        at = SAMPLE_S * int(rng.integers(6, 18)) + 4
    out = [f'\n[[faults]]\nkind = "{k}"\nat_s = {at}']
    out.append(f"duration_s = {float(rng.uniform(0.3, 2.0)):.2f}" if hard == "short_flap"
               else f"duration_s = {dur}")
    fabric_links = [f.link_id(c) for c in np.flatnonzero(f.cable_tier == 1)]
    host_names = [f.node_name[h] for h in range(f.spec.hosts)]
    leaves = sorted(f.node_name[n] for n in f.leaf_up_cables)
    if k in ("link_down", "link_flap", "link_degraded"):
        out.append(f'link = "{fabric_links[int(rng.integers(len(fabric_links)))]}"')
        if k == "link_flap":
            period = SAMPLE_S * int(rng.integers(3, 6)) if hard else dur + 20
            out.append(f"repeat = {int(rng.integers(1, 4))}\nperiod_s = {period}")
        if hard == "silent_loss":
            out.append(f"loss = {float(rng.uniform(0.01, 0.05)):.3f}\ncounted = false")
        elif hard == "low_speed":
            out.append(f"speed_gbps = {int(rng.choice([100, 200]))}")
        elif k == "link_degraded":
            out.append(f"loss = {float(rng.choice([1e-4, 1e-3, 1e-2]))}")
    elif k in ("congestion", "pfc_storm"):
        out.append(f'host = "{host_names[int(rng.integers(len(host_names)))]}"')
        if k == "congestion":
            out.append(f"senders = {int(rng.integers(3, min(16, f.spec.hosts - 1)))}")
    else:
        out.append(f'device = "{leaves[int(rng.integers(len(leaves)))]}"')
    extra = {"silent_device": "silent_root = true", "silent_storm": "silent_root = true",
             "short_flap": "logged = false", "loud_victims":
             f"victim_marks = {float(rng.uniform(1.5, 3.0)):.2f}",
             "mild_imbalance": f"weights_cv = {float(rng.uniform(0.15, 0.25)):.2f}"}
    return out + ([extra[hard]] if hard in extra else [])


def overlaps(inc: dict, fault: dict) -> bool:
    return inc["start"] <= fault["end"] and (inc["end"] is None or inc["end"] >= fault["start"])


@dataclass
class Tally:
    """One row of the table: faults found, healthy bundles' false incidents, times."""

    kind: str = ""  # the fault kind it counts ("" for every fault of its bundles)
    n: int = 0
    top1: int = 0
    at3: int = 0
    healthy: int = 0
    false_incidents: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)


def score(truth: list[dict], incs: list[dict], rows: list[Tally], seconds: float) -> None:
    """Add one bundle's result to each of `rows` (its kinds' rows, its writer's overall row)."""
    for row in rows:
        row.times.append(seconds)
    if not truth:
        for row in rows:
            row.healthy += 1
            row.false_incidents.append(sum(1 for x in incs if x["score"] > 0.5))
    for f in truth:
        hits = [r for r, x in enumerate(incs) if x["kind"] == f["kind"] and
                x["root_cause"] == f["root_cause"] and overlaps(x, f)]
        # with two faults, either may rank first: top-1 means ranked within the fault count
        top1, at3 = bool(hits and hits[0] < len(truth)), bool(hits and hits[0] < 3)
        for row in rows:
            if not row.kind or row.kind == f["kind"]:
                row.n += 1
                row.top1 += top1
                row.at3 += at3


def run_one(bundle: Path, db: Path) -> tuple[list[dict], float, str | None]:
    """investigate from nothing: incidents, seconds, and the traceback if it crashed."""
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    t = time.perf_counter()
    try:
        incs = investigate(bundle, db)["incidents"]
        err = None
    except Exception:  # noqa: BLE001 - a crash is a finding: report it, count a miss, go on
        incs, err = [], traceback.format_exc()
    return incs, time.perf_counter() - t, err


def _pct(a: int, n: int) -> str:
    return f"{a / n:.0%}" if n else "-"


def print_table(writer: str, table: dict[str, Tally]) -> None:
    """The rows of one writer: each kind (and hard case, and healthy) then `all`."""
    print(f"\n{'writer':<9}{'kind':<34}{'bundles':>8}{'faults':>7}{'top-1':>7}{'recall@3':>9}"
          f"{'false/healthy':>14}{'median s':>9}{'max s':>7}")
    for name, t in table.items():
        fh = f"{np.mean(t.false_incidents):.2f}" if t.healthy else "-"
        print(f"{writer:<9}{name:<34}{len(t.times):>8}{t.n:>7}{_pct(t.top1, t.n):>7}"
              f"{_pct(t.at3, t.n):>9}{fh:>14}{np.median(t.times):>9.2f}{max(t.times):>7.2f}")
    t = table["all"]
    clean = sum(1 for x in t.false_incidents if x == 0)
    print(f"{writer}: healthy bundles {t.healthy}, with no incident above 0.5: {clean}; "
          f"false incidents per healthy bundle {np.mean(t.false_incidents) if t.healthy else 0:.2f}")


def rows_for(table: dict[str, Tally], tags: list[str]) -> list[Tally]:
    """The rows a bundle counts in: one per tag (kind, hard case, healthy), then `all` last."""
    out = []
    for tag in tags:
        # "link_down (silent_device)" counts link_down faults; "two faults" every fault
        out.append(table.setdefault(tag, Tally("" if tag == "two faults" else tag.split(" ")[0])))
    out.append(table.setdefault("all", Tally()))
    return out


def project_suite(args, only: set[str]):
    """(bundle, truth, tags) of the project generator's scenarios, as before."""
    args.out.mkdir(parents=True, exist_ok=True)
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
        yield i, toml.splitlines()[1], bundle, truth, _tags(truth)


def _tags(truth: list[dict]) -> list[str]:
    """A bundle's rows: its kinds (or healthy), `kind (hard case)` and `two faults`."""
    kinds = sorted({f["kind"] for f in truth}) or ["healthy"]
    tags = [f"{f['kind']} ({f['hard_case']})" for f in truth if f.get("hard_case")]
    return kinds + tags + (["two faults"] if len(truth) > 1 else [])


def writer2_suite(args, only: set[str]):
    """(bundle, truth, tags) of writer2's suite; a bundle is rewritten only if writer2 made it."""
    out = args.out / "writer2"
    out.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(writer2.suite_cases(args.count2)):
        bundle = out / f"w{i:03d}"
        labels_path = bundle / "labels.json"
        ours = labels_path.exists() and json.loads(labels_path.read_text()).get("writer") == "writer2"
        if bundle.exists() and not ours:
            raise SystemExit(f"{bundle}: exists and was not written by writer2: not overwritten")
        if not (args.reuse and ours):
            if bundle.exists():
                shutil.rmtree(bundle)
            writer2.write_bundle(bundle, args.seed2 + i, case)
        truth = json.loads(labels_path.read_text())["faults"]
        if only and not (only & ({f["kind"] for f in truth} or {"healthy"})):
            continue
        yield i, case, bundle, truth, _tags(truth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--out", type=Path, default=Path("bench_out/accuracy"))
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--kinds", default="", help="only scenarios with one of these comma-separated "
                    "fault kinds ('healthy' for none); for working on one detector")
    ap.add_argument("--reuse", action="store_true",
                    help="keep bundles already generated in --out (same seeds, same bytes)")
    ap.add_argument("--writer", choices=("project", "writer2", "both"), default="project",
                    help="whose bundles: the project's generator, writer2, or both")
    ap.add_argument("--count2", type=int, default=40, help="writer2 bundles")
    ap.add_argument("--seed2", type=int, default=1, help="writer2's first seed")
    args = ap.parse_args()
    only = set(filter(None, args.kinds.split(",")))
    suites = {"project": project_suite, "writer2": writer2_suite}
    names = list(suites) if args.writer == "both" else [args.writer]
    tables: dict[str, dict[str, Tally]] = {}
    crashes: list[tuple[str, Path]] = []
    for writer in names:
        table = tables[writer] = {}
        for i, what, bundle, truth, tags in suites[writer](args, only):
            incs, seconds, err = run_one(bundle, bundle.with_suffix(".duckdb"))
            if err:
                crashes.append((writer, bundle))
                print(f"{i:3d} {writer} {bundle}: investigate crashed (counted as a miss)\n{err}")
            score(truth, incs, rows_for(table, tags), seconds)
            got = [(x["kind"], x["root_cause"]["id"]) for x in incs[:3]]
            print(f"{i:3d} {what:<14} faults {[(f['kind'], f['root_cause']['id']) for f in truth]} "
                  f"-> {got} ({seconds:.1f} s)")
    for writer, table in tables.items():
        if table:
            order = sorted(table, key=lambda k: (k == "all", k == "two faults", "(" in k,
                                                 KINDS.index(k) if k in KINDS else 99, k))
            print_table(writer, {k: table[k] for k in order})
    for writer, bundle in crashes:
        print(f"investigate crashed on {writer} bundle {bundle}")


if __name__ == "__main__":
    main()
