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

Numeric samples keep the leaf name (`in-octets`, `transmit-octets`); `counter_map_gnmi.csv`
maps them to canonical counters. Interface keys (`interface[name=..]`, `port[port-id=..]`, the
event tags `interface_name`, `port_port-id`) give the ifname; other keys become qualifiers
(`queue[name=3]` -> `queue=3`, `switch-priority[priority=3]` -> `priority=3`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from typing import IO, Any

import numpy as np
import orjson
import polars as pl

from collectors.source import Sink, SourceFile
from collectors.timeparse import TimeError, parse_any, parse_iso

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
MAX_DOC_CHARS = 64 * 1024 * 1024
# the vectorized path: records whose values are all plain numbers gather per record (values,
# context id, template offset, ts, line) and become a polars frame per batch of samples
_BATCH = 200_000
_SLOW_BATCH = 16384
_TS_NS = 100_000_000_000_000_000  # an int timestamp at least this large is already ns
_I64 = 2**63 - 1
_NUMTYPES = frozenset({int, float, bool})
_FIRST = itemgetter(0)
_GET_PATH = itemgetter("Path")
_GET_VALUES = itemgetter("values")
_dict_values = dict.values


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
    """gnmic timestamps are ns; seconds/ms/us (set by event processors) are scaled up."""
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
        except (TimeError, ValueError, OverflowError):
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
        self._reset_tables()

    def _reset_tables(self) -> None:
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

    def flush(self) -> None:
        """Hand the gathered samples to the sink, in record order; count the fast records."""
        cols = self.cols
        if self.f_meta:
            sink = self.sink
            sink.accept(len(self.f_meta) // 5)
            sink.current_line = max(sink.current_line, self.f_meta[-1])
            frame = self._fast_frame()
            if cols[0]:
                frame = self._merge(frame, cols)
            if frame is not None:
                sink.samples_frame(frame)
            self.f_vals, self.f_meta = [], []
            if len(self.ctx_dev) >= _CACHE_MAX or len(self.t_metric) >= _CACHE_MAX:
                self._reset_tables()
        elif cols[0]:
            self.sink.samples_bulk(*cols[:7])
        if cols[0]:
            self.cols = ([], [], [], [], [], [], [], [])

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

    def _fast_frame(self) -> pl.DataFrame:
        """The samples of the fast records: names gathered from the context and template tables.

        Sample j of a record takes its device (and the tag ifname and qualifier, when the record
        has them) from the record's context row, and its path ifname, qualifier and metric from
        row `offset + j` of the record's template.
        """
        (_, c_dev, c_if, c_qual, has_if, all_if, no_if, no_cq,
         _, t_if, t_qual, t_metric, own, all_own, no_own, no_tq) = self._names()
        n = len(self.f_vals)
        meta = np.array(self.f_meta, dtype=np.int64).reshape(-1, 5)
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
        return pl.DataFrame({
            "ts": np.repeat(meta[:, 3], rep),
            "device": c_dev.gather(cid),
            "ifname": ifname,
            "metric": t_metric.gather(trow),
            "qualifier": qual,
            "value": pl.Series(self.f_vals, dtype=pl.Float64),
            "line": np.repeat(meta[:, 4], rep),
        })

    def _merge(self, frame: pl.DataFrame, cols: tuple[list, ...]) -> pl.DataFrame | None:
        """Interleave the value-by-value samples with the fast ones, in record order.

        A value-by-value sample written while `pos` fast samples were pending goes after those.
        """
        ts = cols[0]
        pos = np.array(cols[7], dtype=np.int64)
        n, m = frame.height, len(ts)
        if min(ts) < -_I64 - 1 or max(ts) > _I64:  # timestamps beyond Int64: keep Python ints
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
            self.sink.samples_bulk(*out)
            return None
        slow_frame = pl.DataFrame(
            dict(zip(Sink.TABLES["samples"], cols[:7], strict=True)),
            schema={"ts": pl.Int64, "device": pl.String, "ifname": pl.String,
                    "metric": pl.String, "qualifier": pl.String, "value": pl.Float64,
                    "line": pl.Int64}, strict=False)
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
            sink.accept()
            if len(self.cols[0]) >= (_BATCH if self.f_meta else _SLOW_BATCH):
                self.flush()
        else:
            sink.reject(line, reason, raw)

    # the fast path: records whose every value is a plain number
    def fast_event(self, obj: dict, line: int) -> bool:
        """Gather an event whose values all become plain samples; False to read it value by
        value instead (anything unusual: the slow path decides, rejects and explains)."""
        values = obj["values"]
        ts = obj.get("timestamp")
        tags = obj.get("tags")
        if (type(values) is not dict or not values or type(ts) is not int
                or not _TS_NS <= ts <= _I64 or type(tags) is not dict):
            return False
        try:
            ctx = self.tags.get(tuple(tags.items()))
        except TypeError:
            return False
        if ctx is None:
            ctx = self.tag_context(tags)
        if not ctx[0]:
            return False
        floats = _floats(values.values())
        if floats is None:
            return False
        keys = tuple(values)
        tmpl = self.ev_tmpl.get(keys)
        if tmpl is None:
            tmpl = self._event_template(keys)
        off = tmpl[0]
        if tmpl[1] and ctx[2]:  # keys in both tags and paths: qualifiers merge per context
            off = self.ev_tmpl_ctx.get((ctx[4], keys))
            if off is None:
                off = self._event_template_ctx(ctx, keys)
        f_vals = self.f_vals
        f_vals += floats
        self.f_meta += (ctx[4], off, len(floats), ts, line)
        if len(f_vals) >= _BATCH:
            self.flush()
        return True

    def fast_notification(self, obj: dict, line: int) -> bool:
        """Gather a `json` notification of single-value updates whose values are all plain
        numbers; False to read it update by update instead."""
        ts = obj.get("timestamp")
        prefix = obj.get("prefix") or ""
        updates = obj["updates"]
        if (type(ts) is not int or not _TS_NS <= ts <= _I64 or type(prefix) is not str
                or type(updates) is not list or not updates):
            return False
        try:
            paths = tuple(map(_GET_PATH, updates))
            # one value per update (unpacking fails on any other count, or on a non-object)
            vs = [v for (v,) in map(_dict_values, map(_GET_VALUES, updates))]
            off = self.js_tmpl.get((prefix, paths))
        except (KeyError, TypeError, ValueError):
            return False
        floats = _floats(vs)
        if floats is None:
            return False
        source = obj.get("source")
        cid = self.src_ctx.get(source) if type(source) is str else None
        if cid is None:
            dev = self.device(source)
            if not dev:
                return False
            cid = self._device_context(source, dev)
        if off is None:
            off = self._json_template(prefix, paths)
            if off is None:
                return False
        f_vals = self.f_vals
        f_vals += floats
        self.f_meta += (cid, off, len(floats), ts, line)
        if len(f_vals) >= _BATCH:
            self.flush()
        return True

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
        ts = obj.get("timestamp")
        if type(ts) is not int or ts < 100_000_000_000_000_000:
            ts = _ts(ts)
            if ts is None:
                return "event has no usable 'timestamp' (ns)"
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
        if ts is None and type(obj.get("time")) is str:
            try:
                ts = parse_iso(obj["time"])
            except TimeError:
                ts = None
        if ts is None:
            return "notification has no usable 'timestamp' (ns) or 'time'", ()
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


def parse_stream(src: SourceFile, sink: Sink) -> None:
    """Read a gnmic `json` or `event` output file (both shapes may be mixed) into `sink`."""
    reader = _Reader(src, sink)
    scanner = _Scanner()
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    document = reader.document
    record = reader.record
    slow_record = reader.slow_record
    fast_event = reader.fast_event
    fast_notification = reader.fast_notification
    with src.open_text() as fh:
        for lineno, raw in enumerate(fh, 1):
            # the fast path: a whole object on its line, outside any open document (what
            # `record` does, inlined)
            if raw[0] == "{" and not scanner.depth:
                s = raw.rstrip()
                if s[-1] == "}":
                    try:
                        doc = loads(s)
                    except decode_error:
                        for item in scanner.feed(lineno, raw.rstrip("\r\n")):
                            reader.item(item)
                        continue
                    if "values" in doc:
                        if fast_event(doc, lineno):
                            continue
                    elif ("updates" in doc and "tags" not in doc and "sync-response" not in doc
                          and fast_notification(doc, lineno)):
                        continue
                    slow_record(doc, lineno, s)
                    continue
            line = raw.rstrip("\r\n")
            if lineno == 1:
                line = line.lstrip("\ufeff")
            if scanner.depth == 0:
                s = line.strip()
                if not s:
                    continue
                c = s[0]
                if c == "{" or c == "[":
                    if s[-1] == ("}" if c == "{" else "]"):
                        try:
                            doc = loads(s)
                        except decode_error:
                            pass
                        else:
                            if type(doc) is dict:
                                record(doc, lineno, s)
                            else:
                                document(doc, lineno, s)
                            continue
                else:
                    reader.reject_text(lineno, line)
                    continue
            for item in scanner.feed(lineno, line):
                reader.item(item)
    for item in scanner.finish():
        reader.item(item)
    reader.flush()


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

    def parse(self, src: SourceFile, sink: Sink) -> None:
        parse_stream(src, sink)


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
