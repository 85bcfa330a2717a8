"""htsim's own spread over its hash seeds, for the ECMP rows the twin pools (issue 18).

    python benchmarks/htsim_seeds.py --bin DIR [--seeds 13 1 2 3 4 5 6 7] [--out FILE]
        [--new-runs FOLDER ...] [--only SCENARIO ...]

htsim's `-seed` (default 13, the reference runs') salts every switch's ECMP hash and each
RoCE source's path id, so one run is one draw of which flows collide. For each RoCE ECMP
scenario of fewer than `twin.hash_draws.POOL_FLOWS` flows (those whose calibration rows pool
the twin over hash draws), htsim_roce runs once per seed with the scenario's command line
(the reference README's, plus `-seed`), one at a time in a scratch folder, and the median and
p99 of its FCTs (as the calibration computes them) go to `htsim_seeds.json`:
{scenario: {seed: [median_us, p99_us]}}. `htsim_calibration.py` prints, beside each such row,
htsim's median over seeds and the twin's error against it (the bars themselves stay on the
reference run). Run by hand (8 seeds x 12 scenarios: about 3 CPU minutes of htsim).
`--new-runs` names the folders of held-out runs whose pooled scenarios are measured too (default:
benchmarks/htsim_heldout; the blind sets' scenario names are unique across sets), `--only` a
subset; scenarios already in FILE and not measured now are kept.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run by hand as a script: the twin is importable from the repo
    sys.path.insert(0, str(REPO))

from benchmarks.htsim_calibration import (  # noqa: E402
    CALIBRATION,
    HELD_OUT,
    NEW_RUNS,
    REFERENCE,
    SCENARIOS,
    SEEDS_FILE,
    Scenario,
    fct_stats,
    new_runs,
)
from twin.hash_draws import POOL_FLOWS  # noqa: E402
from twin.workload import read_connection_matrix  # noqa: E402

_FINISHED = re.compile(r"^Flow Roce_(\d+)_(\d+) .*?finished at (\S+)")


def command(sc: Scenario, cm: Path, seed: int, binary: Path) -> list[str]:
    """htsim_roce's command line for a scenario, as the reference READMEs give it."""
    spec = sc.spec
    cmd = [str(binary), "-tiers", str(spec.tiers), "-q", "100", "-linkspeed",
           str(int(spec.fabric_speed_gbps * 1000)), "-nodes", str(spec.hosts), "-strat", "ecmp_host",
           "-paths", "1"]
    if sc.failed:
        cmd += ["-failed", str(sc.failed)]
    return cmd + ["-end", "20000", "-tm", cm.name, "-seed", str(seed)]


def run_stats(sc: Scenario, folder: Path, seed: int, binary: Path) -> tuple[float, float]:
    """(median, p99) in us of one htsim run at `seed` (FCT = finish - start, finished flows)."""
    src, dst, start, _ = read_connection_matrix(folder / sc.cm)
    starts = {(int(s), int(d)): float(np.floor(t * 1e6 + 1e-6))
              for s, d, t in zip(src, dst, start, strict=True)}
    with tempfile.TemporaryDirectory() as tmp:  # htsim writes logout.dat where it runs
        (Path(tmp) / sc.cm).write_bytes((folder / sc.cm).read_bytes())
        out = subprocess.run(command(sc, folder / sc.cm, seed, binary), cwd=tmp, check=True,
                             capture_output=True, text=True).stdout
    fct = [float(m.group(3)) - starts[(int(m.group(1)), int(m.group(2)))]
           for line in out.splitlines() if (m := _FINISHED.match(line))]
    median, p99, _ = fct_stats(np.array(fct))
    return median, p99


def pooled_scenarios(folders: tuple[Path, ...] = (NEW_RUNS,)) -> dict[str, tuple[Scenario, Path]]:
    """The ECMP scenarios of the calibration sets and of the held-out `folders` that the twin
    pools over hash draws."""
    out = {name: (SCENARIOS[name], REFERENCE) for name in CALIBRATION + HELD_OUT}
    for folder in folders:
        out |= {name: (sc, folder) for name, sc in new_runs(folder)[0].items()}
    return {name: (sc, folder) for name, (sc, folder) in out.items()
            if len(read_connection_matrix(folder / sc.cm)[0]) < POOL_FLOWS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, required=True, help="folder holding htsim_roce")
    ap.add_argument("--seeds", type=int, nargs="*", default=[13, 1, 2, 3, 4, 5, 6, 7])
    ap.add_argument("--out", type=Path, default=SEEDS_FILE)
    ap.add_argument("--new-runs", type=Path, nargs="*", default=[NEW_RUNS],
                    help="folders of held-out runs (default: benchmarks/htsim_heldout)")
    ap.add_argument("--only", nargs="*", help="scenario names (default: every pooled one)")
    args = ap.parse_args(argv)
    binary = args.bin / "htsim_roce"
    if not binary.is_file():
        print(f"{binary}: no htsim_roce there", file=sys.stderr)
        return 2
    result: dict[str, dict[str, list[float]]] = (json.loads(args.out.read_text())
                                                  if args.out.is_file() else {})
    for name, (sc, folder) in pooled_scenarios(tuple(args.new_runs)).items():
        if args.only and name not in args.only:
            continue
        result[name] = {}
        for seed in args.seeds:
            median, p99 = run_stats(sc, folder, seed, binary)
            result[name][str(seed)] = [round(median, 2), round(p99, 2)]
            print(f"{name:<32} seed {seed:3d}: median {median:8.1f} p99 {p99:8.1f}", flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
