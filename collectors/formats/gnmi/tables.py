"""The reader's per-file name tables and sample batches (the per-record fast path's storage)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import numpy as np
import polars as pl

from collectors.core.source import Sink, SourceFile
from collectors.formats.gnmi.paths import _CACHE_MAX, _EPOCHS, _ID_SPAN, Rows
from collectors.formats.gnmi.scan import _slow_frame

# the per-record fast path: records whose values are all plain numbers gather per record (values,
# context id, template offset, ts, line) and become a polars frame per batch of samples


class _Tables:
    """A reader's per-file tables of names (contexts, templates) and its pending samples."""

    def __init__(self, src: SourceFile, sink: Sink) -> None:
        self.sink = sink
        self.hint = src.host_hint
        self.devices: dict[Any, str] = {}
        # tags -> (device, ifname, qualifier parts, qualifier, context id)
        self.tags: dict[tuple, tuple[str, str, tuple, str, int]] = {}
        # Samples of records read value by value gather here (ts, device, ifname, metric,
        # qualifier, value, line, and `pos`: how many fast samples were pending before it).
        self.cols: tuple[list, ...] = ([], [], [], [], [], [], [], [])
        # Records whose values are all plain numbers (the fast path) keep only their floats and,
        # per record, a context id (device, tag ifname, tag qualifier), the offset of a template
        # (per value: path ifname, path qualifier, metric), the value count, ts and line; they
        # are counted as loaded when they reach the sink.
        self.f_vals: list[float] = []
        self.f_meta: list[int] = []  # per record: context id, template offset, count, ts, line
        self.epoch = 0  # how many times the name tables were reset (a part of series ids)
        self._reset_tables()

    def _reset_tables(self) -> None:
        self.epoch += 1
        self.tags.clear()
        self.ctx_dev: list[str] = []
        self.ctx_if: list[str] = []
        self.ctx_qual: list[str] = []
        self.dev_ctx: dict[str, int] = {}  # device -> context of a notification
        self.src_ctx: dict[str, int] = {}  # `source` -> context of a notification
        self.t_if: list[str] = []
        self.t_qual: list[str] = []
        self.t_metric: list[str] = []
        self.t_own: list[bool] = []  # the row's qualifier is the template's, not the context's
        self.ev_tmpl: dict[tuple, tuple[int, bool]] = {}  # event xpaths -> (offset, has keys)
        self.ev_tmpl_ctx: dict[tuple, int] = {}  # (context, xpaths) -> offset, merged qualifiers
        self.js_tmpl: dict[tuple, int] = {}  # (prefix, update paths) -> offset
        self.line_plans: dict[str, tuple | None] = {}  # vectorized pass: line key -> plan
        self._names_cache: tuple | None = None

    def _context(self, dev: str, ifname: str, qual: str) -> int:
        self.ctx_dev.append(dev)
        self.ctx_if.append(ifname)
        self.ctx_qual.append(qual)
        return len(self.ctx_dev) - 1

    def _template(self, rows: list[tuple[str, str, str, bool]]) -> int:
        off = len(self.t_metric)
        for ifname, qual, metric, own in rows:
            self.t_if.append(ifname)
            self.t_qual.append(qual)
            self.t_metric.append(metric)
            self.t_own.append(own)
        return off

    def sample(self, ts: int, dev: str, ifname: str, metric: str, value: float, qual: str) -> None:
        c = self.cols
        c[0].append(ts)
        c[1].append(dev)
        c[2].append(ifname)
        c[3].append(metric)
        c[4].append(qual)
        c[5].append(value)
        c[6].append(self.sink.current_line)
        c[7].append(len(self.f_vals))

    def take(self) -> Rows:
        """The samples gathered so far, in record order; counts the fast records as loaded."""
        cols = self.cols
        out: Rows = None
        if self.f_meta:
            sink = self.sink
            sink.accept(len(self.f_meta) // 5)
            sink.current_line = max(sink.current_line, self.f_meta[-1])
            out = self._fast_frame(np.array(self.f_meta, dtype=np.int64).reshape(-1, 5),
                                   pl.Series(self.f_vals, dtype=pl.Float64))
            if cols[0]:
                out = self._merge(out, cols)
            self.f_vals, self.f_meta = [], []
        elif cols[0]:
            out = _slow_frame(cols)
            if out is None:
                out = cols[:7]
        if cols[0]:
            self.cols = ([], [], [], [], [], [], [], [])
        return out

    def pending(self) -> int:
        """Samples gathered and not taken yet."""
        return len(self.f_vals) + len(self.cols[0])

    def maybe_reset(self) -> None:
        """Forget the name tables when they grew big (between blocks: no plan is pending)."""
        if len(self.ctx_dev) >= _CACHE_MAX or len(self.t_metric) >= _CACHE_MAX:
            self._reset_tables()

    def _names(self) -> tuple:
        """The context and template tables as polars Series, rebuilt only when they grew."""
        nc, nt = len(self.ctx_dev), len(self.t_metric)
        cached = self._names_cache
        if cached is None or cached[0] != nc:
            ctx = pl.DataFrame({"d": self.ctx_dev, "i": self.ctx_if, "q": self.ctx_qual},
                               schema={"d": pl.String, "i": pl.String, "q": pl.String})
            has_if = (ctx["i"].str.len_bytes() > 0).to_numpy()
            ctx_part = (nc, ctx["d"], ctx["i"], ctx["q"], has_if, bool(has_if.all()),
                        not has_if.any(), not any(self.ctx_qual))
        else:
            ctx_part = cached[:8]
        if cached is None or cached[8] != nt:
            tmpl = pl.DataFrame({"i": self.t_if, "q": self.t_qual, "m": self.t_metric},
                                schema={"i": pl.String, "q": pl.String, "m": pl.String})
            own = np.array(self.t_own, dtype=bool)
            tmpl_part = (nt, tmpl["i"], tmpl["q"], tmpl["m"], own, bool(own.all()),
                         not own.any(), not any(self.t_qual))
        else:
            tmpl_part = cached[8:]
        self._names_cache = ctx_part + tmpl_part
        return self._names_cache

    def _fast_frame(self, meta: np.ndarray, values: pl.Series) -> pl.DataFrame:
        """The samples of fast records: names gathered from the context and template tables.

        `meta` has a row per record (context id, template offset, value count, ts, line) and
        `values` the records' values one after another. Sample j of a record takes its device
        (and the tag ifname and qualifier, when the record has them) from the record's context
        row, and its path ifname, qualifier and metric from row `offset + j` of the record's
        template.
        """
        (_, c_dev, c_if, c_qual, has_if, all_if, no_if, no_cq,
         _, t_if, t_qual, t_metric, own, all_own, no_own, no_tq) = self._names()
        n = values.len()
        counts = meta[:, 2]
        k = int(counts[0])
        rep: Any = k if (counts == k).all() else counts
        if type(rep) is int:
            trow = (meta[:, 1, None] + np.arange(k, dtype=np.int64)).ravel()
        else:
            starts = np.cumsum(counts) - counts
            trow = np.repeat(meta[:, 1] - starts, counts)
            trow += np.arange(n, dtype=np.int64)
        cid = np.repeat(meta[:, 0], rep)
        if all_if:
            ifname = c_if.gather(cid)
        elif no_if:
            ifname = t_if.gather(trow)
        else:
            pick = has_if[cid]
            ifname = pl.select(pl.when(pl.lit(pick)).then(pl.lit(c_if.gather(cid)))
                               .otherwise(pl.lit(t_if.gather(trow)))).to_series()
        if no_cq and no_tq:
            qual = pl.Series([""], dtype=pl.String).new_from_index(0, n)
        elif all_own:
            qual = t_qual.gather(trow)
        elif no_own:
            qual = c_qual.gather(cid)
        else:
            pick = own[trow]
            qual = pl.select(pl.when(pl.lit(pick)).then(pl.lit(t_qual.gather(trow)))
                             .otherwise(pl.lit(c_qual.gather(cid)))).to_series()
        frame = pl.DataFrame({
            "ts": np.repeat(meta[:, 3], rep),
            "device": c_dev.gather(cid),
            "ifname": ifname,
            "metric": t_metric.gather(trow),
            "qualifier": qual,
            "value": values,
            "line": np.repeat(meta[:, 4], rep),
        })
        if n and int(cid.max()) < _ID_SPAN and int(trow.max()) < _ID_SPAN:
            # the names are a function of (context, template row) until the tables reset: the
            # series id the store finds runs by (`collectors.store.frames.with_predecessors`)
            epoch = (self.epoch % _EPOCHS) * _ID_SPAN * _ID_SPAN
            frame = frame.with_columns(sid=pl.Series(epoch + cid * _ID_SPAN + trow))
        return frame

    def _merge(self, frame: pl.DataFrame, cols: tuple[list, ...]) -> Rows:
        """Interleave the value-by-value samples with the fast ones, in record order.

        A value-by-value sample written while `pos` fast samples were pending goes after those.
        Timestamps beyond Int64 make it column lists of Python values.
        """
        frame = _no_sid(frame)  # type: ignore[assignment]
        pos = np.array(cols[7], dtype=np.int64)
        n, m = frame.height, len(cols[0])
        slow_frame = _slow_frame(cols)
        if slow_frame is None:  # timestamps beyond Int64: keep Python ints
            fast = frame.rows()
            out: tuple[list, ...] = ([], [], [], [], [], [], [])
            slow = list(zip(*cols[:7], strict=True))
            j = 0
            for i, row in enumerate(fast):
                while j < m and cols[7][j] <= i:
                    for col, v in zip(out, slow[j], strict=True):
                        col.append(v)
                    j += 1
                for col, v in zip(out, row, strict=True):
                    col.append(v)
            for k in range(j, m):
                for col, v in zip(out, slow[k], strict=True):
                    col.append(v)
            return out
        fast_at = np.arange(n, dtype=np.int64)
        fast_at += np.searchsorted(pos, fast_at, side="right")
        order = np.empty(n + m, dtype=np.int64)
        order[fast_at] = np.arange(n, dtype=np.int64)
        order[pos + np.arange(m, dtype=np.int64)] = np.arange(n, n + m, dtype=np.int64)
        return pl.concat([frame, slow_frame]).select(pl.all().gather(order))

    # stream items


def _no_sid(x: Rows) -> Rows:
    """Samples without series ids: mixed with samples that have none, they would mean nothing."""
    return x.drop("sid") if type(x) is pl.DataFrame and "sid" in x.columns else x


def _rows(x: pl.DataFrame | tuple[list, ...]) -> list[tuple]:
    return x.rows() if type(x) is pl.DataFrame else list(zip(*x, strict=True))


def _merge_sorted(a: Rows, b: Rows) -> Rows:
    """Two sets of samples, each in line order, on disjoint lines, as one in line order."""
    if a is None or (type(a) is pl.DataFrame and a.height == 0):
        return b
    if b is None:
        return a
    if not (type(a) is pl.DataFrame and type(b) is pl.DataFrame and a.columns == b.columns):
        a, b = _no_sid(a), _no_sid(b)  # ids of one reader's tables mean the same in both
    if type(a) is pl.DataFrame and type(b) is pl.DataFrame:
        return a.merge_sorted(b, key="line") if b.height else a
    rows = sorted([*_rows(a), *_rows(b)], key=itemgetter(6))  # stable
    return tuple(list(c) for c in zip(*rows, strict=True))
