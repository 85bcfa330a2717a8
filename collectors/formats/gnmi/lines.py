"""The line-block pass: parse_stream, the vectorized reading of gnmic's one-value lines
(`_Lines`) and the lines it leaves, one by one (`_LineReader`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import IO, Any

import numpy as np
import orjson
import polars as pl

from collectors.core.lineblocks import BLOCK_BYTES, LineBlock, line_blocks
from collectors.core.source import Sink, SourceFile, concat_samples
from collectors.core.timeparse import TS_MAX_NS, TS_MIN_NS
from collectors.formats.gnmi.paths import _TWO64, _UNSET, IFMIB, STATUS_METRICS, Rows
from collectors.formats.gnmi.reader import _Reader
from collectors.formats.gnmi.scan import _Scanner
from collectors.formats.gnmi.tables import _merge_sorted

_BATCH = 200_000  # samples handed to the sink at a time (at block ends)
_PROBE_LINES = 64  # lines a file's (a block's) head is probed with for the vectorized pass

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
