"""Prometheus text exposition 0.0.4 and OpenMetrics 1.0 text (design section 4).

Accepted files: a scrape, a federation dump or `promtool tsdb dump` output, whose samples carry
their own timestamps (ms for Prometheus, seconds for OpenMetrics), and series of scrapes each
preceded by a timestamp line (`date -Ins`, `date -Iseconds`, `date +%s.%N`); a sample without a
timestamp of its own takes the last timestamp line's.

A record is one sample line; HELP/TYPE/UNIT/EOF lines, comments, blank lines and timestamp lines
are not records. Speed: blocks of ~16 MB are split into lines and cut at the first '}' (or the
first space) by polars string kernels; each distinct `name{labels}` is validated and resolved
once in Python (device, interface, qualifier); any line this cheap cut does not take exactly
(escapes with braces, tabs, exemplars, OpenMetrics float timestamps, non-ASCII, garbage) goes
through the exact line parser, which also words every reject reason. A property test checks
that both paths agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC
from decimal import Decimal
from typing import IO

import polars as pl

from collectors.schema import canonical_counters, counter_map
from collectors.source import Sink, SourceFile
from collectors.timeparse import NS, TimeError, ns_to_iso, parse_epoch, parse_iso, tz_from_name

NO_TIMESTAMP = ("sample has no timestamp: precede each scrape with a `date -Ins` line "
                "or export with timestamps")
NO_DEVICE = ("no device: the sample has no host, hostname, source, node or instance label "
             "and the file name names no host")

# labels naming the device, most specific first: `instance` is often an exporter or collector
# endpoint (gnmic, an OTEL collector, a DCGM pod), so explicit host labels win over it
DEVICE_LABELS = ("host", "hostname", "Hostname", "host_name", "source", "node", "instance")
IF_LABELS = ("interface", "ifname", "interface_name", "if_name", "ifName", "port_id", "port-id")
ALWAYS_CONSUMED = frozenset(("job", "instance", "__name__"))
# node_exporter families whose `device` label is the netdev (or the RDMA device)
NETDEV_FAMILIES = ("node_network_", "node_ethtool_")
IBDEV_FAMILY = "node_infiniband_"
# sub-port dimensions under the names the rest of the store uses
LABEL_RENAMES = {"switch_priority": "priority", "prio": "priority",
                 "traffic_class": "queue", "tc": "queue"}

_PORT = re.compile(r"[0-9]{1,5}")
_PRIO = re.compile(r"_prio([0-9])(?:_|$)")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(
    r'([a-zA-Z_][a-zA-Z0-9_]*|"(?:[^"\\]|\\.)*")[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"', re.S)
# the common label set: plain names, values without escapes (checked whole, then split)
_SIMPLE_SET = re.compile(r'\{(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*,)*'
                         r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*)?\}')
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"\\]*)"')
_QSTRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_REST = re.compile(r"[ \t]+(\S+)(?:[ \t]+([^ \t#]\S*))?[ \t]*(?:#[ \t]*\{.*)?")
_VALUE = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|(?i:inf(?:inity)?|nan))")
_INT = re.compile(r"-?[0-9]+")
_SECONDS = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UNESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_OM_MARK = re.compile(r"^# (?:EOF[ \t]*$|UNIT |TYPE \S+ (?:unknown|info|stateset|gaugehistogram))",
                      re.M)
_TS_ISO = re.compile(r"[ \t]*[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"
                     r"(?:[.,][0-9]+)?[ \t]*(?:Z|[+-][0-9]{2}:?[0-9]{2})?[ \t]*")
_TS_EPOCH = re.compile(r"[ \t]*[0-9]{9,19}(?:\.[0-9]+)?[ \t]*")
_SNIFF_META = re.compile(r"#[ \t]*(?:HELP|TYPE|UNIT)[ \t]+\S|# EOF[ \t]*$")

# comments/blank lines and timestamp lines, for polars (Rust regex)
_SKIP = r"^[ \t]*(?:#.*)?$"
_TSLINE = (r"^[ \t]*(?:[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?"
           r"[ \t]*(?:Z|[+-][0-9]{2}:?[0-9]{2})?|[0-9]{9,19}(?:\.[0-9]+)?)[ \t]*$")

BLOCK_CHARS = 1 << 24  # ~16 MB of text per vectorized block
_BAD_TS = -(2**63)  # scrape timestamp after an unparseable timestamp line
_I64 = 2**63 - 1


class BadLine(ValueError):
    """A sample line that cannot be understood; the message is the reject reason."""


# -- the exact line grammar -------------------------------------------------------------------
def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _UNESCAPE.sub(lambda m: _ESCAPES.get(m[1], "\\" + m[1]), text)


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def parse_labels(s: str, i: int) -> tuple[list[tuple[str, str]], int, str | None]:
    """Parse the label set opening at `s[i] == '{'`: (labels, index after '}', quoted name).

    Accepts spaces around items and a trailing comma; a bare quoted string as the first item
    is a (UTF-8) metric name. BadLine on anything else.
    """
    simple = _SIMPLE_SET.match(s, i)
    if simple:
        labels = _PAIR.findall(s, i, simple.end())
        if len({k for k, _ in labels}) == len(labels):
            return labels, simple.end(), None
    labels = []
    seen: set[str] = set()
    qname: str | None = None
    i += 1
    while True:
        i = _skip_ws(s, i)
        if i >= len(s):
            raise BadLine("label set is not closed with '}'")
        if s[i] == "}":
            return labels, i + 1, qname
        m = _LABEL.match(s, i)
        if m:
            key = m[1] if m[1][0] != '"' else _unescape(m[1][1:-1])
            if key in seen:
                raise BadLine(f"duplicate label {key!r}")
            seen.add(key)
            labels.append((key, _unescape(m[2])))
        elif not labels and qname is None and (q := _QSTRING.match(s, i)):
            qname, m = _unescape(q[1]), q
        else:
            raise BadLine(f"malformed label at column {i + 1}: {s[i:i + 30]!r}")
        i = _skip_ws(s, m.end())
        if i >= len(s):
            raise BadLine("label set is not closed with '}'")
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            raise BadLine(f"expected ',' or '}}' in the label set at column {i + 1}")


def parse_line(line: str) -> tuple[str, list[tuple[str, str]], str, str | None]:
    """One sample line to (name, labels, value token, timestamp token or None); BadLine if not."""
    s = line.lstrip(" \t")
    m = _NAME.match(s)
    name = m[0] if m else ""
    pos = m.end() if m else 0
    labels: list[tuple[str, str]] = []
    if s[pos:pos + 1] == "{":
        labels, pos, qname = parse_labels(s, pos)
        if qname is not None:
            if name:
                raise BadLine("metric name given twice")
            name = qname
    if not name:
        raise BadLine("not a sample line: expected `name{labels} value [timestamp]`")
    r = _REST.fullmatch(s, pos)
    if not r:
        raise BadLine("expected `name{labels} value [timestamp]` after the metric name")
    return name, labels, r[1], r[2]


def parse_value(token: str) -> float:
    """A sample value (`12.47`, `1.8e+07`, `+Inf`, `NaN`); BadLine if not a number."""
    if not _VALUE.fullmatch(token):
        raise BadLine(f"value {token[:40]!r} is not a number")
    return float(token)


def parse_sample_ts(token: str, openmetrics: bool) -> int:
    """A sample's own timestamp to ns: integer ms (Prometheus) or seconds (OpenMetrics, or any
    timestamp with a fraction)."""
    if len(token) > 40:  # also keeps int() away from its digit limit
        raise BadLine(f"timestamp {token[:40]!r}... is out of range")
    if _INT.fullmatch(token) and not openmetrics:
        ns = int(token) * 1_000_000
    elif _SECONDS.fullmatch(token):
        try:
            ns = int(Decimal(token) * NS)
        except ArithmeticError as exc:  # decimal's InvalidOperation, Overflow
            raise BadLine(f"timestamp {token[:40]!r} is out of range") from exc
    else:
        raise BadLine(f"timestamp {token[:40]!r} is not a number")
    if abs(ns) > _I64:
        raise BadLine(f"timestamp {token[:40]!r} is out of range")
    return ns


def strip_namespace(name: str) -> str:
    """`cumulus_nvswitch_interface_if_in_octets` -> `nvswitch_interface_if_in_octets`."""
    i = name.find("_nvswitch_")
    return name[i + 1:] if i >= 0 else name


# -- series: device, interface, metric, qualifier ----------------------------------------------
def resolve_series(name: str, labels: list[tuple[str, str]], sink: Sink, host_hint: str | None,
                   devices: dict[str, str] | None = None) -> tuple[str, str, str, str] | str:
    """(device, ifname, metric, qualifier) of one series, or the reason it has no device.

    `devices` memoizes `sink.device()` (an address check per call) across the series of a file.
    """
    metric = strip_namespace(name)
    d = {k: v for k, v in labels if v != ""}  # an empty label value is an absent label
    used = set(ALWAYS_CONSUMED)
    dev_name = next((k for k in DEVICE_LABELS if k in d), None)
    if dev_name:
        used.add(dev_name)
        raw = d[dev_name]
        device = devices.get(raw) if devices is not None else None
        if device is None:
            device = sink.device(raw, fallback=host_hint)
            if devices is not None:
                devices[raw] = device
    else:
        device = host_hint or ""
    if not device:
        return NO_DEVICE
    ifname = ""
    if_label = next((k for k in IF_LABELS if k in d), None)
    if if_label:
        used.add(if_label)
        ifname = d[if_label]
    elif "device" in d and metric.startswith(NETDEV_FAMILIES):
        used.add("device")
        ifname = d["device"]
    elif "device" in d and metric.startswith(IBDEV_FAMILY):
        used.add("device")
        port = d.get("port", "1")
        if _PORT.fullmatch(port):
            used.add("port")
            ifname = sink.netdev(device, d["device"], int(port))
        else:
            ifname = sink.netdev(device, d["device"])
    qual: dict[str, str] = {}
    for k, v in d.items():
        if k not in used:
            key = LABEL_RENAMES.get(k, k)
            qual[key if key not in d or key == k else k] = v
    if metric.startswith("node_ethtool_") and (p := _PRIO.search(metric)):
        qual.setdefault("priority", p[1])
    return device, ifname, metric, ",".join(f"{k}={v}" for k, v in sorted(qual.items()))


# -- the parser -------------------------------------------------------------------------------
class _FileState:
    """Everything one parse keeps between blocks."""

    def __init__(self, src: SourceFile, sink: Sink, vectorized: bool = True) -> None:
        self.vectorized = vectorized
        self.src = src
        self.sink = sink
        self.hint = src.host_hint
        try:
            self.tz = tz_from_name(src.manifest.timezone) or UTC
        except TimeError:
            self.tz = UTC
        self.openmetrics = False
        self.mult = 1_000_000
        self.scrape: int | None = None  # last timestamp line's value carried across blocks
        self.devices: dict[str, str] = {}
        self.ids: dict = {}  # series key -> index into the tables below
        self.dev: list[str] = []
        self.ifn: list[str] = []
        self.met: list[str] = []
        self.qual: list[str] = []
        self.reason: list[str | None] = []
        # vectorized key -> series id, per key kind (braced or bare), grown as keys appear
        self.known = {kind: pl.DataFrame(schema={"key": pl.String, "id": pl.Int64})
                      for kind in (True, False)}

    def series_id(self, key: object, name: str, labels: list[tuple[str, str]]) -> int:
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = len(self.reason)
            r = resolve_series(name, labels, self.sink, self.hint, self.devices)
            if isinstance(r, str):
                self.dev.append("")
                self.ifn.append("")
                self.met.append("")
                self.qual.append("")
                self.reason.append(r)
            else:
                self.dev.append(r[0])
                self.ifn.append(r[1])
                self.met.append(r[2])
                self.qual.append(r[3])
                self.reason.append(None)
        return sid

    def key_id(self, key: str, braced: bool) -> int:
        """The series id of a vectorized key: `name{labels` (braced, its '}' split off) or a
        bare `name`; -1 when the key is not exactly that, so the exact parser takes the line."""
        ck = (key, braced)
        sid = self.ids.get(ck)
        if sid is not None:
            return sid
        brace = key.find("{")
        name = key if brace < 0 else key[:brace]
        labels: list[tuple[str, str]] = []
        try:
            if not braced:
                ok = _NAME.fullmatch(key) is not None
            elif brace < 0:
                ok = False
            else:
                labels, end, qname = parse_labels(key + "}", brace)
                ok = end == len(key) + 1 and qname is None and _NAME.fullmatch(name) is not None
        except BadLine:
            ok = False
        if not ok:
            self.ids[ck] = -1
            return -1
        return self.series_id(ck, name, labels)

    def time_line(self, text: str) -> int:
        t = text.strip()
        try:
            ns = parse_epoch(t) if _TS_EPOCH.fullmatch(t) else parse_iso(t, self.tz)
        except TimeError:
            return _BAD_TS
        return ns if -_I64 < ns <= _I64 else _BAD_TS


def _blocks(fh: IO[str]) -> Iterator[str]:
    """Blocks of whole lines (without the final newline) of about BLOCK_CHARS characters."""
    tail = ""
    while True:
        data = fh.read(BLOCK_CHARS)
        if not data:
            if tail:
                yield tail
            return
        data = tail + data
        cut = data.rfind("\n")
        if cut < 0:
            tail = data
            continue
        yield data[:cut]
        tail = data[cut + 1:]


class PromTextParser:
    """Prometheus text exposition 0.0.4 / OpenMetrics 1.0 text, with or without time lines."""

    name = "prom_text"
    family = "prom"
    priority = 50

    def __init__(self, vectorized: bool = True) -> None:
        self.vectorized = vectorized  # False: every line through the exact parser (tests)

    def sniff(self, head: str, rel: str) -> bool:
        try:
            return _sniff(head, rel)
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False

    def parse(self, src: SourceFile, sink: Sink) -> None:
        st = _FileState(src, sink, self.vectorized)
        base = 1
        first = True
        with src.open_text() as fh:
            for block in _blocks(fh):
                if first:
                    st.openmetrics = bool(_OM_MARK.search(block, 0, 1 << 20))
                    st.mult = NS if st.openmetrics else 1_000_000
                    first = False
                base += _parse_block(st, block, base)


def _sniff(head: str, rel: str) -> bool:
    lines = head.split("\n")
    if len(lines) > 1 and len(head) >= 16000:
        lines = lines[:-1]  # the last line may be cut
    meta = samples = labelled = other = 0
    for raw in lines[:400]:
        line = raw.rstrip("\r")
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            meta += bool(_SNIFF_META.match(s))
            continue
        if _TS_ISO.fullmatch(s) or _TS_EPOCH.fullmatch(s):
            continue
        try:
            _, labels, value, _ = parse_line(line)
            parse_value(value)
        except BadLine:
            other += 1
            continue
        samples += 1
        labelled += bool(labels)
    if meta:  # HELP/TYPE lines are this format's own: tolerate some bad sample lines
        return samples + meta > other
    named = rel.endswith((".prom", ".prom.gz", ".om", ".om.gz")) or rel.startswith("prom/")
    if labelled or (named and samples):
        return other * 10 <= samples
    return False


def _scrape_column(st: _FileState, rest: pl.DataFrame, base: int, n: int,
                   rejects: list) -> pl.Series | None:
    """Per-line scrape timestamp of a block (None when it has no timestamp line)."""
    tsl = rest.filter(pl.col("raw").str.contains(_TSLINE))
    if tsl.height == 0:
        return None
    idx, vals = [], []
    for ln, raw in tsl.select("ln", "raw").iter_rows():
        v = st.time_line(raw)
        if v == _BAD_TS:
            rejects.append((ln, f"timestamp line {raw.strip()[:40]!r} is not a valid time", raw))
        idx.append(ln - base)
        vals.append(v)
    col = pl.Series("scrape", [None] * n, dtype=pl.Int64)
    col = col.scatter(idx, pl.Series(vals, dtype=pl.Int64)).forward_fill()
    if st.scrape is not None:
        col = col.fill_null(st.scrape)
    st.scrape = col[-1]
    return col


def _with_ids(st: _FileState, frame: pl.DataFrame, braced: bool) -> pl.DataFrame:
    """Add the series id of each candidate row's key (-1: let the exact parser look)."""
    if frame.height == 0:
        return frame.with_columns(pl.lit(0, dtype=pl.Int64).alias("id"))
    known = st.known[braced]
    missing = frame.select(pl.col("key").unique()).join(known, on="key", how="anti")["key"]
    if missing.len():
        ids = pl.Series([st.key_id(k, braced) for k in missing.to_list()], dtype=pl.Int64)
        known = st.known[braced] = pl.concat([known, pl.DataFrame({"key": missing, "id": ids})])
    return frame.join(known, on="key", how="left", maintain_order="left")


def _candidates(st: _FileState, df: pl.DataFrame) -> pl.DataFrame:
    """Rows split the cheap way: `key` (up to the first '}' or space), value and timestamp."""
    if not st.vectorized:
        df = df.clear()
    raw, pos = pl.col("raw"), pl.col("pos")
    f0, f1 = pl.col("field_0"), pl.col("field_1")
    # '}' found by byte offset and cut by characters: only the same on ASCII lines
    found = df.with_columns(raw.str.find("}", literal=True).alias("pos"))
    braced = found.filter(pos.is_not_null() & (raw.str.len_bytes() == raw.str.len_chars()))
    braced = braced.select("ln", raw.str.slice(0, pos).alias("key"),
                           raw.str.slice(pos + 1).alias("rest"))
    braced = braced.filter(pl.col("rest").str.starts_with(" "))
    bare = found.filter(pos.is_null() & ~raw.str.starts_with("#") & (raw != "")).select(
        "ln", raw.str.splitn(" ", 2).alias("s")).unnest("s").select(
        "ln", f0.alias("key"), f1.alias("rest")).filter(pl.col("rest").is_not_null())
    cand = pl.concat([_with_ids(st, braced, True), _with_ids(st, bare, False)])
    vt = pl.col("rest").str.strip_chars(" ").str.splitn(" ", 2)
    cand = cand.select("ln", "id", vt.alias("vt")).unnest("vt").select(
        "ln", "id",
        f0.cast(pl.Float64, strict=False).alias("value"),
        f1.cast(pl.Int64, strict=False).alias("own"),
        f1.is_not_null().alias("has_ts"))
    ok = (pl.col("id") >= 0) & pl.col("value").is_not_null() & (~pl.col("has_ts") | (
        pl.col("own").is_not_null() & (pl.col("own").abs() <= _I64 // st.mult)))
    return cand.filter(ok)


def _parse_block(st: _FileState, block: str, base: int) -> int:
    """Parse one block of lines starting at line `base`; returns how many lines it had."""
    lines = pl.Series("raw", [block], dtype=pl.String).str.split("\n").explode()
    df = pl.DataFrame({"raw": lines}).with_row_index("ln", offset=base)
    df = df.with_columns(pl.col("ln").cast(pl.Int64))
    fast = _candidates(st, df)
    taken = pl.Series([False] * df.height).scatter(fast["ln"] - base, True)
    rest = df.filter(~taken).filter(~pl.col("raw").str.contains(_SKIP))
    rejects: list[tuple[int, str, str]] = []
    scrape = _scrape_column(st, rest, base, df.height, rejects)
    def with_scrape(frame: pl.DataFrame) -> pl.DataFrame:
        if scrape is None:
            return frame.with_columns(pl.lit(st.scrape, dtype=pl.Int64).alias("scrape"))
        return frame.with_columns(scrape.gather(frame["ln"] - base).alias("scrape"))

    _fast_rows(st, with_scrape(fast), rejects, df, base)
    others = rest.filter(~pl.col("raw").str.contains(_TSLINE))
    if others.height:
        _slow_rows(st, with_scrape(others), rejects)
    rejects.sort(key=lambda r: r[0])
    for ln, reason, raw in rejects:
        st.sink.reject(ln, reason, raw)
    return df.height


def _fast_rows(st: _FileState, fast: pl.DataFrame, rejects: list, df: pl.DataFrame,
               base: int) -> None:
    if fast.height == 0:
        return
    fast = fast.with_columns(
        pl.when(pl.col("has_ts")).then(pl.col("own") * st.mult)
        .otherwise(pl.col("scrape")).alias("tsns"))
    bad_ids = [i for i in fast["id"].unique().to_list() if st.reason[i] is not None]
    bad = pl.col("tsns").is_null() | (pl.col("tsns") == _BAD_TS) | pl.col("id").is_in(bad_ids)
    nok = fast.filter(bad)
    if nok.height:
        raws = df["raw"].gather(nok["ln"] - base).to_list()
        for (ln, tsns, sid), raw in zip(nok.select("ln", "tsns", "id").iter_rows(), raws,
                                        strict=True):
            no_ts = tsns is None or tsns == _BAD_TS
            rejects.append((ln, NO_TIMESTAMP if no_ts else st.reason[sid], raw))
        fast = fast.filter(~bad)
    _push_frame(st, fast)


def _push_frame(st: _FileState, fast: pl.DataFrame) -> None:
    """Hand the vectorized rows to the sink as one frame (series columns gathered by id)."""
    if fast.height == 0:
        return
    ids = fast["id"]
    table = pl.DataFrame({"device": st.dev, "ifname": st.ifn, "metric": st.met,
                          "qualifier": st.qual}, schema={c: pl.String for c in
                                                          ("device", "ifname", "metric", "qualifier")})
    rows = table[ids].with_columns(ts=fast["tsns"], value=fast["value"], line=fast["ln"])
    st.sink.samples_frame(rows)
    st.sink.accept(fast.height)


def _push(st: _FileState, ids: list[int], ts: list[int], values: list[float],
          lines: list[int]) -> None:
    if not ids:
        return
    st.sink.samples_bulk(ts, list(map(st.dev.__getitem__, ids)), list(map(st.ifn.__getitem__, ids)),
                         list(map(st.met.__getitem__, ids)), list(map(st.qual.__getitem__, ids)),
                         values, lines)
    st.sink.accept(len(ids))


def _slow_rows(st: _FileState, rows: pl.DataFrame, rejects: list) -> None:
    """The exact parser, for lines the vectorized regex did not take."""
    ids, ts, values, lines = [], [], [], []
    for ln, raw, scrape in rows.select("ln", "raw", "scrape").iter_rows():
        try:
            name, labels, vtok, ttok = parse_line(raw)
            value = parse_value(vtok)
            if ttok is not None:
                tsns = parse_sample_ts(ttok, st.openmetrics)
            elif scrape is None or scrape == _BAD_TS:
                raise BadLine(NO_TIMESTAMP)
            else:
                tsns = scrape
        except BadLine as exc:
            rejects.append((ln, str(exc), raw))
            continue
        sid = st.series_id((name, tuple(labels)), name, labels)
        if st.reason[sid] is not None:
            rejects.append((ln, st.reason[sid], raw))
            continue
        ids.append(sid)
        ts.append(tsns)
        values.append(value)
        lines.append(ln)
    _push(st, ids, ts, values, lines)


PARSERS: list = [PromTextParser()]


# -- writers ----------------------------------------------------------------------------------
def format_value(v: float) -> str:
    """A value as Prometheus prints it, exact on round trip (`+Inf`, `NaN`, `1027`, `0.25`)."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(row: Mapping) -> str:
    metric = row["metric"]
    pairs = [("instance", row["device"])]
    ifname = row.get("ifname") or ""
    quals = [q.partition("=")[::2] for q in (row.get("qualifier") or "").split(",") if q]
    if metric.startswith(IBDEV_FAMILY) and ifname:
        ibdev, _, port = ifname.partition("/")  # Sink.netdev names unmapped ports `mlx4_0/2`
        pairs += [("device", ibdev), ("port", port or "1")]
    elif ifname:
        pairs.append(("device" if metric.startswith(NETDEV_FAMILIES) else "interface", ifname))
    prio = _PRIO.search(metric) if metric.startswith("node_ethtool_") else None
    for k, v in quals:
        if not (prio and k == "priority" and v == prio[1]):  # node_exporter puts it in the name
            pairs.append((k, v))
    return ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)


def _family_header(metric: str) -> str:
    m = counter_map().get(("prom", metric))
    if m is None:
        return f"# HELP {metric} {metric}\n# TYPE {metric} untyped\n"
    c = canonical_counters()[m.canonical]
    kind = "counter" if c.kind == "counter" else "gauge"
    return f"# HELP {metric} {c.description}\n# TYPE {metric} {kind}\n"


def write_exposition(samples: Iterable[Mapping], fh: IO[str], with_timestamps: bool = True) -> int:
    """Write samples (mappings with ts, device, ifname, metric, value, qualifier) as one text
    exposition: families grouped, HELP/TYPE once each, labels `instance` and `interface` (node
    exporter's `device`/`port` for its own families), ms timestamps. Returns the sample count."""
    families: dict[str, list[str]] = {}
    n = 0
    for row in samples:
        line = f"{row['metric']}{{{_label_text(row)}}} {format_value(row['value'])}"
        if with_timestamps:
            line += f" {int(row['ts']) // 1_000_000}"
        families.setdefault(row["metric"], []).append(line)
        n += 1
    for metric, lines in families.items():
        fh.write(_family_header(metric))
        fh.write("\n".join(lines))
        fh.write("\n")
    return n


def date_ins(ns: int) -> str:
    """`date -Ins -u` for a time in ns: `2026-11-30T07:12:13,123456789+00:00`."""
    return ns_to_iso(ns)[:19] + f",{ns % NS:09d}+00:00"


def write_scrapes(samples: Iterable[Mapping], fh: IO[str]) -> int:
    """Write samples as a series of scrapes, one per distinct ts, each preceded by the line
    `date -Ins` prints, as `while :; do date -Ins; curl -s host:9100/metrics; done` would."""
    by_ts: dict[int, list[Mapping]] = {}
    for row in samples:
        by_ts.setdefault(int(row["ts"]), []).append(row)
    n = 0
    for ts in sorted(by_ts):
        fh.write(date_ins(ts) + "\n")
        n += write_exposition(by_ts[ts], fh, with_timestamps=False)
    return n
