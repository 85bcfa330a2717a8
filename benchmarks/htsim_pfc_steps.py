"""htsim's lossless queues stepped packet by packet on given paths: what PFC does to RoCE flows.

    python benchmarks/htsim_pfc_steps.py SCENARIO [--new-runs DIR] [--seed N] [--log HTSIM_STDOUT]

A check of the twin's PFC model against htsim's own queue logic, on the same paths: the
scenario's RoCE ECMP flows on the twin's hashed paths (fabric seed `--seed`), or with `--log`
(the patched htsim_roce's stdout, `benchmarks/htsim_forced_paths.py`; 2-tier scenarios) on
htsim's own, are stepped as htsim_roce steps them, then the quantiles of htsim's FCTs (its own
paths), the stepping's and the twin's (same paths) are printed. What is stepped (htsim at
40ccb05, sim/): every switch egress is a FIFO `LosslessOutputQueue` that a PAUSE stops after
the packet it is sending (queue_lossless_output.cpp); every switch ingress is a
`LosslessInputQueue` counting the bytes that came in on it until they leave by their egress,
pausing its upstream sender above `high` and resuming it below `low` (queue_lossless_input.cpp;
htsim_roce's defaults 15 / 12 packets of 4,000 bytes, `-pfc_thresholds`); PAUSE and RESUME
cross the wire in the hop latency (1 us) like data; a source (roce.cpp `RoceSrc`, no
congestion control) sends its flow's packets back to back at its NIC's speed from its start,
paused and resumed by its ToR's ingress (through the host's queue, FairPriorityQueue in
queue.cpp, which relays a PAUSE to every source of the host). Packets of 4,064 bytes on the wire (4,000 of payload).
Not stepped: ACKs (a completion here is the last data packet at its receiver, htsim's SINKLAST;
printed again plus one hop latency per link for the last ACK's way back). Measured (2026-12-02): perm128_2MB_2tier on htsim's paths, data at the
receiver: median 100.4 us against htsim's 99.0 (its SINKLAST), per-flow correlation 0.998 (the
twin there: FCT 91.5, htsim's 108.1); on the twin's seed-0 paths, with the ACK's hops (numpy's
default quantiles): shift64_512KB (benchmarks/htsim_heldout3) median 103.7 us, p99 219.5 (htsim
on its own paths 112.2 / 219.5, the twin 96.9 / 221.7), poisson288_512KB_200us_load50 median
104.9, p99 272.9 (htsim 109.1 / 292.9, the twin 111.4 / 202.3).
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections import deque
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run by hand as a script: the twin is importable from the repo
    sys.path.insert(0, str(REPO))

from benchmarks.htsim_calibration import (  # noqa: E402
    HOP_LATENCY_S,
    REFERENCE,
    SCENARIOS,
    fabric_state,
    htsim_fct_us,
    new_runs,
    twin_inputs,
)
from twin.engine import Flows, simulate  # noqa: E402
from twin.queueing import ROCE  # noqa: E402

PAYLOAD, WIRE = 4000, 4064  # bytes of a data packet: what the thresholds count in, on the wire


def step(gbps: list[float], paths: list[list[int]], packets: list[int], starts: list[float],
         t_end: float = 5e-3, high: float = 15 * PAYLOAD, low: float = 12 * PAYLOAD,
         wire_s: float = 1e-6) -> list[float | None]:
    """Per flow, when its last packet reached its receiver (s; None if not by `t_end`).
    `paths[f]`: link ids in order, the first its NIC's link (flows of one host share it: their
    sources each pace at its speed into its FIFO, as htsim's RoceSrc feed the host's queue, and a
    PAUSE of that link stops the queue and every source on it); every later link is a switch
    egress whose ingress is the link before it on the packet's path."""
    ser = [WIRE * 8 / (g * 1e9) for g in gbps]
    fifo: list[deque[tuple[int, int]]] = [deque() for _ in gbps]
    busy = [False] * len(gbps)
    state = ["ready"] * len(gbps)  # of each link's sender: ready | paused | pause_received
    held = [0.0] * len(gbps)  # bytes the far end's ingress counts, per link
    paused = [False] * len(gbps)  # has that ingress paused its sender
    sources: dict[int, list[int]] = {}
    for f, p in enumerate(paths):
        sources.setdefault(p[0], []).append(f)
    sent, got = [0] * len(paths), [0] * len(paths)
    ticking = [False] * len(paths)  # the source's pacing timer is set
    done: list[float | None] = [None] * len(paths)
    events: list[tuple[float, int, int, int, int]] = []
    seq = 0

    def push(t: float, kind: int, a: int, b: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, a, b))

    def serve(link: int, t: float) -> None:
        if not busy[link] and fifo[link] and state[link] == "ready":
            busy[link] = True
            push(t + ser[link], 1, link)

    for f in range(len(paths)):
        ticking[f] = True
        push(starts[f], 0, f)
    while events:
        t, _, kind, a, b = heapq.heappop(events)
        if t > t_end:
            break
        if kind == 0:  # source a's pacing timer: one packet into its NIC's FIFO
            nic = paths[a][0]
            if state[nic] != "ready" or sent[a] >= packets[a]:
                ticking[a] = False  # paused (or done): a RESUME restarts it
                continue
            sent[a] += 1
            fifo[nic].append((a, 0))
            serve(nic, t)
            push(t + ser[nic], 0, a)
        elif kind == 1:  # egress `a` finished a packet: its ingress counter drops
            f, hop = fifo[a].popleft()
            busy[a] = False
            if hop > 0:
                came = paths[f][hop - 1]
                held[came] -= WIRE
                if held[came] < low and paused[came]:
                    paused[came] = False
                    push(t + wire_s, 4, came)
            push(t + wire_s, 2, f, hop)
            if state[a] == "pause_received":
                state[a] = "paused"
            serve(a, t)
        elif kind == 2:  # a packet of flow a crossed link paths[a][b]
            link = paths[a][b]
            if b + 1 == len(paths[a]):
                got[a] += 1
                if got[a] == packets[a]:
                    done[a] = t
                continue
            held[link] += WIRE
            if held[link] > high and not paused[link]:
                paused[link] = True
                push(t + wire_s, 3, link)
            nxt = paths[a][b + 1]
            fifo[nxt].append((a, b + 1))
            serve(nxt, t)
        elif kind == 3:  # PAUSE reached link a's sender
            state[a] = "pause_received" if busy[a] else "paused"
        else:  # RESUME reached link a's sender (and the sources on a NIC's link)
            state[a] = "ready"
            serve(a, t)
            for f in sources.get(a, ()):
                if not ticking[f] and sent[f] < packets[f]:
                    ticking[f] = True
                    push(t, 0, f)
    return done


def _paths(flows: Flows, state) -> tuple[list[float], list[list[int]]]:  # noqa: ANN001
    """The twin's links of every flow in path order, renumbered, with their speeds (Gb/s)."""
    a = flows.incidence(state).explicit().tocsc()
    a.sum_duplicates()
    pos = state.fabric.link_position
    cap = state.link_capacity_bps() / 1e9
    paths = []
    for f in range(a.shape[1]):
        links = a.indices[a.indptr[f]:a.indptr[f + 1]]
        paths.append(links[np.argsort(pos[links])].tolist())
    used = sorted({link for p in paths for link in p})
    renum = {link: i for i, link in enumerate(used)}
    return [float(cap[link]) for link in used], [[renum[link] for link in p] for p in paths]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--new-runs", type=Path, default=None, help="folder of the scenario's runs")
    ap.add_argument("--seed", type=int, default=0, help="the twin's fabric seed (its hash draw)")
    ap.add_argument("--log", type=Path, default=None, help="patched htsim_roce's stdout")
    args = ap.parse_args(argv)
    scenarios = new_runs(args.new_runs)[0] if args.new_runs else SCENARIOS
    if args.scenario not in scenarios:
        print(f"{args.scenario}: no such scenario", file=sys.stderr)
        return 2
    sc, ref = scenarios[args.scenario], args.new_runs or REFERENCE
    flows, _ = twin_inputs(sc, "roce_ecmp", ref)
    state = fabric_state(sc, "ecmp", args.seed)
    if args.log is not None:  # htsim's own paths, as htsim_forced_paths reads them
        from benchmarks.htsim_forced_paths import htsim_paths
        try:
            flows = htsim_paths(sc, ref, args.log, state)[0]
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
    gbps, paths = _paths(flows, state)
    start = np.asarray(flows.start, float)
    done = step(gbps, paths, np.ceil(np.asarray(flows.size) / PAYLOAD).astype(int).tolist(),
                start.tolist())
    stepped = np.array([np.nan if d is None else d for d in done]) - start
    twin = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False,
                    transport=ROCE).fct
    qs = [10, 25, 50, 75, 90, 99]
    htsim, _ = htsim_fct_us(ref / sc.csv_name("roce_ecmp"))
    print(f"quantiles {qs} (us)")
    print("htsim FCT, its paths       ", np.percentile(htsim, qs).round(1).tolist())
    print("stepped, data at receiver  ", np.nanpercentile(stepped * 1e6, qs).round(1).tolist(),
          f"({int(np.isnan(stepped).sum())} unfinished)")
    back = np.array([len(p) for p in paths]) * 1e6 * HOP_LATENCY_S  # the last ACK's hops
    print("stepped + ACK's way back   ", np.nanpercentile(stepped * 1e6 + back, qs).round(1).tolist())
    print("twin FCT, the same paths   ", np.percentile(twin * 1e6, qs).round(1).tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
