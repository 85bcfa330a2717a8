"""gnmic records into sink rows: events, notifications, updates, values (the reader proper)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from collectors.core.timeparse import TS_MAX_NS, TS_MIN_NS, TimeError, parse_iso
from collectors.formats.gnmi import scan
from collectors.formats.gnmi.paths import (
    _CACHE_MAX,
    _GET_PATH,
    _GET_VALUES,
    _LIST_KEYS,
    _NO_DEVICE,
    _NUMSTART,
    _PATHS,
    IFMIB,
    STATUS_METRICS,
    _dict_values,
    _merge,
    _plain,
    _qual,
    _speed_mbps,
    _tag_role,
    _ts,
    _ts_reason,
    path_info,
)
from collectors.formats.gnmi.scan import (
    _compact,
    _drop_since,
    _float,
    _floats,
    _marks,
    _value_reason,
)
from collectors.formats.gnmi.tables import _Tables


class _Reader(_Tables):
    """Turns decoded gnmic objects into sink rows, with per-file caches of names."""

    def item(self, item: tuple) -> None:
        kind, line = item[0], item[1]
        if kind == "doc":
            self.text_document(item[2], line)
        elif kind == "junk":
            self.reject_text(line, item[3])
        elif kind == "notobj":
            self.sink.reject(line, "array element is not a JSON object", item[2])
        elif kind == "big":
            self.sink.reject(line, f"JSON object longer than {scan.MAX_DOC_CHARS} characters", item[2])
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
