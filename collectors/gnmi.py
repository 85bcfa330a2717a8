"""gnmic output: the default `json` format and the `event` format (design section 4).

Both parsers share one reader. The stream is cut into JSON documents: one per line on the fast
path (`orjson.loads` of the whole line), otherwise through a small brace-depth scanner that
understands JSON strings, so pretty-printed objects, concatenated objects and top-level arrays
stream without loading the file. A record is one top-level JSON object, or one object element of
a top-level array (gnmic prints `event` messages as an array per notification), numbered by the
line it starts on. gnmic's plain-text status lines between objects are rejects.

Numeric samples keep the leaf name (`in-octets`, `transmit-octets`); `counter_map_gnmi.csv`
maps them to canonical counters. Interface keys (`interface[name=..]`, `port[port-id=..]`, the
event tags `interface_name`, `port_port-id`) give the ifname; other keys become qualifiers
(`queue[name=3]` -> `queue=3`, `switch-priority[priority=3]` -> `priority=3`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

import orjson

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
    elem, sep, key = tag.partition("_")
    if not sep or elem == "meta":
        return None
    return _key_role(elem.rpartition("/")[2].rpartition(":")[2], key)


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
        self.tags: dict[tuple, tuple[str, str, tuple, str]] = {}
        # samples gather here (ts, device, ifname, metric, qualifier, value, line) and reach the
        # sink in bulk: a method call per sample costs as much as the JSON decoding
        self.cols: tuple[list, ...] = ([], [], [], [], [], [], [])

    def sample(self, ts: int, dev: str, ifname: str, metric: str, value: float, qual: str) -> None:
        c = self.cols
        c[0].append(ts)
        c[1].append(dev)
        c[2].append(ifname)
        c[3].append(metric)
        c[4].append(qual)
        c[5].append(value)
        c[6].append(self.sink.current_line)

    def flush(self) -> None:
        if self.cols[0]:
            self.sink.samples_bulk(*self.cols)
            self.cols = ([], [], [], [], [], [], [])

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
            if len(self.cols[0]) >= 16384:
                self.flush()
        else:
            sink.reject(line, reason, raw)

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

    def tag_context(self, tags: dict) -> tuple[str, str, tuple, str]:
        """(device, ifname, qualifier parts, qualifier) from an event's tags."""
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
            tparts = tuple(sorted(parts.items()))
            ctx = (self.device(tags.get("source")) or "", ifname, tparts, _qual(tparts))
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
        dev, t_if, t_parts, t_qual = ctx
        if not dev:
            return _NO_DEVICE
        c_ts, c_dev, c_if, c_met, c_q, c_val, c_line = self.cols
        line = self.sink.current_line
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
    for lineno, line in src.lines():
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


def _keyless(path: str) -> str:
    return "/".join(name for name, _ in split_path(path))


def write_json(notifications: Iterable[GnmiNotification], fh: IO[str], strings: bool = True) -> None:
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
    return {f"{name}_{k}": v for name, keys in split_path(path) for k, v in keys}


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
