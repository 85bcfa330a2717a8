"""NIC counter snapshots: `ethtool -S` (host mlx5 and switch Cumulus) and RDMA hw_counters.

Framing
-------
A snapshot file holds repeated blocks, each a timestamp line followed by one tool's output, as
a loop like this one writes it on the host or switch:

    while :; do date -Ins; ethtool -S eth2; sleep 1; done > gpu-node-0001__eth2.ethtool
    while :; do date -Ins; rdma statistic show link mlx5_2/1; sleep 1; done \\
        > gpu-node-0001__mlx5_2.rdma

Timestamp lines are what `date -Ins` (`2026-11-30T07:12:13,123456789+00:00`), `date -Iseconds`
(`2026-11-30T07:12:13+00:00`), `date --rfc-3339=ns` (ISO with a space) or `date +%s.%N`
(`1796022733.123456789`) print. A timestamp without a zone takes the manifest's `timezone`, or
its block is rejected. A bare snapshot (the tool's output with no timestamp line before it, as
pasted from a terminal) takes the file's collection time (`SourceFile.collection_ts`: manifest,
`--time`, else the file's modification time, recorded as such); a second snapshot without a
timestamp line of its own is rejected, record by record.

Files are named `<host>__<dev>.<kind>` or `nic/<host>/<dev>.<kind>`: the host is the device id,
`<dev>` the netdev (or RDMA device) `ethtool -S` / `show_counters` were run on. The manifest's
`host` and `interface` (or `--host`) say the same for a file named otherwise; `rdma statistic`
lines name their device, so they need only the host.

Kinds, recognized by content (several may share a file)
-------------------------------------------------------
- `ethtool -S`: `NIC statistics:` then indented `name: value` lines. Record = one counter
  line; ifname = `<dev>` from the file name (an RDMA device name is mapped to its netdev).
- `ethtool <dev>` (its settings): `Settings for <dev>:` then `name: value` lines. Record = one
  line (a wrapped list of link modes continues the line above it). `Speed: 400000Mb/s` is a
  sample in Mb/s, `Link detected: yes|no` 1 or 0; the other settings are text samples.
  ifname = `<dev>` of the header.
- `rdma statistic show [link mlx5_2/1]`: one line per link, `link mlx5_2/1 name value ...`.
  Record = one line. ifname = `sink.netdev(host, "mlx5_2")` (from ibdev2netdev).
- `rdma -p statistic show`: a `link mlx5_0/1` header then tab-indented `name value` lines.
  Record = one counter line.
- `grep . /sys/class/infiniband/mlx5_2/ports/1/hw_counters/*`: one
  `/sys/.../hw_counters/np_cnp_sent:123` line per counter (also `.../counters/*`). Record = line.
- mlnx-tools `show_counters mlx5_bond_0`: `Port 1 hw counters:` then `name: value`; the
  `lifespan` setting (a hw_counters file too) is kept as a text sample, the
  `Port N cm counters:` section is rejected because it loses the directory of each counter.

Metrics keep the vendor (kernel) names; `counter_map_nic.csv` maps them to canonical counters.
Per-priority, per-queue, per-channel and per-lane counters also get a `qualifier`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import TextIO

from collectors.core.schema import value_problem
from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import NS, TimeError, parse_epoch, parse_iso, tz_from_name
from collectors.formats.nic.fast import Snapshot, parse_common_shapes, parse_common_shapes_of

NO_TS = "no timestamp line before this snapshot (expected what `date -Ins` prints)"
NO_HOST = (
    "cannot tell which host and device this file is from: name it <host>__<dev>.<kind>, "
    "put it under nic/<host>/<dev>.<kind>, or say it: 'host' and 'interface' in manifest.json, "
    "or `fabtwin ingest FILE --host H --interface I`"
)
NO_INTERFACE = (
    "cannot tell which interface this output is from: name the file <host>__<dev>.<kind>, "
    "set 'interface' for it in manifest.json, or give --interface I"
)
UNKNOWN_LINE = (
    "not a line of `ethtool -S`, `rdma statistic show`, hw_counters (sysfs) "
    "or show_counters output"
)
CM_COUNTERS = "show_counters CM counters lose their directory (cm_rx_msgs/...): not loaded"
QP_COUNTERS = "per-QP counter (`rdma statistic qp show`), not a port counter: not loaded"
SETTINGS = frozenset({"lifespan"})  # hw_counters files that are settings, not counters

_TS_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?P<tz>Z|[+-]\d{2}:?\d{2})?")
_TS_EPOCH = re.compile(r"\d{9,19}(?:\.\d{1,9})?")
_LINK = re.compile(r"link\s+(?P<dev>[^\s/]+)/(?P<port>\d+)(?:\s+(?P<rest>.*))?")
_PORT_HEADER = re.compile(r"Port\s+(?P<port>\d+)\s+(?P<kind>hw|cm)\s+counters:")
_SETTINGS = re.compile(r"Settings for (?P<dev>\S+):")  # `ethtool <dev>`
_SPEED = re.compile(r"(?P<mbps>\d+(?:\.\d+)?)\s*Mb/s")  # ethtool prints Mb/s, `Unknown!` when down
_YES_NO = {"yes": 1.0, "no": 0.0}
_SYSFS = re.compile(
    r"/sys/class/infiniband/(?P<dev>[^/\s]+)(?:/ports/(?P<port>\d+))?"
    r"/(?:hw_counters|counters)/(?P<name>[^/:\s]+):(?P<value>.*)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_SNIFF_LINK = re.compile(r"link\s+[^\s/]+/\d+(?:\s+\S+\s+\d+.*)?")
_QUALIFIERS = (
    (re.compile(r"(?:rx|tx)_prio(\d+)_"), "priority"),
    (re.compile(r"HwIf(?:In|Out)Pfc(\d+)Pkt"), "priority"),
    (re.compile(r"(?:rx|tx)(\d+)_"), "queue"),
    (re.compile(r"HwIfOutQ(\d+)"), "queue"),
    (re.compile(r"ch(\d+)_"), "channel"),
    (re.compile(r".*_lane_?(\d+)"), "lane"),
)

Values = list[tuple[str, float | str]]


def is_timestamp_line(text: str) -> bool:
    """True for what `date -Ins`, `date -Iseconds`, `date --rfc-3339` or `date +%s.%N` print."""
    t = text.strip()
    return bool(_TS_ISO.fullmatch(t) or _TS_EPOCH.fullmatch(t))


@lru_cache(maxsize=4096)
def qualifier(metric: str) -> str:
    """`rx_prio3_pause` -> `priority=3`, `rx0_packets` -> `queue=0`, else ``."""
    found = {}
    for pattern, key in _QUALIFIERS:
        m = pattern.match(metric)
        if m and key not in found:
            found[key] = m.group(1)
    return ",".join(f"{k}={found[k]}" for k in sorted(found))


def _number(text: str) -> float | None:
    t = text.strip()
    if not _NUMBER.fullmatch(t):
        return None
    return float(t)


def _bad_value(name: str, text: str) -> str:
    t = text.strip()
    if t.startswith("-") and _NUMBER.fullmatch(t[1:]):
        return f"value {t!r} of {name} is negative: a counter cannot be"
    return f"value {t!r} of {name} is not a number"


class _Block:
    """What the parser knows about the snapshot it is in."""

    def __init__(self) -> None:
        self.ts: int | None = None
        self.ts_reason = NO_TS
        self.first = True  # no timestamp line yet, nor a second snapshot: collection time
        self.mode: str | None = None  # ethtool | hw | cm | rdma_pretty | rdma_line | sysfs
        self.dev = ""
        self.port = 1
        self.seen: set[tuple] = set()

    def stamp(self, ts: int | None, reason: str) -> None:
        self.ts, self.ts_reason = ts, reason
        self.mode = None
        self.first = False
        self.seen = set()

    def begin(self, key: tuple, mode: str) -> None:
        """Enter a tool's output; the same output twice after one timestamp is a new snapshot."""
        if key in self.seen:
            self.stamp(None, NO_TS)
        self.seen.add(key)
        self.mode = mode


class _FileParse:
    """One pass over one snapshot file."""

    def __init__(self, src: SourceFile, sink: Sink) -> None:
        self.src, self.sink = src, sink
        nic = src.nic_hint or None
        # a file named after its host and device, or the manifest's host: `rdma statistic`
        # lines name their RDMA device themselves
        hint = src.host_hint if nic or src.manifest.host else None
        self.host = sink.device(hint, fallback=hint) if hint else None
        self.nic = nic
        self.block = _Block()
        self._ifnames: dict[tuple[str, int], str] = {}

    def run(self) -> None:
        for number, line in self.src.lines():
            text = line.strip()
            if not text or self._framing(text):
                continue
            self.sink.current_line = number
            self._record(number, line, text)

    # -- framing: timestamp lines and tool headers are not records ---------------------------
    def _framing(self, text: str) -> bool:
        first = text[0]  # cheap guards: most lines are counters, not framing
        if first.isdigit() and is_timestamp_line(text):
            ts, reason = self._timestamp(text)
            self.block.stamp(ts, reason)
            return True
        if first == "N" and text == "NIC statistics:":
            self.block.begin(("ethtool",), "ethtool")
            return True
        m = _LINK.fullmatch(text) if first == "l" else None
        if m and not m["rest"]:
            self.block.begin(("link", m["dev"], m["port"]), "rdma_pretty")
            self.block.dev, self.block.port = m["dev"], int(m["port"])
            return True
        m = _SETTINGS.fullmatch(text) if first == "S" else None
        if m:
            self.block.begin(("settings", m["dev"]), "settings")
            self.block.dev, self.block.port = m["dev"], 1
            return True
        m = _PORT_HEADER.fullmatch(text) if first == "P" else None
        if m:
            self.block.begin(("port", m["kind"], m["port"]), m["kind"])
            self.block.dev, self.block.port = self.nic or "", int(m["port"])
            return True
        return False

    def _timestamp(self, text: str) -> tuple[int | None, str]:
        """(ns, NO_TS) for a good timestamp line, or (None, why its block cannot be placed)."""
        try:
            if _TS_EPOCH.fullmatch(text):
                return parse_epoch(text), NO_TS
            zone = self.src.manifest.timezone
            m = _TS_ISO.fullmatch(text)
            if m is not None and not m["tz"] and zone is None:
                return None, (f"timestamp line {text!r} has no timezone: set 'timezone' in "
                              "manifest.json or print it with `date -Ins`")
            return parse_iso(text, tz_from_name(zone)), NO_TS
        except TimeError as exc:
            return None, f"bad timestamp line {text!r}: {exc}"

    # -- records -----------------------------------------------------------------------------
    def _record(self, number: int, line: str, text: str) -> None:
        parsed = self._content(text)
        sink, block = self.sink, self.block
        if isinstance(parsed, str):
            sink.reject(number, parsed, line)
            return
        ifname, values = parsed
        if self.host is None:
            sink.reject(number, NO_HOST, line)
            return
        if not ifname:
            sink.reject(number, NO_INTERFACE, line)
            return
        if block.ts is None and block.first:
            block.ts, block.first = self.src.collection_ts(), False
        if block.ts is None:
            sink.reject(number, block.ts_reason, line)
            return
        for metric, value in values:
            if isinstance(value, str):
                sink.text_sample(block.ts, self.host, ifname, metric, value)
            else:
                sink.sample(block.ts, self.host, ifname, metric, value, qualifier(metric))
        sink.accept()

    def _content(self, text: str) -> tuple[str, Values] | str:
        """(ifname, [(metric, value)]) of one record line, or the reason it is not one."""
        m = _LINK.fullmatch(text) if text.startswith("link") else None
        if m:
            return self._rdma_line(m["dev"], int(m["port"]), m["rest"] or "")
        m = _SYSFS.fullmatch(text) if text.startswith("/sys/") else None
        if m:
            return self._sysfs(m)
        mode = self.block.mode
        if mode == "settings":
            return self._setting(text)
        if mode == "cm":
            return CM_COUNTERS
        if mode == "rdma_pretty":
            parts = text.split()
            if len(parts) != 2:
                return f"expected 'name value' under 'link {self.block.dev}/{self.block.port}'"
            return self._values(self._ifname(self.block.dev, self.block.port), parts, False)
        if mode in (None, "ethtool", "hw") and ":" in text:
            name, _, value = text.rpartition(":")
            port = self.block.port if mode == "hw" else 1
            ifname = self._ifname(self.nic or "", port)
            return self._values(ifname, [name.strip(), value], mode == "hw")
        return UNKNOWN_LINE

    def _setting(self, text: str) -> tuple[str, Values]:
        """One line of `ethtool <dev>`: speed and link state as samples, the rest as text."""
        ifname = self._ifname(self.block.dev, 1)
        name, colon, value = text.partition(":")
        if not colon:  # a wrapped list (`Supported link modes:` ...) goes on over lines
            return ifname, []
        name, value = name.strip(), value.strip()
        m = _SPEED.fullmatch(value) if name == "Speed" else None
        if m:
            return ifname, [(name, float(m["mbps"]))]
        if name == "Link detected" and value in _YES_NO:
            return ifname, [(name, _YES_NO[value])]
        return ifname, [(name, value)] if value else []

    def _rdma_line(self, dev: str, port: int, rest: str) -> tuple[str, Values] | str:
        tokens = rest.split()
        if tokens[:1] == ["cntn"]:
            return QP_COUNTERS
        self.block.begin(("link", dev, str(port)), "rdma_line")
        if len(tokens) % 2:
            return f"odd number of fields after 'link {dev}/{port}': expected name value pairs"
        return self._values(self._ifname(dev, port), tokens, False)

    def _sysfs(self, m: re.Match[str]) -> tuple[str, Values] | str:
        port = int(m["port"] or 1)
        self.block.begin(("sysfs", m["dev"], port, m["name"]), "sysfs")
        return self._values(self._ifname(m["dev"], port), [m["name"], m["value"]], True)

    @staticmethod
    def _values(ifname: str, tokens: list[str], settings: bool) -> tuple[str, Values] | str:
        """Pairs `name value name value ...` as samples; settings (lifespan) as text."""
        out: Values = []
        for i in range(0, len(tokens), 2):
            name, raw = tokens[i], tokens[i + 1]
            if not name:
                return "counter line without a name"
            if settings and name in SETTINGS:
                out.append((name, raw.strip()))
                continue
            value = _number(raw)
            if value is None:
                return _bad_value(name, raw)
            why = value_problem(value, True, name, raw)
            if why is not None:
                return why
            out.append((name, value))
        return ifname, out

    def _ifname(self, dev: str, port: int) -> str:
        """The netdev of an RDMA device port (ibdev2netdev), else `dev` (port 1) or `dev/port`."""
        key = (dev, port)
        name = self._ifnames.get(key)
        if name is None:
            if self.host:
                name = self.sink.netdev(self.host, dev, port)
            else:
                name = dev if port == 1 else f"{dev}/{port}"
            self._ifnames[key] = name
        return name


class NicSnapshotParser:
    """`ethtool -S` and RDMA hw_counters snapshots framed by timestamp lines."""

    name = "nic_snapshots"
    family = "nic"
    priority = 50

    def sniff(self, head: str, rel: str) -> bool:
        """The first line after optional timestamp lines starts a recognized tool's output."""
        try:
            return _sniff(head)
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False

    def parse(self, src: SourceFile, sink: Sink) -> None:
        """Stream the file; one record per counter line (per line for `rdma statistic`).

        The two shapes loops write (`collectors.formats.nic.fast`) are read vectorized, same rows."""
        parse = _FileParse(src, sink)
        if parse.host is not None and parse_common_shapes(src, sink, parse.host, parse._ifname,
                                                          qualifier):
            return
        parse.run()

    def parse_common(self, files: list[tuple[SourceFile, Sink]]) -> list[bool]:
        """Load the files of the two common shapes (`collectors.formats.nic.fast`) with a few queries
        for all of them (True); the others get nothing and are left to `parse` (False)."""
        snaps, at = [], []
        for k, (src, sink) in enumerate(files):
            parse = _FileParse(src, sink)
            if parse.host is not None:
                snaps.append(Snapshot(src, sink, parse.host, parse._ifname))
                at.append(k)
        taken = [False] * len(files)
        for k, took in zip(at, parse_common_shapes_of(snaps, qualifier), strict=True):
            taken[k] = took
        return taken


def _sniff(head: str) -> bool:
    stamps = 0
    for line in head.splitlines()[:64]:
        text = line.strip()
        if not text:
            continue
        if is_timestamp_line(text):
            stamps += 1
            if stamps > 2:
                return False
            continue
        return bool(text == "NIC statistics:" or _SNIFF_LINK.fullmatch(text) or _SETTINGS.fullmatch(text)
                    or _PORT_HEADER.fullmatch(text) or _SYSFS.fullmatch(text))
    return False


# -- writers ---------------------------------------------------------------------------------
def date_ins(ts: int) -> str:
    """ns since the epoch as `date -Ins` prints it in UTC: `2026-11-30T07:12:13,123456789+00:00`."""
    secs, frac = divmod(ts, NS)
    dt = datetime.fromtimestamp(secs, UTC)
    return f"{dt:%Y-%m-%dT%H:%M:%S},{frac:09d}+00:00"


def _count(value: float) -> int:
    if value < 0 or value != int(value):
        raise ValueError(f"counter value {value!r} is not a non-negative integer")
    return int(value)


def write_ethtool_snapshots(
    blocks: Iterable[tuple[int, Mapping[str, float]]], fh: TextIO
) -> None:
    """Write `(ts_ns, {counter: value})` blocks as `date -Ins; ethtool -S <dev>` prints them."""
    for ts, counters in blocks:
        fh.write(date_ins(ts) + "\n")
        fh.write("NIC statistics:\n")
        for name, value in counters.items():
            fh.write(f"     {name}: {_count(value)}\n")


def write_rdma_statistic(
    blocks: Iterable[tuple[int, Mapping[tuple[str, int], Mapping[str, float]]]], fh: TextIO
) -> None:
    """Write `(ts_ns, {(ibdev, port): {counter: value}})` as `date -Ins; rdma statistic show`.

    iproute2 prints `link <dev>/<port> ` then `<name> <value> ` per counter, so every line ends
    with a space.
    """
    for ts, links in blocks:
        fh.write(date_ins(ts) + "\n")
        for (ibdev, port), counters in links.items():
            pairs = "".join(f"{name} {_count(value)} " for name, value in counters.items())
            fh.write(f"link {ibdev}/{port} {pairs}\n")


PARSERS = [NicSnapshotParser()]
