"""Synthetic trace bundles: the twin runs a fabric with jobs and faults over a time window, and
the telemetry comes out as the real collectors write it, with `labels.json` as ground truth.

Scenario: the `fabtwin simulate` format (fabric, balancing, jobs) plus
```toml
[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 600
sample_s = 10

[[faults]]   # kinds of design section 7; every kind and its keys: twin/faults.py
kind = "link_flap"          # link_down | link_flap | link_degraded | congestion | pfc_storm | load_imbalance
link = "leaf-p0-03:swp33--spine-p0-02:swp3"   # link faults
at_s = 300
duration_s = 20             # how long it lasts (link_flap: each down period)
repeat = 1                  # link_flap: how many times, every period_s
loss = 1e-3                 # link_degraded: packet loss, and/or speed_gbps
host = "gpu-node-0005"      # pfc_storm: the NIC that keeps pausing; congestion: the incast receiver
senders = 8                 # congestion: how many hosts send to it
device = "leaf-p0-02"       # load_imbalance: the leaf left in ECMP (adaptive routing off)
```
Jobs run for the whole window (training is back-to-back collectives), or for `iterations`
collectives of `size` when a job gives that: their transfers are streams at the twin's
max-min rates. Realism a parser must survive is added on top:
per-device clock skew and sampling jitter, missing and duplicated samples, 32-bit RDMA counters
that wrap, a switch reboot that resets its counters, and a few malformed lines (their count is
in labels.json). The same scenario and seed give byte-identical files.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collectors.core.timeparse import TimeError, ns_to_iso, parse_iso
from collectors.formats.gnmi import cumulus_notification, write_event, write_json
from collectors.formats.ibdev import write_ibdev2netdev
from collectors.formats.lldp import LldpNeighbor, write_lldp_json0
from collectors.formats.nic import write_ethtool_snapshots, write_rdma_statistic
from collectors.formats.prom import write_exposition
from collectors.formats.slurm import Job, write_sacct_pipe
from collectors.formats.syslog import LogEvent, write_syslog
from twin.engine import Transfers, simulate
from twin.faults import FAULT_KINDS, Fault, FaultParams, inject  # noqa: F401 - FAULT_KINDS: its old home
from twin.queueing import QueueConfig
from twin.routing import FabricState
from twin.scenario import Scenario, from_document, read_document
from twin.schema import Source
from twin.telemetry import port_series
from twin.topology import Fabric, build

NS = 1_000_000_000


def write_gz(path: Path, text: str) -> None:
    """Write text gzip-compressed, reproducibly (no timestamp in the header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


def write_text(path: Path, text: str) -> None:
    """Write text, making the folders it needs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def parse_faults(fabric: Fabric, faults: list[FaultParams], source: Source) -> list[Fault]:
    """The scenario's faults, each with what it does to the twin and its one root cause."""
    return inject(fabric, faults, source, seed=0, generated=True)


@dataclass
class Generated:
    out: Path
    labels: dict
    files: int


def generate(scenario_path: str | Path, out: str | Path, seed: int = 0) -> Generated:
    """Write a bundle for the scenario into `out` (replaced), deterministic for (scenario, seed)."""
    path = Path(scenario_path)
    doc, source = read_document(path)
    tel = doc.telemetry
    sc = from_document(doc, source)
    tmp = Path(out)
    fabric = build(sc.spec)
    faults = parse_faults(fabric, doc.faults, source)
    try:
        t0 = parse_iso(tel.start)
    except TimeError as exc:
        raise source.error(["telemetry", "start"], str(exc)) from exc
    duration = float(tel.duration_s)
    step = float(tel.sample_s)
    rng = np.random.default_rng(seed)
    state = FabricState(fabric, mode=sc.modes, seed=sc.seed + seed, nic_mode=sc.nic_mode)
    for f in faults:
        if f.ecmp_leaf is not None:
            state.ecmp_switches.add(f.ecmp_leaf)
    traffic = _traffic(sc, fabric, faults, [j.iterations for j in doc.jobs])
    res = simulate(state, traffic, changes=[c for f in faults for c in f.changes],
                   storms=[s for f in faults for s in f.storms], convergence_s=sc.convergence_s,
                   until=duration, sample_every=step, telemetry=QueueConfig())
    writer = _BundleWriter(tmp, fabric, sc, faults, rng, t0, step, duration, name=path.stem)
    _effects(writer, FabricState(fabric, mode=sc.modes, seed=sc.seed + seed), traffic, res, faults)
    writer.write(res)
    labels = writer.labels(seed, str(path))
    write_text(tmp / "labels.json", json.dumps(labels, indent=2) + "\n")
    return Generated(tmp, labels, writer.files)


REORDER = {"spray": 1e-3, "ar": 1e-4, "ecmp": 0.0}  # out-of-sequence share of received packets
ROCE_TIMEOUT_S = 0.004  # a tight RoCE transport timeout (local_ack_timeout 12 is about 16 ms)


def _effects(writer: _BundleWriter, healthy: FabricState, traffic: Transfers, res, faults: list[Fault]) -> None:
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
        elif ft.kind == "load_imbalance" and ft.ecmp_leaf is not None:
            victims = {f.link_id(int(c)) for c in f.leaf_up_cables[ft.ecmp_leaf] if c >= 0}
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


SWITCH_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "tx_discards", "ecn_marked",
                   "rx_pause", "tx_pause", "rx_fcs_errors", "symbol_errors")
GNMI_LEAVES = {"counters": {"rx_bytes": "in-octets", "tx_bytes": "out-octets", "rx_packets": "in-pkts",
                            "tx_packets": "out-pkts", "tx_discards": "out-discards"},
               "ethernet": {"rx_fcs_errors": "in-fcs-errors"},
               "phy": {"symbol_errors": "symbol-errors"},
               "queue": {"ecn_marked": "ecn-marked-pkts"},
               "pfc": {"rx_pause": "in-pause-pkts", "tx_pause": "out-pause-pkts"}}
PROM_NAMES = {"rx_bytes": "nvswitch_interface_if_in_octets", "tx_bytes": "nvswitch_interface_if_out_octets",
              "rx_packets": "nvswitch_interface_if_in_ucast_pkts",
              "tx_packets": "nvswitch_interface_if_out_ucast_pkts",
              "tx_discards": "nvswitch_interface_if_out_discards",
              "ecn_marked": "nvswitch_interface_tc_tx_ecn_marked_tc",
              "rx_pause": "nvswitch_interface_sp_rx_pause", "tx_pause": "nvswitch_interface_sp_tx_pause",
              "rx_fcs_errors": "nvswitch_interface_dot3_stats_fcs_errors",
              "symbol_errors": "nvswitch_interface_phy_stats_phy_symbol_errors"}
ETHTOOL_NAMES = {"rx_bytes": "rx_bytes_phy", "tx_bytes": "tx_bytes_phy", "rx_packets": "rx_packets_phy",
                 "tx_packets": "tx_packets_phy", "rx_pause": "rx_prio3_pause",
                 "tx_pause": "tx_prio3_pause", "tx_discards": "tx_discards_phy",
                 "rx_fcs_errors": "rx_crc_errors_phy", "symbol_errors": "rx_pcs_symbol_err_phy"}


class _BundleWriter:
    """Turns the twin's per-port counters into a bundle of real-format files."""

    def __init__(self, out: Path, fabric: Fabric, sc: Scenario, faults: list[Fault],
                 rng: np.random.Generator, t0: int, step: float, duration: float,
                 name: str = "") -> None:
        self.out, self.f, self.sc, self.faults, self.rng = out, fabric, sc, faults, rng
        self.t0, self.step, self.duration = t0, step, duration
        self.files = 0
        self.name = name or out.name
        self.malformed = 0
        self.malformed_kinds: set[str] = set()  # one malformed line per collector family
        self.timeout_events: list[tuple[str, float, int]] = []  # (host, time, count), _effects
        self.reorder: dict[str, float] = {}  # out-of-sequence share per host, _effects
        self.reboot: dict | None = None
        names = fabric.node_name
        self.switches = [n for i, n in enumerate(names) if fabric.node_kind[i] > 0]
        self.hosts = [n for i, n in enumerate(names) if fabric.node_kind[i] == 0]
        # collectors as fleets mix them: a third of the switches each way
        self.collector = {s: ("gnmi_json", "gnmi_event", "prom")[i % 3] for i, s in enumerate(self.switches)}
        c = fabric.n_cables
        self.ports_of: dict[str, list[tuple[str, int]]] = {}
        for p_, port in enumerate(fabric.cable_port_a + fabric.cable_port_b):
            dev, ifn = port.split(":", 1)
            self.ports_of.setdefault(dev, []).append((ifn, p_))
        self.cable_of = {fabric.cable_port_a[i]: i for i in range(c)}
        self.skew_ns = {d: int(rng.integers(-300, 301)) * 1_000_000 for d in names}

    # -- time and state ------------------------------------------------------------------------
    def sample_times(self, device: str, n: int) -> np.ndarray:
        """Sample times of a device: its clock skew plus jitter of up to 5% of the interval."""
        jitter = self.rng.uniform(-0.05, 0.05, n) * self.step * NS
        return (self.t0 + np.arange(n) * int(self.step * NS) + self.skew_ns[device] + jitter).astype(np.int64)

    def fcs_errors(self, port: str, rx_packets: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Frames a degraded link corrupts: its loss rate times the packets received meanwhile."""
        out = np.zeros(len(rx_packets))
        t_s = (ts - self.t0) / NS
        for f in self.faults:
            if f.kind == "link_degraded" and port in f.root_id.split("--"):
                loss = max((c.loss for c in f.changes), default=0.0)
                inside = (t_s >= f.start_s) & (t_s < f.end_s)
                per_step = np.diff(rx_packets, prepend=rx_packets[0]) * inside
                out += np.cumsum(per_step * loss)
        return np.floor(out)

    def symbol_errors(self, port_id: str, port: int, ts: np.ndarray) -> np.ndarray:
        """Physical-layer symbol errors of a dirty optic: they follow the line rate, not the
        traffic, so an idle degraded link shows them too (loss x symbols per second)."""
        out = np.zeros(len(ts))
        t_s = (ts - self.t0) / NS
        c = port if port < self.f.n_cables else port - self.f.n_cables
        symbols_per_s = float(self.f.cable_gbps[c]) * 1e9 / 66  # 64b/66b blocks
        for f in self.faults:
            if f.kind == "link_degraded" and port_id in f.root_id.split("--"):
                loss = max((ch.loss for ch in f.changes), default=0.0)
                inside = np.clip(np.minimum(t_s, f.end_s) - f.start_s, 0, None)
                # a lost frame is many corrupted symbols, most of them caught by FEC: scale down
                out += np.floor(inside * symbols_per_s * loss * 1e-3)
        return out

    def port_down(self, port: str, t_s: np.ndarray) -> np.ndarray:
        """Per sample: is the port's cable down (a link fault)?"""
        down = np.zeros(len(t_s), dtype=bool)
        for f in self.faults:
            if f.kind in ("link_down", "link_flap") and port in f.root_id.split("--"):
                for a, b in f.downs:
                    down |= (t_s >= a) & (t_s < b)
        return down

    # -- the bundle ------------------------------------------------------------------------------
    def write(self, res) -> None:
        self.res = res
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True)
        write_text(self.out / "manifest.json", json.dumps({
            "name": self.name, "description": "synthetic bundle written by fabtwin generate",
            "timezone": "UTC", "year": int(ns_to_iso(self.t0)[:4])}, indent=2) + "\n")
        n_samples = len(res.sample_times)
        self.pick_reboot(n_samples)
        for device in sorted(self.ports_of):
            if device in self.collector:
                self.write_switch(device, n_samples)
            else:
                self.write_host(device, n_samples)
        self.write_topology()
        self.write_syslog()
        self.write_jobs()
        self.files = sum(1 for p in self.out.rglob("*") if p.is_file())

    def pick_reboot(self, n_samples: int) -> None:
        prom = [s for s in self.switches if self.collector[s] == "prom"]
        if prom and n_samples > 10:
            dev = prom[int(self.rng.integers(len(prom)))]
            self.reboot = {"device": dev, "sample": int(self.rng.integers(n_samples // 3, 2 * n_samples // 3))}

    def series(self, device: str, n: int) -> tuple[np.ndarray, dict, list[int]]:
        """(sample times, {ifname: {counter: values}}, kept sample indices) with realism applied."""
        ts = self.sample_times(device, n)
        keep = [i for i in range(n) if self.rng.random() > 0.01 or i in (0, n - 1)]  # 1% missing
        ports: dict[str, dict[str, np.ndarray]] = {}
        for ifname, port in sorted(self.ports_of[device]):
            base = {c: float(self.rng.integers(1, 10**9)) for c in SWITCH_COUNTERS}
            base["rx_fcs_errors"] = float(self.rng.integers(0, 5))
            base["symbol_errors"] = float(self.rng.integers(0, 5))
            raw = port_series(self.f, self.res, port)
            raw["rx_fcs_errors"] = self.fcs_errors(f"{device}:{ifname}", raw["rx_packets"], ts)
            raw["symbol_errors"] = self.symbol_errors(f"{device}:{ifname}", port, ts)
            vals = {c: raw[c] + base[c] for c in SWITCH_COUNTERS}
            if self.reboot and self.reboot["device"] == device:
                r = self.reboot["sample"]
                for c in vals:  # counters restart from zero after the reboot
                    vals[c] = np.concatenate([vals[c][:r], vals[c][r:] - vals[c][r]])
            # Python ints: the writers index them per sample, and numpy scalars are slow there
            ports[ifname] = {c: v.astype(np.int64).tolist() for c, v in vals.items()}
        return ts, ports, keep

    def write_switch(self, device: str, n: int) -> None:
        ts, ports, keep = self.series(device, n)
        t_s = (ts - self.t0) / NS
        kind = self.collector[device]
        if kind == "prom":
            rows = []
            for ifname, vals in ports.items():
                down = self.port_down(f"{device}:{ifname}", t_s)
                for i in keep:
                    for c, name in PROM_NAMES.items():
                        rows.append({"ts": int(ts[i]), "device": device, "ifname": ifname, "metric": name,
                                     "value": float(vals[c][i]), "qualifier": ""})
                    rows.append({"ts": int(ts[i]), "device": device, "ifname": ifname,
                                 "metric": "nvswitch_interface_oper_state", "value": 2.0 if down[i] else 1.0,
                                 "qualifier": ""})
            fh = io.StringIO()
            write_exposition(rows, fh)
            text = fh.getvalue()
            if self.malformed < 3 and "prom" not in self.malformed_kinds:
                text += 'nvswitch_interface_if_in_octets{instance="' + device + '",interface="swp1" 17\n'
                self._count_malformed("prom")
            write_gz(self.out / "prom" / f"{device}.prom.gz", text)
            return
        notes = []
        for ifname, vals in ports.items():
            down = self.port_down(f"{device}:{ifname}", t_s)
            for i in keep:
                t = int(ts[i])
                for group, leaves in GNMI_LEAVES.items():
                    extra = {"queue": 3} if group == "queue" else {"priority": 3} if group == "pfc" else {}
                    notes.append(cumulus_notification(t, device, group, {
                        leaf: vals[c][i] for c, leaf in leaves.items()}, ifname=ifname, **extra))
                notes.append(cumulus_notification(t, device, "state",
                                                  {"oper-status": "DOWN" if down[i] else "UP"}, ifname=ifname))
        notes.sort(key=lambda x: x.ts)
        fh = io.StringIO()
        (write_json if kind == "gnmi_json" else write_event)(notes, fh)
        lines = fh.getvalue().splitlines(keepends=True)
        for k in sorted(self.rng.choice(len(lines), size=max(1, len(lines) // 500), replace=False))[::-1]:
            lines.insert(int(k), lines[int(k)])  # a collector that wrote a few lines twice
        text = "".join(lines)
        if self.malformed < 3 and "gnmi" not in self.malformed_kinds:
            text += lines[-1][: len(lines[-1]) // 2] + "\n"  # the collector died mid-line
            self._count_malformed("gnmi")
        write_gz(self.out / "gnmi" / f"{device}.{kind.split('_')[1]}.jsonl.gz", text)

    def _count_malformed(self, kind: str) -> None:
        self.malformed_kinds.add(kind)
        self.malformed += 1

    def write_host(self, host: str, n: int) -> None:
        ts, ports, keep = self.series(host, n)
        for ifname, vals in ports.items():
            blocks = [(int(ts[i]), {name: vals[c][i] for c, name in ETHTOOL_NAMES.items()}) for i in keep]
            fh = io.StringIO()
            write_ethtool_snapshots(blocks, fh)
            text = fh.getvalue()
            if self.malformed < 3 and "nic" not in self.malformed_kinds:
                text += "     tx_bytes_phy: 12abc\n"
                self._count_malformed("nic")
            write_gz(self.out / "nic" / host / f"{ifname}.ethtool.gz", text)
            # RDMA hw counters are 32 bits on these NICs: they wrap
            marks = np.array(vals["ecn_marked"]) - vals["ecn_marked"][0]
            leaf_marks = self._leaf_marks(host, ifname)
            if leaf_marks is not None:
                marks = leaf_marks
            timeouts = self._timeouts(host, (ts - self.t0) / NS)
            rx = np.array(vals["rx_packets"], dtype=float)
            oos = np.floor((rx - rx[0]) * self.reorder.get(host, 0.0))
            base = 2**32 - int(self.rng.integers(1, 10**6))
            ibdev = f"mlx5_{ifname.removeprefix('eth')}"
            blocks = [(int(ts[i]), {(ibdev, 1): {
                "np_cnp_sent": (base + int(marks[i])) % 2**32,
                "np_ecn_marked_roce_packets": (base + int(marks[i])) % 2**32,
                "local_ack_timeout_err": int(timeouts[i]),
                "out_of_sequence": int(oos[i]) % 2**32}}) for i in keep]
            fh = io.StringIO()
            write_rdma_statistic(blocks, fh)
            write_gz(self.out / "nic" / host / f"{ibdev}.rdma.gz", fh.getvalue())

    def _leaf_marks(self, host: str, ifname: str) -> np.ndarray | None:
        """ECN marks on the leaf port facing this NIC: what its RoCE receiver sees (and CNPs)."""
        c = self.cable_of.get(f"{host}:{ifname}")
        if c is None:
            return None
        return np.floor(self.res.counters_at["ecn_marked"][:, 2 * c + 1])

    def _timeouts(self, host: str, t_s: np.ndarray) -> np.ndarray:
        """Transport timeouts of the host's QPs whose flows crossed a link when it died."""
        out = np.zeros(len(t_s), dtype=np.int64)
        for h, at, count in self.timeout_events:
            if h == host:
                out += (t_s >= at).astype(np.int64) * count
        return out

    def write_topology(self) -> None:
        f = self.f
        nbrs: dict[str, list[LldpNeighbor]] = {}
        for c in range(f.n_cables):
            a_dev, a_if = f.cable_port_a[c].split(":", 1)
            b_dev, b_if = f.cable_port_b[c].split(":", 1)
            nbrs.setdefault(a_dev, []).append(LldpNeighbor(a_if, b_dev, b_if))
            nbrs.setdefault(b_dev, []).append(LldpNeighbor(b_if, a_dev, a_if))
        for dev, rows in nbrs.items():
            fh = io.StringIO()
            write_lldp_json0(rows, fh)
            write_text(self.out / "topology" / dev / "lldpctl.json", fh.getvalue())
        for host in self.hosts:
            ports = sorted((n.local_ifname for n in nbrs.get(host, [])), key=lambda s: int(s[3:]))
            fh = io.StringIO()
            write_ibdev2netdev([(f"mlx5_{p.removeprefix('eth')}", 1, p, "Up") for p in ports], fh)
            write_text(self.out / "topology" / host / "ibdev2netdev", fh.getvalue())

    def write_syslog(self) -> None:
        logs: dict[tuple[str, str], list[LogEvent]] = {}
        for f in self.faults:
            if f.kind in ("link_down", "link_flap"):
                for port in f.root_id.split("--"):
                    dev, ifn = port.split(":", 1)
                    style = "kernel" if dev in self.hosts else (
                        "rfc5424" if self.collector.get(dev) == "gnmi_json" else "cumulus")
                    for a, b in f.downs:
                        skew = self.skew_ns[dev]
                        logs.setdefault((dev, style), []).append(
                            LogEvent(self.t0 + int(a * NS) + skew, dev, ifn, "link_down"))
                        if np.isfinite(b) and b < self.duration:
                            logs[(dev, style)].append(LogEvent(self.t0 + int(b * NS) + skew, dev, ifn, "link_up"))
            elif f.kind == "pfc_storm":
                leaf_port = next(self.f.cable_port_b[c] for c in range(self.f.n_cables)
                                 if self.f.cable_port_a[c] == f.root_id)
                dev, ifn = leaf_port.split(":", 1)
                skew = self.skew_ns[dev]
                logs.setdefault((dev, "rfc5424"), []).extend([
                    LogEvent(self.t0 + int(f.start_s * NS) + skew, dev, ifn, "pfc_storm", queue=3),
                    LogEvent(self.t0 + int(f.end_s * NS) + skew, dev, ifn, "pfc_storm_restored", queue=3)])
        for (dev, style), events in logs.items():
            fh = io.StringIO()
            write_syslog(sorted(events), fh, style)
            write_text(self.out / "syslog" / f"{dev}.log", fh.getvalue())

    def write_jobs(self) -> None:
        jobs = [Job(str(1000 + j), "tenant-a", self.t0 - 3600 * NS, None,
                    [self.f.node_name[h] for h in coll.hosts], "RUNNING")
                for j, (_, coll) in enumerate(self.sc.jobs)]
        fh = io.StringIO()
        write_sacct_pipe(jobs, fh)
        write_text(self.out / "jobs" / "sacct.txt", fh.getvalue())

    def labels(self, seed: int, scenario: str) -> dict:
        """Ground truth, with the fields of `investigate --json`."""
        faults = []
        for f in self.faults:
            end = min(f.end_s, self.duration)
            faults.append({"kind": f.kind, "root_cause": {"type": f.root_type, "id": f.root_id},
                           "start": ns_to_iso(self.t0 + int(f.start_s * NS)),
                           "end": ns_to_iso(self.t0 + int(end * NS)), "victims": f.victims})
        return {"scenario": scenario, "seed": seed,
                "window": {"start": ns_to_iso(self.t0), "end": ns_to_iso(self.t0 + int(self.duration * NS))},
                "faults": faults, "malformed_lines": self.malformed, "reboot": self.reboot,
                "clock_skew_ms": {d: s // 1_000_000 for d, s in sorted(self.skew_ns.items())}}
