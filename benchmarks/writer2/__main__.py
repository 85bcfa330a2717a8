"""python -m benchmarks.writer2 --out DIR --count N --seed S: write a suite of bundles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import suite_cases, write_bundle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="a new or empty directory")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(suite_cases(args.count)):
        bundle = args.out / f"w{i:03d}"
        if bundle.exists():  # never overwrite what we did not create in this run
            print(f"{bundle}: exists, not overwritten", file=sys.stderr)
            return 1
        labels = write_bundle(bundle, args.seed + i, case)
        print(f"{bundle} {case}: {[(x['kind'], x['root_cause']['id']) for x in labels['faults']]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
