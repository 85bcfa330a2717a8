"""Write `sample_traces/basic/`: ten minutes of a small RoCE fabric, in the real tools' formats.

    python sample_traces/build_basic.py            # rewrites sample_traces/basic/

One plane, 4 leaves, 2 spines, 8 hosts (2 per leaf, one 400G NIC each), one job running a ring
all-reduce at about 280 Gb/s per host, sampled every 10 s from 03:00:00Z. At 03:05:00 the cable
leaf-p0-03:swp4 -- spine-p0-02:swp3 goes down for 20 s: both ends log it and leaf-p0-03 sends all
its cross-leaf traffic through spine-p0-01 meanwhile. The collector writing leaf-p0-04's gnmic
file was killed mid-line at the end, so ingest reports one rejected record.

Telemetry is mixed the way fleets are: leaves 1-2 through gnmic `json`, leaves 3-4 through gnmic
`event`, spines through Prometheus (`nvswitch_interface_*`), hosts through `ethtool -S` and
`rdma statistic` snapshots, syslog in SONiC (RFC 5424), Cumulus and mlx5 kernel phrasings, LLDP
(`lldpctl -f json0`) per device, `ibdev2netdev` per host and `sacct` job placement. The
synthetic generator of a later issue replaces this hand-built bundle with twin-driven ones.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from collectors.formats.gnmi import cumulus_notification, write_event, write_json
from collectors.formats.ibdev import write_ibdev2netdev
from collectors.formats.lldp import LldpNeighbor, write_lldp_json0
from collectors.formats.nic import write_ethtool_snapshots, write_rdma_statistic
from collectors.formats.prom import write_exposition
from collectors.formats.slurm import Job, write_sacct_pipe
from collectors.formats.syslog import LogEvent, write_syslog
from twin.synth.files import write_gz, write_text

NS = 1_000_000_000
T0 = 1_796_007_600 * NS  # 2026-11-30T03:00:00Z
STEP = 10 * NS
STEPS = 61
HOST_BPS = 35e9  # bytes/s each host sends and receives (280 Gb/s)
FLAP = (T0 + 300 * NS, T0 + 320 * NS)
LEAVES = [f"leaf-p0-{i:02d}" for i in range(1, 5)]
SPINES = ["spine-p0-01", "spine-p0-02"]
HOSTS = [f"gpu-node-{i:04d}" for i in range(1, 9)]
OUT = Path(__file__).resolve().parent / "basic"


def cabling() -> list[tuple[str, str, str, str]]:
    """(device, ifname, peer, peer_ifname) for every cable, each once."""
    cables = []
    for h, host in enumerate(HOSTS):
        cables.append((host, "eth0", LEAVES[h // 2], f"swp{h % 2 + 1}"))
    for li, leaf in enumerate(LEAVES):
        for si, spine in enumerate(SPINES):
            cables.append((leaf, f"swp{si + 3}", spine, f"swp{li + 1}"))
    return cables


def port_rates(ts: int) -> dict[tuple[str, str], tuple[float, float]]:
    """(device, ifname) -> (rx, tx) bytes/s at time ts, for the ring on 8 hosts."""
    flap = FLAP[0] <= ts < FLAP[1]
    rates: dict[tuple[str, str], list[float]] = {}

    def add(dev: str, ifn: str, rx: float, tx: float) -> None:
        r = rates.setdefault((dev, ifn), [0.0, 0.0])
        r[0] += rx
        r[1] += tx

    for h, host in enumerate(HOSTS):
        leaf, port = LEAVES[h // 2], f"swp{h % 2 + 1}"
        add(host, "eth0", HOST_BPS, HOST_BPS)
        add(leaf, port, HOST_BPS, HOST_BPS)
    # every leaf sends one ring flow to the next leaf, sprayed over both spines
    for li, leaf in enumerate(LEAVES):
        dst = LEAVES[(li + 1) % 4]
        shares = [0.5, 0.5]
        if flap and (li == 2 or (li + 1) % 4 == 2):  # leaf 3's spine-2 cable is down
            shares = [1.0, 0.0]
        for si, spine in enumerate(SPINES):
            b = HOST_BPS * shares[si]
            add(leaf, f"swp{si + 3}", 0, b)
            add(spine, f"swp{li + 1}", b, 0)
            add(spine, f"swp{LEAVES.index(dst) + 1}", 0, b)
            add(dst, f"swp{si + 3}", b, 0)
    return {k: (v[0], v[1]) for k, v in rates.items()}


def counters() -> dict[tuple[str, str], list[tuple[int, dict[str, float], bool]]]:
    """Cumulative counters per port and step: (ts, {rx_bytes, tx_bytes, ...}, oper_up)."""
    totals: dict[tuple[str, str], dict[str, float]] = {}
    out: dict[tuple[str, str], list] = {}
    down = {("leaf-p0-03", "swp4"), ("spine-p0-02", "swp3")}
    for step in range(STEPS):
        ts = T0 + step * STEP
        rates = port_rates(ts)
        for key, (rx, tx) in sorted(rates.items()):
            t = totals.setdefault(key, {"rx_bytes": 7e11, "tx_bytes": 7e11, "ecn": 0.0})
            if step:
                t["rx_bytes"] += rx * 10
                t["tx_bytes"] += tx * 10
                t["ecn"] += tx / 4096 * 1e-4
            up = not (key in down and FLAP[0] <= ts < FLAP[1])
            out.setdefault(key, []).append((ts, dict(t), up))
    return out


def write_switch_gnmi(series: dict, leaf: str, fmt: str) -> str:
    notes = []
    for (dev, ifn), rows in series.items():
        if dev != leaf:
            continue
        for ts, c, up in rows:
            notes.append(cumulus_notification(ts, leaf, "counters", {
                "in-octets": int(c["rx_bytes"]), "out-octets": int(c["tx_bytes"]),
                "in-pkts": int(c["rx_bytes"] // 4096), "out-pkts": int(c["tx_bytes"] // 4096),
                "in-discards": 0, "out-discards": 0}, ifname=ifn))
            notes.append(cumulus_notification(ts, leaf, "state", {"oper-status": "UP" if up else "DOWN"},
                                              ifname=ifn))
            notes.append(cumulus_notification(ts, leaf, "queue", {"ecn-marked-pkts": int(c["ecn"])},
                                              ifname=ifn, queue=3))
    notes.sort(key=lambda n: n.ts)
    fh = io.StringIO()
    (write_json if fmt == "json" else write_event)(notes, fh)
    return fh.getvalue()


def write_spine_prom(series: dict, spine: str) -> str:
    rows = []
    for (dev, ifn), samples in series.items():
        if dev != spine:
            continue
        for ts, c, up in samples:
            for metric, value in (("nvswitch_interface_if_in_octets", c["rx_bytes"]),
                                  ("nvswitch_interface_if_out_octets", c["tx_bytes"]),
                                  ("nvswitch_interface_oper_state", 1 if up else 2),
                                  ("nvswitch_interface_tc_tx_ecn_marked_tc", int(c["ecn"]))):
                rows.append({"ts": ts, "device": spine, "ifname": ifn, "metric": metric,
                             "value": float(int(value)), "qualifier": ""})
    fh = io.StringIO()
    write_exposition(rows, fh)
    return fh.getvalue()


def build(out: Path = OUT) -> None:
    """Write the bundle to `out` (replacing it)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    write_text(out / "manifest.json", json.dumps({
        "name": "basic", "description": "8 hosts, 4 leaves, 2 spines; one 20 s link flap at 03:05",
        "timezone": "UTC", "year": 2026}, indent=2) + "\n")
    series = counters()
    for i, leaf in enumerate(LEAVES):
        fmt = "json" if i < 2 else "event"
        text = write_switch_gnmi(series, leaf, fmt)
        if leaf == "leaf-p0-04":
            text += text.splitlines()[-1][:57] + "\n"  # the collector died mid-line
        write_gz(out / "gnmi" / f"{leaf}.{fmt}.jsonl.gz", text)
    for spine in SPINES:
        write_gz(out / "prom" / f"{spine}.prom.gz", write_spine_prom(series, spine))
    for host in HOSTS:
        rows = series[(host, "eth0")]
        fh = io.StringIO()
        write_ethtool_snapshots([(ts, {"rx_bytes_phy": int(c["rx_bytes"]), "tx_bytes_phy": int(c["tx_bytes"]),
                                       "rx_prio3_pause": 0, "tx_prio3_pause": 0,
                                       "rx_discards_phy": 0, "link_down_events_phy": 0})
                                 for ts, c, _ in rows], fh)
        write_gz(out / "nic" / host / "eth0.ethtool.gz", fh.getvalue())
        fh = io.StringIO()
        write_rdma_statistic([(ts, {("mlx5_0", 1): {"np_cnp_sent": int(c["ecn"] // 2),
                                                     "rp_cnp_handled": int(c["ecn"] // 2),
                                                     "np_ecn_marked_roce_packets": int(c["ecn"]),
                                                     "out_of_sequence": 0,
                                                     "local_ack_timeout_err": 0}})
                              for ts, c, _ in rows], fh)
        write_gz(out / "nic" / host / "mlx5_0.rdma.gz", fh.getvalue())
        fh = io.StringIO()
        write_ibdev2netdev([("mlx5_0", 1, "eth0", "Up")], fh)
        write_text(out / "topology" / host / "ibdev2netdev", fh.getvalue())
    neighbors: dict[str, list[LldpNeighbor]] = {}
    for dev, ifn, peer, pif in cabling():
        neighbors.setdefault(dev, []).append(LldpNeighbor(ifn, peer, pif))
        neighbors.setdefault(peer, []).append(LldpNeighbor(pif, dev, ifn))
    for dev, nbrs in sorted(neighbors.items()):
        fh = io.StringIO()
        write_lldp_json0(nbrs, fh)
        write_text(out / "topology" / dev / "lldpctl.json", fh.getvalue())
    fh = io.StringIO()
    write_syslog([LogEvent(FLAP[0], "spine-p0-02", "Ethernet3", "link_down"),
                  LogEvent(FLAP[1], "spine-p0-02", "Ethernet3", "link_up")], fh, "rfc5424")
    write_text(out / "syslog" / "spine-p0-02.log", fh.getvalue().replace("Ethernet3", "swp3"))
    fh = io.StringIO()
    write_syslog([LogEvent(FLAP[0] + 2_000_000, "leaf-p0-03", "swp4", "link_down"),
                  LogEvent(FLAP[1] + 1_000_000, "leaf-p0-03", "swp4", "link_up")], fh, "cumulus")
    write_text(out / "syslog" / "leaf-p0-03.log", fh.getvalue())
    fh = io.StringIO()
    write_sacct_pipe([Job("1001", "llm-team", T0 - 3600 * NS, None, HOSTS, "RUNNING")], fh)
    write_text(out / "jobs" / "sacct.txt", fh.getvalue())


if __name__ == "__main__":
    build()
    print(f"wrote {OUT}")
