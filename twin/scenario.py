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

[[faults]]
kind = "link_down"            # link_down | link_flap | link_degraded | pfc_storm
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
"""

from __future__ import annotations

import re
import time
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from collectors.hostlist import HostlistError, expand
from twin.collectives import Collective
from twin.engine import LinkChange, Result, Storm, Transfers, simulate
from twin.routing import FabricState
from twin.topology import Fabric, FabricSpec, build
from twin.workload import endpoints, read_connection_matrix

_UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


class ScenarioError(ValueError):
    """A scenario file that cannot be run as written."""


def parse_size(value: int | float | str, where: str) -> float:
    """`1GiB`, `512 MB`, `2000000` -> bytes."""
    if isinstance(value, int | float):
        return float(value)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS | {"": 1}:
        raise ScenarioError(f"{where}: size {value!r} is not a number of bytes (e.g. 1GiB, 512MB)")
    return float(m.group(1)) * _UNITS.get(m.group(2).lower(), 1)


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
    fault_specs: list[dict]
    until_s: float
    sample_s: float | None
    hop_latency_s: float
    flows_file: str | None


def load(path: str | Path) -> Scenario:
    """Read and check a scenario file; ScenarioError names the file and the field."""
    p = Path(path)
    return from_dict(read_toml(p), p)


def read_toml(p: Path) -> dict:
    """A TOML file as a dict; ScenarioError names the file on a read or syntax error."""
    try:
        return tomllib.loads(p.read_text())
    except OSError as exc:
        raise ScenarioError(f"{p}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{p}: {exc}") from exc


def from_dict(doc: dict, p: Path) -> Scenario:
    """A scenario from its parsed TOML (`p` names it in errors and anchors relative paths)."""
    fab = doc.get("fabric", {})
    known = {f.name for f in fields(FabricSpec)}
    unknown = set(fab) - known
    if unknown:
        raise ScenarioError(f"{p}: [fabric] has unknown keys {sorted(unknown)}")
    try:
        spec = FabricSpec(**fab)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"{p}: [fabric] {exc}") from exc
    bal = doc.get("balancing", {})
    mode = bal.get("mode", "ar")
    modes = list(mode) if isinstance(mode, list) else [mode] * spec.planes
    run = doc.get("run", {})
    jobs = []
    for i, j in enumerate(doc.get("jobs", [])):
        where = f"{p}: jobs[{i}]"
        try:
            hosts = _hosts(j.get("hosts", "all"), spec)
            coll = Collective(j.get("collective", "allreduce_ring"), hosts,
                              parse_size(j.get("size", "1GiB"), where), j.get("start_ms", 0) / 1e3,
                              seed=int(bal.get("seed", 0)) + i)
        except (ValueError, HostlistError) as exc:
            raise ScenarioError(f"{where}: {exc}") from exc
        jobs.append((str(j.get("name", f"job{i}")), coll))
    flows_file = run.get("flows")
    if flows_file:
        flows_file = str((p.parent / flows_file) if not Path(flows_file).is_absolute() else flows_file)
    if not jobs and not flows_file:
        raise ScenarioError(f"{p}: no [[jobs]] and no [run] flows: nothing would be sent")
    sample_ms = run.get("sample_ms")
    return Scenario(str(p), spec, modes, bal.get("nic", "hw"), int(bal.get("seed", 0)),
                    bal.get("convergence_ms", 50) / 1e3, jobs, list(doc.get("faults", [])),
                    run.get("until_ms", 1e12) / 1e3, sample_ms / 1e3 if sample_ms else None,
                    run.get("hop_latency_us", 0) / 1e6, flows_file)


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


def fault_changes(fabric: Fabric, faults: list[dict], seed: int, where: str = "") -> list[LinkChange]:
    """Link capacity changes for the scenario's faults."""
    changes: list[LinkChange] = []
    ids = {fabric.link_id(c): c for c in range(fabric.n_cables)}
    rng = np.random.default_rng(seed)
    for i, ft in enumerate(faults):
        here = f"{where}faults[{i}]"
        kind = ft.get("kind", "link_down")
        if kind == "pfc_storm":
            continue  # see storms()
        if "links" in ft:
            try:
                cables = [ids[link] for link in ft["links"]]
            except KeyError as exc:
                raise ScenarioError(f"{here}: no link {exc.args[0]!r} in this fabric") from exc
        elif "fraction" in ft:
            pool = np.flatnonzero(fabric.cable_tier > 0)
            cables = list(rng.choice(pool, size=int(round(ft["fraction"] * len(pool))), replace=False))
        elif "plane" in ft:
            cables = list(np.flatnonzero(fabric.cable_plane == int(ft["plane"])))
        else:
            raise ScenarioError(f"{here}: say which links: links = [...], fraction = 0.1 or plane = N")
        at = ft.get("at_ms", 0) / 1e3
        dur = ft.get("duration_ms")
        if kind == "link_down":
            downs = [(at, None)]
        elif kind == "link_flap":
            period = ft.get("period_ms", 2 * (dur or 10)) / 1e3
            downs = [(at + k * period, (dur or 10) / 1e3) for k in range(int(ft.get("repeat", 1)))]
        elif kind == "link_degraded":
            if "speed_gbps" not in ft and "loss" not in ft:
                raise ScenarioError(f"{here}: link_degraded needs speed_gbps or loss")
            for c in cables:
                speed = float(ft.get("speed_gbps", fabric.cable_gbps[c]))
                changes.append(LinkChange(at, int(c), speed, float(ft.get("loss", 0.0))))
                if dur:
                    changes.append(LinkChange(at + dur / 1e3, int(c), float(fabric.cable_gbps[c])))
            continue
        else:
            raise ScenarioError(f"{here}: unknown kind {kind!r} (link_down, link_flap, link_degraded, "
                                "pfc_storm)")
        for start, length in downs:
            for c in cables:
                changes.append(LinkChange(start, int(c), 0.0))
                if length or (kind == "link_down" and dur):
                    changes.append(LinkChange(start + (length or dur / 1e3), int(c),
                                              float(fabric.cable_gbps[c])))
    return changes


def storms(fabric: Fabric, faults: list[dict], where: str = "") -> list[Storm]:
    """PFC storms: `host = "gpu-node-0005"` (and `nic`, `plane`) keeps pausing its leaf port."""
    out = []
    for i, ft in enumerate(faults):
        if ft.get("kind") != "pfc_storm":
            continue
        host = ft.get("host")
        try:
            h = fabric.node_name.index(host)
        except ValueError as exc:
            raise ScenarioError(f"{where}faults[{i}]: pfc_storm needs host = a host of the fabric, "
                                f"not {host!r}") from exc
        ep = endpoints(fabric, np.array([h]), int(ft.get("nic", 0)), int(ft.get("plane", 0)))[0]
        at = ft.get("at_ms", 0) / 1e3
        out.append(Storm(at, at + ft.get("duration_ms", 1e12) / 1e3, 2 * int(fabric.ep_cable[ep]) + 1))
    return out


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
    traffic = Transfers.concat(parts)
    changes = fault_changes(fabric, sc.fault_specs, sc.seed, f"{sc.path}: ")
    result = simulate(state, traffic, changes=changes, storms=storms(fabric, sc.fault_specs, f"{sc.path}: "),
                      convergence_s=sc.convergence_s,
                      until=sc.until_s, sample_every=sc.sample_s, hop_latency_s=sc.hop_latency_s)
    return Outcome(sc, fabric, result, traffic, [n for n, _ in sc.jobs], time.perf_counter() - t0)
