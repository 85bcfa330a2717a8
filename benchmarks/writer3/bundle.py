"""One writer3 bundle: fabric, jobs, faults, physics, then every device's files as its tools
print them, read at its own clock (skew, jitter, missing and doubled samples, a counter clear),
with labels.json as ground truth."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import formats as fm
from .counters import Counters, add_noise
from .fabric import Fabric, build_fabric
from .faults import FAULTS
from .physics import Job, new_state, simulate

WRITER = "writer3"
# the largest value a counter may hold when the bundle begins: a port that carried petabytes
# may have flapped a dozen times, not a billion
BASE_CAP = {"carrier": 30, "carrier_down": 15, "in_errors": 10 ** 5, "in_fcs": 10 ** 5,
            "out_errors": 10 ** 3, "in_discards": 10 ** 5, "out_discards": 10 ** 5,
            "symbol": 10 ** 6, "rx_pause": 10 ** 8, "tx_pause": 10 ** 8, "ecn": 10 ** 10,
            "out_pkts": 10 ** 12, "in_pkts": 10 ** 12, "corrected": 10 ** 13,
            "rx_paused_us": 10 ** 11, "tx_paused_us": 10 ** 11}


@dataclass
class Ctx:
    fab: Fabric
    rng: np.random.Generator
    seconds: int
    interval: int
    start: float  # epoch seconds of the bundle's start
    out: Path
    state: object = None  # the physics' State (negotiated speeds)
    files: dict[str, list[str] | str] = field(default_factory=dict)
    malformed: int = 0
    skew: dict[str, float] = field(default_factory=dict)
    silent: set[str] = field(default_factory=set)
    clears: list[dict] = field(default_factory=list)
    logs: dict[str, list[tuple[float, str]]] = field(default_factory=dict)


def _iso(t: float) -> str:
    return fm.utc(t).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(round((t % 1) * 1e6)) % 1000000:06d}Z"


def _jobs(fab: Fabric, rng, seconds: int) -> list[Job]:
    n = len(fab.hosts)
    order = list(rng.permutation(n))
    busy = order[: max(4, int(n * rng.uniform(0.75, 1.0)))]
    k = int(rng.integers(1, 4)) if len(busy) >= 8 else 1
    cuts = sorted(rng.choice(np.arange(2, len(busy) - 1), k - 1, replace=False)) if k > 1 else []
    parts = np.split(np.array(busy), cuts)
    if len(set(fab.host_group[max(parts, key=len)])) < 2:  # the main job spans server groups
        parts = [np.array(busy)]
    jobs = []
    for x, part in enumerate(parts):
        hosts = sorted(int(h) for h in part)
        if len(hosts) < 2:
            continue
        start = -float(rng.uniform(600, 20000))
        end = None
        if x == 1 and rng.random() < 0.3:  # a job that ends inside the bundle: not a fault
            end = float(rng.uniform(0.6, 0.9) * seconds)
        jobs.append(Job(str(int(rng.integers(100000, 999999))), hosts, start, end,
                        float(rng.uniform(0.35, 0.8)), float(rng.uniform(0.3, 0.8)),
                        float(rng.uniform(2, 12))))
    return jobs


def _read_times(ctx: Ctx) -> tuple[np.ndarray, np.ndarray]:
    """True read instants of one device (some missing, some read twice) and its clock's view."""
    rng, iv = ctx.rng, ctx.interval
    n = ctx.seconds // iv
    t = float(rng.uniform(0, iv)) + iv * np.arange(n) + rng.normal(0, float(rng.uniform(0.02, 0.3)), n)
    t = np.clip(t, 0.001, ctx.seconds - 0.001)
    keep = rng.random(n) > float(rng.uniform(0.0, 0.02))
    t = t[keep]
    dup = rng.random(len(t)) < 0.008
    t = np.sort(np.concatenate([t, t[dup]]))
    return t, t


def _values(ctx: Ctx, cnt: Counters, p: int, t: np.ndarray, base: dict, clear: float | None):
    """Canonical counters of port p at true times t as the device reports them."""
    v = cnt.port(p, t)
    out = {}
    for k, x in v.items():
        if (p, k) not in base:  # counting since the port came up: bounded by what it counts
            mag = 10 ** int(ctx.rng.integers(2, 13))
            base[p, k] = float(ctx.rng.integers(0, min(mag, BASE_CAP.get(k, 10 ** 15))))
        y = x + base[p, k]
        if clear is not None:
            y = np.where(t >= clear, x - cnt.port(p, np.array([clear]))[k][0], y)
        out[k] = np.floor(np.maximum(y, 0))
    return out


def _emit_switch(ctx: Ctx, cnt: Counters, d: int, family: str, cfg: dict) -> None:
    fab, rng = ctx.fab, ctx.rng
    dev = fab.devices[d]
    t, _ = _read_times(ctx)
    ts = ctx.start + t + ctx.skew[dev.name]
    clear = None
    if cfg.get("clear") is not None:
        clear = cfg["clear"]
        ctx.clears.append({"device": dev.name, "time": _iso(ctx.start + clear)})
    base: dict = {}
    vals = {p: _values(ctx, cnt, p, t, base, clear) for p in dev.ports}
    oper = {p: cnt.is_up(int(fab.port_link[p]), t) for p in dev.ports}
    speed = {p: cnt_speed(ctx, p) for p in dev.ports}
    name = dev.name
    if family.startswith("gnmic"):
        src = f"{dev.mgmt_ip}:9339" if cfg["ip_source"] else f"{name}:9339"
        sub = f"default-{int(ctx.start) - int(rng.integers(100, 5000))}"
        objs = []
        for k in range(len(t)):
            ns = int(round(ts[k] * 1e9))
            for p in dev.ports:
                one = {c: vals[p][c][k] for c in vals[p]}
                st = "UP" if oper[p][k] else "DOWN"
                if family == "gnmic_json":
                    objs += fm.gnmic_json(src, cfg["target"], sub, ns, fab.port_if[p], one, st,
                                          speed[p], cfg)
                else:
                    objs += fm.gnmic_event(src, sub, ns, fab.port_if[p], one, st, speed[p], cfg)
        lines = fm.dump_json(objs, cfg["pretty"])
        if cfg["bad"] and not cfg["pretty"]:
            for _ in range(cfg["bad"]):  # a record cut short (collector restarted mid-write)
                k = int(rng.integers(1, len(lines) - 1))
                lines[k] = lines[k][: len(lines[k]) // 2]
                ctx.malformed += 1
        ctx.files[f"gnmi/{name}.json" + (".gz" if cfg["gz"] else "")] = lines
        return
    _emit_prom(ctx, dev, t, ts, vals, oper, speed, family, cfg)


def cnt_speed(ctx: Ctx, p: int) -> float:
    return float(ctx.state.speed[int(ctx.fab.port_link[p])])


def _emit_prom(ctx, dev, t, ts, vals, oper, speed, family, cfg) -> None:
    fab = ctx.fab
    prefix = "cumulus_" if cfg["otel"] else ""
    lab = (lambda p: f'host_name="{dev.name}",interface="{fab.port_if[p]}"') if cfg["host_label"] \
        else (lambda p: f'instance="{dev.name}:8889",interface="{fab.port_if[p]}"')

    def series(key, p, k):
        if key == "oper":
            return 1.0 if oper[p][k] else 2.0
        if key == "speed":
            return speed[p]
        return vals[p][key][k]

    lines: list[str] = []
    if family == "prom_ts":
        for key in fm.PROM:
            rows = [(lab(p), fab.port_if[p], series(key, p, k), int(round(ts[k] * 1000)))
                    for p in dev.ports for k in range(len(t))]
            lines += fm.prom_family_lines(prefix, key, rows)
    else:
        for k in range(len(t)):
            lines.append(fm.date_line(ts[k], "ins"))
            for key in fm.PROM:
                lines += fm.prom_family_lines(prefix, key, [(lab(p), fab.port_if[p], series(key, p, k), None)
                                                           for p in dev.ports])
    if cfg["bad"]:
        for _ in range(cfg["bad"]):  # a label set broken by a truncated write
            k = int(ctx.rng.integers(1, len(lines) - 1))
            while lines[k].startswith("#") or "{" not in lines[k]:
                k += 1
            lines[k] = lines[k].split("{")[0] + '{interface="' + lines[k].split('"')[1] + " 0"
            ctx.malformed += 1
    ctx.files[f"prom/{dev.name}.prom" + (".gz" if cfg["gz"] else "")] = lines


def _host_values(ctx, cnt, fab, p, t, base, storm) -> tuple[dict, dict]:
    v = _values(ctx, cnt, p, t, base, None)
    nicv = {}
    for k in ("np_ecn", "cnp_sent", "cnp_handled", "oos", "ack_timeout"):
        b = base.setdefault((p, "nic_" + k), float(ctx.rng.integers(0, 10 ** 6)))
        nicv[k] = np.floor(cnt.at("nic_" + k, p, t) + b)
    eth = {
        "tx_bytes_phy": v["out_octets"], "rx_bytes_phy": v["in_octets"],
        "tx_packets_phy": v["out_pkts"], "rx_packets_phy": v["in_pkts"],
        "rx_crc_errors_phy": v["in_errors"], "rx_symbol_err_phy": v["in_errors"] * 0,
        "rx_prio3_pause": v["rx_pause"], "tx_prio3_pause": v["tx_pause"],
        "rx_prio3_pause_duration": v["rx_paused_us"], "tx_prio3_pause_duration": v["tx_paused_us"],
        "rx_prio3_pause_transition": np.floor(v["rx_pause"] / 50),
        "link_down_events_phy": v["carrier_down"], "rx_pcs_symbol_err_phy": v["symbol"],
        "rx_corrected_bits_phy": v["corrected"],
        "rx_vport_rdma_unicast_bytes": np.floor(v["in_octets"] * 0.993),
        "tx_vport_rdma_unicast_bytes": np.floor(v["out_octets"] * 0.993),
        "rx_vport_rdma_unicast_packets": np.floor(v["in_pkts"] * 0.995),
        "tx_vport_rdma_unicast_packets": np.floor(v["out_pkts"] * 0.995),
        "rx_prio3_bytes": np.floor(v["in_octets"] * 0.996),
        "tx_prio3_bytes": np.floor(v["out_octets"] * 0.996),
        "rx_prio3_packets": np.floor(v["in_pkts"] * 0.997),
        "tx_prio3_packets": np.floor(v["out_pkts"] * 0.997),
        "rx_bytes": np.floor(v["in_octets"] * 2e-5), "tx_bytes": np.floor(v["out_octets"] * 2e-5),
        "rx_packets": np.floor(v["in_pkts"] * 1e-4), "tx_packets": np.floor(v["out_pkts"] * 1e-4),
        "rx_csum_unnecessary": np.floor(v["in_pkts"] * 1e-4),
    }
    warn = np.zeros(len(t))
    if storm is not None:
        _, t0, t1 = storm
        inside = np.clip(np.minimum(t, t1) - t0, 0, None)
        warn = np.where(t >= t0, np.floor(inside / 10) + 1, 0)
    eth["tx_pause_storm_warning_events"] = warn
    rd = {"np_ecn_marked_roce_packets": nicv["np_ecn"], "np_cnp_sent": nicv["cnp_sent"],
          "rp_cnp_handled": nicv["cnp_handled"], "out_of_sequence": nicv["oos"],
          "packet_seq_err": np.floor(nicv["oos"] * 0.1), "local_ack_timeout_err": nicv["ack_timeout"],
          "rx_write_requests": np.floor(v["in_pkts"] / 64), "rx_read_requests": np.floor(v["in_pkts"] / 4096)}
    return eth, rd


def _emit_host(ctx: Ctx, cnt: Counters, d: int, cfg: dict, storm) -> None:
    fab = ctx.fab
    dev = fab.devices[d]
    t, _ = _read_times(ctx)
    ts = ctx.start + t + ctx.skew[dev.name]
    base: dict = {}
    rows = []
    for k, p in enumerate(dev.ports):
        ifname, ibdev = fab.port_if[p], f"mlx5_{k}"
        st = storm if storm is not None and storm[0] == p else None
        eth, rd = _host_values(ctx, cnt, fab, p, t, base, st)
        e_lines, r_lines = [], []
        for x in range(len(t)):
            stamp = fm.date_line(ts[x], cfg["date"])
            e_lines += [stamp] + fm.ethtool_block({c: v[x] for c, v in eth.items()})
            r_lines += [stamp] + fm.rdma_block(ibdev, {c: v[x] for c, v in rd.items()}, cfg["rdma"])
        gz = ".gz" if cfg["gz"] else ""
        if cfg["flat"]:
            ctx.files[f"nic/{dev.name}__{ifname}.ethtool{gz}"] = e_lines
            ctx.files[f"nic/{dev.name}__{ibdev}.rdma{gz}"] = r_lines
        else:
            ctx.files[f"nic/{dev.name}/{ifname}.ethtool{gz}"] = e_lines
            ctx.files[f"nic/{dev.name}/{ibdev}.rdma{gz}"] = r_lines
        rows.append((ibdev, ifname, bool(cnt.is_up(int(fab.port_link[p]), np.array([ctx.seconds - 1.0]))[0])))
    ctx.files[f"topology/{dev.name}/ibdev2netdev"] = fm.ibdev2netdev(rows, cfg["verbose_ibdev"])


def write_files(ctx: Ctx) -> None:
    """Every file, plain or gzip, in a fixed order (same seed, same bytes)."""
    for rel in sorted(ctx.files):
        body = ctx.files[rel]
        text = body if isinstance(body, str) else "\n".join(body) + "\n"
        path = ctx.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode(), compresslevel=6, mtime=0))
        else:
            path.write_text(text)


def dump(obj) -> str:
    return json.dumps(obj, indent=2) + "\n"


__all__ = ["Ctx", "build_fabric", "FAULTS", "new_state", "simulate", "add_noise", "Counters",
           "_jobs", "_emit_switch", "_emit_host", "write_files", "dump", "_iso", "WRITER"]
