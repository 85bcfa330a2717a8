"""A bundle from a scenario: the twin simulates the fabric with its jobs and faults over the
telemetry window, the writer turns that into files, and the output directory is replaced only
when generate wrote what is there (see `generate`)."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collectors.core.timeparse import TimeError, parse_iso
from twin.engine import Transfers, simulate
from twin.faults import Fault, FaultParams, inject
from twin.queueing import QueueConfig
from twin.routing import FabricState
from twin.scenario import Scenario, from_document, read_document
from twin.schema import Source
from twin.synth import jobs, nic_snapshots, realism, switch_counters, syslog_events, topology_files
from twin.synth.files import write_text
from twin.synth.writer import GENERATOR, BundleWriter
from twin.topology import Fabric, build


def parse_faults(fabric: Fabric, faults: list[FaultParams], source: Source) -> list[Fault]:
    """The scenario's faults, each with what it does to the twin and its one root cause."""
    return inject(fabric, faults, source, seed=0, generated=True)


@dataclass
class Generated:
    out: Path
    labels: dict
    files: int



class OutputError(ValueError):
    """An output directory generate may not write into (it holds something it did not write)."""


def generate(scenario_path: str | Path, out: str | Path, seed: int = 0) -> Generated:
    """Write a bundle for the scenario into `out`, deterministic for (scenario, seed).

    `out` is new, empty, or a bundle generate wrote (manifest.json's `"generator"` and `"files"`,
    and labels.json): then the files it lists are replaced and anything else is kept. Anything
    else is OutputError, before any work. The bundle is written beside `out` first and moved in
    when complete: a failure leaves `out` as it was.
    """
    out = Path(out)
    old = _replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.generating-", dir=out.parent))
    try:
        g = _write_bundle(scenario_path, staging, seed)
        files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*")
                       if p.is_file()) + ["manifest.json"]
        manifest = json.loads((staging / "manifest.json").read_text())
        write_text(staging / "manifest.json",
                   json.dumps({**manifest, "files": sorted(set(files))}, indent=2) + "\n")
        _install(staging, out, old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # this call made it; empty once installed
    return Generated(out, g.labels, len(set(files)))


def _replaceable(out: Path) -> list[str] | None:
    """The files of the generated bundle at `out` (None: no such directory or an empty one);
    OutputError when `out` holds anything else."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise OutputError(f"{out}: not a directory")
    if not any(out.iterdir()):
        return None
    refuse = (f"{out}: not empty and not a bundle fabtwin generate wrote; nothing was changed: "
              "give a new or empty --out directory")
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        raise OutputError(refuse) from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if (manifest.get("generator") if isinstance(manifest, dict) else None) != GENERATOR \
            or not (out / "labels.json").is_file() or not isinstance(files, list) \
            or not all(isinstance(f, str) and _inside(out, f) for f in files):
        raise OutputError(refuse)
    return files


def _inside(root: Path, rel: str) -> bool:
    """`rel` names a path below `root` (a hand-edited list must not reach outside)."""
    target = (root / rel).resolve()
    return target != root.resolve() and target.is_relative_to(root.resolve())


def _install(staging: Path, out: Path, old: list[str] | None) -> None:
    """Move the new bundle from `staging` to `out`, deleting only the old bundle's files."""
    if old is None:
        if out.exists():
            out.rmdir()  # empty: checked before the work
        staging.rename(out)
        return
    new = [p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()]
    theirs = [rel for rel in new if (out / rel).exists() and rel not in set(old)]
    if theirs:  # a file of the user's where the new bundle puts one: keep it, refuse
        raise OutputError(f"{out / theirs[0]}: not written by fabtwin generate, and the new "
                          "bundle has a file there; nothing was changed: move it or choose "
                          "another --out")
    for rel in old:
        path = out / rel
        if path.is_file() or path.is_symlink():
            path.unlink()
        for parent in path.parents:  # folders the old bundle left empty
            if parent == out or not parent.is_relative_to(out) or any(parent.iterdir()):
                break
            parent.rmdir()
    for rel in new:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).rename(out / rel)


def _write_bundle(scenario_path: str | Path, out: str | Path, seed: int) -> Generated:
    """Write the bundle for the scenario into the empty directory `out`."""
    path = Path(scenario_path)
    doc, source = read_document(path)
    tel = doc.telemetry
    sc = from_document(doc, source)
    tmp = Path(out)
    fabric = build(sc.spec)
    faults = parse_faults(fabric, doc.faults, source)
    unknown = [d for d in tel.silent if d not in fabric.node_name]
    if unknown:
        raise source.error(["telemetry", "silent"], f"{unknown[0]!r} is no device of this fabric")
    try:
        t0 = parse_iso(tel.start)
    except TimeError as exc:
        raise source.error(["telemetry", "start"], str(exc)) from exc
    duration = float(tel.duration_s)
    step = float(tel.sample_s)
    rng = np.random.default_rng(seed)
    state = FabricState(fabric, mode=sc.modes, seed=sc.seed + seed, nic_mode=sc.nic_mode)
    for f in faults:
        f.apply(state)
    traffic = _traffic(sc, fabric, faults, [j.iterations for j in doc.jobs])
    res = simulate(state, traffic, changes=[c for f in faults for c in f.changes],
                   storms=[s for f in faults for s in f.storms], transport=sc.transport,
                   convergence_s=sc.convergence_s,
                   until=duration, sample_every=step, telemetry=QueueConfig())
    realism.louder_victims(fabric, res, faults)
    writer = BundleWriter(tmp, fabric, sc, faults, rng, t0, step, duration, name=path.stem, tel=tel)
    _effects(writer, FabricState(fabric, mode=sc.modes, seed=sc.seed + seed), traffic, res, faults)
    _write_files(writer, res)
    labels = writer.labels(seed, str(path))
    write_text(tmp / "labels.json", json.dumps(labels, indent=2) + "\n")
    return Generated(tmp, labels, writer.files)


def _write_files(writer: BundleWriter, res) -> None:
    """Every file of the bundle but labels.json, family by family, in a fixed order (the
    writer's random draws follow it, so the bytes do too)."""
    n_samples = writer.start(res)
    for device in sorted(writer.ports_of):
        if device in writer.silent:  # exports nothing: seen only through its neighbours
            continue
        if device in writer.collector:
            switch_counters.write_switch(writer, device, n_samples)
        else:
            nic_snapshots.write_host(writer, device, n_samples)
    topology_files.write_topology(writer)
    syslog_events.write_syslog(writer)
    jobs.write_jobs(writer)
    writer.finish()


REORDER = {"spray": 1e-3, "ar": 1e-4, "ecmp": 0.0}  # out-of-sequence share of received packets
ROCE_TIMEOUT_S = 0.004  # a tight RoCE transport timeout (local_ack_timeout 12 is about 16 ms)


def _effects(writer: BundleWriter, healthy: FabricState, traffic: Transfers, res, faults: list[Fault]) -> None:
    """What faults do to victims, from the twin: the hosts whose flows crossed a link that
    died (transport timeouts: one per flow when adaptive routing moves it at once, one per
    timeout interval while ECMP waits for the control plane), the ports a storm paused, the
    incast senders, the imbalanced leaf's uplinks; and the receive reordering of sprayed traffic."""
    f = writer.f
    inc = traffic.incidence(healthy)
    name = f.node_name
    for ft in faults:
        victims: set[str] = set()
        if ft.root_type == "link":
            c = next(i for i in range(f.n_cables) if f.link_id(i) == ft.root_id)
            mask = np.zeros(f.n_links, dtype=bool)
            mask[[2 * c, 2 * c + 1]] = True
            hit = np.flatnonzero(inc.flows_touching(mask))
            plane = int(f.cable_plane[c])
            per_flow = 1 if writer.sc.modes[plane] == "ar" else max(
                1, int(np.ceil(writer.sc.convergence_s / ROCE_TIMEOUT_S)))
            hosts = [name[h] for h in traffic.src[hit]]
            victims = {name[h] for h in np.concatenate([traffic.src[hit], traffic.dst[hit]])}
            for a, _ in ft.downs:
                for h in hosts:
                    writer.timeout_events.append((h, a, per_flow))
        elif ft.kind == "pfc_storm":
            paused = res.counters_at["pause_s"][-1] > 0 if res.counters_at else np.zeros(0, bool)
            for link in np.flatnonzero(paused):
                c, down = divmod(int(link), 2)
                victims.add(f.cable_port_b[c] if down else f.cable_port_a[c])  # the paused sender
            victims.discard(ft.root_id)
        elif ft.kind == "congestion" and ft.extra_traffic is not None:
            victims = {name[h] for h in ft.extra_traffic.src}
            if ft.victim_marks:
                victims |= realism.paused_upstream(f, ft)
        elif ft.kind == "load_imbalance":
            leaf = ft.ecmp_leaf if ft.ecmp_leaf is not None else ft.weighted_leaf
            victims = {f.link_id(int(c)) for c in f.leaf_up_cables[leaf] if c >= 0}
        ft.victims = sorted(victims)
    writer.reorder = {name[h]: REORDER[writer.sc.modes[p]] for h, p in zip(f.ep_host, f.ep_plane, strict=True)}


def _traffic(sc: Scenario, fabric: Fabric, faults: list[Fault], iterations: list) -> Transfers:
    """Each job's collective repeated `iterations` times back to back (pipelined: one stream of
    that many times the bytes), or for the whole window when not given; plus incast faults."""
    parts = []
    for j, (_, coll) in enumerate(sc.jobs):
        t = coll.transfers(fabric.spec.nics_per_host, job=j)
        n_iter = iterations[j] if j < len(iterations) else None
        t.size = t.size * float(n_iter) if n_iter else np.full(len(t), 1e18)
        parts.append(t)
    parts += [f.extra_traffic for f in faults if f.extra_traffic is not None]
    return Transfers.concat(parts)
