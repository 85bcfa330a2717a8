"""What-if scenarios as TOML files: fabric, balancing, jobs, faults, run; and their results.

```toml
[fabric]                      # twin.topology.FabricSpec fields
hosts = 64
nics_per_host = 1
planes = 1
tiers = 2                     # 2 or 3
leaf_radix = 64
spine_radix = 64
hosts_per_leaf = 32           # optional; default from radix and oversubscription
host_speed_gbps = 400
fabric_speed_gbps = 400
oversubscription = 1.0

[balancing]
mode = "ar"                   # ecmp | spray | ar, or a list with one per plane
nic = "hw"                    # NIC plane balancing: hw | sw
seed = 0                      # ECMP hash seed
convergence_ms = 50           # control-plane convergence (ECMP and spraying reroute after it)

[[jobs]]
name = "train"
collective = "allreduce_ring" # see twin.collectives.COLLECTIVES
hosts = "gpu-node-[0001-0032]"  # a Slurm hostlist, "all", or a list of host numbers (0-based)
size = "1GiB"                 # bytes per rank: an integer or a string with B, KB, MB, GB, KiB..GiB
start_ms = 0

[[faults]]                    # every kind and its keys: twin/faults.py
kind = "link_down"            # link_down | link_flap | link_degraded | congestion | pfc_storm | load_imbalance
links = ["leaf-p0-01:swp33--spine-p0-01:swp1"]   # or fraction = 0.1 of the fabric links, or plane = 1,
# or a selector (twin.schema.LinkSelector): links = {leaf_uplinks_to_first_spines = 2}, or
# links = {fraction = 0.1, per_tier = true, seed = 1} (each tier loses 10%)
at_ms = 1
duration_ms = 20              # link_flap: down for this long, `repeat` times every `period_ms`
speed_gbps = 100              # link_degraded: the capacity it keeps, and/or
loss = 1e-4                   #   a packet loss probability (RoCE go-back-N goodput)
# kind = "pfc_storm": host = "gpu-node-0005" (nic = 0, plane = 0) keeps pausing its leaf port

[transport]                   # optional: without it, fluid flows (no headers, no ACK)
kind = "roce"                 # roce | uec: htsim's packets (twin.queueing.ROCE, UEC)
pfc = true                    # lossless with PFC (Transport.lossless); default: the kind's
mtu_bytes = 4000              # payload per packet (Transport.payload_bytes); default: the kind's
header_bytes = 64             # headers per packet (Transport.header_bytes); default: the kind's
cc = "uec"                    # uec (a window, Transport.window_bdp) | dcqcn (twin.dcqcn, RoCE) | none
window_bdp = 1.5              # the window in BDPs (default: twin.queueing.UEC's)
trimming = true               # lossy with trimming (Transport.trimming); default: the kind's
paths = 64                    # entropies per sprayed flow (Transport.paths); 0: even split

[queues]
size_packets = 100            # or size_bytes = "400KB" (Transport.queue_packets)
# kmin = "150KB"              # ECN marking (RED) that cc = "dcqcn" reacts to: thresholds and
# kmax = "1.5MB"              # the probability at kmax (Transport.kmin_bytes, kmax_bytes,
# pmax = 0.2                  # pmax); refused without cc = "dcqcn" (nothing else reads them)

[run]
until_ms = 10000              # stop there if jobs are still running
sample_ms = 1                 # per-link utilization sampling
hop_latency_us = 0            # added to completion times, hops x latency
flows = "perm.cm"             # optional: an htsim connection matrix instead of (or with) jobs
```
The file is checked against the schema below (`Document`): an unknown table or key, a value of
the wrong type or out of range is a ScenarioError naming the file, the key path and its line.
A transport or queue knob whose `twin.queueing.Transport` field the model does not have is
refused the same way, never accepted and ignored.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import numpy as np

from twin.collectives import COLLECTIVES, Collective
from twin.engine import LinkChange, Result, Transfers, simulate
from twin.faults import FAULT_KINDS, Fault, FaultParams, FaultSpec, inject
from twin.hash_draws import draws_for
from twin.queueing import ROCE, UEC, Transport
from twin.routing import MODES, NIC_MODES, FabricState
from twin.schema import (
    Count,
    Index,
    NonNegative,
    Positive,
    ScenarioError,
    Share,
    Source,
    convert,
    read,
)
from twin.topology import Fabric, FabricSpec, build
from twin.workload import WorkloadError, read_connection_matrix_ids

_UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(value: int | float | str, where: str) -> float:
    """`1GiB`, `512 MB`, `2000000` -> bytes."""
    if isinstance(value, int | float):
        return float(value)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS | {"": 1}:
        raise ScenarioError(f"{where}: size {value!r} is not a number of bytes (e.g. 1GiB, 512MB)")
    return float(m.group(1)) * _UNITS.get(m.group(2).lower(), 1)


# -- the file's schema: one struct per table, unknown keys refused --------------------------

class _Table(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


Unset = msgspec.UnsetType
UNSET = msgspec.UNSET


class FabricTable(_Table):
    """[fabric]: twin.topology.FabricSpec's fields; a key left out keeps FabricSpec's default."""

    hosts: Count
    nics_per_host: Count | Unset = UNSET
    planes: Count | Unset = UNSET
    tiers: Literal[2, 3] | Unset = UNSET
    leaf_radix: Count | Unset = UNSET
    spine_radix: Count | Unset = UNSET
    host_speed_gbps: Positive | Unset = UNSET
    fabric_speed_gbps: Positive | Unset = UNSET
    oversubscription: Positive | Unset = UNSET
    hosts_per_leaf: Count | None | Unset = UNSET
    pods: Count | None | Unset = UNSET
    host_prefix: str | Unset = UNSET

    def spec(self) -> FabricSpec:
        return FabricSpec(**{k: v for k, v in msgspec.structs.asdict(self).items() if v is not UNSET})


Mode = Literal[MODES]  # type: ignore[valid-type]


class BalancingTable(_Table):
    mode: Mode | list[Mode] = "ar"
    nic: Literal[NIC_MODES] = "hw"  # type: ignore[valid-type]
    seed: Index = 0
    convergence_ms: NonNegative = 50


class JobTable(_Table):
    name: str | None = None
    collective: Literal[COLLECTIVES] = "allreduce_ring"  # type: ignore[valid-type]
    hosts: str | list[Index] = "all"
    size: Positive | str = "1GiB"
    start_ms: NonNegative = 0
    iterations: Count | None = None  # fabtwin generate: that many collectives, then idle


TRANSPORTS = {"roce": ROCE, "uec": UEC}
CC = ("dcqcn", "uec", "none")
Size = Positive | str  # bytes, or a string with a unit (parse_size)


class TransportTable(_Table):
    """[transport]: the packets and the sender's rules of `twin.queueing.Transport`."""

    kind: Literal[tuple(TRANSPORTS)]  # type: ignore[valid-type]
    cc: Literal[CC] | Unset = UNSET  # type: ignore[valid-type]
    pfc: bool | Unset = UNSET
    mtu_bytes: Count | Unset = UNSET
    header_bytes: Index | Unset = UNSET
    window_bdp: Positive | Unset = UNSET
    trimming: bool | Unset = UNSET
    paths: Count | Unset = UNSET


class QueuesTable(_Table):
    """[queues]: every egress queue's size and ECN marking."""

    size_packets: Count | Unset = UNSET
    size_bytes: Size | Unset = UNSET
    kmin: Size | Unset = UNSET
    kmax: Size | Unset = UNSET
    pmax: Share | Unset = UNSET


TRANSPORT_CHOICES = {"cc": CC, "transport.kind": tuple(TRANSPORTS)}  # listed in errors, as CHOICES
# scenario key -> the `twin.queueing.Transport` field it sets. A key whose field the model lacks
# is refused (naming the key and its line): the model owns the fields, this table only wires them
KNOBS: dict[tuple[str, str], str] = {
    ("transport", "cc"): "cc",  # UEC's window (window_bdp) or DCQCN (Transport.cc)
    ("transport", "pfc"): "lossless",
    ("transport", "trimming"): "trimming",
    ("transport", "mtu_bytes"): "payload_bytes",
    ("transport", "header_bytes"): "header_bytes",
    ("transport", "paths"): "paths",
    ("transport", "window_bdp"): "window_bdp",
    ("queues", "size_packets"): "queue_packets",
    ("queues", "size_bytes"): "queue_packets",
    ("queues", "kmin"): "kmin_bytes",
    ("queues", "kmax"): "kmax_bytes",
    ("queues", "pmax"): "pmax",
}


class RunTable(_Table):
    until_ms: Positive | None = None
    sample_ms: Positive | None = None
    hop_latency_us: NonNegative = 0
    flows: str | None = None


VENDORS = ("cumulus", "sonic", "eos")  # switch OSes generate names interfaces and logs for


class TelemetryTable(_Table):
    """[telemetry] (fabtwin generate): the window the bundle covers, and the fleet's realism
    beyond what every bundle has (the defaults add nothing: twin/synth/__init__.py)."""

    start: str = "2026-11-30T03:00:00Z"
    duration_s: Positive = 600
    sample_s: Positive = 10
    skew_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 300  # clock offsets, +- this
    vendors: Annotated[list[Literal[VENDORS]], msgspec.Meta(min_length=1)] = msgspec.field(  # type: ignore[valid-type]
        default_factory=lambda: ["cumulus"])
    # stamp: the timestamp jitters, the values are the nominal instant's; read: both agree
    jitter: Literal["stamp", "read"] = "stamp"
    counters: Literal["basic", "full"] = "basic"  # full: carrier, link-down events, port speed
    noise: bool = False  # stray FCS errors, pause bursts, ECN microbursts, a counter clear
    silent: list[str] = []  # devices that export nothing


class SweepTable(_Table):
    """[sweep] (fabtwin sweep, twin/sweep.py)."""

    fail: str | list[str] | None = None
    at_ms: NonNegative = 0
    ecmp: str | list[str] | None = None
    plane: Index | None = None
    convergence_ms: NonNegative | list[NonNegative] | None = None


class Document(_Table):
    """A scenario file: what simulate, generate and sweep read (each its own tables)."""

    fabric: FabricTable
    balancing: BalancingTable = msgspec.field(default_factory=BalancingTable)
    jobs: list[JobTable] = []
    faults: list[FaultSpec] = []  # type: ignore[valid-type]
    transport: TransportTable | None = None
    queues: QueuesTable | None = None
    run: RunTable = msgspec.field(default_factory=RunTable)
    telemetry: TelemetryTable = msgspec.field(default_factory=TelemetryTable)
    sweep: SweepTable | None = None


# listed in the error when a value is not one of them
CHOICES = {"kind": FAULT_KINDS, "mode": MODES, "nic": NIC_MODES, "collective": COLLECTIVES,
           "tiers": (2, 3), "vendors": VENDORS, "counters": ("basic", "full"),
           "jitter": ("stamp", "read")}


@dataclass
class Scenario:
    """A parsed scenario, ready to run."""

    path: str
    spec: FabricSpec
    modes: list[str]
    nic_mode: str
    seed: int
    convergence_s: float
    jobs: list[tuple[str, Collective]]
    fault_specs: list[FaultParams]
    until_s: float
    sample_s: float | None
    hop_latency_s: float
    flows_file: str | None
    source: Source | None = field(default=None, compare=False)
    transport: Transport | None = None  # None: fluid flows


def load(path: str | Path) -> Scenario:
    """Read and check a scenario file; ScenarioError names the file, the key and its line."""
    return from_document(*read_document(path))


def read_document(path: str | Path) -> tuple[Document, Source]:
    """A scenario file checked against its schema (unknown keys, types, ranges)."""
    doc, source = read(path)
    for ft in doc.get("faults", []) if isinstance(doc.get("faults"), list) else []:
        if isinstance(ft, dict):
            ft.setdefault("kind", "link_down")
    return convert(doc, Document, source, CHOICES | TRANSPORT_CHOICES), source


def from_document(doc: Document, source: Source) -> Scenario:
    """A scenario from its checked document (its path anchors relative paths)."""
    p = source.path
    try:
        spec = doc.fabric.spec()
    except (TypeError, ValueError) as exc:
        raise source.error(["fabric"], str(exc)) from exc
    bal, run = doc.balancing, doc.run
    modes = list(bal.mode) if isinstance(bal.mode, list) else [bal.mode] * spec.planes
    if len(modes) != spec.planes:
        raise source.error(["balancing", "mode"], f"{len(modes)} modes for {spec.planes} plane(s)")
    jobs = []
    for i, j in enumerate(doc.jobs):
        try:
            size = parse_size(j.size, "size")
        except ScenarioError:
            raise source.error(["jobs", i, "size"], f"{j.size!r} is not a number of bytes "
                                                    "(e.g. 1GiB, 512MB)") from None
        try:
            hosts = _hosts(j.hosts, spec)
            coll = Collective(j.collective, hosts, size, j.start_ms / 1e3, seed=bal.seed + i)
        except ValueError as exc:  # a HostlistError too
            raise source.error(["jobs", i], str(exc)) from exc
        jobs.append((j.name or f"job{i}", coll))
    flows_file = run.flows
    if flows_file:
        flows_file = str((p.parent / flows_file) if not Path(flows_file).is_absolute() else flows_file)
    if not jobs and not flows_file:
        raise ScenarioError(f"{p}: no [[jobs]] and no [run] flows: nothing would be sent")
    return Scenario(str(p), spec, modes, bal.nic, bal.seed, bal.convergence_ms / 1e3, jobs,
                    list(doc.faults), run.until_ms / 1e3 if run.until_ms else np.inf,
                    run.sample_ms / 1e3 if run.sample_ms else None, run.hop_latency_us / 1e6,
                    flows_file, source, transport_of(doc, source))


def transport_of(doc: Document, source: Source) -> Transport | None:
    """The `Transport` of [transport] and [queues] (None without [transport]): the kind's preset
    with each knob given set on its field (`KNOBS`); a knob the model has no field for, or
    [queues] without [transport], is a ScenarioError naming the key and its line."""
    tables = {"transport": doc.transport, "queues": doc.queues}
    given = {(t, k): v for t, table in tables.items() if table is not None
             for k, v in msgspec.structs.asdict(table).items() if v is not UNSET and k != "kind"}
    if doc.transport is None:
        if given:
            raise source.error(["queues"], "needs a [transport] table (kind = \"roce\" or \"uec\")")
        return None
    have = {f.name for f in dataclasses.fields(Transport)}
    for table, key in given:
        if KNOBS[table, key] not in have:
            raise source.error([table, key], f"not modelled: twin.queueing.Transport has no "
                                             f"{KNOBS[table, key]} field, so the twin would ignore "
                                             "it; remove the key")
    if ("queues", "size_packets") in given and ("queues", "size_bytes") in given:
        raise source.error(["queues", "size_bytes"], "give size_packets or size_bytes, not both")
    values: dict[str, object] = {}
    if (cc := given.pop(("transport", "cc"), None)) is not None:
        values["window_bdp"] = _cc_window(cc, given, source)
        values["cc"] = "dcqcn" if cc == "dcqcn" else None
    if values.get("cc", TRANSPORTS[doc.transport.kind].cc) != "dcqcn":
        for key in ("kmin", "kmax", "pmax"):
            if ("queues", key) in given:
                raise source.error(["queues", key], 'ECN marking drives only cc = "dcqcn" in the '
                                                    "twin: set it or remove the key")
    for (table, key), value in given.items():
        if key in ("size_bytes", "kmin", "kmax"):
            try:
                value = parse_size(value, key)  # type: ignore[arg-type]
            except ScenarioError:
                raise source.error([table, key], f"{value!r} is not a number of bytes "
                                                 "(e.g. 400KB, 1.5MB)") from None
        values[KNOBS[table, key]] = value
    out = dataclasses.replace(TRANSPORTS[doc.transport.kind], **values)
    if ("queues", "size_bytes") in given:  # a queue of bytes holds that many of its packets
        out = dataclasses.replace(out, queue_packets=values["queue_packets"] / out.packet_bytes)
    if getattr(out, "kmin_bytes", 0) >= getattr(out, "kmax_bytes", np.inf):
        raise source.error(["queues", "kmin" if "kmin_bytes" in values else "kmax"],
                           "kmin must be below kmax")
    return out


def _cc_window(cc: str, given: dict, source: Source) -> float | None:
    """The window `cc` gives: "uec" is UEC's window-based control (NSCC: the window of
    `twin.queueing.UEC`, or `window_bdp`); "none" and "dcqcn" (rate based, `twin.dcqcn`) have
    no window."""
    if cc != "uec" and ("transport", "window_bdp") in given:
        raise source.error(["transport", "window_bdp"], f'cc = "{cc}" has no window: drop window_bdp')
    return getattr(TRANSPORTS["uec"], "window_bdp", None) if cc == "uec" else None


def _hosts(value, spec: FabricSpec) -> np.ndarray:
    if value == "all":
        return np.arange(spec.hosts)
    if isinstance(value, list):
        hosts = np.array(value, dtype=np.int64)
    else:
        # imported here: the Slurm package loads polars (0.6 s), which a scenario naming its
        # hosts by number, or a .cm, never needs
        from collectors.formats.slurm.hostlist import expand

        names = expand(str(value))
        prefix = spec.host_prefix
        bad = [n for n in names if not n.startswith(prefix) or not n[len(prefix):].isdigit()]
        if bad:
            raise ValueError(f"host {bad[0]!r} is not one of {prefix}0001..")
        hosts = np.array([int(n[len(prefix):]) - 1 for n in names], dtype=np.int64)
    if hosts.size and (hosts.min() < 0 or hosts.max() >= spec.hosts):
        raise ValueError(f"hosts outside the fabric's {spec.hosts}")
    return hosts


def what_if_faults(fabric: Fabric, sc: Scenario) -> list[Fault]:
    """The scenario's faults as a what-if applies them (`fraction` drawn with its seed)."""
    source = sc.source or Source(Path(sc.path), "")
    return inject(fabric, sc.fault_specs, source, sc.seed, generated=False)


def apply_faults(state: FabricState, traffic: Transfers, faults: list[Fault]) -> Transfers:
    """ECMP leaves into `state`; the traffic with the faults' own (incasts) added."""
    for f in faults:
        f.apply(state)
    extra = [f.extra_traffic for f in faults if f.extra_traffic is not None]
    return Transfers.concat([traffic, *extra]) if extra else traffic


def fct_stats(fct: np.ndarray) -> dict[str, float | None]:
    """Median, p99 and max of completion times: numpy's median, percentile with method
    "lower" (what the htsim reference README computes), max; None for no flow."""
    if not fct.size:
        return {"median": None, "p99": None, "max": None}
    return {"median": float(np.median(fct)), "p99": float(np.percentile(fct, 99, method="lower")),
            "max": float(fct.max())}


FCT_COLUMNS = ("id", "src", "dst", "size_bytes", "start_us", "finish_us")


@dataclass
class Outcome:
    scenario: Scenario
    fabric: Fabric
    result: Result
    traffic: Transfers
    job_names: list[str]
    wall_s: float
    flow_ids: np.ndarray | None = None  # per transfer: the .cm id, others numbered after them
    changes: list[LinkChange] = field(default_factory=list)  # the faults' capacity changes
    pooled_fct: np.ndarray | None = None  # every draw's FCTs (s), draw by draw; None: `result`'s
    draws: int = 1  # ECMP hash draws pooled in `pooled_fct`

    def fct_rows(self) -> list[tuple]:
        """Per transfer, htsim's FCT columns (`FCT_COLUMNS`): id, source and destination host
        (0-based, as a .cm numbers them), bytes, start and finish in us (finish None when the
        flow had not finished), in traffic order: jobs, then the .cm, then faults' traffic."""
        tr, res = self.traffic, self.result
        ids = self.flow_ids if self.flow_ids is not None else np.arange(1, len(tr) + 1)
        # whole picoseconds, htsim's clock: float noise of the us <-> s conversions goes away
        start = np.round(res.start * 1e6, 6)
        finish = np.round(res.finish * 1e6, 6)
        size = tr.size
        return [(int(ids[i]), int(tr.src[i]), int(tr.dst[i]),
                 int(size[i]) if float(size[i]).is_integer() else float(size[i]),
                 float(start[i]), float(finish[i]) if np.isfinite(finish[i]) else None)
                for i in range(len(tr))]

    def as_json(self) -> dict:
        """The numbers people read: per job nccl-tests bandwidths, FCTs, link utilization."""
        res, tr, f = self.result, self.traffic, self.fabric
        jobs = []
        for j, (name, coll) in enumerate(self.scenario.jobs):
            mine = tr.job == j
            t = float(res.finish[mine].max() - coll.start)
            algbw = coll.size / t if np.isfinite(t) and t > 0 else 0.0
            jobs.append({"name": name, "collective": coll.kind, "ranks": len(coll.hosts),
                         "size_bytes": coll.size, "completion_s": t if np.isfinite(t) else None,
                         "algbw_GBps": algbw / 1e9, "busbw_GBps": algbw * coll.bus_factor / 1e9})
        pool = res.fct if self.pooled_fct is None else self.pooled_fct
        stats = fct_stats(pool[np.isfinite(pool)])  # over every draw's finished flows
        t0 = float(res.start.min()) if len(res.start) else 0.0
        duration = float(np.max(res.finish[np.isfinite(res.finish)], initial=0.0) - t0)
        # of the capacity each link had: a degraded link full at its 100G is at 100%, not 25%
        util = res.link_bytes / np.maximum(capacity_bytes(f, self.changes, t0, t0 + max(duration, 1e-12)),
                                           1e-30)
        top = np.argsort(util)[::-1][:10]
        return {
            "scenario": self.scenario.path,
            "fabric": {"hosts": f.spec.hosts, "planes": f.spec.planes, "tiers": f.spec.tiers,
                       "endpoints": len(f.ep_host), "switches": int((f.node_kind > 0).sum()),
                       "links": f.n_cables},
            "balancing": {"modes": self.scenario.modes, "nic": self.scenario.nic_mode},
            "jobs": jobs,
            "transport": dataclasses.asdict(self.scenario.transport) if self.scenario.transport else None,
            # over the finished flows; p99 with numpy's method "lower", as htsim's README
            # the FCT statistics pool `hash_draws` ECMP draws (`pooled_count` flows)
            "flows": {"count": len(tr), "finished": int(np.isfinite(res.finish).sum()),
                      **{f"fct_{k}_s": v for k, v in stats.items()}, "hash_draws": self.draws,
                      "pooled_count": len(pool), "pooled_finished": int(np.isfinite(pool).sum())},
            "busiest_links": [{"link": _directed_name(f, int(li)), "utilization": float(util[li])}
                              for li in top if util[li] > 0],
            "events": res.events,
            "wall_s": self.wall_s,
        }


def capacity_bytes(f: Fabric, changes: list[LinkChange], t0: float, t1: float) -> np.ndarray:
    """Per directed link, the bytes it could carry from `t0` to `t1`: its capacity over time as
    the `changes` set it (a link down carries nothing while down)."""
    gbps = f.cable_gbps.astype(float).copy()
    total = np.zeros(f.n_cables)
    t = t0
    for ch in sorted(changes):
        at = min(max(ch.time, t0), t1)
        total += gbps * (at - t)
        t = at
        gbps[ch.cable] = ch.gbps
    total += gbps * (t1 - t)
    return np.repeat(total * 1e9 / 8, 2)


def _directed_name(f: Fabric, link: int) -> str:
    c, down = divmod(link, 2)
    a, b = f.cable_port_a[c], f.cable_port_b[c]
    return f"{b}->{a}" if down else f"{a}->{b}"


def run(sc: Scenario, draws: int | None = 1) -> Outcome:
    """Build the fabric, place the jobs, inject the faults and simulate.

    `draws`: on a fabric with an ECMP plane, the completion statistics (`Outcome.as_json`)
    pool this many hash draws (fabric seeds `sc.seed`, `sc.seed + 1`, ...: which flows collide
    is one draw of the switches' hash salts, `twin.hash_draws`); None: `draws_for` the flow
    count (1,000 flows pooled). Per-flow rows, jobs and links are the first draw's."""
    t0 = time.perf_counter()
    fabric = build(sc.spec)
    state = FabricState(fabric, mode=sc.modes, seed=sc.seed, nic_mode=sc.nic_mode)
    parts = [c.transfers(sc.spec.nics_per_host, job=j) for j, (_, c) in enumerate(sc.jobs)]
    cm_ids = np.zeros(0, dtype=np.int64)
    if sc.flows_file:
        try:
            cm_ids, src, dst, start, size = read_connection_matrix_ids(sc.flows_file)
        except WorkloadError as exc:  # names the .cm and its line
            raise ScenarioError(str(exc)) from None
        if len(src) and max(src.max(), dst.max()) >= sc.spec.hosts:
            raise ScenarioError(f"{sc.flows_file}: host numbers beyond the fabric's {sc.spec.hosts} hosts")
        parts.append(Transfers(src, dst, size, start, job=np.full(len(src), -1)))
    faults = what_if_faults(fabric, sc)
    traffic = apply_faults(state, Transfers.concat(parts), faults)
    kwargs = {"changes": [c for f in faults for c in f.changes],
              "storms": [s for f in faults for s in f.storms], "convergence_s": sc.convergence_s,
              "until": sc.until_s, "hop_latency_s": sc.hop_latency_s, "idle_tail": False,
              "transport": sc.transport}
    result = simulate(state, traffic, sample_every=sc.sample_s, **kwargs)
    n_draws = (draws_for(len(traffic)) if draws is None else draws) if "ecmp" in sc.modes else 1
    pooled = [result.fct]
    for k in range(1, n_draws):  # a loop over draws, each one vectorized run: the same faults
        other = FabricState(fabric, mode=sc.modes, seed=sc.seed + k, nic_mode=sc.nic_mode)
        pooled.append(simulate(other, apply_faults(other, Transfers.concat(parts), faults),
                               **kwargs).fct)
    return Outcome(sc, fabric, result, traffic, [n for n, _ in sc.jobs], time.perf_counter() - t0,
                   _flow_ids(traffic, sum(len(x) for x in parts[:len(sc.jobs)]), cm_ids),
                   [c for f in faults for c in f.changes], np.concatenate(pooled), n_draws)


def _flow_ids(traffic: Transfers, first_cm: int, cm_ids: np.ndarray) -> np.ndarray:
    """The .cm's ids on its flows (from position `first_cm`); every other flow numbered after
    the largest of them, in traffic order, so that ids stay distinct."""
    ids = np.zeros(len(traffic), dtype=np.int64)
    others = np.ones(len(traffic), dtype=bool)
    ids[first_cm:first_cm + len(cm_ids)] = cm_ids
    others[first_cm:first_cm + len(cm_ids)] = False
    ids[others] = int(cm_ids.max(initial=0)) + 1 + np.arange(int(others.sum()))
    return ids
