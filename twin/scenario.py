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
links = ["leaf-p0-01:swp33--spine-p0-01:swp1"]   # or fraction = 0.1 of the fabric links, or plane = 1
at_ms = 1
duration_ms = 20              # link_flap: down for this long, `repeat` times every `period_ms`
speed_gbps = 100              # link_degraded: the capacity it keeps, and/or
loss = 1e-4                   #   a packet loss probability (RoCE go-back-N goodput)
# kind = "pfc_storm": host = "gpu-node-0005" (nic = 0, plane = 0) keeps pausing its leaf port

[run]
until_ms = 10000              # stop there if jobs are still running
sample_ms = 1                 # per-link utilization sampling
hop_latency_us = 0            # added to completion times, hops x latency
flows = "perm.cm"             # optional: an htsim connection matrix instead of (or with) jobs
```
The file is checked against the schema below (`Document`): an unknown table or key, a value of
the wrong type or out of range is a ScenarioError naming the file, the key path and its line.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import numpy as np

from collectors.formats.slurm.hostlist import HostlistError, expand
from twin.collectives import COLLECTIVES, Collective
from twin.engine import Result, Transfers, simulate
from twin.faults import FAULT_KINDS, Fault, FaultParams, FaultSpec, inject
from twin.routing import MODES, NIC_MODES, FabricState
from twin.schema import Count, Index, NonNegative, Positive, ScenarioError, Source, convert, read
from twin.topology import Fabric, FabricSpec, build
from twin.workload import read_connection_matrix

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


def load(path: str | Path) -> Scenario:
    """Read and check a scenario file; ScenarioError names the file, the key and its line."""
    return from_document(*read_document(path))


def read_document(path: str | Path) -> tuple[Document, Source]:
    """A scenario file checked against its schema (unknown keys, types, ranges)."""
    doc, source = read(path)
    for ft in doc.get("faults", []) if isinstance(doc.get("faults"), list) else []:
        if isinstance(ft, dict):
            ft.setdefault("kind", "link_down")
    return convert(doc, Document, source, CHOICES), source


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
        except (ValueError, HostlistError) as exc:
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
                    flows_file, source)


def _hosts(value, spec: FabricSpec) -> np.ndarray:
    if value == "all":
        return np.arange(spec.hosts)
    if isinstance(value, list):
        hosts = np.array(value, dtype=np.int64)
    else:
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


@dataclass
class Outcome:
    scenario: Scenario
    fabric: Fabric
    result: Result
    traffic: Transfers
    job_names: list[str]
    wall_s: float

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
        fct = res.fct[np.isfinite(res.finish)]
        duration = float(np.max(res.finish[np.isfinite(res.finish)], initial=0.0) - res.start.min())
        util = res.link_bytes / np.maximum(f.link_capacity_bps / 8 * max(duration, 1e-12), 1e-30)
        top = np.argsort(util)[::-1][:10]
        return {
            "scenario": self.scenario.path,
            "fabric": {"hosts": f.spec.hosts, "planes": f.spec.planes, "tiers": f.spec.tiers,
                       "endpoints": len(f.ep_host), "switches": int((f.node_kind > 0).sum()),
                       "links": f.n_cables},
            "balancing": {"modes": self.scenario.modes, "nic": self.scenario.nic_mode},
            "jobs": jobs,
            "flows": {"count": len(tr), "finished": int(np.isfinite(res.finish).sum()),
                      "fct_median_s": float(np.median(fct)) if fct.size else None,
                      "fct_p99_s": float(np.percentile(fct, 99)) if fct.size else None},
            "busiest_links": [{"link": _directed_name(f, int(li)), "utilization": float(util[li])}
                              for li in top if util[li] > 0],
            "events": res.events,
            "wall_s": self.wall_s,
        }


def _directed_name(f: Fabric, link: int) -> str:
    c, down = divmod(link, 2)
    a, b = f.cable_port_a[c], f.cable_port_b[c]
    return f"{b}->{a}" if down else f"{a}->{b}"


def run(sc: Scenario) -> Outcome:
    """Build the fabric, place the jobs, inject the faults and simulate."""
    t0 = time.perf_counter()
    fabric = build(sc.spec)
    state = FabricState(fabric, mode=sc.modes, seed=sc.seed, nic_mode=sc.nic_mode)
    parts = [c.transfers(sc.spec.nics_per_host, job=j) for j, (_, c) in enumerate(sc.jobs)]
    if sc.flows_file:
        src, dst, start, size = read_connection_matrix(sc.flows_file)
        if max(src.max(), dst.max()) >= sc.spec.hosts:
            raise ScenarioError(f"{sc.flows_file}: host numbers beyond the fabric's {sc.spec.hosts} hosts")
        parts.append(Transfers(src, dst, size, start, job=np.full(len(src), -1)))
    faults = what_if_faults(fabric, sc)
    traffic = apply_faults(state, Transfers.concat(parts), faults)
    result = simulate(state, traffic, changes=[c for f in faults for c in f.changes],
                      storms=[s for f in faults for s in f.storms], convergence_s=sc.convergence_s,
                      until=sc.until_s, sample_every=sc.sample_s, hop_latency_s=sc.hop_latency_s,
                      idle_tail=False)
    return Outcome(sc, fabric, result, traffic, [n for n, _ in sc.jobs], time.perf_counter() - t0)
