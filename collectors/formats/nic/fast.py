"""The two shapes nearly every NIC snapshot file has, read with polars string kernels.

`collectors.formats.nic` reads every shape line by line in Python (about 60K samples/s). A bundle of a
few thousand hosts holds tens of millions of samples in files of just two shapes, which is what
the loops of its docstring write:

- ethtool: `date -Ins` lines, each followed by `NIC statistics:` and `name: value` lines;
- rdma: `date -Ins` (or `date +%s.%N`) lines, each followed by `link dev/port name value ...`
  lines, one per device port.

`parse_common_shapes` takes a file only when every line is of one of these shapes and nothing
in it needs a judgement (no reject, no other framing, a timestamp with its zone); it then emits
exactly the rows, line numbers and accounting the line parser would. Any other file is left to
the line parser: nothing reaches the sink until the whole file has been checked.
`parse_common_shapes_of` does the same for many files at once (a parse pool's chunk of small
files, `NicSnapshotParser.parse_common`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import NS, TS_MAX_NS, TS_MIN_NS

MAX_BYTES = 8 << 20  # on disk; a bigger file is streamed by the line parser

# `date -Ins` with its zone, and `date +%s.%N`
_ISO_NS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{9}[+-]\d{2}:\d{2}$"
_EPOCH_NS = r"^\d{10}\.\d{9}$"
_NAME = r"[A-Za-z0-9_.\[\]-]+"
_COUNT = r"[0-9]{1,19}"  # below 2^64, so never out of a counter's range
_ETHTOOL = rf"^(?P<name>{_NAME}):\s*(?P<value>{_COUNT})$"
_LINK = rf"^link (?P<dev>[^\s/]+)/(?P<port>[0-9]{{1,5}}) (?P<rest>{_NAME} {_COUNT}(?: {_NAME} {_COUNT})*)$"
_HEADER = "NIC statistics:"


@dataclass(frozen=True)
class Snapshot:
    """One file for `parse_common_shapes_of`: where its rows go, the device it belongs to and
    `ifname(dev, port)` naming a device port (ibdev2netdev)."""

    src: SourceFile
    sink: Sink
    host: str
    ifname: Callable[[str, int], str]


def parse_common_shapes(src: SourceFile, sink: Sink, host: str,
                        ifname: Callable[[str, int], str], qualifier: Callable[[str], str]) -> bool:
    """Load `src` if it is wholly of a common shape (True); else emit nothing and return False.

    `ifname(dev, port)` names a device port (ibdev2netdev); `qualifier(metric)` gives the
    queue or priority a counter's name carries."""
    return parse_common_shapes_of([Snapshot(src, sink, host, ifname)], qualifier)[0]


def parse_common_shapes_of(files: list[Snapshot], qualifier: Callable[[str], str]) -> list[bool]:
    """`parse_common_shapes` of several files, with a few queries for all of them: polars'
    cost per call, not the rows, is most of a small file's time (a file alone: 20 queries;
    1,196 NIC files of the large bundle, one core: 8.95 ms a file alone, 4.21 in chunks of 64,
    samples converted included)."""
    texts: list[str] = []
    which: list[int] = []
    for k, f in enumerate(files):
        if f.src.path.stat().st_size >= MAX_BYTES:
            continue
        with f.src.open_text() as fh:
            text = fh.read()
        if f.src.read_error or not text.isascii():  # (text mode made every line break \n)
            f.src.read_error = None  # the line parser reads it again and words what is wrong
            continue
        texts.append(text)
        which.append(k)
    taken = [False] * len(files)
    if not texts:
        return taken
    df = _classified(texts)  # one query for every file
    body = df.filter(~pl.col("stamp") & ~pl.col("header"))
    shape = _shapes(df, body)
    ethtool = shape.filter(pl.col("ethtool"))["f"]
    rdma = shape.filter(~pl.col("ethtool"))["f"]
    nics = [files[k].src.nic_hint or "" for k in which]
    got = []  # (rows, records per file) of each shape
    if ethtool.len():
        mine = pl.col("f").is_in(ethtool.implode())
        got.append(_ethtool(df.filter(mine), body.filter(mine), nics))
    if rdma.len():
        got.append(_rdma(body.filter(pl.col("f").is_in(rdma.implode()))))
    if not got:
        return taken
    counts = dict(pl.concat([records for _, records in got]).iter_rows())
    frames = _named(pl.concat([rows for rows, _ in got]), [files[k] for k in which], qualifier)
    # a file's rows stay in line order within its part
    for (f,), frame in frames.partition_by("f", as_dict=True, maintain_order=True,
                                           include_key=False).items():
        snap = files[which[f]]
        snap.sink.samples_frame(frame)
        snap.sink.accept(counts[f])
        snap.sink.current_line = int(frame["line"].max())
        taken[which[f]] = True
    return taken  # a file of timestamps only (no rows) is left to the line parser, same rows


def _classified(texts: list[str]) -> pl.DataFrame:
    """The non-blank lines of every text: file `f`, line number, text, kind (stamp, header,
    link), block and its time."""
    t = pl.col("t")
    iso = t.str.contains(_ISO_NS)
    epoch = t.str.contains(_EPOCH_NS)
    iso_s = (t.str.slice(0, 19).str.to_datetime("%Y-%m-%dT%H:%M:%S", time_unit="us",
                                                 strict=False).dt.epoch("s")
             - (pl.when(t.str.slice(29, 1) == "-").then(-1).otherwise(1)
                * (t.str.slice(30, 2).cast(pl.Int64, strict=False) * 3600
                   + t.str.slice(33, 2).cast(pl.Int64, strict=False) * 60)))
    iso_frac = t.str.slice(20, 9).cast(pl.Int64, strict=False)
    epoch_s = t.str.slice(0, 10).cast(pl.Int64, strict=False)
    epoch_frac = t.str.slice(11, 9).cast(pl.Int64, strict=False)
    secs = pl.col("secs")
    f = pl.col("f")
    return (pl.LazyFrame({"f": pl.int_range(0, len(texts), dtype=pl.Int32, eager=True),
                          "raw": pl.Series(texts).str.split("\n")})
            .explode("raw")
            .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(f).alias("line"))
            # what Python's str.strip() takes off an ASCII line
            .with_columns(pl.col("raw").str.strip_chars(" \t\n\x0b\x0c\x1c\x1d\x1e\x1f").alias("t"))
            .filter(t != "")
            .with_columns(iso.alias("iso"), epoch.alias("epoch"))
            .with_columns(
                (pl.col("iso") | pl.col("epoch")).alias("stamp"),
                (t == _HEADER).alias("header"), t.str.starts_with("link ").alias("link"),
                pl.when(pl.col("iso")).then(iso_s).when(pl.col("epoch")).then(epoch_s)
                .alias("secs"),
                pl.when(pl.col("iso")).then(iso_frac).otherwise(epoch_frac).alias("frac"))
            # a valid time (`timeparse.TS_MIN_NS`..) or null, checked in seconds (columns of
            # their own: each expression is computed once) so that no product wraps; a null
            # sends the file to the line parser, which rejects the block's lines naming the time
            .with_columns(pl.when((secs >= TS_MIN_NS // NS) & (secs < TS_MAX_NS // NS))
                          .then(secs * NS + pl.col("frac")).alias("ts"))
            .with_columns(pl.col("stamp").cum_sum().over(f).alias("block"),
                          pl.when(pl.col("stamp")).then(pl.col("ts")).forward_fill().over(f)
                          .alias("block_ts"))
            .collect())


def _shapes(df: pl.DataFrame, body: pl.DataFrame) -> pl.DataFrame:
    """The files (`f`) that may be of a common shape, and which one (`ethtool`, else rdma).

    Not: records before any timestamp line (rejects: the line parser's job), an impossible date
    or a time out of range (the line parser words it), `link` lines mixed with others or after a header."""
    stamps = df.group_by("f").agg(
        pl.col("stamp").first().alias("starts"),
        (pl.col("stamp") & pl.col("ts").is_null()).any().alias("bad_time"),
        pl.col("header").any().alias("header"))
    kinds = body.group_by("f").agg(pl.col("link").sum().alias("links"), pl.len().alias("n"))
    return (stamps.join(kinds, on="f", how="left")
            .with_columns(pl.col("links").fill_null(0), pl.col("n").fill_null(0))
            .filter(pl.col("starts") & ~pl.col("bad_time")
                    & ((pl.col("links") == 0)
                       | ((pl.col("links") == pl.col("n")) & ~pl.col("header"))))
            .select("f", (pl.col("links") == 0).alias("ethtool")))


def _named(rows: pl.DataFrame, files: list[Snapshot],
           qualifier: Callable[[str], str]) -> pl.DataFrame:
    """rows: f, line, ts, dev, port, metric, value -> the samples of each file (`f`), in line
    order, with the file's host, its port names and the counters' qualifiers."""
    ports = rows.select("f", "dev", "port").unique(maintain_order=True)
    names = ports.with_columns(pl.Series("ifname", [
        files[f].ifname(d, p) for f, d, p in ports.iter_rows()], dtype=pl.String))
    metrics = rows["metric"].unique()
    quals = {m: qualifier(m) for m in metrics}
    hosts = pl.Series("device", [f.host for f in files], dtype=pl.String)
    return (rows.join(names, on=["f", "dev", "port"], how="left", maintain_order="left")
            .select("f", "ts", pl.lit(hosts).gather(pl.col("f")).alias("device"), "ifname",
                    "metric",
                    pl.col("metric").replace_strict(quals, return_dtype=pl.String)
                    .alias("qualifier"),
                    "value", "line",
                    # the series' number (host, port and counter name it): `collectors.store.frames.with_predecessors`
                    pl.struct("dev", "port", "metric").rank("dense").over("f").cast(pl.Int64)
                    .alias("sid")))


def _ethtool(df: pl.DataFrame, body: pl.DataFrame,
             nics: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Blocks of a timestamp, at most one `NIC statistics:`, then `name: value` lines; the rows
    (f, line, ts, dev, port, metric, value) of the files whose every line is so, and their
    record counts (one per counter line)."""
    # `ethtool -S` twice after one timestamp: its second block has no time
    twice = df.filter(pl.col("header")).filter(pl.struct("f", "block").is_duplicated())["f"]
    m = body["t"].str.extract_groups(_ETHTOOL)
    lines = body.select("f", "line", pl.col("block_ts").alias("ts")).with_columns(
        m.struct.field("name").alias("metric"), m.struct.field("value").alias("value"))
    # a line of another kind, or a value that is not a plain count
    bad = pl.concat([twice, lines.filter(pl.col("metric").is_null())["f"]])
    lines = lines.filter(~pl.col("f").is_in(bad.implode()))
    rows = lines.select("f", "line", "ts",
                        pl.lit(pl.Series(nics, dtype=pl.String)).gather(pl.col("f")).alias("dev"),
                        pl.lit(1, pl.Int64).alias("port"), "metric",
                        pl.col("value").cast(pl.Float64))
    return rows, rows.group_by("f").agg(pl.len().cast(pl.Int64).alias("records"))


def _rdma(body: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Blocks of a timestamp, then one `link dev/port name value ...` line per device port; the
    rows of the files whose every line is so, and their record counts (one per line)."""
    m = body["t"].str.extract_groups(_LINK)
    lines = pl.DataFrame({"f": body["f"], "line": body["line"], "ts": body["block_ts"],
                          "block": body["block"], "dev": m.struct.field("dev"),
                          "port": m.struct.field("port"), "rest": m.struct.field("rest")})
    # not name/value pairs, or a per-QP line the line parser rejects; one port twice after one
    # timestamp: its second line has no time
    bad = lines.filter(pl.col("rest").is_null() | pl.col("rest").str.starts_with("cntn ")
                       | pl.struct("f", "block", "dev", "port").is_duplicated())["f"]
    lines = lines.filter(~pl.col("f").is_in(bad.implode()))
    tok = pl.col("rest").str.split(" ")
    rows = (lines.select("f", "line", "ts", "dev", pl.col("port").cast(pl.Int64),
                         tok.list.gather_every(2).alias("metric"),
                         tok.list.gather_every(2, offset=1).alias("value"))
            .explode("metric", "value")
            .with_columns(pl.col("value").cast(pl.Float64)))
    return rows, lines.group_by("f").agg(pl.len().cast(pl.Int64).alias("records"))
