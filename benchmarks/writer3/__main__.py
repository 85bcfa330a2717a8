"""python -m benchmarks.writer3 --out DIR --count N --seed S: N bundles, one per suite case.

DIR may be new, empty, or a folder this runner wrote (its `writer3.json` lists the bundles);
only the bundles it lists are replaced, anything else in DIR is left alone."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from . import suite_cases, write_bundle

INDEX = "writer3.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.writer3", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--small", action="store_true", help="small fabrics and 4-minute bundles (tests)")
    args = ap.parse_args(argv)
    out: Path = args.out
    index = out / INDEX
    ours: list[str] = []
    if out.exists() and any(out.iterdir()):
        if not index.is_file():
            print(f"{out}: exists, is not empty and was not written by writer3 ({INDEX} missing): "
                  "give a new --out", file=sys.stderr)
            return 2
        ours = json.loads(index.read_text())["bundles"]
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for i, case in enumerate(suite_cases(args.count)):
        name = f"w3_{i:03d}"
        bundle = out / name
        if bundle.exists():
            if name not in ours:
                print(f"{bundle}: exists and was not written by writer3: left alone", file=sys.stderr)
                return 2
            shutil.rmtree(bundle)
        t = time.perf_counter()
        labels = write_bundle(bundle, args.seed + i, case, small=args.small)
        names.append(name)
        index.write_text(json.dumps({"bundles": sorted(set(ours) | set(names)), "seed": args.seed,
                                     "count": args.count}, indent=2) + "\n")
        faults = [(f["kind"], f["root_cause"]["id"]) for f in labels["faults"]]
        print(f"{name} {case:<28} {faults} ({time.perf_counter() - t:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
