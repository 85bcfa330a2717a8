"""gnmic output: the default `json` format and the `event` format (design section 4).

Both parsers share one reader. The stream is cut into JSON documents: one per line on the fast
path (`orjson.loads` of the whole line), otherwise through a small brace-depth scanner that
understands JSON strings, so pretty-printed objects, concatenated objects and top-level arrays
stream without loading the file. A record is one top-level JSON object, or one object element of
a top-level array (gnmic prints `event` messages as an array per notification), numbered by the
line it starts on. gnmic's plain-text status lines between objects are rejects.

Records whose values are all plain numbers (Cumulus counters as numeric strings, the bulk of any
capture) take a fast path: per record only the floats and a few ids are kept (the tag context, a
template of names for the record's paths, cached), and each batch becomes one polars frame by
gathering names from those tables. Any other record, or any odd value (enums, text, containers,
numbers float() reads but that do not start like one), goes value by value; both paths give the
same rows in the same order, with the same accounting.

Faster still, for the shapes real captures are made of (gnmic's split events and one-update
notifications: one value per line, a few hundred bytes of JSON around it), whole blocks of lines
are read with polars string kernels (`_Lines`): a line in gnmic's own member order with one plain
number or status word is checked by one pattern and cut by literal finds, and lines of the same
shape (everything but timestamp, time and value) share the plan the per-record fast path makes
from the first of them. Every other line of the block is read as above, in file order.

Numeric samples keep the leaf name (`in-octets`, `transmit-octets`); `counter_map_gnmi.csv`
maps them to canonical counters. Interface keys (`interface[name=..]`, `port[port-id=..]`, the
event tags `interface_name`, `port_port-id`) give the ifname; other keys become qualifiers
(`queue[name=3]` -> `queue=3`, `switch-priority[priority=3]` -> `priority=3`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from typing import IO, Any

import numpy as np
import orjson
import polars as pl

from collectors.lineblocks import BLOCK_BYTES, LineBlock, line_blocks
from collectors.schema import screen
from collectors.source import Sink, SourceFile, concat_samples
from collectors.timeparse import TS_MAX_NS, TS_MIN_NS, TimeError, parse_any, parse_iso, time_problem

FAMILY = "gnmi"

# IF-MIB ifOperStatus / ifAdminStatus codes for the OpenConfig (and SR Linux) enum spellings
IFMIB = {"UP": 1, "DOWN": 2, "TESTING": 3, "UNKNOWN": 4, "DORMANT": 5, "NOT_PRESENT": 6,
         "LOWER_LAYER_DOWN": 7}
STATUS_METRICS = frozenset({"oper-status", "admin-status", "oper-state", "admin-state"})
_SPEED_UNIT = {"MB": 1.0, "GB": 1e3, "TB": 1e6, "M": 1.0, "G": 1e3, "T": 1e6}
_OC_SPEED = re.compile(r"(?:[\w.-]+:)?SPEED_(\d+(?:\.\d+)?)(MB|GB|TB)")
_SRL_SPEED = re.compile(r"(\d+(?:\.\d+)?)([MGT])")  # SR Linux spells port-speed "100G"

_IF_ELEMS = frozenset({"interface", "port"})
_IF_KEYS = frozenset({"name", "interface-id", "port-id"})
_LIST_KEYS = ("name", "interface-id", "port-id", "index", "id", "priority", "queue-id")
_NUMSTART = frozenset("0123456789-+.")
_NO_DEVICE = "no 'source' in the record and the file name names no device"
_CACHE_MAX = 200_000
_ID_SPAN = 1 << 24  # series id: (reset count mod _EPOCHS, context id, template row), 24 bits each
_EPOCHS = 1 << 13
MAX_DOC_CHARS = 64 * 1024 * 1024
# the per-record fast path: records whose values are all plain numbers gather per record (values,
# context id, template offset, ts, line) and become a polars frame per batch of samples
_BATCH = 200_000  # samples handed to the sink at a time (at block ends)
_PROBE_LINES = 64  # lines a file's (a block's) head is probed with for the vectorized pass
_TS_NS = 100_000_000_000_000_000  # an int timestamp at least this large is already ns
_I64 = 2**63 - 1
_TWO64 = float(1 << 64)
_NUMTYPES = frozenset({int, float, bool})
_FIRST = itemgetter(0)
_GET_PATH = itemgetter("Path")
_GET_VALUES = itemgetter("values")
_dict_values = dict.values
Rows = pl.DataFrame | tuple[list, ...] | None  # samples: a frame, or column lists (huge ts)


# -- paths ------------------------------------------------------------------------------------
def split_path(path: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """`a/b[k=v]/c` -> [(a, []), (b, [(k, v)]), (c, [])], module prefixes and origin dropped.

    Key values may hold `/` (`port-id=1/1/c1/1`) and `\\]` escapes; `openconfig:` origins and
    `srl_nokia-interfaces:` module prefixes are stripped from element names.
    """
    elems: list[tuple[str, list[tuple[str, str]]]] = []
    name: list[str] = []
    keys: list[tuple[str, str]] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c == "/":
            _close_elem(elems, name, keys)
            name, keys = [], []
            i += 1
        elif c == "[":
            eq = path.find("=", i)
            if eq < 0:
                break
            key = path[i + 1:eq].rpartition(":")[2]
            i = eq + 1
            value: list[str] = []
            while i < n and path[i] != "]":
                if path[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(path[i])
                i += 1
            keys.append((key, "".join(value)))
            i += 1
        else:
            name.append(c)
            i += 1
    _close_elem(elems, name, keys)
    return elems


def _close_elem(elems: list, name: list[str], keys: list[tuple[str, str]]) -> None:
    bare = "".join(name).strip().rpartition(":")[2]
    if bare or keys:
        elems.append((bare, keys))


def _key_role(elem: str, key: str) -> str | None:
    """'' when the key names the interface, a qualifier name, or None to ignore it."""
    if not elem:
        return key or None
    if elem in _IF_ELEMS and key in _IF_KEYS:
        return ""
    if elem == "reason" and key == "severity":  # WJH: the reason id implies its severity
        return None
    return elem if key in ("name", "id", "index") else key


def _qual(parts: Iterable[tuple[str, str]]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(parts))


# (ifname, qualifier parts, qualifier, metric) for a path, cached: a stream repeats its paths
PathInfo = tuple[str, tuple[tuple[str, str], ...], str, str]
_PATHS: dict[str, PathInfo] = {}


def path_info(path: str) -> PathInfo:
    """The ifname, qualifier and metric (leaf name) a gNMI path addresses."""
    info = _PATHS.get(path)
    if info is None:
        info = _classify(path)
        if len(_PATHS) >= _CACHE_MAX:
            _PATHS.clear()
        _PATHS[path] = info
    return info


def _classify(path: str) -> PathInfo:
    ifname = ""
    parts: dict[str, str] = {}
    elems = split_path(path)
    for elem, keys in elems:
        for key, value in keys:
            role = _key_role(elem, key)
            if role == "" and not ifname:
                ifname = value
            elif role is not None:
                parts.setdefault(role or elem, value)
    metric = elems[-1][0] if elems else ""
    tparts = tuple(sorted(parts.items()))
    return ifname, tparts, _qual(tparts), metric


def _tag_role(tag: str) -> str | None:
    """Event tags are `<elem>_<key>` for path keys (gnmic); anything else is metadata."""
    role = _TAG_ROLES.get(tag, _UNSET)
    if role is _UNSET:
        elem, sep, key = tag.partition("_")
        if not sep or elem == "meta":
            role = None
        else:
            role = _key_role(elem.rpartition("/")[2].rpartition(":")[2], key)
        if len(_TAG_ROLES) >= _CACHE_MAX:
            _TAG_ROLES.clear()
        _TAG_ROLES[tag] = role
    return role


_UNSET: Any = object()
_TAG_ROLES: dict[str, str | None] = {}


def _merge(a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]) -> str:
    merged = dict(a)
    merged.update(b)
    return _qual(merged.items())


def _speed_mbps(value: str, metric: str) -> float | None:
    """OpenConfig `SPEED_400GB` (any leaf) or SR Linux `100G` (port-speed) in Mb/s."""
    m = _OC_SPEED.fullmatch(value)
    if m is None and metric == "port-speed":
        m = _SRL_SPEED.fullmatch(value)
    return float(m.group(1)) * _SPEED_UNIT[m.group(2)] if m else None


def _ts(value: Any) -> int | None:
    """gnmic timestamps are ns; seconds/ms/us (set by event processors) are scaled up. None
    when it is no time, or not a valid one (`timeparse.TS_MIN_NS`..)."""
    n = _ts_any(value)
    return n if n is not None and TS_MIN_NS <= n < TS_MAX_NS else None


def _ts_reason(value: Any, what: str) -> str:
    """Why a record's timestamp `value` is not usable: out of range (naming it), or no time."""
    n = _ts_any(value)
    why = time_problem(n, value) if n is not None else None
    return why or f"{what} has no usable 'timestamp' (ns)"


def _ts_any(value: Any) -> int | None:
    t = type(value)
    if t is int:
        n = value
    elif t is float:
        if value != value or value in (float("inf"), float("-inf")):
            return None
        n = int(value)
    elif t is str:
        try:
            return parse_any(value)
        except TimeError as exc:
            return TS_MAX_NS if "outside" in str(exc) else None  # any time out of range
        except (ValueError, OverflowError):
            return None
    else:
        return None
    if n >= 100_000_000_000_000_000:
        return n
    if n >= 100_000_000_000_000:
        return n * 1000
    if n >= 100_000_000_000:
        return n * 1_000_000
    return n * 1_000_000_000 if n > 0 else None


def _plain(floats: list[float]) -> bool:
    """Whether a record's values all pass the value policy whatever their kind: finite, in
    0..2^64 (three C loops; a NaN or an infinity makes the sum times 0 NaN). The others are read
    value by value, where `_value_reason` decides."""
    return min(floats) >= 0 and max(floats) < _TWO64 and (sum(floats) * 0 == 0)


_OTHER_ROWS = ("text_samples", "events")  # what a record writes to the sink directly


def _marks(sink: Sink) -> tuple[int, ...]:
    return tuple(len(sink.buffers[t]["ts"]) for t in _OTHER_ROWS)


def _drop_since(sink: Sink, marks: tuple[int, ...]) -> None:
    """Take back the text samples and events a rejected record wrote (unless a batch of them
    went to the store meanwhile: a record of more than a batch's rows)."""
    for table, mark in zip(_OTHER_ROWS, marks, strict=True):
        buf = sink.buffers[table]
        if len(buf["ts"]) >= mark:
            for col in buf.values():
                del col[mark:]


def _value_reason(cols: tuple[list, ...], before: int) -> str | None:
    """The value policy's reason to reject the record whose samples are `cols[...][before:]`."""
    values = cols[5]
    if len(values) == before or _plain(values[before:]):
        return None
    got = screen(np.array(values[before:], dtype=np.float64), "gnmi",
                 lambda rows: [cols[3][before + i] for i in rows.tolist()])
    return next(iter(got.values()), None)


def _float(value: Any) -> float | None:
    """A JSON number or numeric string as float; None otherwise (booleans included)."""
    if type(value) not in (int, float, str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):
        return None


def _floats(values: Any) -> list[float] | None:
    """The values as floats when every one is what the per-value path turns into a plain sample:
    a JSON number or boolean, or a string that starts like a number and that float() reads.
    None when any value needs that path (enums, text, containers, huge integers)."""
    try:
        out = list(map(float, values))
    except (ValueError, TypeError, OverflowError):
        return None
    try:
        return out if _NUMSTART.issuperset(map(_FIRST, values)) else None
    except TypeError:  # numbers among the values: fine when all are numbers
        return out if _NUMTYPES.issuperset(map(type, values)) else None


def _compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, default=str)


# -- cutting the stream into documents -------------------------------------------------------
_TOKENS = re.compile(r'[{}\[\]"\\]')


class _Scanner:
    """Cuts lines into JSON documents, tracking brace depth outside strings.

    `feed` returns items: ("doc", line, text) for an object, ("junk", line, reason, raw) for text
    outside objects, ("trunc", line, text) for an object cut short, ("notobj", line, text) for a
    non-object array element, ("big", line, tail) for an object over MAX_DOC_CHARS. Inside a
    top-level array the objects one level down are the documents. JSON strings cannot span
    lines, so an unclosed string ends at the line end; an unindented `{` or `[` while an object
    is open means the object was truncated (pretty printers indent nested lines), which
    resynchronizes the stream.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.in_array = False
        self.elem_obj = True
        self.buf: list[str] = []
        self.size = 0
        self.start = 0
        self.oversize = False

    def _reset(self) -> None:
        self.depth, self.in_array, self.buf, self.size, self.oversize = 0, False, [], 0, False

    def _open_text(self) -> str:
        return "" if self.oversize else "".join(self.buf)

    def feed(self, lineno: int, line: str) -> list[tuple]:
        out: list[tuple] = []
        if self.depth > self.in_array and line[:1] in ("{", "["):
            out.append(("trunc", self.start, self._open_text()))
            self._reset()
        in_str = False
        skip = -1
        piece = 0  # where the open document's text starts on this line
        last = 0  # end of the last token seen at separator depth
        junk = False
        for m in _TOKENS.finditer(line):
            p = m.start()
            if p == skip:
                continue
            c = m.group()
            if in_str:
                if c == "\\":
                    skip = p + 1
                elif c == '"':
                    in_str = False
                continue
            base = 1 if self.in_array else 0
            if c == '"':
                in_str = True
                junk = junk or self.depth == base
            elif c in "{[":
                if self.depth == base:
                    junk = junk or bool(line[last:p].strip(" \t,"))
                    if base == 0 and c == "[":
                        self.in_array, self.depth, last = True, 1, p + 1
                        continue
                    self.start, self.elem_obj, piece = lineno, c == "{", p
                    self.buf, self.size, self.oversize = [], 0, False
                self.depth += 1
            elif self.depth == 0:
                junk = True  # a stray closer
            elif self.depth == base:  # the top-level array closes
                junk = junk or bool(line[last:p].strip(" \t,"))
                self.in_array, self.depth, last = False, 0, p + 1
            else:
                self.depth -= 1
                if self.depth == base:
                    kind = "big" if self.oversize else "doc" if self.elem_obj else "notobj"
                    text = self._open_text() + line[piece:p + 1]
                    out.append((kind, self.start, text))
                    self.buf, self.size, last = [], 0, p + 1
        if self.depth > self.in_array:
            self._keep(line[piece:])
        elif line[last:].strip(" \t,"):
            junk = True
        if junk:
            out.append(("junk", lineno, "text outside a JSON object", line))
        return out

    def _keep(self, text: str) -> None:
        if self.oversize:
            return
        self.size += len(text) + 1
        if self.size > MAX_DOC_CHARS:
            self.oversize, self.buf = True, []
        else:
            self.buf.append(text + "\n")

    def finish(self) -> list[tuple]:
        """Items for what is still open at the end of the file."""
        if self.depth > self.in_array:
            return [("trunc", self.start, self._open_text())]
        return []


# -- records ---------------------------------------------------------------------------------
_SAMPLES_SCHEMA = {"ts": pl.Int64, "device": pl.String, "ifname": pl.String, "metric": pl.String,
                   "qualifier": pl.String, "value": pl.Float64, "line": pl.Int64}


def _slow_frame(cols: tuple[list, ...]) -> pl.DataFrame | None:
    """The value-by-value samples as a frame; None when a timestamp is beyond Int64."""
    ts = cols[0]
    if min(ts) < -_I64 - 1 or max(ts) > _I64:
        return None
    return pl.DataFrame(dict(zip(Sink.TABLES["samples"], cols[:7], strict=True)),
                        schema=_SAMPLES_SCHEMA, strict=False)


class _Reader:
    """Turns decoded gnmic objects into sink rows, with per-file caches of names."""

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
            # series id the store finds runs by (`store.with_predecessors`)
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
    def item(self, item: tuple) -> None:
        kind, line = item[0], item[1]
        if kind == "doc":
            self.text_document(item[2], line)
        elif kind == "junk":
            self.reject_text(line, item[3])
        elif kind == "notobj":
            self.sink.reject(line, "array element is not a JSON object", item[2])
        elif kind == "big":
            self.sink.reject(line, f"JSON object longer than {MAX_DOC_CHARS} characters", item[2])
        else:
            self.sink.reject(line, "JSON object truncated: no closing brace", item[2])

    def reject_text(self, line: int, raw: str) -> None:
        reason = ("gnmic status line, not a notification" if raw.lstrip().startswith(
            ("received sync response", "received signal")) else "text outside a JSON object")
        self.sink.reject(line, reason, raw)

    def text_document(self, text: str, line: int) -> None:
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            try:
                doc = json.loads(text)  # also takes integers beyond 64 bits and NaN
            except json.JSONDecodeError as exc:
                where = f"line {line + exc.lineno - 1} column {exc.colno}"
                self.sink.reject(line, f"invalid JSON at {where}: {exc.msg}", text)
                return
            except RecursionError:
                self.sink.reject(line, "JSON nested too deeply", text)
                return
        self.document(doc, line, text)

    def document(self, doc: Any, line: int, raw: str) -> None:
        if type(doc) is dict:
            self.record(doc, line, raw)
        elif type(doc) is list:
            for elem in doc:
                if type(elem) is dict:
                    self.record(elem, line, raw)
                else:
                    self.sink.reject(line, "array element is not a JSON object", _compact(elem))
        else:
            self.sink.reject(line, "JSON value is not an object", raw)

    def record(self, obj: dict, line: int, raw: str) -> None:
        if "values" in obj:
            if self.fast_event(obj, line):
                return
        elif ("updates" in obj and "tags" not in obj and "sync-response" not in obj
              and self.fast_notification(obj, line)):
            return
        self.slow_record(obj, line, raw)

    def slow_record(self, obj: dict, line: int, raw: str) -> None:
        """One record read value by value: every check, reject reason and odd value."""
        sink = self.sink
        sink.current_line = line
        before = len(self.cols[0])
        marks = _marks(sink)
        try:
            if "values" in obj or "tags" in obj:
                reason = self.event(obj)
            elif "sync-response" in obj:
                reason = None
            elif "updates" in obj or "prefix" in obj or "timestamp" in obj or "deletes" in obj:
                reason = self.notification(obj)
            elif "notifications" in obj:
                reason = self.notifications(obj.get("notifications"))
            else:
                keys = ", ".join(list(obj)[:6]) or "none"
                reason = f"neither a gnmic notification nor an event (keys: {keys})"
        except Exception as exc:  # noqa: BLE001 - parse must never raise on content
            reason = f"could not read record: {exc!r}"[:200]
            for col in self.cols:  # a rejected record adds no samples
                del col[before:]
        if reason is None:
            reason = _value_reason(self.cols, before)
            if reason is not None:  # the value policy rejects the record whole
                for col in self.cols:
                    del col[before:]
                _drop_since(sink, marks)
        if reason is None:
            sink.accept()
        else:
            sink.reject(line, reason, raw)

    # the fast path: records whose every value is a plain number
    def fast_event(self, obj: dict, line: int) -> bool:
        """Gather an event whose values all become plain samples; False to read it value by
        value instead (anything unusual: the slow path decides, rejects and explains)."""
        plan = self.event_plan(obj)
        if plan is None:
            return False
        floats = _floats(obj["values"].values())
        if floats is None or not _plain(floats):
            return False
        self.f_vals += floats
        self.f_meta += (plan[0], plan[1], len(floats), obj["timestamp"], line)
        return True

    def event_plan(self, obj: dict) -> tuple[int, int] | None:
        """(context id, template offset) of an event that may take the fast path whatever its
        values (they must still all be plain numbers); None when it must not."""
        values = obj["values"]
        ts = obj.get("timestamp")
        tags = obj.get("tags")
        if (type(values) is not dict or not values or type(ts) is not int
                or not TS_MIN_NS <= ts < TS_MAX_NS or type(tags) is not dict):
            return None
        try:
            ctx = self.tags.get(tuple(tags.items()))
        except TypeError:
            return None
        if ctx is None:
            ctx = self.tag_context(tags)
        if not ctx[0]:
            return None
        keys = tuple(values)
        tmpl = self.ev_tmpl.get(keys)
        if tmpl is None:
            tmpl = self._event_template(keys)
        off = tmpl[0]
        if tmpl[1] and ctx[2]:  # keys in both tags and paths: qualifiers merge per context
            off = self.ev_tmpl_ctx.get((ctx[4], keys))
            if off is None:
                off = self._event_template_ctx(ctx, keys)
        return ctx[4], off

    def fast_notification(self, obj: dict, line: int) -> bool:
        """Gather a `json` notification of single-value updates whose values are all plain
        numbers; False to read it update by update instead."""
        plan = self.notification_plan(obj)
        if plan is None:
            return False
        floats = _floats(plan[2])
        if floats is None or not _plain(floats):
            return False
        self.f_vals += floats
        self.f_meta += (plan[0], plan[1], len(floats), obj["timestamp"], line)
        return True

    def notification_plan(self, obj: dict) -> tuple[int, int, list] | None:
        """(context id, template offset, values) of a notification of single-value updates
        that may take the fast path (its values must still all be plain numbers), else None."""
        ts = obj.get("timestamp")
        prefix = obj.get("prefix") or ""
        updates = obj["updates"]
        if (type(ts) is not int or not TS_MIN_NS <= ts < TS_MAX_NS or type(prefix) is not str
                or type(updates) is not list or not updates):
            return None
        try:
            paths = tuple(map(_GET_PATH, updates))
            # one value per update (unpacking fails on any other count, or on a non-object)
            vs = [v for (v,) in map(_dict_values, map(_GET_VALUES, updates))]
            off = self.js_tmpl.get((prefix, paths))
        except (KeyError, TypeError, ValueError):
            return None
        source = obj.get("source")
        cid = self.src_ctx.get(source) if type(source) is str else None
        if cid is None:
            dev = self.device(source)
            if not dev:
                return None
            cid = self._device_context(source, dev)
        if off is None:
            off = self._json_template(prefix, paths)
            if off is None:
                return None
        return cid, off, vs

    def _device_context(self, source: str | None, dev: str) -> int:
        cid = self.dev_ctx.get(dev)
        if cid is None:
            cid = self.dev_ctx[dev] = self._context(dev, "", "")
        if type(source) is str:
            self.src_ctx[source] = cid
        return cid

    def _event_template(self, keys: tuple) -> tuple[int, bool]:
        rows = []
        for xpath in keys:
            info = path_info(xpath)
            rows.append((info[0], info[2], info[3], bool(info[1])))
        tmpl = (self._template(rows), any(r[3] for r in rows))
        self.ev_tmpl[keys] = tmpl
        return tmpl

    def _event_template_ctx(self, ctx: tuple, keys: tuple) -> int:
        rows = []
        for xpath in keys:
            info = path_info(xpath)
            qual = _merge(ctx[2], info[1]) if info[1] else ctx[3]
            rows.append((info[0], qual, info[3], True))
        off = self.ev_tmpl_ctx[(ctx[4], keys)] = self._template(rows)
        return off

    def _json_template(self, prefix: str, paths: tuple) -> int | None:
        rows = []
        for path in paths:
            if type(path) is not str or not path:
                return None
            info = path_info(f"{prefix}/{path}" if prefix else path)
            rows.append((info[0], info[2], info[3], True))
        off = self.js_tmpl[(prefix, paths)] = self._template(rows)
        return off

    # names
    def device(self, source: Any) -> str | None:
        """The device of a record's `source`, else the file's host; None when neither."""
        if type(source) is not str:
            source = None
        dev = self.devices.get(source)
        if dev is None:
            if source and source.strip():
                dev = self.sink.device(source, fallback=self.hint)
            else:
                dev = self.hint or ""
            self.devices[source] = dev
        return dev or None

    def tag_context(self, tags: dict) -> tuple[str, str, tuple, str, int]:
        """(device, ifname, qualifier parts, qualifier, context id) from an event's tags."""
        try:
            key = tuple(tags.items())
            ctx = self.tags.get(key)
        except TypeError:  # unhashable tag values: not gnmic's, but must not fail
            key, ctx = None, None
        if ctx is None:
            ifname = ""
            parts: dict[str, str] = {}
            for tag, value in tags.items():
                role = _tag_role(str(tag))
                text = value if type(value) is str else _compact(value)
                if role == "" and not ifname:
                    ifname = text
                elif role:
                    parts.setdefault(role, text)
            tparts = tuple(sorted(parts.items())) if parts else ()
            dev, qual = self.device(tags.get("source")) or "", _qual(tparts) if parts else ""
            ctx = (dev, ifname, tparts, qual, self._context(dev, ifname, qual))
            if key is not None:
                if len(self.tags) >= _CACHE_MAX:
                    self.tags.clear()
                self.tags[key] = ctx
        return ctx

    # the two formats
    def event(self, obj: dict) -> str | None:
        raw_ts = obj.get("timestamp")
        ts = _ts(raw_ts)
        if ts is None:
            return _ts_reason(raw_ts, "event")
        values = obj.get("values")
        tags = obj.get("tags")
        if type(values) is not dict:
            if values is not None:
                return "event 'values' is not an object"
            values = {}
        if type(tags) is not dict:
            if tags is not None:
                return "event 'tags' is not an object"
            tags = {}
        if not values:
            return None
        try:
            ctx = self.tags[tuple(tags.items())]
        except (KeyError, TypeError):
            ctx = self.tag_context(tags)
        dev, t_if, t_parts, t_qual, _ = ctx
        if not dev:
            return _NO_DEVICE
        c_ts, c_dev, c_if, c_met, c_q, c_val, c_line, c_pos = self.cols
        line = self.sink.current_line
        pos = len(self.f_vals)
        paths = _PATHS
        for xpath, v in values.items():
            info = paths.get(xpath) or path_info(xpath)
            ifname = t_if or info[0]
            qual = (_merge(t_parts, info[1]) if t_parts else info[2]) if info[1] else t_qual
            t = type(v)
            if t is int or t is float or (t is str and v[:1] in _NUMSTART):
                try:
                    x = float(v)
                except (ValueError, OverflowError):
                    pass
                else:
                    c_ts.append(ts)
                    c_dev.append(dev)
                    c_if.append(ifname)
                    c_met.append(info[3])
                    c_q.append(qual)
                    c_val.append(x)
                    c_line.append(line)
                    c_pos.append(pos)
                    continue
            self.value(ts, dev, ifname, t_parts, qual, info[3], str(xpath), v, True)
        return None

    def check_notification(self, obj: dict) -> tuple[str | None, tuple]:
        """(reject reason or None, (ts, device, prefix, updates)) before any row is written."""
        ts = _ts(obj.get("timestamp"))
        why = None
        if ts is None and type(obj.get("time")) is str:
            try:
                ts = parse_iso(obj["time"])
            except TimeError as exc:
                why = str(exc) if "outside" in str(exc) else None
        if ts is None:
            if why is None and "timestamp" in obj:
                why = _ts_reason(obj["timestamp"], "notification")
            if why is None or "usable" in why:
                why = "notification has no usable 'timestamp' (ns) or 'time'"
            return why, ()
        prefix = obj.get("prefix") or ""
        updates = obj.get("updates") or []
        if type(prefix) is not str:
            return "notification 'prefix' is not a string", ()
        if type(updates) is not list:
            return "notification 'updates' is not a list", ()
        for upd in updates:
            if type(upd) is not dict or type(upd.get("Path") or "") is not str \
                    or type(upd.get("values") or {}) is not dict:
                return "malformed update: expected {\"Path\": string, \"values\": object}", ()
        if not updates:
            return None, ()
        dev = self.device(obj.get("source"))
        if not dev:
            return _NO_DEVICE, ()
        return None, (ts, dev, prefix, updates)

    def notification(self, obj: dict) -> str | None:
        reason, checked = self.check_notification(obj)
        if checked:
            self.updates(*checked)
        return reason

    def notifications(self, notes: Any) -> str | None:
        """`gnmic get` with extensions wraps its notifications: one record for them all."""
        if type(notes) is not list or not all(type(n) is dict for n in notes):
            return "'notifications' is not a list of objects"
        checks = [self.check_notification(note) for note in notes]
        for reason, _ in checks:
            if reason:
                return reason
        for _, checked in checks:
            if checked:
                self.updates(*checked)
        return None

    def updates(self, ts: int, dev: str, prefix: str, updates: list) -> None:
        for upd in updates:
            self.update(ts, dev, prefix, upd.get("Path") or "", upd.get("values") or {})

    def update(self, ts: int, dev: str, prefix: str, path: str, values: dict) -> None:
        full = f"{prefix}/{path}" if prefix and path else prefix or path
        sample = self.sample
        single = len(values) == 1
        for key, v in values.items():
            # gnmic keys `values` by the update path without its keys: the leaf is `Path` itself
            leaf = full if single else f"{prefix}/{key}" if prefix else str(key)
            info = _PATHS.get(leaf) or path_info(leaf)
            t = type(v)
            if t is int or t is float or (t is str and v[:1] in _NUMSTART):
                try:
                    sample(ts, dev, info[0], info[3], float(v), info[2])
                    continue
                except (ValueError, OverflowError):
                    pass
            self.value(ts, dev, info[0], (), info[2], info[3], leaf, v, True)

    # values that are not plain numbers
    def value(self, ts: int, dev: str, ifname: str, t_parts: tuple, qual: str, metric: str,
              path: str, v: Any, nested: bool) -> None:
        """Enums, booleans, nested JSON (containers, JSON inside strings) and text."""
        sink = self.sink
        t = type(v)
        if t is str:
            if metric in STATUS_METRICS and ifname:  # a service's state stays text
                code = IFMIB.get(v.upper().replace("-", "_"))
                if code:
                    self.sample(ts, dev, ifname, metric, float(code), qual)
                    return
            speed = _speed_mbps(v, metric)
            if speed is not None:
                self.sample(ts, dev, ifname, metric, speed, qual)
                return
            if nested and v[:1] in ("[", "{"):
                try:
                    decoded = orjson.loads(v)
                except orjson.JSONDecodeError:
                    decoded = None
                if type(decoded) in (list, dict):
                    self.nested(ts, dev, ifname, t_parts, qual, metric, path, decoded)
                    return
            try:
                if v[:1] in _NUMSTART:
                    self.sample(ts, dev, ifname, metric, float(v), qual)
                    return
            except ValueError:
                pass
            sink.text_sample(ts, dev, ifname, metric, v, qual)
        elif t is bool:
            self.sample(ts, dev, ifname, metric, 1.0 if v else 0.0, qual)
        elif t is int or t is float:
            x = _float(v)
            if x is None:
                sink.text_sample(ts, dev, ifname, metric, str(v), qual)
            else:
                self.sample(ts, dev, ifname, metric, x, qual)
        elif t is dict or t is list:
            self.flatten(ts, dev, ifname, t_parts, path, v, 0)
        elif v is not None:
            sink.text_sample(ts, dev, ifname, metric, _compact(v), qual)

    def nested(self, ts: int, dev: str, ifname: str, t_parts: tuple, qual: str, metric: str,
               path: str, decoded: Any) -> None:
        if type(decoded) is list and (metric == "drop" or "/wjh/" in path):
            self.wjh(ts, dev, ifname, qual, decoded)
        else:
            self.flatten(ts, dev, ifname, t_parts, path, decoded, 0)

    def wjh(self, ts: int, dev: str, ifname: str, qual: str, drops: list) -> None:
        """What Just Happened: one drop event per aggregate, and its count as a sample."""
        sink = self.sink
        for drop in drops:
            if type(drop) is not dict:
                sink.text_sample(ts, dev, ifname, "drop", _compact(drop), qual)
                continue
            port = drop.get("IngressPort")
            port = port if type(port) is str and port else ifname
            sink.event(ts, dev, port, "drop", _compact(drop))
            count = _float(drop.get("AggCount"))
            if count is not None:
                q = qual
                if "reason=" not in q and drop.get("ReasonId") is not None:
                    parts = [tuple(p.split("=", 1)) for p in q.split(",") if "=" in p]
                    q = _qual([*parts, ("reason", str(drop["ReasonId"]))])
                self.sample(ts, dev, port, "wjh-agg-count", count, q)

    def flatten(self, ts: int, dev: str, ifname: str, t_parts: tuple, path: str, v: Any,
                depth: int) -> None:
        """A JSON container value: one sample per leaf, list entries keyed like paths."""
        if depth > 48:
            info = path_info(path)
            self.sink.text_sample(ts, dev, info[0] or ifname, info[3], _compact(v), info[2])
            return
        if type(v) is dict:
            for key, sub in v.items():
                name = str(key).rpartition(":")[2]
                if name != "config":  # OpenConfig state mirrors config
                    self.flatten(ts, dev, ifname, t_parts, f"{path}/{name}", sub, depth + 1)
            return
        if type(v) is list and v and all(type(e) is dict for e in v):
            for entry in v:
                key = next((k for k in entry if str(k).rpartition(":")[2] in _LIST_KEYS
                            and type(entry[k]) in (str, int)), None)
                if key is None:
                    self.flatten(ts, dev, ifname, t_parts, path, entry, depth + 1)
                    continue
                kval = str(entry[key]).replace("\\", "\\\\").replace("]", "\\]")
                rest = {k: e for k, e in entry.items() if k != key}
                kname = str(key).rpartition(":")[2]
                self.flatten(ts, dev, ifname, t_parts, f"{path}[{kname}={kval}]", rest, depth + 1)
            return
        info = path_info(path)
        ifn = info[0] or ifname
        qual = _merge(t_parts, info[1]) if t_parts else info[2]
        if type(v) is list:
            self.sink.text_sample(ts, dev, ifn, info[3], _compact(v), qual)
        else:
            self.value(ts, dev, ifn, t_parts, qual, info[3], path, v, False)


def parse_stream(src: SourceFile, sink: Sink, vectorized: bool = True) -> None:
    """Read a gnmic `json` or `event` output file (both shapes may be mixed) into `sink`.

    In blocks of lines: the one-line, one-value records of gnmic's own shapes are read the
    vectorized way (`_Lines`), every other line one by one (`_LineReader`), in file order; the
    block's samples reach the sink in record order. A file (or block) whose first lines the
    vectorized pass would hardly take (records of several values each) is read one by one.
    """
    reader = _Reader(src, sink)
    one = _LineReader(reader)
    out = _Out(sink)
    with src.open_text() as fh:
        if not (vectorized and _vector_file(fh)):

            def flush() -> None:
                out.add(reader.take())
                reader.maybe_reset()

            one.read(enumerate(fh, 1), flush)
        for block in line_blocks(fh, BLOCK_BYTES):
            fast = _Lines.of(reader, block) if vectorized and _Lines.worth(block) else None
            taken = fast.taken if fast is not None else np.zeros(len(block), dtype=bool)
            if one.scanner.depth or not taken.all():
                one.block(block, taken)
            rows = reader.take()
            if fast is not None:
                rows = _merge_sorted(fast.frame(reader, taken), rows)
                sink.accept(int(taken.sum()))
                if taken.any():
                    sink.current_line = max(sink.current_line,
                                            block.first + int(np.flatnonzero(taken)[-1]))
            out.add(rows)
            reader.maybe_reset()
    for item in one.scanner.finish():
        reader.item(item)
    out.add(reader.take())
    out.flush()


def _vector_file(fh: IO[str]) -> bool:
    """Whether the vectorized pass would take one in ten of the file's first lines (read
    without consuming them)."""
    raw = getattr(fh, "buffer", None)
    if raw is None or not hasattr(raw, "peek"):
        return True
    head = raw.peek(1 << 16)
    cut = head.rfind(b"\n")
    return cut < 0 or _Lines.worth(LineBlock(bytes(head[:cut + 1]), 1))


class _Texts:
    """A block's lines decoded one at a time, when few of them are read one by one."""

    def __init__(self, block: LineBlock) -> None:
        self.block = block

    def __getitem__(self, i: int) -> str:
        return self.block.text(i)

    def __len__(self) -> int:
        return len(self.block)


class _LineReader:
    """The lines the vectorized pass did not take, one by one, through the JSON scanner."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.scanner = _Scanner()

    def block(self, block: LineBlock, taken: np.ndarray) -> None:
        """Read the block's lines that are not `taken`. A line read while a multi-line document
        is open goes to the scanner even if it was taken (it is then no longer taken)."""
        if not taken.any():
            self.read(enumerate(block.texts(), block.first))
            return
        lines = block.texts() if taken.sum() * 2 < len(block) else _Texts(block)
        done = self.open_document(block, lines, taken, 0)  # lines before `done` are read
        for i in np.flatnonzero(~taken & (np.diff(block.offsets) > 1)).tolist():
            if i >= done:
                self.line(block.first + i, lines[i])
                done = self.open_document(block, lines, taken, i + 1)

    def read(self, numbered: Iterable[tuple[int, str]],
             flush: Callable[[], None] | None = None) -> None:
        """Read every line (a trailing newline is dropped); `flush` is called every few
        thousand lines when many samples are pending."""
        reader, scanner = self.reader, self.scanner
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        slow_record, line_ = reader.slow_record, self.line
        fast_event, fast_notification = reader.fast_event, reader.fast_notification
        for lineno, raw in numbered:
            line = raw[:-1] if raw[-1:] == "\n" else raw
            if flush is not None and not lineno & 4095 and reader.pending() >= _BATCH:
                flush()
            # a whole object on its line, outside any open document: `line`, inlined
            if line[:1] == "{" and not scanner.depth:
                s = line.rstrip()
                if s[-1] == "}":
                    try:
                        doc = loads(s)
                    except decode_error:
                        pass
                    else:  # `record`, inlined
                        if "values" in doc:
                            if fast_event(doc, lineno):
                                continue
                        elif ("updates" in doc and "tags" not in doc
                              and "sync-response" not in doc
                              and fast_notification(doc, lineno)):
                            continue
                        slow_record(doc, lineno, s)
                        continue
            if line or scanner.depth:
                line_(lineno, line)

    def open_document(self, block: LineBlock, lines: Any, taken: np.ndarray, i: int) -> int:
        """Read lines from `i` while a document is open; returns the first line not read."""
        while self.scanner.depth and i < len(lines):
            taken[i] = False
            self.line(block.first + i, lines[i])
            i += 1
        return i

    def line(self, lineno: int, line: str) -> None:
        """One line (without its newline), as the stream reader takes it."""
        reader, scanner = self.reader, self.scanner
        if line[:1] == "{" and not scanner.depth:
            s = line.rstrip()
            if s[-1] == "}":
                try:
                    doc = orjson.loads(s)
                except orjson.JSONDecodeError:
                    for item in scanner.feed(lineno, line):
                        reader.item(item)
                    return
                reader.record(doc, lineno, s)
                return
        if lineno == 1:
            line = line.lstrip("\ufeff")
        if scanner.depth == 0:
            s = line.strip()
            if not s:
                return
            c = s[0]
            if c != "{" and c != "[":
                reader.reject_text(lineno, line)
                return
            if s[-1] == ("}" if c == "{" else "]"):
                try:
                    doc = orjson.loads(s)
                except orjson.JSONDecodeError:
                    pass
                else:
                    if type(doc) is dict:
                        reader.record(doc, lineno, s)
                    else:
                        reader.document(doc, lineno, s)
                    return
        for item in scanner.feed(lineno, line):
            reader.item(item)


# -- the vectorized pass over a block ----------------------------------------------------------
# A line it takes is one whole record in gnmic's own member order, ASCII, no escapes, whose
# values are all plain numbers (JSON numbers, or strings of digits, as Cumulus streams them):
# what the one-by-one reader turns into plain samples in `fast_event` / `fast_notification`. The
# pattern checks the whole line; the rest is cut with literal finds. Lines of the same shape
# (tags, or source and prefix, and value paths: everything but the timestamp, time and values)
# share a plan (context id, template offset), made once from the first of them the way the
# one-by-one reader makes it; the samples are then gathered from the name tables.
_S = r'[ !#-\[\]-~]*'  # a JSON string's text: printable ASCII without quotes or backslashes
_S1 = r'[ !#-\[\]-~]+'
# numbers float() and the JSON readers read to the same double: quoted, any digits; bare, what
# orjson reads exactly (no -0, which it reads as the integer 0)
_QNUM = r'-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?'
_BNUM = (r'(?:-?[1-9][0-9]{0,17}|0)(?:\.[0-9]{1,16})?(?:[eE][+-]?[0-9]{1,2})?'
         r'|-0\.[0-9]{0,15}[1-9](?:[eE][+-]?[0-9]{1,2})?')
# or an oper-status word (`"UP"`): a sample when its path is an interface's status (`value`)
_WORD = r'"[A-Za-z][A-Za-z_-]{0,31}"'
_VAL1 = rf'(?:"{_QNUM}"|{_BNUM}|{_WORD})'
_TSNUM = r'[1-9][0-9]{17,18}'
_EVENT_HEAD = (rf'\{{"name":"{_S}","timestamp":{_TSNUM},"tags":\{{(?:"{_S}":"{_S}"'
               rf'(?:,"{_S}":"{_S}")*)?\}},"values":\{{')
_UPDATE1 = rf'\{{"Path":"{_S1}","values":\{{"{_S}":{_VAL1}\}}\}}'
_JSON_HEAD = (rf'\{{(?:"source":"{_S}",)?(?:"subscription-name":"{_S}",)?"timestamp":{_TSNUM},'
              rf'(?:"time":"{_S}",)?(?:"prefix":"{_S}",)?(?:"target":"{_S}",)?"updates":\[')
_PAIR1 = rf'"{_S}":{_VAL1}'
# lines of one value (update), and notification lines of several updates: those give the rows
# their updates would give as lines of one update each (an update's row depends on its own path
# alone). Events of several values are left to the per-record fast path: planned value by value
# they would cost more than they save (a plan for every tag set and path).
_ONE_LINE = rf'^(?:{_EVENT_HEAD}{_PAIR1}\}}\}}|{_JSON_HEAD}{_UPDATE1}\]\}})\n$'
_MANY_LINE = rf'^{_JSON_HEAD}{_UPDATE1}(?:,{_UPDATE1})+\]\}}\n$'
# new plans made per block, at most: a file of too many shapes is read one by one meanwhile
_PLANS_MIN, _PLANS_PER_ROWS = 512, 32
_TS_KEY = '"timestamp":'
# where the key of an event line starts (its tags), and where a notification line's key goes on
# after its timestamp and time
_TAGS_KEY = ',"tags":{'
_AFTER_TIME = (',"prefix":"', ',"target":"', ',"updates":[')
# the value of a one-value line, with its ':' and the line's end; of a piece of a longer line
_LAST_VALUE = {True: r':"?[0-9A-Za-z._+-]+"?\}\}\n$',
               False: r':"?[0-9A-Za-z._+-]+"?\}\}\]\}\n$'}
_PIECE_VALUE = r':"?[0-9A-Za-z._+-]+"?$'
# a notification line's updates: after `_UPDATES`, between `_UPDATE_SEP`s, before `_UPDATES_END`
_UPDATES, _UPDATE_SEP, _UPDATES_END = '"updates":[{"Path":"', '}},{"Path":"', '}}]}\n'


class _Lines:
    """The lines of a block the vectorized pass takes: their plans, timestamps and values."""

    def __init__(self, lines: pl.DataFrame, taken: np.ndarray, first: int) -> None:
        self.lines = lines  # i (line index in the block), ts, cid, off, x (the value)
        self.taken = taken  # per line of the block
        self.first = first  # the block's first line number

    @staticmethod
    def worth(block: LineBlock) -> bool:
        """Whether at least one in ten of the block's first lines is one to take."""
        probe = block.head(_PROBE_LINES).series()
        took = probe.str.contains(_ONE_LINE) | probe.str.contains(_MANY_LINE)
        return int(took.sum()) * 10 >= probe.len()

    @classmethod
    def of(cls, reader: _Reader, block: LineBlock) -> _Lines:
        raw = block.series()
        taken = np.zeros(len(block), dtype=bool)
        frame = pl.DataFrame({"raw": raw}).with_row_index("i")
        one = raw.str.contains(_ONE_LINE)
        rest = frame.filter(~one)
        parts = []
        cand = frame.filter(one)
        if cand.height:
            is_event = cand["raw"].str.starts_with('{"name":')
            n_event = int(is_event.sum())
            if n_event:
                parts.append(_cut(cand.filter(is_event) if n_event < cand.height else cand, True))
            if n_event < cand.height:
                parts.append(_cut(cand.filter(~is_event) if n_event else cand, False))
        many = rest.filter(rest["raw"].str.contains(_MANY_LINE))
        if many.height:
            parts.append(_cut_many(many))
        if not parts:
            return cls(frame.clear(), taken, block.first)
        lines = pl.concat(parts)
        plans = _plans(reader, block,
                       lines.filter(pl.col("key").is_not_null())
                       .unique("key", keep="first").select("key", "i", "j", "n"),
                       max(_PLANS_MIN, lines.height // _PLANS_PER_ROWS))
        v = pl.col("v")
        text = v.str.strip_chars(':"}]\n')
        word = v.str.starts_with(':"') & text.str.contains("^[A-Za-z]")
        code = (text.str.to_uppercase().str.replace_all("-", "_", literal=True)
                .replace_strict(IFMIB, default=None, return_dtype=pl.Float64))
        x = pl.when(word).then(code).otherwise(text.cast(pl.Float64, strict=False))
        # a value or time the value policy may refuse: the record is read one by one
        ok = (pl.col("cid").is_not_null() & pl.col("ts").is_not_null() & x.is_not_null()
              & pl.col("ts").is_between(TS_MIN_NS, TS_MAX_NS, closed="left")
              & (x >= 0) & (x < _TWO64) & ~(word & ~pl.col("status"))).fill_null(False)
        lines = lines.join(plans, on="key", how="left", maintain_order="left").select(
            "i", "ts", "cid", "off", x.alias("x"), ok.alias("ok"), "n")
        if len(parts) > 1:
            lines = lines.sort("i", maintain_order=True)
        if (lines["n"] > 1).any():  # a line is taken when all its values are
            lines = lines.filter(pl.col("ok").all().over("i"))
        else:
            lines = lines.filter("ok")
        taken[lines["i"].to_numpy()] = True
        return cls(lines.drop("ok", "n"), taken, block.first)

    def frame(self, reader: _Reader, taken: np.ndarray) -> pl.DataFrame | None:
        """The samples of the lines still taken (the one-by-one pass may have taken some back)."""
        if not taken.any():
            return None
        lines = self.lines
        if not taken[lines["i"].to_numpy()].all():  # the one-by-one pass took some back
            lines = lines.filter(pl.Series(taken).gather(lines["i"]))
        meta = lines.select("cid", "off", pl.lit(1, pl.Int64), "ts",
                            pl.col("i").cast(pl.Int64) + self.first).to_numpy()
        return reader._fast_frame(meta.astype(np.int64, copy=False), lines["x"])


def _cut(cand: pl.DataFrame, event: bool) -> pl.DataFrame:
    """i, ts, key, v of one-value event lines, or of one-update notification lines.

    The key is what the line's plan depends on: for an event its tags and value path, for a
    notification its source, prefix and update path (with the JSON around them); v is the
    value's text with the ':' before it and the line's end.
    """
    raw, i = pl.col("raw"), pl.col("i")
    p_ts = raw.str.find(_TS_KEY, literal=True) + len(_TS_KEY)
    if event:
        p_head = raw.str.find(_TAGS_KEY, literal=True)
    else:
        p_head = pl.coalesce(*(raw.str.find(k, literal=True) for k in _AFTER_TIME))
    cut = cand.select(i, raw, p_ts.alias("t"), p_head.alias("h"),
                      raw.str.len_bytes().alias("n"),
                      raw.str.extract(_LAST_VALUE[event], 0).alias("v"))
    t, h, n, v = pl.col("t"), pl.col("h"), pl.col("n"), pl.col("v")
    key_end = n - v.str.len_bytes()
    if event:
        ts = raw.str.slice(t, h - t)
        key = raw.str.slice(h, key_end - h)
    else:
        ts = raw.str.slice(t, 19).str.strip_chars_end(",")
        key = pl.concat_str(raw.str.slice(0, t - len(_TS_KEY)), raw.str.slice(h, key_end - h))
    return cut.select(i, pl.lit(0, pl.Int64).alias("j"), pl.lit(1, pl.UInt32).alias("n"),
                      ts.cast(pl.Int64, strict=False).alias("ts"), key.alias("key"), v)


def _cut_many(cand: pl.DataFrame) -> pl.DataFrame:
    """The same for notification lines of several updates: a row per update, j its place in
    the line and n the line's count; the key is the line's key up to the updates, and the
    update's path (with the JSON around it)."""
    raw, i = pl.col("raw"), pl.col("i")
    p_ts = raw.str.find(_TS_KEY, literal=True) + len(_TS_KEY)
    p_head = pl.coalesce(*(raw.str.find(k, literal=True) for k in _AFTER_TIME))
    p_area = raw.str.find(_UPDATES, literal=True) + len(_UPDATES)
    cut = cand.select(i, raw, p_ts.alias("t"), p_head.alias("h"), p_area.alias("a"),
                      raw.str.len_bytes().alias("len"))
    t, h, a, n = pl.col("t"), pl.col("h"), pl.col("a"), pl.col("len")
    ts = raw.str.slice(t, 19).str.strip_chars_end(",")
    head = pl.concat_str(raw.str.slice(0, t - len(_TS_KEY)), raw.str.slice(h, a - h))
    pieces = raw.str.slice(a, n - a - len(_UPDATES_END)).str.split(_UPDATE_SEP)
    cut = cut.select(i, ts.cast(pl.Int64, strict=False).alias("ts"), head.alias("head"),
                     pieces.alias("p")).with_columns(pl.col("p").list.len().alias("n"))
    cut = cut.with_columns(pl.int_ranges(0, "n", dtype=pl.Int64).alias("j")).explode("p", "j")
    p = pl.col("p")
    v = p.str.extract(_PIECE_VALUE, 0)
    key = pl.concat_str("head", p.str.slice(0, p.str.len_bytes() - v.str.len_bytes()))
    return cut.select(i, "j", "n", "ts", key.alias("key"), v.alias("v"))


def _plans(reader: _Reader, block: LineBlock, keys: pl.DataFrame, budget: int) -> pl.DataFrame:
    """(key, cid, off, status) for the block's keys, at most `budget` new ones planned from the
    first value that has them (line i, value j of n), the others left unplanned (their lines
    are read one by one); `status`: the value, when a status word, is a sample."""
    plans = reader.line_plans
    rows = []
    for key, i, j, n in keys.iter_rows():
        plan = plans.get(key, _UNSET)
        if plan is _UNSET:
            if budget <= 0:
                plan = None
            else:
                budget -= 1
                plan = plans[key] = _plan_line(reader, block.text(i), j, n)
        rows.append((key, *plan) if plan else (key, None, None, False))
    return pl.DataFrame(rows, schema={"key": pl.String, "cid": pl.Int64, "off": pl.Int64,
                                      "status": pl.Boolean}, orient="row")


def _plan_line(reader: _Reader, text: str, j: int, n: int) -> tuple[int, int, bool] | None:
    """The plan of value j of a line of n as the one-by-one reader would make it for a line of
    that value alone (None: it must read the line itself): context id, template offset, and
    whether a status word is a sample."""
    plan = _structure_plan(reader, text, j, n)
    if plan is None:
        return None
    cid, off = plan
    status = (reader.t_metric[off] in STATUS_METRICS
              and bool(reader.ctx_if[cid] or reader.t_if[off]))
    return cid, off, status


def _structure_plan(reader: _Reader, text: str, j: int, n: int) -> tuple[int, int] | None:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if type(doc) is not dict:
        return None
    if "values" in doc:
        values = doc["values"]
        if type(values) is not dict or len(values) != n:  # a repeated path: read one by one
            return None
        if n > 1:
            doc = {**doc, "values": dict([list(values.items())[j]])}
        return reader.event_plan(doc)
    if "updates" in doc and "tags" not in doc and "sync-response" not in doc:
        updates = doc["updates"]
        if type(updates) is not list or len(updates) != n:
            return None
        if n > 1:
            doc = {**doc, "updates": [updates[j]]}
        plan = reader.notification_plan(doc)
        return plan[:2] if plan else None
    return None


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


def _no_sid(x: Rows) -> Rows:
    """Samples without series ids: mixed with samples that have none, they would mean nothing."""
    return x.drop("sid") if type(x) is pl.DataFrame and "sid" in x.columns else x


def _rows(x: pl.DataFrame | tuple[list, ...]) -> list[tuple]:
    return x.rows() if type(x) is pl.DataFrame else list(zip(*x, strict=True))


class _Out:
    """Samples on their way to the sink, handed over at least _BATCH at a time."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.pending: list = []
        self.n = 0

    def add(self, rows: Rows) -> None:
        if rows is None:
            return
        self.pending.append(rows)
        self.n += rows.height if type(rows) is pl.DataFrame else len(rows[0])
        if self.n >= _BATCH:
            self.flush()

    def flush(self) -> None:
        frames: list[pl.DataFrame] = []
        for rows in self.pending:
            if type(rows) is pl.DataFrame:
                frames.append(rows)
                continue
            if frames:
                self.sink.samples_frame(concat_samples(frames))
                frames = []
            self.sink.samples_bulk(*rows)
        if frames:
            self.sink.samples_frame(concat_samples(frames))
        self.pending, self.n = [], 0


# -- sniffing --------------------------------------------------------------------------------
_JSON_MARK = re.compile(r'"updates"\s*:\s*\[|"sync-response"\s*:')
_EVENT_VALUES = re.compile(r'"values"\s*:\s*\{')
_EVENT_OTHER = re.compile(r'"(?:tags|name)"\s*:')
_TIMESTAMP = re.compile(r'"timestamp"\s*:')


def _starts_like_gnmic(head: str) -> bool:
    s = head.lstrip("\ufeff \t\r\n")
    return s[:1] in ("{", "[") or s.startswith("received sync response")


class _GnmicParser:
    family = FAMILY
    priority = 50
    # its per-record work is Python (orjson, plans, floats): a big file is parsed in a child
    # process, so that it does not take turns for the GIL with the inserts (parse_child)
    python_bound = True

    def __init__(self, vectorized: bool = True) -> None:
        self.vectorized = vectorized  # False: every line through the one-by-one reader (tests)

    def parse(self, src: SourceFile, sink: Sink) -> None:
        parse_stream(src, sink, self.vectorized)


class GnmicJsonParser(_GnmicParser):
    """gnmic's default `json` format: notifications with `updates[{Path, values}]`."""

    name = "gnmic_json"

    def sniff(self, head: str, rel: str) -> bool:
        try:
            return _starts_like_gnmic(head) and _JSON_MARK.search(head) is not None
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False


class GnmicEventParser(_GnmicParser):
    """gnmic's `event` format: `{name, timestamp, tags{...}, values{xpath: value}}`."""

    name = "gnmic_event"

    def sniff(self, head: str, rel: str) -> bool:
        try:
            return (_starts_like_gnmic(head) and _EVENT_VALUES.search(head) is not None
                    and _TIMESTAMP.search(head) is not None
                    and _EVENT_OTHER.search(head) is not None)
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False


PARSERS: list = [GnmicJsonParser(), GnmicEventParser()]


# -- writers ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GnmiNotification:
    """One gNMI notification as the writers take it.

    `prefix` is a keyed path (`interfaces/interface[name=swp1]`, '' for none); `leaves` maps
    paths relative to it (`state/counters/in-octets`, keys allowed) to values. Build the Cumulus
    shapes of design section 4 with `cumulus_notification`.
    """

    ts: int  # ns since the epoch
    source: str  # the device (hostname, or `address:port` as gnmic prints it)
    prefix: str
    leaves: dict[str, Any]
    subscription: str = "fabtwin"
    target: str = ""


# group -> (prefix template, leaf path under it), as Cumulus Linux streams them
CUMULUS_GROUPS: dict[str, tuple[str, str]] = {
    "counters": ("interfaces/interface[name={ifname}]", "state/counters/"),
    "state": ("interfaces/interface[name={ifname}]", "state/"),
    "ethernet": ("interfaces/interface[name={ifname}]", "ethernet/state/counters/"),
    "ethernet-state": ("interfaces/interface[name={ifname}]", "ethernet/state/"),
    "phy": ("interfaces/interface[name={ifname}]", "ethernet/phy/state/"),
    "queue": ("qos/interfaces/interface[interface-id={ifname}]/output/queues/queue[name={queue}]",
              "state/"),
    "pfc": ("qos/interfaces/interface[interface-id={ifname}]/switch-priority[priority={priority}]",
            "state/counters/"),
    "ar": ("", "system/adaptive-routing/state/counters/"),
}


def cumulus_notification(ts: int, device: str, group: str, leaves: dict[str, Any],
                         ifname: str = "", queue: int | str | None = None,
                         priority: int | str | None = None, target: str = "") -> GnmiNotification:
    """A notification of one CUMULUS_GROUPS group: `leaves` maps leaf names to values."""
    prefix_tpl, under = CUMULUS_GROUPS[group]
    prefix = prefix_tpl.format(ifname=ifname, queue=queue, priority=priority)
    return GnmiNotification(ts, device, prefix, {under + k: v for k, v in leaves.items()},
                            target=target)


def _rfc3339nano(ns: int) -> str:
    """Go's time.RFC3339Nano in UTC: trailing zeros of the fraction dropped."""
    secs, frac = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    tail = f".{frac:09d}".rstrip("0") if frac else ""
    return f"{stamp}{tail}Z"


def _as_value(v: Any, strings: bool) -> Any:
    if not strings or type(v) is str or type(v) is bool:
        return v
    if type(v) is float and v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return str(v) if type(v) is int else repr(v) if type(v) is float else v


@functools.lru_cache(maxsize=1 << 16)
def _keyless(path: str) -> str:
    return "/".join(name for name, _ in split_path(path))


def write_json(notifications: Iterable[GnmiNotification], fh: IO[str],
               strings: bool = True) -> None:
    """gnmic `json` format, one object per line (a file output without `multiline`).

    Each leaf is one update whose `values` is keyed by its path without keys, as gnmic does;
    `strings=True` writes numbers as JSON strings, the way Cumulus Linux streams counters.
    """
    for n in notifications:
        obj: dict[str, Any] = {"source": n.source, "subscription-name": n.subscription,
                               "timestamp": n.ts, "time": _rfc3339nano(n.ts)}
        if n.prefix:
            obj["prefix"] = n.prefix
        if n.target:
            obj["target"] = n.target
        obj["updates"] = [{"Path": rel, "values": {_keyless(rel): _as_value(v, strings)}}
                          for rel, v in n.leaves.items()]
        fh.write(orjson.dumps(obj).decode())
        fh.write("\n")


def _event_tags(path: str) -> dict[str, str]:
    return dict(_event_tag_items(path))


@functools.lru_cache(maxsize=1 << 16)
def _event_tag_items(path: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{name}_{k}", v) for name, keys in split_path(path) for k, v in keys)


def write_event(notifications: Iterable[GnmiNotification], fh: IO[str], strings: bool = True,
                split: bool = True, group: bool = False) -> None:
    """gnmic `event` format: one event per update, tags from the path keys (Go sorts map keys).

    `split=True` writes one event object per line (file output `split-events: true`), else one
    JSON array per notification per line (gnmic's default). `group=True` merges the events of
    a notification sharing the same tags, as the `event-group-by` processor does.
    """
    for n in notifications:
        events: list[dict[str, Any]] = []
        for rel, v in n.leaves.items():
            full = f"{n.prefix}/{rel}" if n.prefix else rel
            tags = _event_tags(full)
            tags["source"] = n.source
            tags["subscription-name"] = n.subscription
            tags = dict(sorted(tags.items()))
            value = {"/" + _keyless(full): _as_value(v, strings)}
            if group and events and events[-1]["tags"] == tags:
                events[-1]["values"] = dict(sorted({**events[-1]["values"], **value}.items()))
                continue
            events.append({"name": n.subscription, "timestamp": n.ts, "tags": tags,
                           "values": value})
        if split:
            for ev in events:
                fh.write(orjson.dumps(ev).decode())
                fh.write("\n")
        elif events:
            fh.write(orjson.dumps(events).decode())
            fh.write("\n")
