"""Writing a writer2 scenario as the real tools print their output (design section 4).

Line shapes follow the tools' public docs and captures (gnmic `json` and `event` output,
Prometheus text exposition with ms timestamps, `ethtool -S` and `rdma statistic show link`
behind `date -Ins` / `date +%s.%N` lines, lldpctl `-f json0`, containerlab topology files,
ibdev2netdev, `sacct -P`, and syslog as SONiC, Cumulus, EOS and the mlx5 driver log link
changes). Fleet defects are planted here: clock skew per device, timestamp jitter, missing and
duplicated samples, counter clears and a few malformed lines (counted in labels.json).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import yaml

from .model import COUNTERS, NETDEVS, PCI, cumulate
from .scenario import Scenario, T

GNMI_S, PROM_S, NIC_S = 10.0, 15.0, 10.0  # sample intervals: gnmic, Prometheus scrape, NIC loop


def iso_ms(epoch: float) -> str:
    """ISO-8601 to the millisecond with Z, as investigate --json prints times."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{int(epoch * 1000) % 1000:03d}Z"


class Writer:
    """Writes one scenario's bundle; `malformed` counts the bad lines planted on purpose."""

    def __init__(self, sc: Scenario, out: Path) -> None:
        self.sc, self.f, self.out = sc, sc.fabric, out
        self.rng = np.random.default_rng(sc.seed + 7919)
        self.malformed = 0
        n = len(self.f.ports)
        clear = np.full(n, -1)
        for dev, sec in sc.clear.items():
            clear[self.f.by_dev[dev]] = sec
        self.clear_at = clear
        base = self.rng.uniform(1e9, 5e13, n)  # counters were running long before the bundle
        self.cum = {c: cumulate(sc.run.inc[c], np.round(base * (1 if "bytes" in c else 1e-4))
                                if c in ("tx_bytes", "rx_bytes", "tx_pkts", "rx_pkts")
                                else np.zeros(n), clear) for c in COUNTERS}
        devs = sorted(self.f.by_dev)
        self.skew = {d: float(self.rng.normal(0, 0.3)) for d in devs}
        for d in self.rng.choice(devs, size=2, replace=False):  # a couple of badly synced clocks
            self.skew[str(d)] = float(self.rng.uniform(2, 5) * self.rng.choice([-1, 1]))

    # -- sampling ---------------------------------------------------------------------------
    def times(self, dev: str, every: float) -> list[tuple[int, float]]:
        """(second index, epoch timestamp the device stamps) of each sample it exports: a phase
        per device, jitter, skew, about 2% missing and 1% written twice."""
        phase = float(self.rng.uniform(0, every))
        out = []
        t = phase
        while t < T:
            if self.rng.random() > 0.02:
                ts = self.sc.t0 + t + self.skew[dev] + float(self.rng.normal(0, 0.03))
                out.append((int(t), ts))
                if self.rng.random() < 0.01:
                    out.append((int(t), ts))
            t += every
        return out

    def val(self, counter: str, port: int, sec: int) -> int:
        return int(self.cum[counter][port, sec])

    def write(self) -> dict:
        """Every file of the bundle and labels.json; returns the labels."""
        f, sc = self.f, self.sc
        self.out.mkdir(parents=True, exist_ok=False)
        for d in ("topology", "gnmi", "prom", "nic", "syslog", "jobs"):
            (self.out / d).mkdir()
        exporting = [d for d in f.switches if d not in sc.silent]
        for dev in exporting:
            vendor = f.vendors[dev]
            if vendor == "sonic":
                self.gnmic_event(dev)
            elif vendor == "eos" or self.rng.random() < 0.6:
                self.gnmic_json(dev, as_string=vendor == "eos")
            else:
                self.prometheus(dev)
        for h in f.hosts:
            if h not in sc.silent:
                self.nic(h)
        self.topology()
        self.syslog()
        self.sacct()
        (self.out / "manifest.json").write_text(json.dumps({
            "name": f"writer2-{sc.seed}", "description": "writer2 synthetic bundle",
            "timezone": "UTC", "year": datetime.fromtimestamp(sc.t0, UTC).year}, indent=2) + "\n")
        labels = {
            "writer": "writer2", "seed": sc.seed,
            "faults": [{**fl, "start": iso_ms(sc.t0 + fl["start"]), "end": iso_ms(sc.t0 + fl["end"])}
                       for fl in sc.faults],
            "malformed_lines": self.malformed,
            "silent_devices": sorted(sc.silent),
            "counter_clears": {d: iso_ms(sc.t0 + s) for d, s in sc.clear.items()},
            "window": {"start": iso_ms(sc.t0), "end": iso_ms(sc.t0 + T)},
            "fabric": {"planes": f.planes, "tiers": f.tiers, "hosts": len(f.hosts),
                       "vendors": sorted(set(f.vendors.values()))},
        }
        (self.out / "labels.json").write_text(json.dumps(labels, indent=2) + "\n")
        return labels

    # -- gnmic ------------------------------------------------------------------------------
    def _switch_values(self, i: int, sec: int) -> dict[str, dict[str, object]]:
        """prefix -> {path below it: value} of one switch port at one second (Cumulus paths)."""
        f, v = self.f, self.val
        name = f.ports[i].ifname
        up = bool(self.sc.run.up[i, sec])
        speed = int(f.speed[i])
        return {
            f"interfaces/interface[name={name}]": {
                "state/counters/in-octets": v("rx_bytes", i, sec),
                "state/counters/out-octets": v("tx_bytes", i, sec),
                "state/counters/in-pkts": v("rx_pkts", i, sec),
                "state/counters/out-pkts": v("tx_pkts", i, sec),
                "state/counters/in-discards": v("rx_discards", i, sec),
                "state/counters/out-discards": v("tx_discards", i, sec),
                "state/counters/in-errors": v("rx_fcs", i, sec),
                "state/counters/out-errors": 0,
                "state/counters/carrier-transitions": v("carrier", i, sec),
                "state/oper-status": "UP" if up else "DOWN",
                "ethernet/state/counters/in-fcs-errors": v("rx_fcs", i, sec),
                "ethernet/state/counters/in-mac-pause-frames": 0,
                "ethernet/state/port-speed": f"SPEED_{speed}GB",
                "ethernet/phy/state/symbol-errors": v("symbol_err", i, sec),
                "ethernet/phy/state/corrected-bits": v("corrected", i, sec),
            },
            f"qos/interfaces/interface[interface-id={name}]/output/queues/queue[name=3]": {
                "state/ecn-marked-pkts": v("ecn", i, sec),
                "state/transmit-octets": v("tx_bytes", i, sec),
                "state/no-buffer-uc-dropped-pkts": v("no_buffer", i, sec),
                "state/wred-dropped-pkts": 0,
                "state/max-queue-len": int(self.sc.run.queue[i, sec]),
            },
            f"qos/interfaces/interface[interface-id={name}]/switch-priority[priority=3]": {
                "state/counters/in-pause-pkts": v("rx_pause", i, sec),
                "state/counters/out-pause-pkts": v("tx_pause", i, sec),
            },
        }

    def gnmic_json(self, dev: str, as_string: bool) -> None:
        """gnmic's default `json` format, one notification per line as its file output writes
        it; a prefix per interface, queue and priority (Cumulus Linux 5.x paths)."""
        lines = []
        sub = f"fabric-{int(self.sc.t0)}"
        for sec, ts in self.times(dev, GNMI_S):
            ns = int(ts * 1e9)
            for i in self.f.by_dev[dev]:
                for prefix, vals in self._switch_values(i, sec).items():
                    upd = [{"Path": k, "values": {k: str(x) if as_string and isinstance(x, int) else x}}
                           for k, x in vals.items()]
                    lines.append(json.dumps({
                        "source": f"{dev}:9339", "subscription-name": sub, "timestamp": ns,
                        "time": _rfc3339_ns(ns), "prefix": prefix, "target": dev, "updates": upd},
                        separators=(",", ":")))
        if self.rng.random() < 0.3:  # gnmic's status line when a subscription syncs: not JSON
            k = int(self.rng.integers(1, len(lines)))
            lines.insert(k, f"received sync response 'true' from '{dev}:9339'")
            self.malformed += 1
        (self.out / "gnmi" / f"{dev}.json").write_text("\n".join(lines) + "\n")

    def gnmic_event(self, dev: str) -> None:
        """gnmic's `event` format (SONiC exporting OpenConfig paths): keys become tags
        `<elem>_<key>`, values are keyed by the path without keys; numbers as strings."""
        lines = []
        sub = "sonic-counters"
        for sec, ts in self.times(dev, GNMI_S):
            ns = int(ts * 1e9)
            for i in self.f.by_dev[dev]:
                name = self.f.ports[i].ifname
                for prefix, vals in self._switch_values(i, sec).items():
                    tags = {"source": f"{dev}:8080", "subscription-name": sub}
                    if prefix.startswith("interfaces/"):
                        tags["interface_name"] = name
                        base = "/interfaces/interface/"
                    elif "queues" in prefix:
                        tags.update({"interface_interface-id": name, "queue_name": "3"})
                        base = "/qos/interfaces/interface/output/queues/queue/"
                    else:
                        tags.update({"interface_interface-id": name, "switch-priority_priority": "3"})
                        base = "/qos/interfaces/interface/switch-priority/"
                    values = {base + k: str(x) if isinstance(x, int) else x for k, x in vals.items()}
                    lines.append(json.dumps({"name": sub, "timestamp": ns, "tags": tags,
                                             "values": values}, separators=(",", ":")))
        (self.out / "gnmi" / f"{dev}.events.json").write_text("\n".join(lines) + "\n")

    # -- Prometheus -------------------------------------------------------------------------
    def prometheus(self, dev: str) -> None:
        """Scrapes of the switch's OTEL export (nvswitch_interface_* names), samples with ms
        timestamps; half the devices go through a collector that prefixes a namespace."""
        ns = "cumulus_" if self.rng.random() < 0.5 else ""
        fams = [("if_in_octets", "rx_bytes"), ("if_out_octets", "tx_bytes"),
                ("if_in_ucast_pkts", "rx_pkts"), ("if_out_ucast_pkts", "tx_pkts"),
                ("if_in_discards", "rx_discards"), ("if_out_discards", "tx_discards"),
                ("if_in_errors", "rx_fcs"), ("dot3_stats_fcs_errors", "rx_fcs"),
                ("carrier_changes_total", "carrier"),
                ("phy_stats_phy_symbol_errors", "symbol_err"),
                ("phy_stats_phy_corrected_bits", "corrected")]
        out = []
        samples = self.times(dev, PROM_S)
        bad_at = int(self.rng.integers(len(samples))) if self.rng.random() < 0.5 else -1
        for n, (sec, ts) in enumerate(samples):
            ms = int(ts * 1000)
            for fam, c in fams:
                m = f"{ns}nvswitch_interface_{fam}"
                out.append(f"# TYPE {m} counter")
                for i in self.f.by_dev[dev]:
                    out.append(f'{m}{{host_name="{dev}",interface="{self.f.ports[i].ifname}"}} '
                               f"{self.val(c, i, sec)} {ms}")
            for fam, fn in (("oper_state", lambda i, s: 1 if self.sc.run.up[i, s] else 2),
                            ("oper_aggregate_speed", lambda i, s: int(self.f.speed[i] * 1e9))):
                m = f"{ns}nvswitch_interface_{fam}"
                out.append(f"# TYPE {m} gauge")
                for i in self.f.by_dev[dev]:
                    out.append(f'{m}{{host_name="{dev}",interface="{self.f.ports[i].ifname}"}} '
                               f"{fn(i, sec)} {ms}")
            for fam, c, lab in (("tc_tx_ecn_marked_tc", "ecn", "tc"), ("sp_rx_pause", "rx_pause", "sp"),
                                ("sp_tx_pause", "tx_pause", "sp")):
                m = f"{ns}nvswitch_interface_{fam}"
                out.append(f"# TYPE {m} counter")
                for i in self.f.by_dev[dev]:
                    out.append(f'{m}{{host_name="{dev}",interface="{self.f.ports[i].ifname}",'
                               f'{lab}="3"}} {self.val(c, i, sec)} {ms}')
            if n == bad_at:  # a scrape cut off mid-line by a full disk
                out.append(f'{ns}nvswitch_interface_if_in_octets{{host_name="{dev}",interf')
                self.malformed += 1
        (self.out / "prom" / f"{dev}.prom").write_text("\n".join(out) + "\n")

    # -- hosts ------------------------------------------------------------------------------
    def nic(self, host: str) -> None:
        """`ethtool -S <netdev>` and `rdma statistic show link mlx5_N/1` loops, each block
        behind a timestamp line (`date -Ins`, or `date +%s.%N` on some hosts)."""
        epoch_style = self.rng.random() < 0.3
        for i in self.f.by_dev[host]:
            p = self.f.ports[i].plane
            eth, rdma = [], []
            for sec, ts in self.times(host, NIC_S):
                stamp = _date_epoch(ts) if epoch_style else _date_ins(ts)
                v = self.val
                eth.append(stamp)
                eth.append("NIC statistics:")
                for name, val in (
                        ("rx_packets", v("rx_pkts", i, sec)), ("tx_packets", v("tx_pkts", i, sec)),
                        ("rx_bytes", v("rx_bytes", i, sec)), ("tx_bytes", v("tx_bytes", i, sec)),
                        ("rx_packets_phy", v("rx_pkts", i, sec)), ("tx_packets_phy", v("tx_pkts", i, sec)),
                        ("rx_bytes_phy", v("rx_bytes", i, sec)), ("tx_bytes_phy", v("tx_bytes", i, sec)),
                        ("rx_discards_phy", v("rx_discards", i, sec)), ("tx_discards_phy", 0),
                        ("tx_errors_phy", 0), ("rx_crc_errors_phy", v("rx_fcs", i, sec)),
                        ("rx_pcs_symbol_err_phy", v("symbol_err", i, sec)),
                        ("rx_corrected_bits_phy", v("corrected", i, sec)),
                        ("link_down_events_phy", v("link_down_events", i, sec)),
                        ("rx_prio3_pause", v("rx_pause", i, sec)), ("tx_prio3_pause", v("tx_pause", i, sec)),
                        ("rx_prio3_pause_duration", v("rx_pause", i, sec) * 3),
                        ("tx_pause_storm_warning_events", v("storm_warn", i, sec)),
                        ("tx_pause_storm_error_events", 0), ("rx_out_of_buffer", 0)):
                    eth.append(f"     {name}: {val}")
                rdma.append(stamp)
                rdma.append(
                    f"link mlx5_{p}/1 rx_write_requests 0 rx_read_requests 0 rx_atomic_requests 0 "
                    f"out_of_buffer 0 out_of_sequence {v('out_of_seq', i, sec)} duplicate_request 0 "
                    "rnr_nak_retry_err 0 packet_seq_err 0 implied_nak_seq_err 0 local_ack_timeout_err 0 "
                    "resp_local_length_error 0 resp_cqe_error 0 req_cqe_error 0 "
                    "req_remote_invalid_request 0 req_remote_access_errors 0 resp_remote_access_errors 0 "
                    "resp_cqe_flush_error 0 req_cqe_flush_error 0 roce_adp_retrans 0 roce_adp_retrans_to 0 "
                    "roce_slow_restart 0 roce_slow_restart_cnps 0 roce_slow_restart_trans 0 rp_cnp_ignored 0 "
                    f"rp_cnp_handled {v('cnp_handled', i, sec)} "
                    f"np_ecn_marked_roce_packets {v('ecn_roce', i, sec)} np_cnp_sent {v('cnp_sent', i, sec)} "
                    "rx_icrc_encapsulated 0")
            d = self.out / "nic" / host
            d.mkdir(exist_ok=True)
            (d / f"{NETDEVS[p]}.ethtool").write_text("\n".join(eth) + "\n")
            (d / f"mlx5_{p}.rdma").write_text("\n".join(rdma) + "\n")

    # -- topology ---------------------------------------------------------------------------
    def topology(self) -> None:
        """lldpctl -f json0 per device (as captured before the window), ibdev2netdev per host;
        a third of the bundles describe the switches with a containerlab file instead."""
        f = self.f
        clab = self.rng.random() < 0.33
        for dev, idx in f.by_dev.items():
            if dev in self.sc.silent:
                continue
            host = f.ports[idx[0]].role == "host"
            if clab and not host:
                continue
            ifaces = []
            for n, i in enumerate(idx):
                peer = f.ports[f.ports[i].peer]
                ifaces.append({
                    "name": f.ports[i].ifname, "via": "LLDP", "rid": str(n + 1),
                    "age": "12 days, 03:12:44",
                    "chassis": [{"id": [{"type": "mac", "value": _mac(peer.device)}],
                                 "name": [{"value": peer.device}],
                                 "descr": [{"value": _descr(f.vendors.get(peer.device, "linux"))}],
                                 "mgmt-ip": [{"value": _mgmt_ip(peer.device)}],
                                 "capability": [{"type": "Bridge", "enabled": True},
                                                {"type": "Router", "enabled": peer.role != "host"}]}],
                    "port": [{"id": [{"type": "ifname", "value": peer.ifname}],
                              "descr": [{"value": peer.ifname}], "ttl": [{"value": "120"}]}]})
            d = self.out / "topology" / dev
            d.mkdir()
            (d / "lldpctl.json").write_text(json.dumps({"lldp": [{"interface": ifaces}]}, indent=2) + "\n")
            if host:
                (d / "ibdev2netdev").write_text("".join(
                    f"mlx5_{f.ports[i].plane} port 1 ==> {f.ports[i].ifname} (Up)\n" for i in idx))
        if clab:
            kinds = {"cumulus": "cumulus_cvx", "sonic": "sonic-vs", "eos": "ceos"}
            nodes = {d: {"kind": kinds[v]} for d, v in sorted(f.vendors.items())}
            nodes.update({h: {"kind": "linux"} for h in f.hosts})
            links = [{"endpoints": [f.ports[i].id, f.ports[f.ports[i].peer].id]}
                     for i in range(0, len(f.ports), 2)]
            doc = {"name": f"w2-{self.sc.seed}", "topology": {"nodes": nodes, "links": links}}
            (self.out / "topology" / "fabric.clab.yml").write_text(yaml.safe_dump(doc, sort_keys=False))

    # -- syslog -----------------------------------------------------------------------------
    def syslog(self) -> None:
        """Link changes and PFC watchdog lines in each device's own phrasing."""
        f = self.f
        per_dev: dict[str, list[tuple[float, str]]] = {}
        for sec, i, what in sorted(self.sc.events):
            port = f.ports[i]
            dev = port.device
            if dev in self.sc.silent:
                continue
            ts = self.sc.t0 + sec + self.skew[dev]
            per_dev.setdefault(dev, []).extend((ts + k * 0.001, line)
                                               for k, line in enumerate(self._lines(port, what, ts)))
        for dev, lines in per_dev.items():
            if not lines:
                continue
            (self.out / "syslog" / f"{dev}.log").write_text("".join(x + "\n" for _, x in sorted(lines)))

    def _lines(self, port, what: str, ts: float) -> list[str]:
        dev, ifn = port.device, port.ifname
        vendor = self.f.vendors.get(dev, "linux")
        if vendor == "linux":
            if what not in ("up", "down"):
                return []
            p = port.plane
            return [f"{_iso_us(ts)} {dev} kernel: [{ts - self.sc.t0 + 86400:.6f}] mlx5_core {PCI[p]} "
                    f"{ifn}: Link {what}"]
        if vendor == "cumulus":
            if what not in ("up", "down"):
                return []
            return [f"{_iso_us(ts)} {dev} switchd[2211]: sync_base.c:604 {ifn}: ifindex "
                    f"{self.f.by_dev[dev].index(self.f.port_index(port.id)) + 3}, oper {what}",
                    f"{_iso_us(ts)} {dev} switchd[2211]: nic.c:223 nic_set_carrier: {ifn}: setting "
                    f"kernel carrier: {what}"]
        if vendor == "sonic":
            head = f"<13>1 {_iso_us(ts)} {dev} orchagent - - -"
            if what == "storm":
                return [f"<11>1 {_iso_us(ts)} {dev} orchagent - - -  :- handleWdNotification: PFC "
                        f"Watchdog detected PFC storm on port {ifn}, queue index 3, queue id "
                        "0x1500000000037d and port id 0x1000000000002."]
            if what == "restored":
                return [f"<13>1 {_iso_us(ts)} {dev} orchagent - - -  :- handleWdNotification: PFC "
                        f"Watchdog storm restored on port {ifn}, queue index 3, queue id "
                        "0x1500000000037d and port id 0x1000000000002."]
            return [f"{head}  :- doTask: Port {ifn} oper state set from "
                    f"{'down' if what == 'up' else 'up'} to {what}",
                    f"{head}  :- setHostIntfsOperStatus: Set operation status {what.upper()} to host "
                    f"interface {ifn}"]
        if what not in ("up", "down"):
            return []
        stamp = time.strftime("%b %e %H:%M:%S", time.gmtime(ts))  # RFC 3164: no year, no zone
        return [f"<165>{stamp} {dev} Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface {ifn}, "
                f"changed state to {what}"]

    # -- jobs -------------------------------------------------------------------------------
    def sacct(self) -> None:
        """`sacct -a -X -P -o JobID,Account,Start,End,NodeList`: the job runs through the window."""
        job, start = self.sc.job
        nodes = _hostlist(self.f.hosts)
        st = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start))
        (self.out / "jobs" / "sacct.txt").write_text(
            "JobID|Account|Start|End|NodeList\n"
            f"{job}|llm-pretrain|{st}|Unknown|{nodes}\n")


def _hostlist(hosts: list[str]) -> str:
    """gpu001..gpu032 -> gpu[001-032] (consecutive runs)."""
    nums = sorted(int(h[3:]) for h in hosts)
    runs, a = [], nums[0]
    for x, y in zip(nums, nums[1:] + [None], strict=True):
        if y != x + 1:
            runs.append(f"{a:03d}" if a == x else f"{a:03d}-{x:03d}")
            a = y
    return f"gpu[{','.join(runs)}]"


def _rfc3339_ns(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


def _iso_us(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def _date_ins(ts: float) -> str:
    """What `date -Ins` prints: 2026-11-30T07:12:13,123456789+00:00."""
    ns = int(round(ts * 1e9))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f",{ns % 10**9:09d}+00:00"


def _date_epoch(ts: float) -> str:
    """What `date +%s.%N` prints."""
    ns = int(round(ts * 1e9))
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def _mac(dev: str) -> str:
    h = abs(sum((k + 1) * ord(c) for k, c in enumerate(dev)))
    return "0c:42:a1:" + ":".join(f"{(h >> s) & 0xFF:02x}" for s in (16, 8, 0))


def _mgmt_ip(dev: str) -> str:
    h = sum((k + 1) * ord(c) for k, c in enumerate(dev))
    return f"10.{(h >> 8) & 0xFF}.{h & 0xFF}.{len(dev)}"


def _descr(vendor: str) -> str:
    return {"cumulus": "Cumulus Linux version 5.11.0 running on Nvidia SN5600",
            "sonic": "SONiC Software Version: SONiC.202405 - HwSku: Mellanox-SN5600-C256 - "
                     "Distribution: Debian 12.6 - Kernel: 6.1.0-22-2-amd64",
            "eos": "Arista Networks EOS version 4.32.1F running on an Arista Networks DCS-7060X6-64PE",
            "linux": "Ubuntu 22.04.4 LTS Linux 5.15.0-113-generic #123-Ubuntu SMP x86_64"}[vendor]
