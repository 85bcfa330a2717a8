"""The conservation residuals' per-port sums (replay/sql/residuals.sql's `_resid_ports` and
`_resid_edges`), computed from the analysis' rate arrays (`replay.rate_arrays`) in numpy.

Each sample interval is split over the replay windows it overlaps (and, for the edges, over the
boundaries within a sample interval of it), as residuals.sql describes; the sums are grouped by
integer keys (port code x window + window) with `np.bincount`, in one pass over the expanded
intervals. On the 256-switch hour the SQL of the two took 21 s of CPU (hash aggregates keyed on
`device || ':' || ifname` strings, a median per group).
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from replay import analysis_cache
from replay.rate_arrays import OWN_INTERVAL, RateArrays, epoch_us, rate_arrays


@dataclass
class Span:
    """The residuals' windows: `n_win` of `window_s` from t0_us, `span_s` seconds in all."""

    t0_us: int
    t_to_us: int
    window_s: float
    n_win: int
    span_s: float


def _rows(ra: RateArrays, span: Span, reset_too: bool) -> np.ndarray:
    """The rows residuals.sql's `r` reads (rates ending after t_from, starting before t_to),
    ascending (by port, then time)."""
    gap_us = np.rint(ra.interval_s * 1e6).astype(np.int64)
    keep = (ra.ts_us > span.t0_us) & (ra.ts_us - gap_us < span.t_to_us) & (ra.interval_s > 0)
    if not reset_too:
        keep &= ~ra.reset
    return np.flatnonzero(keep)


class _Groups:
    """Entries grouped by an integer key, each group's entries consecutive (the entries come
    nearly in key order: an interval's windows follow each other, and a port's intervals too,
    unless two overlap)."""

    def __init__(self, key: np.ndarray):
        self.order = None if key.size < 2 or bool((key[1:] >= key[:-1]).all()) \
            else np.argsort(key, kind="stable")
        key = self.take(key)
        self.starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size \
            else np.zeros(0, np.int64)
        self.keys = key[self.starts]
        self.count = np.diff(np.r_[self.starts, key.size])
        self.g = np.repeat(np.arange(self.starts.size), self.count)

    def take(self, a: np.ndarray) -> np.ndarray:
        """An entry array in group order."""
        return a if self.order is None else a[self.order]

    def total(self, weights: np.ndarray) -> np.ndarray:
        """Per group, the sum of (group-ordered) weights."""
        return np.bincount(self.g, weights=weights, minlength=self.starts.size)

    def any(self, mask: np.ndarray) -> np.ndarray:
        """Per group, whether a (group-ordered) mask is true for an entry."""
        return self.total(mask.astype(float)) > 0 if mask.size else np.zeros(0, bool)

    def least(self, x: np.ndarray) -> np.ndarray:
        return np.minimum.reduceat(x, self.starts) if x.size else x

    def greatest(self, x: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(x, self.starts) if x.size else x

    def median(self, x: np.ndarray) -> np.ndarray:
        """Per group, the median of (group-ordered) x as DuckDB's median gives it: the mean of
        the two middle values of an even count. Groups of one value need no sort; the others
        are sorted in a padded matrix per size class (powers of two), a step per class."""
        lo, hi = self.least(x), self.greatest(x)
        out = lo.copy()
        mixed = np.flatnonzero(lo < hi)
        size = self.count[mixed]
        width = 2
        while mixed.size:
            cls = size <= width
            sel, n = mixed[cls], size[cls]
            if sel.size:
                m = np.full((sel.size, width), np.inf)
                rank = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
                m[np.repeat(np.arange(sel.size), n), rank] = \
                    x[np.repeat(self.starts[sel], n) + rank]
                m.sort(axis=1)
                r = np.arange(sel.size)
                out[sel] = np.where(n % 2 == 0, (m[r, (n - 1) // 2] + m[r, n // 2]) / 2,
                                    m[r, n // 2])
            mixed, size, width = mixed[~cls], size[~cls], width * 2
        return out


def _expand(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row i with every slot first[i] .. last[i] (windows or boundaries): (row, slot)."""
    span = np.maximum(last - first, -1) + 1
    rows = np.repeat(np.arange(first.size), span)
    starts = np.cumsum(span) - span
    slot = first[rows] + (np.arange(rows.size) - starts[rows])
    return rows, slot


@dataclass
class Sums:
    """Per (port code, window or boundary) key, in ascending key order: columns of values, and
    for those SQL's sum may leave NULL (no row counted), where each is present."""

    pc: np.ndarray
    slot: np.ndarray  # the window w (port_windows) or the boundary b (port_edges)
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]

    def to_arrow(self, slot: str) -> pa.Table:
        """The columns as an Arrow table: pc, `slot`, then each column (NULL where absent)."""
        cols = {"pc": pa.array(self.pc.astype(np.int32)), slot: pa.array(self.slot)}
        for name, v in self.values.items():
            m = self.present.get(name)
            cols[name] = pa.array(v, mask=None if m is None else ~m)
        return pa.table(cols)


def port_windows(ra: RateArrays, span: Span) -> Sums:
    """`_resid_ports` but its port names and `window_secs` (residuals.py adds them): per port
    code `pc` and window `w` that its intervals overlap, the columns of residuals.sql's
    port_windows. Each byte and packet counter is counted over its own interval (`own_s`)."""
    src = _rows(ra, span, reset_too=True)
    W = span.window_s
    t1 = (ra.ts_us[src] - span.t0_us) / 1e6
    interval = ra.interval_s[src]
    t0 = t1 - interval
    rows, w = _expand(np.maximum(np.floor(t0 / W).astype(np.int64), 0),
                      np.minimum(np.floor(t1 / W), span.n_win - 1).astype(np.int64))
    right = np.minimum(np.minimum(t1[rows], (w + 1) * W), span.span_s)
    o = right - np.maximum(np.maximum(t0[rows], w * W), 0)
    on = np.flatnonzero(o > 0)
    grp = _Groups(ra.pc[src[rows[on]]] * span.n_win + w[on])
    on = grp.take(on)  # the (interval, window) pieces, in group order
    rows, w, o, right = rows[on], w[on], o[on], right[on]
    piece = src[rows]  # the rate row of each piece
    out = Sums(grp.keys // span.n_win, grp.keys % span.n_win, {}, {})
    reset = ra.reset[piece]
    ok = ~reset
    # a read that carried none of the byte and packet counters (only queue or pause paths
    # arrived at that time) covers no second of them: its interval is the next read's
    some = np.zeros(piece.size, dtype=bool)
    for col in OWN_INTERVAL.values():
        some |= ra.valid(col, piece)
    m = ok & some
    out.values["secs"], out.present["secs"] = grp.total(np.where(m, o, 0.0)), grp.any(m)
    sums = {}
    interval_p = interval[rows]
    for c, col in OWN_INTERVAL.items():
        # the counter's seconds within the window: those of the row's interval, but where the
        # counter's own is shorter (the row's longest is another's), then from its own start
        valid = ra.valid(col, piece)
        oc = o.copy()
        odd, own = ra.own_interval(c, piece)
        oc[odd] = right[odd] - np.maximum(np.maximum(t1[rows[odd]] - own, w[odd] * W), 0)
        m = ok & valid & (oc > 0)
        present = grp.any(m)
        out.values[f"{c}_secs"], out.present[f"{c}_secs"] = grp.total(np.where(m, oc, 0.0)), present
        sums[c] = grp.total(np.where(m, ra.values[col][piece] * oc, 0.0)), present
    out.values["reset"] = grp.any(reset)
    out.values["samples"] = grp.count
    out.values["sample_s"] = grp.median(interval_p)
    # the quantum of the port's timestamps (a scrape stamped in ms, `date -Iseconds` in s): a
    # boundary interpolated between reads can be off by that much of the port's traffic
    ts = ra.ts_us[piece]
    whole_s, whole_ms = ~grp.any(ts % 1_000_000 != 0), ~grp.any(ts % 1000 != 0)
    out.values["quantum_s"] = np.where(whole_s, 1.0, np.where(whole_ms, 1e-3, 1e-6))
    for c, (v, present) in sums.items():
        out.values[c], out.present[c] = v, present
    for name, col in (("errors", "errors_per_s"), ("discards", "discards_per_s"),
                      ("tx_pause", "tx_pause_per_s")):
        out.values[name] = grp.total(np.nan_to_num(ra.values[col][piece], nan=0.0) * o)
    out.values["first_t"] = grp.least(t0[rows])
    out.values["last_t"] = grp.greatest(t1[rows])
    return out


def port_edges(ra: RateArrays, span: Span) -> Sums:
    """`_resid_edges` keyed by port code `pc`: per boundary b the sent rates over a sample
    interval (the port's median) either side of it (`*_per_s`), and their spread (`*_spread`:
    the highest less the lowest rate of the reads that overlap it, which bounds how far a
    count interpolated linearly at b can be off: a step inside the read interval that
    straddles b)."""
    src = _rows(ra, span, reset_too=False)
    W = span.window_s
    pc = ra.pc[src]  # ascending: each port's rows consecutive
    t1 = (ra.ts_us[src] - span.t0_us) / 1e6
    t0 = t1 - ra.interval_s[src]
    per_port = _Groups(pc)
    s = np.repeat(per_port.median(ra.interval_s[src]), per_port.count)  # the port's interval
    rows, b = _expand(np.maximum(np.ceil((t0 - s) / W).astype(np.int64), 0),
                      np.minimum(np.floor((t1 + s) / W), span.n_win).astype(np.int64))
    o = np.minimum(t1[rows], b * W + s[rows]) - np.maximum(t0[rows], b * W - s[rows])
    on = np.flatnonzero(o > 0)
    grp = _Groups(pc[rows[on]] * (span.n_win + 1) + b[on])
    on = grp.take(on)
    rows, o = rows[on], o[on]
    out = Sums(grp.keys // (span.n_win + 1), grp.keys % (span.n_win + 1), {}, {})
    for name, col in (("packets_per_s", "tx_packets_per_s"), ("bytes_per_s", "tx_bytes_per_s")):
        v = ra.values[col][src[rows]]
        m = ~np.isnan(v)
        num, den = grp.total(np.where(m, v * o, 0.0)), grp.total(np.where(m, o, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            out.values[name] = num / den
        out.present[name] = grp.any(m) & (den != 0)
        spread = name.replace("_per_s", "_spread")
        out.values[spread] = (grp.greatest(np.where(m, v, -np.inf))
                              - grp.least(np.where(m, v, np.inf)))
        out.present[spread] = out.present[name]
    return out


# the _resid_ports columns link_residuals reads of each end in the window: the sender's (s_),
# the receiver's (r_); their first_t / last_t come from the span's reads (sf_, rf_)
SENDER = ("secs", "reset", "tx_bytes", "tx_bytes_secs", "tx_packets", "tx_packets_secs",
          "discards", "tx_pause", "samples", "sample_s", "quantum_s")
RECEIVER = ("secs", "reset", "rx_bytes", "rx_bytes_secs", "rx_packets", "rx_packets_secs",
            "errors", "discards", "samples", "sample_s", "quantum_s")


def link_pairs(ports: Sums, edges: Sums, tx: np.ndarray, rx: np.ndarray, n_win: int,
               n_pc: int) -> pa.Table:
    """Per link direction d (its sender's and receiver's port codes `tx[d]`, `rx[d]`, -1 for a
    port without rates) and window w where either end has rates: both ends' columns of that
    window (NULL where the end has no row there), each end's first and last read over the
    whole span, and the sender's rates at the window's two boundaries: what residuals.sql's
    link_residuals joined `_resid_ports`, `reads` and `_resid_edges` for, as gathers."""
    row = np.full(n_pc * n_win, -1, dtype=np.int64)
    row[ports.pc * n_win + ports.slot] = np.arange(ports.pc.size)
    edge = np.full(n_pc * (n_win + 1), -1, dtype=np.int64)
    edge[edges.pc * (n_win + 1) + edges.slot] = np.arange(edges.pc.size)
    seen = np.zeros(n_pc + 1, dtype=bool)  # index -1 (no rates): never seen
    seen[ports.pc] = True
    first, last = np.full(n_pc + 1, np.inf), np.full(n_pc + 1, -np.inf)
    np.minimum.at(first, ports.pc, ports.values["first_t"])
    np.maximum.at(last, ports.pc, ports.values["last_t"])
    d = np.repeat(np.arange(tx.size), n_win)
    w = np.tile(np.arange(n_win), tx.size)
    keep = seen[tx[d]] | seen[rx[d]]
    d, w = d[keep], w[keep]
    t, r = tx[d], rx[d]
    cols: dict[str, pa.Array] = {"d": pa.array(d), "w": pa.array(w),
                                 "tx_seen": pa.array(seen[t]), "rx_seen": pa.array(seen[r])}

    def gather(sums: Sums, at: np.ndarray, name: str) -> pa.Array:
        ok = at >= 0
        v = sums.values[name][np.where(ok, at, 0)]
        m = sums.present.get(name)
        return pa.array(v, mask=~(ok if m is None else ok & m[np.where(ok, at, 0)]))

    s_at = np.where(t >= 0, row[t * n_win + w], -1)
    r_at = np.where(r >= 0, row[r * n_win + w], -1)
    for prefix, at, names in (("s_", s_at, SENDER), ("r_", r_at, RECEIVER)):
        cols[prefix + "present"] = pa.array(at >= 0)
        for name in names:
            cols[prefix + name] = gather(ports, at, name)
    for prefix, p in (("sf_", t), ("rf_", r)):  # the end's reads over the whole span
        ok = seen[p]
        cols[prefix + "first_t"] = pa.array(first[p], mask=~ok)
        cols[prefix + "last_t"] = pa.array(last[p], mask=~ok)
    for prefix, b in (("e0_", w), ("e1_", w + 1)):
        at = np.where(t >= 0, edge[t * (n_win + 1) + b], -1)
        for name in ("packets_per_s", "bytes_per_s", "packets_spread", "bytes_spread"):
            cols[prefix + name] = gather(edges, at, name)
    return pa.table(cols)


def span_of(t_from, t_to, window_s: float, n_win: int) -> Span:
    """The Span of residuals.py's Windows."""
    return Span(epoch_us(t_from), epoch_us(t_to), window_s, n_win,
                (t_to - t_from).total_seconds())


@dataclass
class PortSums:
    """A span's port_windows and port_edges, and the names of the port codes they use."""

    span: Span
    windows: Sums
    edges: Sums
    ports: list[str]
    devices: list[str]


# connection -> the PortSums its replay prepared (`keep_sums`): the residuals of the same
# windows read them after the rate arrays are gone
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def keep_sums(con: duckdb.DuckDBPyConnection, span: Span) -> None:
    """Compute the span's sums now, from the connection's rate arrays, and keep them for
    `sums_for` (the replay, before it lets the arrays go: 0.3 GB kept instead of 0.85)."""
    _KEPT[con] = _compute(con, span)


def sums_for(con: duckdb.DuckDBPyConnection, span: Span) -> PortSums:
    """The span's sums: kept ones (`keep_sums`) of the same span, else computed now."""
    kept = _KEPT.get(con)
    if kept is not None and kept.span == span:
        return kept
    return _compute(con, span)


def _compute(con: duckdb.DuckDBPyConnection, span: Span) -> PortSums:
    """The span's sums: the store's copy for this span (replay.analysis_cache), else from the
    rate arrays (and kept there)."""
    params = dataclasses.astuple(span)
    parts = {name: analysis_cache.load_arrays(con, name, params)
             for name in ("port_windows", "port_edges", "port_codes")}
    if all(p is not None for p in parts.values()):
        codes = parts["port_codes"]
        return PortSums(span, _sums_of(parts["port_windows"]), _sums_of(parts["port_edges"]),
                        codes["ports"].tolist(), codes["devices"].tolist())
    ra = rate_arrays(con)
    out = PortSums(span, port_windows(ra, span), port_edges(ra, span), ra.ports, ra.devices)
    for name, sums in (("port_windows", out.windows), ("port_edges", out.edges)):
        analysis_cache.save_arrays(con, name, params, _arrays_of(sums))
    analysis_cache.save_arrays(con, "port_codes", params,
                               {"ports": np.array(out.ports, dtype=object),
                                "devices": np.array(out.devices, dtype=object)})
    return out


def _arrays_of(sums: Sums) -> dict[str, np.ndarray]:
    """A Sums as flat named arrays (`_sums_of` reads them back)."""
    return {"pc": sums.pc, "slot": sums.slot, **{f"v_{k}": v for k, v in sums.values.items()},
            **{f"p_{k}": v for k, v in sums.present.items()}}


def _sums_of(arrays: dict[str, np.ndarray]) -> Sums:
    return Sums(arrays["pc"], arrays["slot"],
                {k[2:]: v for k, v in arrays.items() if k.startswith("v_")},
                {k[2:]: v for k, v in arrays.items() if k.startswith("p_")})


def forget_sums(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the connection's kept sums."""
    _KEPT.pop(con, None)
