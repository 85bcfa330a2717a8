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
ACKs (one of 64 bytes per data packet, RoceSink::send_ack) are stepped when `step` is given
their paths (`rpaths`): they leave the receiver's NIC ahead of its data but not while it is
paused and queue in the switches' FIFOs; the completion is then htsim's FCT, the last ACK at
the sender (`main` prints both; ROCE18, with ACKs on htsim's own perm128 paths: 25/50/75/99
87.6/106.3/143.1/197.9 us against htsim's 87.4/108.1/143.4/201.9). Without them a completion
is the last data packet at its receiver (htsim's SINKLAST). Measured (2026-12-02): perm128_2MB_2tier on htsim's paths, data at the
receiver: median 100.4 us against htsim's 99.0 (its SINKLAST), per-flow correlation 0.998 (the
twin there: FCT 91.5, htsim's 108.1); on the twin's seed-0 paths, with the ACK's hops (numpy's
default quantiles): shift64_512KB (benchmarks/htsim_heldout3) median 103.7 us, p99 219.5 (htsim
on its own paths 112.2 / 219.5, the twin 96.9 / 221.7), poisson288_512KB_200us_load50 median
104.9, p99 272.9 (htsim 109.1 / 292.9, the twin 111.4 / 202.3).
"""

from __future__ import annotations

import argparse
import dataclasses
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
from twin.ack_wait import acks_of  # noqa: E402
from twin.engine import Flows, Transfers, simulate  # noqa: E402
from twin.queueing import ROCE  # noqa: E402

PAYLOAD, WIRE = 4000, 4064  # bytes of a data packet: what the thresholds count in, on the wire
ACK = 64  # bytes of an ACK (RocePacket::ACKSIZE)


def step(gbps: list[float], paths: list[list[int]], packets: list[int], starts: list[float],
         t_end: float = 5e-3, high: float = 15 * PAYLOAD, low: float = 12 * PAYLOAD,
         wire_s: float = 1e-6, rpaths: list[list[int]] | None = None) -> list[float | None]:
    """Per flow, when its last packet reached its receiver (s; None if not by `t_end`), or,
    with `rpaths` (each flow's ACK path, its receiver's NIC link first), when the ACK of its
    last packet reached its sender: htsim's FCT.
    `paths[f]`: link ids in order, the first its NIC's link (flows of one host share it: their
    sources each pace at its speed into its FIFO, as htsim's RoceSrc feed the host's queue, and a
    PAUSE of that link stops the queue and every source on it); every later link is a switch
    egress whose ingress is the link before it on the packet's path. ACKs (roce.cpp
    RoceSink::send_ack: one of 64 bytes per data packet) leave the receiver's NIC ahead of its
    data (FairPriorityQueue: PRIO_HI) but not while it is paused, and queue in the switches'
    FIFOs like data, counted by their ingress like data."""
    ser = [8 / (g * 1e9) for g in gbps]  # seconds per byte
    hi: list[deque[tuple[int, int, int]]] = [deque() for _ in gbps]  # a NIC's ACKs
    fifo: list[deque[tuple[int, int, int]]] = [deque() for _ in gbps]  # (flow, hop, ack)
    busy: list[tuple[int, int, int] | None] = [None] * len(gbps)  # the packet in service
    state = ["ready"] * len(gbps)  # of each link's sender: ready | paused | pause_received
    held = [0.0] * len(gbps)  # bytes the far end's ingress counts, per link
    paused = [False] * len(gbps)  # has that ingress paused its sender
    sources: dict[int, list[int]] = {}
    for f, p in enumerate(paths):
        sources.setdefault(p[0], []).append(f)
    nics = set(sources) | ({p[0] for p in rpaths} if rpaths is not None else set())
    sent, got, acked = [0] * len(paths), [0] * len(paths), [0] * len(paths)
    ticking = [False] * len(paths)  # the source's pacing timer is set
    done: list[float | None] = [None] * len(paths)
    events: list[tuple[float, int, int, int, int, int]] = []
    seq = 0

    def push(t: float, kind: int, a: int, b: int = 0, ack: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, a, b, ack))

    def serve(link: int, t: float) -> None:
        if busy[link] is None and state[link] == "ready" and (hi[link] or fifo[link]):
            pkt = hi[link].popleft() if hi[link] else fifo[link].popleft()
            busy[link] = pkt
            push(t + (ACK if pkt[2] else WIRE) * ser[link], 1, link)

    def enqueue(link: int, pkt: tuple[int, int, int], t: float) -> None:
        (hi if pkt[2] and link in nics else fifo)[link].append(pkt)
        serve(link, t)

    for f in range(len(paths)):
        ticking[f] = True
        push(starts[f], 0, f)
    while events:
        t, _, kind, a, b, ack = heapq.heappop(events)
        if t > t_end:
            break
        if kind == 0:  # source a's pacing timer: one packet into its NIC's FIFO
            nic = paths[a][0]
            if state[nic] != "ready" or sent[a] >= packets[a]:
                ticking[a] = False  # paused (or done): a RESUME restarts it
                continue
            sent[a] += 1
            enqueue(nic, (a, 0, 0), t)
            push(t + WIRE * ser[nic], 0, a)
        elif kind == 1:  # egress `a` finished a packet: its ingress counter drops
            pkt = busy[a]
            assert pkt is not None
            f, hop, is_ack = pkt
            busy[a] = None
            if hop > 0:
                came = (rpaths[f] if is_ack and rpaths is not None else paths[f])[hop - 1]
                held[came] -= ACK if is_ack else WIRE
                if held[came] < low and paused[came]:
                    paused[came] = False
                    push(t + wire_s, 4, came)
            push(t + wire_s, 2, f, hop, is_ack)
            if state[a] == "pause_received":
                state[a] = "paused"
            serve(a, t)
        elif kind == 2:  # a packet of flow a crossed link b of its path (or its ACK's)
            path = rpaths[a] if ack and rpaths is not None else paths[a]
            link = path[b]
            if b + 1 == len(path):
                if ack:
                    acked[a] += 1
                    if acked[a] == packets[a]:
                        done[a] = t
                    continue
                got[a] += 1
                if rpaths is not None:  # the receiver ACKs it
                    enqueue(rpaths[a][0], (a, 0, 1), t)
                elif got[a] == packets[a]:
                    done[a] = t
                continue
            held[link] += ACK if ack else WIRE
            if held[link] > high and not paused[link]:
                paused[link] = True
                push(t + wire_s, 3, link)
            enqueue(path[b + 1], (a, b + 1, ack), t)
        elif kind == 3:  # PAUSE reached link a's sender
            state[a] = "pause_received" if busy[a] is not None else "paused"
        else:  # RESUME reached link a's sender (and the sources on a NIC's link)
            state[a] = "ready"
            serve(a, t)
            for f in sources.get(a, ()):
                if not ticking[f] and sent[f] < packets[f]:
                    ticking[f] = True
                    push(t, 0, f)
    return done


def _link_lists(flows: Flows | Transfers, state) -> list[list[int]]:  # noqa: ANN001
    """The twin's links of every flow in path order."""
    a = flows.incidence(state).explicit().tocsc()
    a.sum_duplicates()
    pos = state.fabric.link_position
    return [links[np.argsort(pos[links])].tolist()
            for links in (a.indices[a.indptr[f]:a.indptr[f + 1]] for f in range(a.shape[1]))]


def _paths(flows: Flows, state) -> tuple[list[float], list[list[int]]]:  # noqa: ANN001
    """The twin's links of every flow in path order, renumbered, with their speeds (Gb/s)."""
    gbps, paths, _ = _paths_and_acks(flows, None, state)
    return gbps, paths


def _paths_and_acks(flows: Flows, acks: Flows | None, state  # noqa: ANN001
                    ) -> tuple[list[float], list[list[int]], list[list[int]]]:
    """`_paths` with the links of each flow's ACKs too (given the ACKs as flows), one numbering."""
    paths = _link_lists(flows, state)
    back = _link_lists(acks, state) if acks is not None else []
    cap = state.link_capacity_bps() / 1e9
    used = sorted({link for p in paths + back for link in p})
    renum = {link: i for i, link in enumerate(used)}
    return ([float(cap[link]) for link in used], [[renum[link] for link in p] for p in paths],
            [[renum[link] for link in p] for p in back])


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
    acks = acks_of(flows)  # the ACKs on the twin's hash of the way back
    if args.log is not None:  # htsim's own paths, as htsim_forced_paths reads them
        from benchmarks.htsim_forced_paths import htsim_ack_paths, htsim_paths
        try:
            flows = htsim_paths(sc, ref, args.log, state)[0]
            acks = htsim_ack_paths(sc, ref, args.log, state) or acks_of(flows)
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
    gbps, paths, back = _paths_and_acks(flows, acks, state)
    start = np.asarray(flows.start, float)
    packets = np.ceil(np.asarray(flows.size) / PAYLOAD).astype(int).tolist()
    done = step(gbps, paths, packets, start.tolist())
    stepped = np.array([np.nan if d is None else d for d in done]) - start
    fin = step(gbps, paths, packets, start.tolist(), rpaths=back)
    acked = np.array([np.nan if d is None else d for d in fin]) - start
    qs = [10, 25, 50, 75, 90, 99]
    htsim, _ = htsim_fct_us(ref / sc.csv_name("roce_ecmp"))
    print(f"quantiles {qs} (us)")
    print("htsim FCT, its paths       ", np.percentile(htsim, qs).round(1).tolist())
    print("stepped, data at receiver  ", np.nanpercentile(stepped * 1e6, qs).round(1).tolist(),
          f"({int(np.isnan(stepped).sum())} unfinished)")
    print("stepped, last ACK at sender", np.nanpercentile(acked * 1e6, qs).round(1).tolist(),
          f"({int(np.isnan(acked).sum())} unfinished)")
    for label, tr in (("twin FCT, the same paths   ", ROCE),
                      ("twin, no ACK wait          ", dataclasses.replace(ROCE, ack_wait=False))):
        twin = simulate(state, flows, hop_latency_s=HOP_LATENCY_S, idle_tail=False, transport=tr).fct
        print(label, np.percentile(twin * 1e6, qs).round(1).tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
