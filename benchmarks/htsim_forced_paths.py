"""The twin on htsim's own ECMP paths: is a RoCE miss the hash draw or the model? (issue 18)

    python benchmarks/htsim_forced_paths.py SCENARIO HTSIM_STDOUT [--reference DIR]

htsim_roce does not print which path ECMP gave a flow. `htsim_forced_paths.patch` (next to
this file; `patch -p1` in htsim's checkout, then rebuild htsim_roce) adds two diagnostic lines,
printed only with HTSIM_LOG_PATHS set in the environment, and changes nothing else (the
reference's seed-13 FCTs come out identical):
    PATH flow <cm id> sw Switch_LowerPod_<tor> choice <j> of <n> via ...LS<tor>->US<spine>(0)
once per (switch, flow) for data packets, and
    SINKLAST Roce_<src>_<dst> at <us>
when a flow's last data packet reaches its receiver (the data part of the FCT; the rest is the
last ACK's way back), and
    ACKPATH flow <cm id> sw Switch_LowerPod_<tor> choice <j> of <n> via ...LS<tor>->US<spine>(0)
once per (switch, flow) for ACKs (ROCE18: the spine each flow's ACKs take back,
`htsim_ack_paths`; perm128's seed-13 FCTs unchanged with it).

For a 2-tier scenario (leaf -> spine -> leaf: the ToR's choice is the whole path) this reads
each flow's spine, gives each flow an ECMP entropy that the twin's hash sends to that spine,
and simulates the scenario's RoCE ECMP regime on those paths. Printed: htsim's and the twin's
median / p99 / max, their per-flow correlation, and per collision class (flows sharing the
flow's ToR uplink, flows sharing its spine downlink) the median FCT of each side and, with
SINKLAST lines, htsim's data completion and its ACK return beyond the base propagation.

Measured on perm128_2MB_2tier (seed 13, TWIN18, 2026-12-01): twin 89.5 / 170.8 us on htsim's
paths against htsim's 108.1 / 200.1 (correlation 0.94): the median miss is the model's, not the
draw's; failed2: 130.2 / 658.8 against 131.4 / 740.0 (the p99 miss of the twin's own draw,
-33%, was the draw).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run by hand as a script: the twin is importable from the repo
    sys.path.insert(0, str(REPO))

from benchmarks.htsim_calibration import (  # noqa: E402
    HOP_LATENCY_S,
    NEW_RUNS,
    REFERENCE,
    SCENARIOS,
    Scenario,
    fabric_state,
    fct_stats,
    new_runs,
)
from twin.engine import Flows, simulate  # noqa: E402
from twin.queueing import ROCE  # noqa: E402
from twin.routing import FabricState, _leaf_rows, mix_hash  # noqa: E402
from twin.workload import read_connection_matrix  # noqa: E402

_PATH = re.compile(r"^PATH flow (\d+) sw Switch_LowerPod_(\d+) .*LS\d+->US(\d+)\(")
_FINISHED = re.compile(r"^Flow Roce_(\d+)_(\d+) .*?finished at (\S+)")
_SINK = re.compile(r"^SINKLAST Roce_(\d+)_(\d+) at (\S+)")
_ACKPATH = re.compile(r"^ACKPATH flow (\d+) sw Switch_LowerPod_(\d+) .*LS\d+->US(\d+)\(")


def read_htsim_log(path: Path) -> tuple[dict[int, int], dict[tuple[int, int], float],
                                        dict[tuple[int, int], float]]:
    """The patched htsim_roce's stdout: spine per .cm flow id, finish (us) and data done at
    the sink (us) per (src, dst); the first SINKLAST line of a flow counts."""
    spine: dict[int, int] = {}
    finish: dict[tuple[int, int], float] = {}
    sink: dict[tuple[int, int], float] = {}
    with open(path) as fh:
        for line in fh:
            if m := _PATH.match(line):
                spine[int(m.group(1))] = int(m.group(3))
            elif m := _FINISHED.match(line):
                finish[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
            elif m := _SINK.match(line):
                sink.setdefault((int(m.group(1)), int(m.group(2))), float(m.group(3)))
    return spine, finish, sink


def entropies_for(state: FabricState, s_leaf: np.ndarray, d_leaf: np.ndarray,
                  uplink: np.ndarray, tries: int = 1024) -> np.ndarray:
    """Per flow, the smallest entropy whose ECMP hash (`twin.routing._ecmp_links` on a fabric
    with every path usable) picks uplink index `uplink[i]` of its leaf; -1 where none of
    `tries` does (a chance of (1 - 1/paths)^tries)."""
    paths = _leaf_rows(state.fabric)[1].shape[1]  # a 2-tier leaf's uplinks, one per spine
    e = np.arange(tries, dtype=np.int64)[None, :]
    h = mix_hash(e, s_leaf[:, None], d_leaf[:, None], np.full((len(s_leaf), 1), state.seed))
    hit = (h % np.uint64(paths)).astype(np.int64) == uplink[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1)


def htsim_paths(sc: Scenario, ref: Path, log: Path, state: FabricState
                ) -> tuple[Flows, np.ndarray, np.ndarray, np.ndarray]:
    """The scenario's flows (the .cm's order, starts in whole microseconds) with entropies that
    send each on the spine htsim's `log` gives it, and per flow its source and destination
    leaf rows and that uplink index. ValueError if the twin's uplinks are not in htsim's spine
    order or the log misses a flow."""
    src, dst, start, size = read_connection_matrix(ref / sc.cm)
    spine = read_htsim_log(log)[0]
    f = state.fabric
    index, up = _leaf_rows(f)
    row = np.full(f.n_nodes, -1, dtype=np.int64)
    row[list(index)] = list(index.values())
    s_leaf, d_leaf = row[f.ep_leaf[src]], row[f.ep_leaf[dst]]
    # uplink j of every leaf reaches spine j, as htsim numbers them (US<j>)
    order = f.cable_b[up]
    if not (np.diff(order, axis=1) > 0).all() or not (order == order[:1]).all():
        raise ValueError("the twin's uplinks are not in spine order")
    cross = s_leaf != d_leaf
    ids = np.arange(1, len(src) + 1)
    missing = [int(i) for i in ids[cross] if int(i) not in spine]
    if missing:
        raise ValueError(f"{log}: no PATH line for flow ids {missing[:5]}...")
    uplink = np.array([spine.get(int(i), 0) for i in ids])
    entropy = np.where(cross, entropies_for(state, s_leaf, d_leaf, uplink), 0)
    flows = Flows(src, dst, size, np.floor(start * 1e6 + 1e-6) * 1e-6, entropy=entropy)
    return flows, s_leaf, d_leaf, uplink


def htsim_ack_paths(sc: Scenario, ref: Path, log: Path, state: FabricState) -> Flows | None:
    """The flows' ACKs (receiver to sender) with entropies that send each on the spine its
    receiver's ToR hashed it to in htsim's `log` (ACKPATH lines); None if the log has none."""
    spine: dict[int, int] = {}
    with open(log) as fh:
        for line in fh:
            if m := _ACKPATH.match(line):
                spine[int(m.group(1))] = int(m.group(3))
    if not spine:
        return None
    src, dst, start, size = read_connection_matrix(ref / sc.cm)
    f = state.fabric
    index, _ = _leaf_rows(f)
    row = np.full(f.n_nodes, -1, dtype=np.int64)
    row[list(index)] = list(index.values())
    s_leaf, d_leaf = row[f.ep_leaf[dst]], row[f.ep_leaf[src]]  # the ACK's way
    ids = np.arange(1, len(src) + 1)
    uplink = np.array([spine.get(int(i), 0) for i in ids])
    entropy = np.where(s_leaf != d_leaf, entropies_for(state, s_leaf, d_leaf, uplink), 0)
    return Flows(dst, src, size, np.floor(start * 1e6 + 1e-6) * 1e-6, entropy=entropy)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("log", type=Path, help="stdout of the patched htsim_roce (HTSIM_LOG_PATHS=1)")
    ap.add_argument("--reference", type=Path, default=None)
    args = ap.parse_args(argv)
    fresh = new_runs(NEW_RUNS)[0]
    sc: Scenario | None = SCENARIOS.get(args.scenario) or fresh.get(args.scenario)
    if sc is None or sc.spec.tiers != 2:
        print(f"{args.scenario}: not a 2-tier scenario of the calibration sets", file=sys.stderr)
        return 2
    ref = args.reference or (REFERENCE if args.scenario in SCENARIOS else NEW_RUNS)
    state = fabric_state(sc, "ecmp")
    try:
        flows, s_leaf, d_leaf, uplink = htsim_paths(sc, ref, args.log, state)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    src, dst, start = flows.src, flows.dst, flows.start
    _, finish, sink = read_htsim_log(args.log)
    cross = s_leaf != d_leaf
    res = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False,
                   transport=ROCE)
    twin = res.fct * 1e6
    pairs = list(zip(src.tolist(), dst.tolist(), strict=True))
    htsim = np.array([finish[p] for p in pairs]) - start * 1e6
    fmt = " / ".join
    print(f"htsim {fmt(f'{x:.1f}' for x in fct_stats(htsim))} us; twin on htsim's paths "
          f"{fmt(f'{x:.1f}' for x in fct_stats(twin))} us; per-flow correlation "
          f"{np.corrcoef(htsim, twin)[0, 1]:.2f}")
    tor_up = Counter(zip(s_leaf[cross].tolist(), uplink[cross].tolist(), strict=True))
    spine_down = Counter(zip(uplink[cross].tolist(), d_leaf[cross].tolist(), strict=True))
    classes: dict[tuple[int, int], list[int]] = {}
    for i in np.flatnonzero(cross):
        key = (tor_up[(int(s_leaf[i]), int(uplink[i]))], spine_down[(int(uplink[i]), int(d_leaf[i]))])
        classes.setdefault(key, []).append(int(i))
    print("uplink x downlink sharing: flows, median FCT htsim / twin"
          + (", htsim data at the sink, ACK return beyond 4 hops" if sink else ""))
    for key in sorted(classes):
        i = np.array(classes[key])
        line = f"  {key[0]} x {key[1]}: {len(i):3d}, {np.median(htsim[i]):7.1f} / {np.median(twin[i]):7.1f}"
        if sink:
            data = np.array([sink[pairs[k]] for k in i])
            line += f", {np.median(data):7.1f}, {np.median(htsim[i] - data - 4 * HOP_LATENCY_S * 1e6):5.1f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
