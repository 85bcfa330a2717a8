"""Who ranks: the detectors (explain decide=False) or the twin's search (decide=True), compared
on the stores `benchmarks/accuracy.py` left beside its bundles.

    python benchmarks/decide_modes.py DIR --prepare [--writer both --seed 1000 --count 16
                                      --seed2 1 --count2 30]   # accuracy.py's bundles, stores
    python benchmarks/decide_modes.py DIR [--modes off,on] [--misses]

--prepare writes accuracy.py's bundles (same seeds, same bytes) and investigates each one that
has no store yet, printing nothing of the result (a held-out set stays unseen until measured),
only the seconds it took. Each bundle's store (`bNNN.duckdb`, `writer2/wNNN.duckdb`) already holds its replay: only the
diagnosis runs again (detectors, explanation, impact), once per mode, on a read-only
connection, so both modes see the same replay. Prints accuracy.py's table per writer and mode
(top-1, recall at 3, false incidents per healthy bundle, seconds of diagnosis per bundle) and,
with --misses, each bundle where a fault is not top-1 in a mode, with that mode's top three.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb

from replay.investigate import diagnose, investigate

try:
    from benchmarks import accuracy
except ImportError:  # run as `python benchmarks/decide_modes.py`: this folder is on the path
    import accuracy  # type: ignore[no-redef]

MODES = {"off": False, "on": True}


def bundles(out: Path) -> list[tuple[str, Path]]:
    """(writer, bundle) of every bundle with labels and a store under an accuracy.py --out."""
    found = [("project", b) for b in sorted(out.glob("b[0-9]*")) if b.is_dir()]
    found += [("writer2", b) for b in sorted((out / "writer2").glob("w[0-9]*")) if b.is_dir()]
    return [(w, b) for w, b in found
            if (b / "labels.json").exists() and b.with_suffix(".duckdb").exists()]


def prepare(args: argparse.Namespace) -> None:
    """Write accuracy.py's bundles into args.out and investigate those without a store."""
    args.reuse, suites = True, {"project": accuracy.project_suite, "writer2": accuracy.writer2_suite}
    for writer in (list(suites) if args.writer == "both" else [args.writer]):
        for i, _what, bundle, _truth, _tags in suites[writer](args, set()):
            db = bundle.with_suffix(".duckdb")
            if db.exists() and not Path(f"{db}.wal").exists():
                continue
            t, cpu = time.perf_counter(), time.process_time()
            investigate(bundle, db)  # a crash stops here: a store is not half made
            print(f"{writer} {i:3d} {bundle}: investigated in {time.perf_counter() - t:.1f} s "
                  f"wall, {time.process_time() - cpu:.1f} s CPU", flush=True)


def diagnosed(store: Path, decide: bool) -> tuple[list[dict], float]:
    """The ranked incidents of a stored replay in one mode, and the CPU seconds it took."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        t = time.process_time()
        incs = [i.as_json(r) for r, i in enumerate(diagnose(con, decide=decide), 1)]
        return incs, time.process_time() - t
    finally:
        con.close()


def _missed(truth: list[dict], incs: list[dict]) -> bool:
    for f in truth:
        hits = [r for r, x in enumerate(incs) if x["kind"] == f["kind"]
                and x["root_cause"] == f["root_cause"]]
        if not hits or hits[0] >= len(truth):
            return True
    return not truth and any(x["score"] > 0.5 for x in incs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, nargs="+", help="accuracy.py --out directories")
    ap.add_argument("--modes", default="off,on")
    ap.add_argument("--prepare", action="store_true", help="write and investigate the bundles")
    ap.add_argument("--writer", choices=("project", "writer2", "both"), default="both")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--seed2", type=int, default=1)
    ap.add_argument("--count2", type=int, default=30)
    ap.add_argument("--misses", action="store_true", help="print every bundle a mode gets wrong")
    args = ap.parse_args()
    if args.prepare:
        for out in args.out:
            args.out = out
            prepare(args)
        return
    modes = [m for m in args.modes.split(",") if m]
    tables: dict[tuple[str, str], dict[str, accuracy.Tally]] = {}
    for out in args.out:
        for writer, bundle in bundles(out):
            truth = json.loads((bundle / "labels.json").read_text())["faults"]
            for mode in modes:
                try:
                    incs, cpu = diagnosed(bundle.with_suffix(".duckdb"), MODES[mode])
                except duckdb.IOException as exc:  # accuracy.py still writing it
                    print(f"{bundle}: skipped ({str(exc).splitlines()[0][:80]})")
                    break
                accuracy.score(truth, incs, accuracy.rows_for(tables.setdefault((writer, mode), {}),
                                            accuracy._tags(truth)), cpu)
                if args.misses and _missed(truth, incs):
                    got = [(x["kind"], x["root_cause"]["id"], x["score"]) for x in incs[:3]]
                    print(f"{mode:>3} {bundle}: truth "
                          f"{[(f['kind'], f['root_cause']['id']) for f in truth]} -> {got}")
    for (writer, mode), table in sorted(tables.items()):
        order = sorted(table, key=lambda k: (k == "all", k == "two faults", "(" in k,
                                             accuracy.KINDS.index(k) if k in accuracy.KINDS else 99, k))
        print(f"\n== {writer}, decide {mode} (seconds: CPU of the diagnosis alone)")
        accuracy.print_table(writer, {k: table[k] for k in order})


if __name__ == "__main__":
    main()
