"""What-if sweeps: a family of variants of one scenario, simulated in parallel, ranked by how
much they hurt the jobs.

A sweep is a scenario file (twin/scenario.py) with a `[sweep]` table:

```toml
[sweep]
fail = "each_spine_link"      # every leaf-spine (leaf-agg) cable failed in turn; also
                              # "each_core_link" (agg-core), "each_fabric_link" (both) or a list of link ids
at_ms = 0                     # when the link fails (it stays down)
ecmp = "each_leaf"            # every leaf switched to ECMP in turn (FabricState.ecmp_switches),
                              # or a list of leaf names
plane = 0                     # optional: only the links and leaves of this plane
convergence_ms = [10, 100, 300]  # control-plane convergence times
```

The variants are the product of the axes given (each link failure at each convergence time...);
the scenario's own faults stay in every variant. The baseline is the scenario as written. A
variant's impact is its worst job's slowdown: completion time over the baseline's (infinite
when a job no longer finishes); bus bandwidth drops are reported per job. Variants are ranked by
impact, ties in sweep order. Every variant is deterministic (the scenario's seeds), so the
ranking is the same on one process, on N processes or on Ray (`twin.parallel`).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from twin.engine import LinkChange, Transfers, simulate
from twin.parallel import run_tasks
from twin.routing import FabricState
from twin.scenario import (
    Outcome,
    Scenario,
    ScenarioError,
    SweepTable,
    apply_faults,
    from_document,
    read_document,
    what_if_faults,
)
from twin.schema import Source
from twin.topology import Fabric, FabricSpec, build
from twin.workload import read_connection_matrix

FAIL_SETS = {"each_spine_link": (1,), "each_core_link": (2,), "each_fabric_link": (1, 2)}


@dataclass(frozen=True)
class Variant:
    """One perturbation of the base scenario (None: as in the scenario)."""

    fail_cable: int | None = None
    fail_at_s: float = 0.0
    ecmp_leaf: int | None = None
    convergence_s: float | None = None


@dataclass
class Sweep:
    scenario: Scenario
    variants: list[Variant]  # the baseline (Variant()) first


def load_sweep(path: str | Path) -> Sweep:
    """Read a sweep file; ScenarioError names the file and the field."""
    doc, source = read_document(path)
    sc = from_document(doc, source)
    p, spec = source.path, doc.sweep
    if spec is None or spec == SweepTable():
        raise ScenarioError(f"{p}: no [sweep] table (fail, ecmp, convergence_ms): nothing to vary")
    fabric = fabric_of(sc.spec)
    plane = spec.plane
    if plane is not None and plane >= sc.spec.planes:
        raise source.error(["sweep", "plane"], f"plane {plane} is not one of the fabric's {sc.spec.planes}")
    cables = _fail_axis(fabric, spec.fail, plane, source)
    leaves = _ecmp_axis(fabric, spec.ecmp, plane, source)
    conv = spec.convergence_ms
    convs: list[float | None] = [None] if conv is None else [
        float(c) / 1e3 for c in (conv if isinstance(conv, list) else [conv])]
    at = float(spec.at_ms) / 1e3
    variants = [Variant(c, at if c is not None else 0.0, leaf, cv)
                for c, leaf, cv in itertools.product(cables, leaves, convs)]
    variants = [v for v in variants if v != Variant()]
    if not variants:
        raise ScenarioError(f"{p}: [sweep] gives no variant (fail, ecmp or convergence_ms)")
    return Sweep(sc, [Variant(), *variants])


def _fail_axis(fabric: Fabric, value, plane, source: Source) -> list[int | None]:
    where = ["sweep", "fail"]
    if value is None:
        return [None]
    if isinstance(value, list):
        ids = {fabric.link_id(c): c for c in range(fabric.n_cables)}
        missing = [v for v in value if v not in ids]
        if missing:
            raise source.error(where, f"no link {missing[0]!r} in this fabric")
        return [int(ids[v]) for v in value]
    if value not in FAIL_SETS:
        raise source.error(where, f"{value!r} is not one of {', '.join(FAIL_SETS)} or a list of links")
    keep = np.isin(fabric.cable_tier, FAIL_SETS[value])
    if plane is not None:
        keep &= fabric.cable_plane == int(plane)
    cables = np.flatnonzero(keep)
    if not cables.size:
        raise source.error(where, f"{value} selects no link in this fabric")
    return [int(c) for c in cables]


def _ecmp_axis(fabric: Fabric, value, plane, source: Source) -> list[int | None]:
    where = ["sweep", "ecmp"]
    if value is None:
        return [None]
    if isinstance(value, list):
        leaves = {fabric.node_name[n]: int(n) for n in np.flatnonzero(fabric.node_kind == 1)}
        missing = [v for v in value if v not in leaves]
        if missing:
            raise source.error(where, f"{missing[0]!r} is not a leaf of this fabric")
        return [leaves[v] for v in value]
    if value != "each_leaf":
        raise source.error(where, f"{value!r} is not each_leaf or a list of leaves")
    keep = fabric.node_kind == 1
    if plane is not None:
        keep &= fabric.node_plane == int(plane)
    return [int(n) for n in np.flatnonzero(keep)]


@lru_cache(maxsize=4)
def fabric_of(spec: FabricSpec) -> Fabric:
    """The built fabric of a spec, once per process (every task of a sweep shares it)."""
    return build(spec)


def simulate_variant(task: tuple[Scenario, Variant]) -> dict:
    """Run one variant; its jobs' completion times and bandwidths (no wall times: the result
    depends on the task only)."""
    sc, v = task
    fabric = fabric_of(sc.spec)
    state = FabricState(fabric, mode=list(sc.modes), seed=sc.seed, nic_mode=sc.nic_mode)
    if v.ecmp_leaf is not None:
        state.ecmp_switches = {v.ecmp_leaf}
    parts = [c.transfers(sc.spec.nics_per_host, job=j) for j, (_, c) in enumerate(sc.jobs)]
    if sc.flows_file:
        src, dst, start, size = read_connection_matrix(sc.flows_file)
        parts.append(Transfers(src, dst, size, start, job=np.full(len(src), -1)))
    faults = what_if_faults(fabric, sc)
    traffic = apply_faults(state, Transfers.concat(parts), faults)
    changes = [c for f in faults for c in f.changes]
    if v.fail_cable is not None:
        changes.append(LinkChange(v.fail_at_s, v.fail_cable, 0.0))
    conv = sc.convergence_s if v.convergence_s is None else v.convergence_s
    result = simulate(state, traffic, changes=changes, storms=[s for f in faults for s in f.storms],
                      convergence_s=conv, until=sc.until_s, hop_latency_s=sc.hop_latency_s,
                      transport=sc.transport)
    out = Outcome(replace(sc, convergence_s=conv), fabric, result, traffic, [], 0.0).as_json()
    return {"jobs": [{k: j[k] for k in ("name", "completion_s", "algbw_GBps", "busbw_GBps")}
                     for j in out["jobs"]], "events": out["events"]}


def describe(fabric: Fabric, v: Variant) -> dict:
    """A variant in the field's words: the failed link, the ECMP leaf, the convergence time."""
    return {"fail": fabric.link_id(v.fail_cable) if v.fail_cable is not None else None,
            "fail_at_ms": v.fail_at_s * 1e3 if v.fail_cable is not None else None,
            "ecmp_leaf": fabric.node_name[v.ecmp_leaf] if v.ecmp_leaf is not None else None,
            "convergence_ms": v.convergence_s * 1e3 if v.convergence_s is not None else None}


def rank(sweep: Sweep, results: list[dict]) -> dict:
    """The sweep's report: the baseline and the variants by decreasing impact."""
    base = results[0]["jobs"]
    fabric = fabric_of(sweep.scenario.spec)
    rows = []
    for i, (v, res) in enumerate(zip(sweep.variants[1:], results[1:], strict=True)):
        jobs = []
        for b, j in zip(base, res["jobs"], strict=True):
            done = j["completion_s"] is not None and b["completion_s"]
            slow = j["completion_s"] / b["completion_s"] if done else math.inf
            drop = 1 - j["busbw_GBps"] / b["busbw_GBps"] if b["busbw_GBps"] else 0.0
            jobs.append({**j, "slowdown": slow, "busbw_drop": drop})
        impact = max((j["slowdown"] for j in jobs), default=1.0)
        rows.append((-impact, i, {**describe(fabric, v), "impact": impact, "jobs": jobs,
                                  "events": res["events"]}))
    rows.sort(key=lambda r: (r[0], r[1]))
    variants = [{"rank": k + 1, **r[2]} for k, r in enumerate(rows)]
    for row in variants:  # JSON has no infinity: a job that never finishes has slowdown null
        row["impact"] = _finite(row["impact"])
        for j in row["jobs"]:
            j["slowdown"] = _finite(j["slowdown"])
    return {"scenario": sweep.scenario.path, "tasks": len(results),
            "baseline": {"jobs": base, "events": results[0]["events"]}, "variants": variants}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def run_sweep(sweep: Sweep, executor: str = "local", workers: int = 1,
              address: str | None = None) -> dict:
    """Simulate the baseline and every variant, ranked (see `rank`), with the wall time."""
    t0 = time.perf_counter()
    results = run_tasks(simulate_variant, [(sweep.scenario, v) for v in sweep.variants],
                        executor=executor, workers=workers, address=address)
    report = rank(sweep, results)
    report["run"] = {"executor": executor, "workers": workers, "address": address,
                     "wall_s": time.perf_counter() - t0}
    return report
