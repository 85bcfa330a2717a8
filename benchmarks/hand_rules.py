"""Careful hand rules in pure Python: the speed reference of issue 17's target.

    python benchmarks/hand_rules.py BUNDLE [--json]

What an engineer writes without a twin or a database: read every counter file of a bundle line
by line (gnmic JSON in both event and update form, Prometheus text, `ethtool -S` and
`rdma statistic` snapshots, syslog), turn cumulative counters into per-interval rates (a drop is
a clear: that interval is skipped), and apply rules: a link that logs down and no up is down, down
then up is a flap; FCS/symbol errors above a share of the packets is a degraded link; a port
that sends pauses without receiving any is a storm; ECN marks on a port whose switch sends
pauses is congestion; a leaf whose uplinks differ by more than their peers' spread is an
imbalance. It shares no code with fabtwin (only the standard library), because it is the
yardstick `benchmarks/diagnosis_speed.py` times `fabtwin investigate` against; its accuracy is
not the point, its cost is: it reads what investigate reads and does comparable work per sample.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

# counter names of the formats, mapped by hand to what the rules need
WANT = {
    "in-octets": "rx_bytes", "out-octets": "tx_bytes", "in-pkts": "rx_pkts", "out-pkts": "tx_pkts",
    "in-fcs-errors": "fcs", "in-errors": "rx_err", "ecn-marked": "ecn",
    "in-pause": "rx_pause", "out-pause": "tx_pause",
    "if_in_octets": "rx_bytes", "if_out_octets": "tx_bytes", "if_in_ucast_pkts": "rx_pkts",
    "if_out_ucast_pkts": "tx_pkts", "if_in_errors": "rx_err",
    "rx_bytes": "rx_bytes", "tx_bytes": "tx_bytes", "rx_packets": "rx_pkts",
    "tx_packets": "tx_pkts", "rx_pause_ctrl_phy": "rx_pause", "tx_pause_ctrl_phy": "tx_pause",
    "rx_crc_errors_phy": "fcs", "np_ecn_marked_roce_packets": "ecn",
}
PROM = re.compile(r'^([a-zA-Z_:][\w:]*)\{([^}]*)\}\s+(\S+)(?:\s+(\d+))?')
LABEL = re.compile(r'(\w+)="([^"]*)"')
SYSLOG_DOWN = re.compile(r"(\S+?)(?::)?\s.*?[Ii]nterface\s+(\S+?),? changed state to (up|down)")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT")


def _open(path: Path):
    return gzip.open(path, "rt", errors="replace") if path.suffix == ".gz" else open(
        path, errors="replace")


def _want(name: str) -> str | None:
    for key, short in WANT.items():
        if name.endswith(key):
            return short
    return None


def read_gnmi(path: Path, series: dict) -> None:
    """gnmic output: one JSON object per line, `values` (event) or `updates` (subscribe)."""
    with _open(path) as fh:
        for line in fh:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            ts = msg.get("timestamp", 0) / 1e9
            tags = msg.get("tags") or {}
            dev = (tags.get("source") or msg.get("source") or "").split(":")[0]
            port = tags.get("interface_name")
            pairs = list((msg.get("values") or {}).items())
            if not port:
                m = re.search(r"name=([^\]]+)", msg.get("prefix", ""))
                port = m.group(1) if m else "?"
                pairs = [kv for u in msg.get("updates") or [] for kv in u["values"].items()]
            for name, value in pairs:
                short = _want(name)
                if short:
                    series[(dev, port, short)].append((ts, float(value)))


def read_prom(path: Path, series: dict) -> None:
    """Prometheus text with timestamps (ms)."""
    with _open(path) as fh:
        for line in fh:
            m = PROM.match(line)
            if not m or not m.group(4):
                continue
            short = _want(m.group(1))
            if not short:
                continue
            labels = dict(LABEL.findall(m.group(2)))
            dev = labels.get("host_name") or labels.get("instance", "?").split(":")[0]
            port = labels.get("interface") or labels.get("device") or "?"
            series[(dev, port, short)].append((int(m.group(4)) / 1e3, float(m.group(3))))


def _stamp(line: str) -> float:
    text = line.strip().replace(",", ".")
    head, _, frac = text.partition(".")
    t = datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp()
    return t + float("0." + frac[:6].split("+")[0]) if frac else t


def read_snapshots(path: Path, series: dict) -> None:
    """`ethtool -S` and `rdma statistic show` snapshots, each behind a timestamp line."""
    dev, port = path.parent.name, path.name.split(".")[0]
    ts = None
    with _open(path) as fh:
        for line in fh:
            if STAMP.match(line):
                ts = _stamp(line)
            elif ts is None:
                continue
            elif line.startswith("link "):
                words = line.split()
                for name, value in zip(words[2::2], words[3::2], strict=False):
                    short = _want(name)
                    if short:
                        series[(dev, port, short)].append((ts, float(value)))
            elif ":" in line:
                name, _, value = line.partition(":")
                short = _want(name.strip())
                if short and value.strip().isdigit():
                    series[(dev, port, short)].append((ts, float(value)))


def read_syslog(path: Path, events: list) -> None:
    """Link up/down lines (the device is the host field, the time is not needed for rules)."""
    with _open(path) as fh:
        for i, line in enumerate(fh):
            m = SYSLOG_DOWN.search(line.split(">", 1)[-1][16:])
            if m:
                events.append((i, m.group(1), m.group(2), m.group(3)))


def rates(series: dict) -> dict:
    """(device, port, counter) -> [(t, per second)], clears skipped."""
    out = {}
    for key, pts in series.items():
        pts.sort()
        r = []
        for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
            if t1 > t0 and v1 >= v0:
                r.append((t1, (v1 - v0) / (t1 - t0)))
        out[key] = r
    return out


def rules(rate: dict, events: list) -> list[dict]:
    """The incidents of the rules, in no particular order."""
    out = []
    by_port = defaultdict(list)
    for _, dev, port, state in events:
        by_port[(dev, port)].append(state)
    for (dev, port), states in by_port.items():
        if "down" in states:
            kind = "link_down" if states[-1] == "down" and states.count("down") == 1 else "link_flap"
            out.append({"kind": kind, "port": f"{dev}:{port}"})
    peak = {key: max((v for _, v in r), default=0.0) for key, r in rate.items()}
    ports = {(d, p) for d, p, _ in peak}
    for dev, port in ports:
        pkts = peak.get((dev, port, "rx_pkts"), 0.0)
        if peak.get((dev, port, "fcs"), 0.0) > max(10.0, 1e-7 * pkts):
            out.append({"kind": "link_degraded", "port": f"{dev}:{port}"})
        if peak.get((dev, port, "tx_pause"), 0.0) > 1000 and peak.get((dev, port, "rx_pause"), 0.0) < 100:
            out.append({"kind": "pfc_storm", "port": f"{dev}:{port}"})
    pausing = {d for (d, _, c), v in peak.items() if c == "tx_pause" and v > 1000}
    for (dev, port, c), v in peak.items():
        if c == "ecn" and v > 1000 and dev in pausing:
            out.append({"kind": "congestion", "port": f"{dev}:{port}"})
    by_dev = defaultdict(list)
    for (dev, _port, c), r in rate.items():
        if c == "tx_bytes" and r:
            by_dev[dev].append(statistics.fmean(v for _, v in r))
    spreads = {d: statistics.pstdev(v) / statistics.fmean(v) for d, v in by_dev.items()
               if len(v) > 2 and statistics.fmean(v) > 0}
    if spreads:
        typical = statistics.median(spreads.values())
        out += [{"kind": "load_imbalance", "device": d} for d, s in spreads.items()
                if s > max(0.15, 3 * typical)]
    return out


def diagnose(bundle: Path) -> list[dict]:
    """Read every file of the bundle and apply the rules."""
    series: dict = defaultdict(list)
    events: list = []
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        name = path.name
        if ".json" in name and path.parent.name == "gnmi":
            read_gnmi(path, series)
        elif ".prom" in name:
            read_prom(path, series)
        elif ".ethtool" in name or ".rdma" in name:
            read_snapshots(path, series)
        elif ".log" in name:
            read_syslog(path, events)
    return rules(rates(series), events)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    found = diagnose(args.bundle)
    print(json.dumps(found) if args.json else f"{len(found)} incident(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
