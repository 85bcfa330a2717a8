"""writer3: a third, blind bundle writer for the accuracy benchmark (issue 17, item 6).

Written only from design.md's formats, the README's bundle sections and shared/real-samples:
it shares no code with twin/, replay/, collectors/ or benchmarks/writer2 and imports only the
standard library, numpy and pyyaml. Its own fabric (1-4 planes, 2 or 3 tiers, 30-80 devices,
one NIC port per rail and plane), jobs, one-second fluid physics (conservation on every switch,
rates bounded by speeds and pauses), faults with labels, and a real fleet's noise.

    python -m benchmarks.writer3 --out DIR --count N --seed S
    python -m benchmarks.writer3.score --out DIR
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from . import meta
from .bundle import (
    WRITER,
    Counters,
    Ctx,
    _emit_host,
    _emit_switch,
    _iso,
    _jobs,
    add_noise,
    build_fabric,
    dump,
    new_state,
    simulate,
    write_files,
)
from .faults import FAULTS

KINDS = ("link_down", "link_flap", "link_degraded", "congestion", "pfc_storm", "load_imbalance")
# the suite cycles through these: every kind, issue 17's hard cases, two faults, healthy
CYCLE = ("link_down", "link_flap", "congestion", "pfc_storm", "link_degraded:fcs",
         "load_imbalance:ecmp", "two", "healthy",
         "link_down:silent_upper", "link_flap:short", "congestion:loud_victims",
         "pfc_storm:silent_host", "link_degraded:silent_loss", "load_imbalance:mild", "two",
         "healthy", "link_down:host", "link_flap:repeated", "congestion:multi_ecn",
         "pfc_storm", "link_degraded:low_speed", "load_imbalance:polarised", "two", "healthy")
PAIRS = (("link_flap", "pfc_storm"), ("congestion", "link_degraded"), ("link_down", "load_imbalance"),
         ("pfc_storm", "link_degraded"), ("link_flap", "congestion"))
HARD = ("silent_device", "short_flap", "loud_victims", "silent_host", "silent_loss",
        "mild_imbalance", "low_speed")


def suite_cases(count: int) -> list[str]:
    out = []
    for i in range(count):
        case = CYCLE[i % len(CYCLE)]
        if case == "two":
            a, b = PAIRS[(i // len(CYCLE) * 3 + i) % len(PAIRS)]
            case = f"two:{a},{b}"
        out.append(case)
    return out


def _parse(case: str) -> list[tuple[str, str]]:
    if case == "healthy":
        return []
    if case.startswith("two:"):
        return [(k, "") for k in case[4:].split(",")]
    kind, _, variant = case.partition(":")
    if kind not in FAULTS:
        raise ValueError(f"unknown writer3 case {case!r}")
    return [(kind, variant)]


def measure_load(fab, jobs, seconds: int, seed: int) -> None:
    """The healthy fabric's mean load per link, from a run of the physics with no fault."""
    r = simulate(fab, jobs, new_state(fab, seconds), np.random.default_rng(seed + 7_000_003))
    util = r.util.mean(axis=0)
    fab.link_load = np.maximum(util[0::2], util[1::2])


def _faults(fab, state, jobs, rng, seconds, interval, case) -> list[dict]:
    out: list[dict] = []
    for kind, variant in _parse(case):
        for _ in range(20):  # two faults on distinct roots
            args = (fab, state, jobs, rng, seconds, variant)
            f = FAULTS[kind](*args, interval) if kind == "link_flap" else FAULTS[kind](*args)
            if all(f["root"] != g["root"] for g in out):
                break
        out.append(f)
    return out


def _silent(ctx: Ctx, faults: list[dict], jobs) -> None:
    """The hard cases' silent devices, and in half the bundles a host or two that exports
    nothing though nothing is wrong with it."""
    for f in faults:
        ctx.silent |= set(f["silent"])
    roots = {x for f in faults for x in f["root"][1].replace("--", ":").split(":")}
    if ctx.rng.random() < 0.5:
        names = [ctx.fab.devices[h].name for h in ctx.fab.hosts]
        free = [n for n in names if n not in roots]
        ctx.silent |= set(ctx.rng.choice(free, int(ctx.rng.integers(1, 3)), replace=False).tolist())


def _configs(ctx: Ctx) -> tuple[dict, dict]:
    rng, fab = ctx.rng, ctx.fab
    sw, host = {}, {}
    switches = [d for d, dv in enumerate(fab.devices) if dv.role != "host" and dv.name not in ctx.silent]
    clear_dev = int(rng.choice(switches)) if rng.random() < 0.7 else -1
    for d in switches:
        dv = fab.devices[d]
        fams = ["gnmic_json", "gnmic_event"] + (["prom_ts", "prom_scrape"] if dv.vendor == "cumulus" else [])
        fam = fams[int(rng.integers(len(fams)))]
        sw[d] = (fam, {"strings": bool(rng.random() < 0.7), "new_qos": bool(rng.random() < 0.4),
                       "target": "netq" if dv.vendor == "cumulus" and rng.random() < 0.5 else None,
                       "ip_source": bool(rng.random() < 0.25), "pretty": bool(rng.random() < 0.3),
                       "gz": bool(rng.random() < 0.5), "bad": 0, "otel": bool(rng.random() < 0.5),
                       "host_label": bool(rng.random() < 0.5),
                       "clear": float(rng.uniform(0.2, 0.8) * ctx.seconds) if d == clear_dev else None})
    plain = [d for d in switches if not sw[d][1]["pretty"]]
    for d in rng.choice(plain, min(len(plain), int(rng.integers(1, 3))), replace=False) if plain else []:
        sw[int(d)][1]["bad"] = int(rng.integers(1, 3))
    for h in fab.hosts:
        if fab.devices[h].name in ctx.silent:
            continue
        host[h] = {"date": ("ins", "iseconds", "epoch")[int(rng.integers(3))],
                   "rdma": "sysfs" if rng.random() < 0.3 else "rdma", "gz": bool(rng.random() < 0.5),
                   "flat": bool(rng.random() < 0.3), "verbose_ibdev": bool(rng.random() < 0.3)}
    return sw, host


def write_bundle(out: Path, seed: int, case: str, small: bool = False) -> dict:
    """Write one bundle into `out` (which must not exist or be empty); return its labels."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: not empty; writer3 writes only into a new folder")
    rng = np.random.default_rng(seed)
    fab = build_fabric(rng, small)
    seconds = 240 if small else 1200
    interval = 10 if small else int(rng.choice([10, 10, 30]))
    day = datetime(2026, 1, 5, tzinfo=UTC).timestamp() + 86400 * int(rng.integers(0, 330))
    start = day + 60 * int(rng.integers(0, 1400))
    jobs = _jobs(fab, rng, seconds)
    measure_load(fab, jobs, seconds, seed)
    state = new_state(fab, seconds)
    faults = _faults(fab, state, jobs, rng, seconds, interval, case)
    rates = simulate(fab, jobs, state, rng)
    root_links: set[int] = set()
    for f in faults:
        root_links |= set(f["trans"])
    noise = add_noise(fab, state, rates, rng, root_links)
    trans: dict[int, list] = {}
    for f in faults:
        for link, tr in f["trans"].items():
            trans.setdefault(link, []).extend(tr)
    cnt = Counters(fab, state, rates, trans, rng,
                   {f["ber_dir"]: float(10 ** rng.uniform(-5.5, -4.5)) for f in faults if f.get("ber_dir") is not None})
    ctx = Ctx(fab, rng, seconds, interval, start, out, state=state)
    meta.skews(ctx)
    _silent(ctx, faults, jobs)
    sw, host = _configs(ctx)
    for d, (fam, cfg) in sw.items():
        _emit_switch(ctx, cnt, d, fam, cfg)
    storm = {f["storm"][0]: f["storm"] for f in faults if f.get("storm")}
    for h, cfg in host.items():
        mine = [storm[p] for p in fab.devices[h].ports if p in storm]
        _emit_host(ctx, cnt, h, cfg, mine[0] if mine else None)
    meta.topology(ctx)
    context = meta.jobs_file(ctx, jobs)
    meta.syslog(ctx, faults)
    year = datetime.fromtimestamp(start, UTC).year
    manifest = {"name": out.name, "description": f"writer3 bundle, case {case}",
                "timezone": "UTC", "year": year}
    if context:
        manifest["context"] = context
    labels = _labels(ctx, faults, case, seed, noise, sw)
    ctx.files["manifest.json"] = dump(manifest)
    ctx.files["labels.json"] = dump(labels)
    out.mkdir(parents=True, exist_ok=True)
    write_files(ctx)
    return labels


def _labels(ctx: Ctx, faults: list[dict], case: str, seed: int, noise: dict, sw: dict) -> dict:
    fab = ctx.fab
    return {
        "writer": WRITER, "scenario": case, "seed": seed,
        "window": {"start": _iso(ctx.start), "end": _iso(ctx.start + ctx.seconds)},
        "faults": [{"kind": f["kind"], "root_cause": {"type": f["root"][0], "id": f["root"][1]},
                    "start": _iso(ctx.start + f["start"]), "end": _iso(ctx.start + f["end"]),
                    "victims": f["victims"], **({"hard_case": f["hard"]} if f.get("hard") else {})}
                   for f in faults],
        "malformed_lines": ctx.malformed,
        "sample_interval_s": ctx.interval,
        "fabric": {"planes": fab.planes, "tiers": fab.tiers, "rails": fab.rails,
                   "devices": len(fab.devices), "hosts": len(fab.hosts)},
        "vendors": sorted({d.vendor for d in fab.devices if d.role != "host"}),
        "families": {fab.devices[d].name: fam for d, (fam, _) in sorted(sw.items())},
        "silent_devices": sorted(ctx.silent),
        "counter_clears": ctx.clears,
        "noise": {k: [_direction(fab, d) for d in v] for k, v in noise.items()},
        "clock_skew_ms": {k: int(round(v * 1000)) for k, v in sorted(ctx.skew.items())},
    }


def _direction(fab, d: int) -> str:
    a, b = int(fab.link_a[d // 2]), int(fab.link_b[d // 2])
    src, dst = (b, a) if d % 2 else (a, b)
    return f"{fab.port_id(src)} -> {fab.port_id(dst)}"
