"""The two shapes nearly every NIC snapshot file has, read with polars string kernels.

`collectors.nic` reads every shape line by line in Python (about 60K samples/s). A bundle of a
few thousand hosts holds tens of millions of samples in files of just two shapes, which is what
the loops of its docstring write:

- ethtool: `date -Ins` lines, each followed by `NIC statistics:` and `name: value` lines;
- rdma: `date -Ins` (or `date +%s.%N`) lines, each followed by `link dev/port name value ...`
  lines, one per device port.

`parse_common_shapes` takes a file only when every line is of one of these shapes and nothing
in it needs a judgement (no reject, no other framing, a timestamp with its zone); it then emits
exactly the rows, line numbers and accounting the line parser would. Any other file is left to
the line parser: nothing reaches the sink until the whole file has been checked.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from collectors.source import Sink, SourceFile

MAX_BYTES = 8 << 20  # on disk; a bigger file is streamed by the line parser

# `date -Ins` with its zone, and `date +%s.%N`
_ISO_NS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{9}[+-]\d{2}:\d{2}$"
_EPOCH_NS = r"^\d{10}\.\d{9}$"
_NAME = r"[A-Za-z0-9_.\[\]-]+"
_COUNT = r"[0-9]{1,19}"  # below 2^64, so never out of a counter's range
_ETHTOOL = rf"^(?P<name>{_NAME}):\s*(?P<value>{_COUNT})$"
_LINK = rf"^link (?P<dev>[^\s/]+)/(?P<port>[0-9]{{1,5}}) (?P<rest>{_NAME} {_COUNT}(?: {_NAME} {_COUNT})*)$"
_HEADER = "NIC statistics:"


def parse_common_shapes(src: SourceFile, sink: Sink, host: str,
                        ifname: Callable[[str, int], str], qualifier: Callable[[str], str]) -> bool:
    """Load `src` if it is wholly of a common shape (True); else emit nothing and return False.

    `ifname(dev, port)` names a device port (ibdev2netdev); `qualifier(metric)` gives the
    queue or priority a counter's name carries.
    """
    if src.path.stat().st_size >= MAX_BYTES:
        return False
    with src.open_text() as fh:
        text = fh.read()
    if src.read_error or not text.isascii():  # (text mode has made every line break \n)
        src.read_error = None  # the line parser reads it again and words what is wrong
        return False
    df = _classified(text)  # one query: polars' per-call cost is most of a small file's time
    if df.height == 0 or not df["stamp"][0]:
        return False  # records before any timestamp line are rejects: the line parser's job
    if (df["stamp"] & df["ts"].is_null()).any():
        return False  # an impossible date: the line parser words it
    body = df.filter(~df["stamp"] & ~df["header"])
    links = int(body["link"].sum())
    if links == 0:
        return _ethtool(df, body, src, sink, host, ifname, qualifier)
    if links == body.height and not df["header"].any():
        return _rdma(body, sink, host, ifname, qualifier)
    return False


def _classified(text: str) -> pl.DataFrame:
    """The non-blank lines: number, text, kind (stamp, header, link), block and its time."""
    t = pl.col("t")
    iso = t.str.contains(_ISO_NS)
    epoch = t.str.contains(_EPOCH_NS)
    iso_ns = ((t.str.slice(0, 19).str.to_datetime("%Y-%m-%dT%H:%M:%S", time_unit="us",
                                                   strict=False).dt.epoch("s")
               - (pl.when(t.str.slice(29, 1) == "-").then(-1).otherwise(1)
                  * (t.str.slice(30, 2).cast(pl.Int64, strict=False) * 3600
                     + t.str.slice(33, 2).cast(pl.Int64, strict=False) * 60)))
              * 1_000_000_000 + t.str.slice(20, 9).cast(pl.Int64, strict=False))
    epoch_ns = (t.str.slice(0, 10).cast(pl.Int64, strict=False) * 1_000_000_000
                + t.str.slice(11, 9).cast(pl.Int64, strict=False))
    return (pl.LazyFrame({"raw": pl.Series([text]).str.split("\n").explode()})
            .with_row_index("line", offset=1)
            # what Python's str.strip() takes off an ASCII line
            .with_columns(pl.col("raw").str.strip_chars(" \t\n\x0b\x0c\x1c\x1d\x1e\x1f").alias("t"))
            .filter(t != "")
            .with_columns(iso.alias("iso"), epoch.alias("epoch"))
            .with_columns(
                (pl.col("iso") | pl.col("epoch")).alias("stamp"),
                (t == _HEADER).alias("header"), t.str.starts_with("link ").alias("link"),
                pl.when(pl.col("iso")).then(iso_ns).when(pl.col("epoch")).then(epoch_ns)
                .alias("ts"))
            .with_columns(pl.col("stamp").cum_sum().alias("block"),
                          pl.when(pl.col("stamp")).then(pl.col("ts")).forward_fill()
                          .alias("block_ts"))
            .collect())


def _emit(sink: Sink, rows: pl.DataFrame, records: int, host: str,
          ifname: Callable[[str, int], str], qualifier: Callable[[str], str]) -> None:
    """rows: line, ts, dev, port, metric, value -> the sink's samples, in line order."""
    names = {(d, p): ifname(d, p) for d, p in rows.select("dev", "port").unique().iter_rows()}
    quals = {m: qualifier(m) for m in rows["metric"].unique()}
    frame = rows.select(
        "ts", pl.lit(host).alias("device"),
        (pl.col("dev") + "/" + pl.col("port").cast(pl.String))
        .replace_strict({f"{d}/{p}": n for (d, p), n in names.items()}, return_dtype=pl.String)
        .alias("ifname"),
        "metric",
        pl.col("metric").replace_strict(quals, return_dtype=pl.String).alias("qualifier"),
        "value", "line",
        # the series' number (host, port and counter name it): `store.with_predecessors`
        pl.struct("dev", "port", "metric").rank("dense").cast(pl.Int64).alias("sid"))
    sink.samples_frame(frame)
    sink.accept(records)
    sink.current_line = int(rows["line"].max())


def _ethtool(df: pl.DataFrame, body: pl.DataFrame, src: SourceFile, sink: Sink, host: str,
             ifname: Callable[[str, int], str], qualifier: Callable[[str], str]) -> bool:
    """Blocks of a timestamp, at most one `NIC statistics:`, then `name: value` lines."""
    headers = df["block"].filter(df["header"])
    if headers.is_duplicated().any():
        return False  # `ethtool -S` twice after one timestamp: its second block has no time
    m = body["t"].str.extract_groups(_ETHTOOL)
    if m.struct.field("name").null_count():
        return False  # a line of another kind, or a value that is not a plain count
    rows = pl.DataFrame({
        "line": body["line"], "ts": body["block_ts"], "dev": src.nic_hint or "", "port": 1,
        "metric": m.struct.field("name"), "value": m.struct.field("value").cast(pl.Float64)})
    if rows.height:
        _emit(sink, rows, rows.height, host, ifname, qualifier)
    return True


def _rdma(body: pl.DataFrame, sink: Sink, host: str,
          ifname: Callable[[str, int], str], qualifier: Callable[[str], str]) -> bool:
    """Blocks of a timestamp, then one `link dev/port name value ...` line per device port."""
    m = body["t"].str.extract_groups(_LINK)
    lines = pl.DataFrame({"line": body["line"], "ts": body["block_ts"], "block": body["block"],
                          "dev": m.struct.field("dev"), "port": m.struct.field("port"),
                          "rest": m.struct.field("rest")})
    if lines["rest"].null_count() or lines["rest"].str.starts_with("cntn ").any():
        return False  # not name/value pairs, or a per-QP line the line parser rejects
    if lines.select("block", "dev", "port").is_duplicated().any():
        return False  # one port twice after one timestamp: its second line has no time
    tok = lines["rest"].str.split(" ")
    rows = (lines.select("line", "ts", "dev", pl.col("port").cast(pl.Int64),
                         tok.list.gather_every(2).alias("metric"),
                         tok.list.gather_every(2, offset=1).alias("value"))
            .explode("metric", "value")
            .with_columns(pl.col("value").cast(pl.Float64)))
    _emit(sink, rows, lines.height, host, ifname, qualifier)
    return True
