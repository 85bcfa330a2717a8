"""python -m benchmarks.writer3.score --out DIR: `fabtwin investigate BUNDLE --json` on every
writer3 bundle of DIR, one process per bundle and a store built from nothing, scored against
labels.json with benchmarks/accuracy.py's rules (kind and root id right, time overlapping;
with two faults either may rank within the first two).

Prints one line per bundle, the table by kind and hard case (top-1, recall at 3, incidents above
0.5 on healthy bundles, median and max seconds), and for every fault not found first what the
bundle had and what investigate said. Stores go to DIR/stores (a folder this scorer marks as
its own: it never deletes anything else); results to DIR/results/<bundle>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.accuracy import KINDS, print_table, rows_for, score
from benchmarks.accuracy import _tags as tags_of

MARK = ".writer3-score"


def _fabtwin() -> list[str]:
    exe = Path(sys.executable).with_name("fabtwin")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "fabtwin.cli"]


def _stores(out: Path) -> Path:
    stores = out / "stores"
    if stores.exists() and not (stores / MARK).exists():
        raise SystemExit(f"{stores}: exists and was not made by this scorer: give another --out")
    stores.mkdir(parents=True, exist_ok=True)
    (stores / MARK).write_text("stores written by benchmarks.writer3.score\n")
    return stores


def run_one(bundle: Path, store: Path) -> dict:
    """investigate in a child process from nothing: incidents, wall and CPU seconds, error."""
    for p in (store, Path(f"{store}.wal")):
        p.unlink(missing_ok=True)  # only inside our marked stores folder
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(_fabtwin() + ["investigate", str(bundle), "--db", str(store), "--json", "-q"],
                          capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = {"bundle": bundle.name, "exit": proc.returncode, "wall_s": wall, "cpu_s": cpu,
           "incidents": [], "error": None}
    if proc.returncode in (0, 5):
        res["incidents"] = json.loads(proc.stdout)["incidents"]
    else:
        res["error"] = (proc.stderr or proc.stdout)[-2000:]
    return res


def _brief(incs: list[dict], n: int = 3) -> str:
    return "; ".join(f"#{x['rank']} {x['kind']} {x['root_cause']['id']} {x['score']:.2f}"
                     for x in incs[:n]) or "no incident"


def _misses(labels: dict, incs: list[dict]) -> list[str]:
    out = []
    for f in labels["faults"]:
        hits = [r for r, x in enumerate(incs) if x["kind"] == f["kind"]
                and x["root_cause"] == f["root_cause"]
                and x["start"] <= f["end"] and (x["end"] is None or x["end"] >= f["start"])]
        if not hits or hits[0] >= len(labels["faults"]):
            hc = f" ({f['hard_case']})" if f.get("hard_case") else ""
            at = f"found at rank {hits[0] + 1}" if hits else "not in the list"
            out.append(f"{f['kind']}{hc} {f['root_cause']['id']} {f['start'][11:19]}-"
                       f"{f['end'][11:19]}: {at}; investigate said {_brief(incs)}")
    if not labels["faults"]:
        loud = [x for x in incs if x["score"] > 0.5]
        if loud:
            out.append(f"healthy: {len(loud)} incident(s) above 0.5: {_brief(loud)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.writer3.score",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="a folder the writer3 runner wrote")
    ap.add_argument("--reuse", action="store_true", help="print stored results, run only the missing")
    args = ap.parse_args(argv)
    index = args.out / "writer3.json"
    if not index.is_file():
        print(f"{args.out}: no writer3.json: run python -m benchmarks.writer3 --out {args.out}",
              file=sys.stderr)
        return 2
    stores, results = _stores(args.out), args.out / "results"
    results.mkdir(exist_ok=True)
    table: dict = {}
    misses = []
    cpu = []
    for name in json.loads(index.read_text())["bundles"]:
        bundle = args.out / name
        labels = json.loads((bundle / "labels.json").read_text())
        saved = results / f"{name}.json"
        if args.reuse and saved.exists():
            res = json.loads(saved.read_text())
        else:
            res = run_one(bundle, stores / f"{name}.duckdb")
            saved.write_text(json.dumps(res, indent=1) + "\n")
        if res["error"]:
            print(f"{name}: investigate failed (exit {res['exit']}), counted as a miss:\n{res['error']}")
        truth, incs = labels["faults"], res["incidents"]
        score(truth, incs, rows_for(table, tags_of(truth)), res["wall_s"])
        cpu.append(res["cpu_s"])
        print(f"{name} {labels['scenario']:<28} {[(f['kind'], f['root_cause']['id']) for f in truth]} "
              f"-> {_brief(incs)} ({res['wall_s']:.1f} s, {res['cpu_s']:.1f} s CPU)", flush=True)
        misses += [f"{name} {m}" for m in _misses(labels, incs)]
    order = sorted(table, key=lambda k: (k == "all", k == "two faults", "(" in k,
                                         KINDS.index(k) if k in KINDS else 99, k))
    print_table("writer3", {k: table[k] for k in order})
    cpu.sort()
    if cpu:
        print(f"writer3: CPU seconds per bundle, median {cpu[len(cpu) // 2]:.1f}, max {cpu[-1]:.1f}")
    print(f"\nfaults not ranked first, and healthy bundles with incidents above 0.5 ({len(misses)}):")
    for m in misses:
        print("  " + m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
