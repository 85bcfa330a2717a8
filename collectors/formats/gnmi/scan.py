"""Record values and the JSON document scanner (pretty-printed, concatenated, arrays)."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import orjson
import polars as pl

from collectors.core.schema import screen
from collectors.core.source import MAX_RECORD_BYTES, Sink
from collectors.formats.gnmi.paths import _FIRST, _I64, _NUMSTART, _NUMTYPES, _plain

# a gnmic record pretty-printed over many lines is still one record: the bound of a line
# (MAX_RECORD_BYTES, 8 MiB), not the 64 Mi of a whole-file document (LLDP JSON, sacct --json)
MAX_DOC_CHARS = MAX_RECORD_BYTES

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
