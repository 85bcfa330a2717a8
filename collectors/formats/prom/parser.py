"""Prometheus text exposition 0.0.4 and OpenMetrics 1.0 text (design section 4).

Accepted files: a scrape, a federation dump or `promtool tsdb dump` output, whose samples carry
their own timestamps (ms for Prometheus, seconds for OpenMetrics), and series of scrapes each
preceded by a timestamp line (`date -Ins`, `date -Iseconds`, `date +%s.%N`); a sample without a
timestamp of its own takes the last timestamp line's.

A record is one sample line; HELP/TYPE/UNIT/EOF lines, comments, blank lines and timestamp lines
are not records. Speed: blocks of ~4 MB (memory stays flat whatever the file size) are cut into
series key, value and timestamp at byte level (`collectors.formats.prom.split`: numpy, the parts are
string views into the block), each key's series id is found in the file's `KeyIndex`
(`collectors.formats.prom.keys`: guessed from the order keys were first seen, else by hash, checked
equal), and the values and timestamps cast by polars. New keys are resolved in bulk (device,
interface, qualifier): the plain ones (`name{labels}`) per label shape with polars, the same way
`resolve_series` does one by one, the others in Python. Any line this cheap cut does not take
exactly (escapes with braces, tabs, exemplars, OpenMetrics float timestamps, garbage) goes through
the exact line parser, which also words every reject reason. Property tests check that both
paths, and both resolvers, agree. Loaded rows reach the sink in frames of OUT_ROWS.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import NamedTuple

import numpy as np
import polars as pl

from collectors.core.lineblocks import LineBlock, line_blocks
from collectors.core.schema import is_counter, screen, value_problem
from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import (
    NS,
    TS_MAX_NS,
    TS_MIN_NS,
    TimeError,
    parse_epoch,
    parse_iso,
    tz_from_name,
)
from collectors.formats.prom.keys import UNKNOWN, KeyIndex
from collectors.formats.prom.lines import (  # noqa: F401 - parse_labels etc. are the family's API
    _NAME,
    _OM_MARK,
    _PRIO,
    _SKIP,
    _SNIFF_META,
    _TS_EPOCH,
    _TS_ISO,
    _TSLINE,
    ALWAYS_CONSUMED,
    DEVICE_LABELS,
    IBDEV_FAMILY,
    IF_LABELS,
    LABEL_RENAMES,
    NETDEV_FAMILIES,
    NO_DEVICE,
    NO_TIMESTAMP,
    BadLine,
    parse_labels,
    parse_line,
    parse_sample_ts,
    parse_value,
    resolve_series,
    strip_namespace,
)
from collectors.formats.prom.split import split_block

BLOCK_CHARS = 1 << 22  # ~4 MB of text per vectorized block (collectors.core.lineblocks)
OUT_ROWS = 1 << 18  # rows handed to the sink at a time: a store loads big batches faster
_BAD_TS = -(2**63)  # scrape timestamp after an unparseable timestamp line
_I64 = 2**63 - 1


_SERIES = {c: pl.String for c in ("device", "ifname", "metric", "qualifier", "reason")}
_SERIES_COLS = ["device", "ifname", "metric", "qualifier"]


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
        self._collected: int | None = None  # `collected`, once asked for
        self.devices: dict[str, str] = {}
        # series: id -> row of `table` (device, ifname, metric, qualifier, reason or null);
        # the rows the Python resolver made wait in `pending` until the table is next read
        self.table = pl.DataFrame(schema=_SERIES)
        self.pending: list[tuple[str, str, str, str, str | None]] = []
        self.columns: pl.DataFrame | None = None  # `series_columns`
        # series id -> the number of its (device, ifname, metric, qualifier): two keys that
        # name one series (a dropped label apart) share it; the store finds runs by it
        self.numbers: dict[tuple, int] = {}
        self.sids = np.zeros(0, dtype=np.int64)
        self.n = 0  # series ids given out
        self.bad: dict[int, str] = {}  # series id -> why its samples are rejected
        self.ids: dict = {}  # exact parser's (name, labels) -> series id
        # vectorized key (`name{labels}` with its '}', or a bare `name`) -> series id, -1 when
        # the key is not exactly that (the exact parser takes the line)
        self.known = KeyIndex()
        self.out: list[pl.DataFrame] = []  # loaded rows not yet handed to the sink
        self.out_rows = 0

    def new_series(self, name: str, labels: list[tuple[str, str]]) -> int:
        """Resolve one series in Python (the exact resolver) and give it an id."""
        sid = self.n
        self.n += 1
        r = resolve_series(name, labels, self.sink, self.hint, self.devices)
        if isinstance(r, str):
            self.pending.append(("", "", "", "", r))
            self.bad[sid] = r
        else:
            self.pending.append((*r, None))
        return sid

    def series_id(self, key: object, name: str, labels: list[tuple[str, str]]) -> int:
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = self.new_series(name, labels)
        return sid

    def series_table(self) -> pl.DataFrame:
        """The series table with every id given out so far."""
        if self.pending:
            new = pl.DataFrame(self.pending, schema=_SERIES, orient="row")
            self.pending = []
            self.table = pl.concat([self.table, new])
            if self.table.n_chunks() > 16:
                self.table = self.table.rechunk()
        return self.table

    def series_columns(self) -> pl.DataFrame:
        """The series table's device, ifname, metric and qualifier, in one chunk (a gather
        from a chunked frame costs several times more), and `sid`, the series' number."""
        table = self.series_table()
        if self.columns is None or self.columns.height != table.height:
            names = table.select(_SERIES_COLS)
            new = names.slice(len(self.sids)).iter_rows()
            numbers = self.numbers
            self.sids = np.concatenate([self.sids, np.fromiter(
                (numbers.setdefault(r, len(numbers)) for r in new), np.int64)])
            self.columns = names.with_columns(sid=pl.Series(self.sids)).rechunk()
        return self.columns

    def add_series(self, rows: pl.DataFrame) -> pl.Series:
        """Append resolved series (the `_SERIES` columns) and return their new ids."""
        table = self.series_table()
        ids = pl.int_range(self.n, self.n + rows.height, dtype=pl.Int64, eager=True)
        self.n += rows.height
        self.table = pl.concat([table, rows.select(list(_SERIES))])
        if self.table.n_chunks() > 16:
            self.table = self.table.rechunk()
        bad = rows.select(ids.alias("id"), "reason").filter(pl.col("reason").is_not_null())
        self.bad.update(zip(bad["id"].to_list(), bad["reason"].to_list(), strict=True))
        return ids

    def key_id(self, key: str) -> int:
        """The series id of a vectorized key: `name{labels}` or a bare `name`; -1 when the key
        is not exactly that, so the exact parser takes the line."""
        braced = key.endswith("}")
        brace = key.find("{")
        name = key if brace < 0 else key[:brace]
        labels: list[tuple[str, str]] = []
        try:
            if not braced:
                ok = _NAME.fullmatch(key) is not None
            elif brace < 0:
                ok = False
            else:
                labels, end, qname = parse_labels(key, brace)
                ok = end == len(key) and qname is None and _NAME.fullmatch(name) is not None
        except BadLine:
            ok = False
        return self.new_series(name, labels) if ok else -1

    def emit(self, rows: pl.DataFrame) -> None:
        """Queue loaded rows for the sink, which gets them in batches of OUT_ROWS or more."""
        self.out.append(rows)
        self.out_rows += rows.height
        if self.out_rows >= OUT_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.out:
            rows = pl.concat(self.out) if len(self.out) > 1 else self.out[0]
            self.out = []
            self.out_rows = 0
            self.sink.samples_frame(rows)
            self.sink.accept(rows.height)

    def collected(self) -> int:
        """The time of samples that carry none, before any timestamp line: exposition text
        has none unless asked to, so the file's collection time (`SourceFile.collection_ts`:
        manifest, --time, else its modification time, recorded as such)."""
        if self._collected is None:
            at = self.src.collection_ts()
            self._collected = _BAD_TS if at is None else at  # no time: NO_TIMESTAMP rejects
        return self._collected

    def time_line(self, text: str) -> int:
        t = text.strip()
        try:
            ns = parse_epoch(t) if _TS_EPOCH.fullmatch(t) else parse_iso(t, self.tz)
        except TimeError:
            return _BAD_TS
        return ns if -_I64 < ns <= _I64 else _BAD_TS

    def time_line_reason(self, text: str) -> str:
        """Why a timestamp line is no valid time (after `time_line` said so)."""
        t = text.strip()
        try:
            parse_epoch(t) if _TS_EPOCH.fullmatch(t) else parse_iso(t, self.tz)
        except TimeError as exc:
            if "outside" in str(exc):  # the value policy's range: say so
                return f"timestamp line {t[:40]!r}: {exc}"
        return f"timestamp line {t[:40]!r} is not a valid time"


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
            for block in line_blocks(fh, BLOCK_CHARS):
                if first:
                    head = block.data[:4 << 20].decode("utf-8", "replace")  # >= 1M characters
                    st.openmetrics = bool(_OM_MARK.search(head, 0, 1 << 20))
                    st.mult = NS if st.openmetrics else 1_000_000
                    first = False
                base += _parse_block(st, block, base)
        st.flush()


def _sniff(head: str, rel: str) -> bool:
    lines = head.split("\n")
    if len(lines) > 1 and len(head) >= 16000:
        lines = lines[:-1]  # the last line may be cut
    meta = samples = labelled = other = 0
    lines = lines[:400]
    for i, raw in enumerate(lines):
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
            # no verdict below can be true any more, whatever the lines left: stop (every
            # other format's file, a NIC snapshot above all, is offered here first)
            left = len(lines) - i - 1
            if other >= samples + meta + left and other * 10 > samples + left:
                return False
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
            rejects.append((ln, st.time_line_reason(raw), raw))
        idx.append(ln - base)
        vals.append(v)
    col = pl.repeat(None, n, dtype=pl.Int64, eager=True).alias("scrape")
    col = col.scatter(idx, pl.Series(vals, dtype=pl.Int64)).forward_fill()
    if st.scrape is not None:
        col = col.fill_null(st.scrape)
    st.scrape = col[-1]
    return col


# -- series resolved in bulk --------------------------------------------------------------------
# the plain label sets the bulk resolver takes: no blanks, no trailing comma, no escapes, at least
# one label; anything else (and duplicate names) goes through `_FileState.key_id`
_LNAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_BULK_KEY = rf'^[a-zA-Z_:][a-zA-Z0-9_:]*\{{{_LNAME}="[^"\\]*"(?:,{_LNAME}="[^"\\]*")*\}}$'
_BULK_MIN = 64  # fewer new keys (or fewer keys of one label shape) than this: Python is cheaper


def _metric_class(name: str) -> tuple[str, str]:
    """(metric, class) of a series name: the class is what `resolve_series` looks at in the
    name: `n` netdev family, `i` RDMA device family, `o` other; `n3` a node_ethtool prio 3."""
    metric = strip_namespace(name)
    cls = "n" if metric.startswith(NETDEV_FAMILIES) else \
        "i" if metric.startswith(IBDEV_FAMILY) else "o"
    if metric.startswith("node_ethtool_") and (p := _PRIO.search(metric)):
        cls += p[1]
    return metric, cls


def _plan(shape: str, cls: str) -> tuple[str | None, str | None, list[tuple[str, str | int]],
                                        list[str]] | None:
    """How `resolve_series` treats every series of one label shape and metric class.

    `shape` is the label set with each value replaced by 1 (set) or 0 (empty, that is absent):
    `{instance=1,interface=1,job=0}`. Returns (device label, interface label, qualifier items
    sorted by name, label names in order), a qualifier item's value being the index of the label
    it comes from or (the node_ethtool priority) a literal; None when the shape needs the
    Python resolver.
    """
    items = shape[1:-1].split(",")
    names = [it[:-2] for it in items]
    if len(set(names)) != len(names):
        return None
    d = [n for n, it in zip(names, items, strict=True) if it.endswith("=1")]
    dev_name = next((k for k in DEVICE_LABELS if k in d), None)
    if_label = next((k for k in IF_LABELS if k in d), None)
    if if_label is None and "device" in d:
        if cls[0] == "n":
            if_label = "device"
        elif cls[0] == "i":
            return None  # the interface is sink.netdev(device, ibdev, port): per series
    used = set(ALWAYS_CONSUMED) | {dev_name, if_label}
    qual: dict[str, str | int] = {}
    for k in d:
        if k not in used:
            key = LABEL_RENAMES.get(k, k)
            qual[key if key not in d or key == k else k] = names.index(k)
    if len(cls) > 1:
        qual.setdefault("priority", cls[1:])
    return dev_name, if_label, sorted(qual.items()), names


def _resolve_keys(st: _FileState, keys: pl.Series) -> pl.DataFrame:
    """Series ids (new ones resolved) for distinct keys not seen yet: a frame (key, id).

    Keys with a plain label set are resolved per label shape with polars, the same way
    `resolve_series` does one by one; the others go through the exact resolver.
    """
    out = []
    if keys.len() >= _BULK_MIN:
        frame = pl.DataFrame({"key": keys})
        simple = frame["key"].str.contains(_BULK_KEY)
        bulk = frame.filter(simple)
        keys = frame.filter(~simple)["key"]
        rest, done = _bulk_series(st, bulk)
        out.append(done)
        keys = pl.concat([keys, rest])
    if keys.len():
        ids = [st.key_id(k) for k in keys.to_list()]
        out.append(pl.DataFrame({"key": keys, "id": pl.Series(ids, dtype=pl.Int64)}))
    return pl.concat(out)


def _bulk_series(st: _FileState, bulk: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """Resolve plain keys per (label shape, metric class): (keys left over, frame (key, id))."""
    key = pl.col("key")
    bulk = bulk.with_row_index("pos").with_columns(  # ids in the keys' order: gathers stay local
        key.str.extract(r"^([^{]*)", 1).alias("name"),
        key.str.replace(r"^[^{]*", "").str.replace_all(r'="[^"]+"', "=1", literal=False)
        .str.replace_all('=""', "=0", literal=True).alias("shape"))
    names = bulk["name"].unique().to_list()
    classes = [_metric_class(n) for n in names]
    bulk = bulk.join(pl.DataFrame({"name": names, "metric": [m for m, _ in classes],
                                   "cls": [c for _, c in classes]},
                                  schema={"name": pl.String, "metric": pl.String,
                                          "cls": pl.String}), on="name")
    # label shapes shared by few keys (rare: label names that vary per series) go to Python
    few = pl.len().over("shape", "cls") < _BULK_MIN
    left: list[pl.Series] = [bulk.filter(few)["key"]]
    parts: list[pl.DataFrame] = []
    for (shape, cls), part in bulk.filter(~few).partition_by("shape", "cls", as_dict=True).items():
        plan = _plan(shape, cls)
        if plan is None:
            left.append(part["key"])
            continue
        dev_name, if_label, qual, names_ = plan
        pattern = r"^[^{]*\{" + ",".join(f'{n}="([^"]*)"' for n in names_) + r"\}$"
        g = pl.col("g").struct
        dev = g.field(str(names_.index(dev_name) + 1)) if dev_name else pl.lit(st.hint or "")
        ifn = g.field(str(names_.index(if_label) + 1)) if if_label else pl.lit("")
        q: list[pl.Expr] = []
        for j, (k, src) in enumerate(qual):
            q.append(pl.lit(("," if j else "") + k + "="))
            q.append(pl.lit(src) if isinstance(src, str) else g.field(str(src + 1)))
        parts.append(part.with_columns(key.str.extract_groups(pattern).alias("g")).select(
            "pos", "key", dev.alias("raw_device"), pl.lit(dev_name is not None).alias("mapped"),
            ifn.alias("ifname"), "metric",
            (pl.concat_str(q) if q else pl.lit("")).alias("qualifier")))
    leftover = pl.concat(left)
    if not parts:
        return leftover, pl.DataFrame(schema={"key": pl.String, "id": pl.Int64})
    rows = pl.concat(parts).sort("pos")
    raws = rows.filter("mapped")["raw_device"].unique().to_list()
    mapped = []
    for raw in raws:
        dev = st.devices.get(raw)
        if dev is None:
            dev = st.devices[raw] = st.sink.device(raw, fallback=st.hint)
        mapped.append(dev)
    devmap = pl.DataFrame({"raw_device": raws, "dev": mapped},
                          schema={"raw_device": pl.String, "dev": pl.String})
    rows = rows.join(devmap, on="raw_device", how="left", maintain_order="left").with_columns(
        pl.when("mapped").then("dev").otherwise("raw_device").alias("device"))
    nodev = pl.col("device") == ""
    rows = rows.with_columns(
        pl.when(nodev).then(pl.lit(NO_DEVICE)).otherwise(pl.lit(None, dtype=pl.String))
        .alias("reason"),
        *(pl.when(nodev).then(pl.lit("")).otherwise(c).alias(c)
          for c in ("ifname", "metric", "qualifier")))
    ids = st.add_series(rows)
    return leftover, pl.DataFrame({"key": rows["key"], "id": ids})


def _series_ids(st: _FileState, keys: pl.Series) -> np.ndarray:
    """The series id of each key (-1: the exact parser takes the line), resolving the keys not
    seen before."""
    ids = st.known.find(keys)
    missing = ids == UNKNOWN
    if missing.any():
        # added in the file's order, so that the next blocks' keys run through consecutive
        # key numbers (KeyIndex guesses them)
        new = keys.filter(pl.Series(missing)).unique(maintain_order=True).to_frame("key")
        new = new.join(_resolve_keys(st, new["key"]), on="key", how="left", maintain_order="left")
        st.known.add(new["key"], new["id"])
        ids[missing] = st.known.find(keys.filter(pl.Series(missing)))
    return ids


def _parse_block(st: _FileState, block: LineBlock, base: int) -> int:
    """Parse one block of lines starting at line `base`; returns how many lines it had.

    Lines are cut into key, value and timestamp by `split.split_block`; a cut line whose key is a known
    series (or resolves to one), whose value is a number and whose timestamp (if any) an integer
    in range is loaded without Python. Every other line goes the exact way. (Series and numpy
    operations: each DataFrame operation costs a query plan, too much per block.)"""
    cut = split_block(block) if st.vectorized else None
    n = len(block.offsets) - 1
    fast = None
    if cut is not None and len(cut.rows):
        ids = _series_ids(st, cut.key)
        value = cut.value.cast(pl.Float64, strict=False)
        ok = ids >= 0
        if value.null_count():
            ok &= value.is_not_null().to_numpy()
        own = np.zeros(len(ids), dtype=np.int64)
        if cut.has_ts.any():
            ts = cut.ts.cast(pl.Int64, strict=False)
            if ts.null_count() > (~cut.has_ts).sum():
                ok &= ~cut.has_ts | ts.is_not_null().to_numpy()
            own = ts.fill_null(0).to_numpy()  # (polars: pyarrow's fill_null costs its compute import)
            # a valid time once in ns (the exact parser words the others); the exact grammar
            # has no `+` on a time
            ok &= ~cut.has_ts | ((own >= -(-TS_MIN_NS // st.mult))
                                 & (own < -(-TS_MAX_NS // st.mult)) & ~cut.ts_plus)
        fast = _Fast(ids[ok], value.filter(pl.Series(ok)), own[ok], cut.has_ts[ok],
                     cut.rows[ok] + base)
    if cut is None:
        rest = pl.DataFrame({"ln": pl.int_range(base, base + n, dtype=pl.Int64, eager=True),
                             "raw": block.series(newline=False)})
    elif fast is None or len(fast.ids) < n:
        slow = np.ones(n, dtype=bool)
        if fast is not None:
            slow[fast.lines - base] = False
        rows = np.flatnonzero(slow)
        rest = pl.DataFrame({"ln": pl.Series(rows + base, dtype=pl.Int64),
                             "raw": cut.raw(rows)})
    else:
        rest = None
    rejects: list[tuple[int, str, str]] = []
    scrape = others = None
    if rest is not None:
        rest = rest.filter(~pl.col("raw").str.contains(_SKIP))
        scrape = _scrape_column(st, rest, base, n, rejects)
        others = rest.filter(~pl.col("raw").str.contains(_TSLINE))
    if fast is not None and len(fast.ids):
        _fast_rows(st, fast, scrape, base, rejects, lambda lines: cut.raw(lines - base))
    if others is not None and others.height:
        if scrape is None:
            scraped = pl.lit(st.scrape, dtype=pl.Int64)
        else:
            scraped = scrape.gather(others["ln"] - base)
        _slow_rows(st, others.with_columns(scraped.alias("scrape")), rejects)
    rejects.sort(key=lambda r: r[0])
    for ln, reason, raw in rejects:
        st.sink.reject(ln, reason, raw)
    return n


class _Fast(NamedTuple):
    """The lines the cut took: series id, value, own timestamp (0 where `has_ts` is false) and
    line number of each."""

    ids: np.ndarray
    value: pl.Series
    own: np.ndarray
    has_ts: np.ndarray
    lines: np.ndarray


def _fast_rows(st: _FileState, fast: _Fast, scrape: pl.Series | None, base: int,
               rejects: list, raw_of: Callable[[np.ndarray], pl.Series]) -> None:
    """Load the lines the cut took; `scrape` is the block's scrape time per line (None:
    `st.scrape` for all of them); `raw_of(line numbers)` gives the text of the ones rejected."""
    ids, value, lines = fast.ids, fast.value, fast.lines
    ts = fast.own * st.mult
    missing = None
    if not fast.has_ts.all():
        if scrape is None:
            times = np.full(len(ids), st.collected() if st.scrape is None else st.scrape,
                            np.int64)
        else:
            per_line = scrape.gather(lines - base)
            # lines before the file's first timestamp line: its collection time, asked for
            # only when such a line has no time of its own
            if (per_line.is_null().to_numpy() & ~fast.has_ts).any():
                per_line = per_line.fill_null(st.collected())
            times = per_line.fill_null(_BAD_TS).to_numpy()
        ts = np.where(fast.has_ts, ts, times)
        missing = ts == _BAD_TS
        if not missing.any():
            missing = None
    bad = np.isin(ids, np.fromiter(st.bad, np.int64, len(st.bad))) if st.bad else None
    if missing is not None:
        bad = missing if bad is None else bad | missing
    if bad is not None and bad.any():
        at = lines[bad]
        no_ts = [False] * len(at) if missing is None else missing[bad].tolist()
        for ln, sid, no_time, raw in zip(at.tolist(), ids[bad].tolist(), no_ts,
                                         raw_of(at).to_list(), strict=True):
            rejects.append((ln, NO_TIMESTAMP if no_time else st.bad[sid], raw))
        keep = ~bad
        ids, ts, lines, value = ids[keep], ts[keep], lines[keep], value.filter(pl.Series(keep))
    columns = st.series_columns()
    probs = screen(value.to_numpy(), "prom",
                   lambda rows: columns["metric"].gather(pl.Series(ids[rows])).to_list(),
                   lambda rows: [_value_text(r) for r in raw_of(lines[rows]).to_list()])
    if probs:
        at = np.fromiter(probs, np.int64, len(probs))
        for ln, why, raw in zip(lines[at].tolist(), probs.values(), raw_of(lines[at]).to_list(),
                                strict=True):
            rejects.append((ln, why, raw))
        keep = np.ones(len(ids), dtype=bool)
        keep[at] = False
        ids, ts, lines, value = ids[keep], ts[keep], lines[keep], value.filter(pl.Series(keep))
    if len(ids):
        rows = columns[pl.Series(ids)]
        st.emit(rows.hstack([pl.Series("ts", ts, dtype=pl.Int64), value.alias("value"),
                             pl.Series("line", lines, dtype=pl.Int64)]))


def _value_text(raw: str) -> str | None:
    """The value token of a line the cut took (for the value policy's exact comparisons)."""
    try:
        return parse_line(raw.rstrip("\r"))[2]
    except BadLine:
        return None


def _slow_rows(st: _FileState, rows: pl.DataFrame, rejects: list) -> None:
    """The exact parser, for lines the vectorized regex did not take."""
    ids, ts, values, lines = [], [], [], []
    for ln, raw, scrape in rows.select("ln", "raw", "scrape").iter_rows():
        try:
            name, labels, vtok, ttok = parse_line(raw)
            value = parse_value(vtok)
            if ttok is not None:
                tsns = parse_sample_ts(ttok, st.openmetrics)
            elif scrape == _BAD_TS:
                raise BadLine(NO_TIMESTAMP)
            elif scrape is None and st.collected() != _BAD_TS:
                tsns = st.collected()
            elif scrape is None:
                raise BadLine(NO_TIMESTAMP)
            else:
                tsns = scrape
        except BadLine as exc:
            rejects.append((ln, str(exc), raw))
            continue
        sid = st.series_id((name, tuple(labels)), name, labels)
        if sid in st.bad:
            rejects.append((ln, st.bad[sid], raw))
            continue
        metric = strip_namespace(name)
        why = value_problem(value, is_counter("prom", metric), metric, vtok)
        if why is not None:
            rejects.append((ln, why, raw))
            continue
        ids.append(sid)
        ts.append(tsns)
        values.append(value)
        lines.append(ln)
    if ids:
        frame = st.series_columns()[pl.Series(ids, dtype=pl.Int64)].with_columns(
            ts=pl.Series(ts, dtype=pl.Int64), value=pl.Series(values, dtype=pl.Float64),
            line=pl.Series(lines, dtype=pl.Int64))
        st.emit(frame)


PARSERS: list = [PromTextParser()]


