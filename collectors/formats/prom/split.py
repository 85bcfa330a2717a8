"""Cut the lines of a block into series key, value and timestamp with numpy, without copying text.

A sample line of the common shape is `key value[ timestamp]`, one space between the parts, `key`
being `name{labels}` up to the line's first '}' or, in a line without '}', a bare name up to the
first space. `split_block` finds those cuts for every line of a `LineBlock` at once (positions of
'\\n', '}' and ' ' and `np.searchsorted`) and returns the parts as polars String columns whose
values are Arrow string views into the block's own bytes: no per-line Python, no copy of the text.
A line not of that shape (no space after the key, more spaces than three parts allow, ...) is not
cut; the caller reads it with the exact parser. Whether a cut part is valid (the key a label set,
the value a number) is also the caller's to check: this module only cuts.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from collectors.core.lineblocks import LineBlock, string_series

# bytes kept in a view itself (Arrow's string_view layout), and the masks of a word's first k bytes
_INLINE = 12
_MASK = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
_LOW32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)
MAX_BLOCK = (1 << 31) - 64  # string views address their bytes with int32 offsets


class BlockText:
    """A block's bytes, and String columns of parts of it (Arrow string views over the bytes)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.buffer = pa.py_buffer(data)
        self.bytes = np.frombuffer(data, dtype=np.uint8)
        # word i = bytes i..i+7 as a little-endian uint64 (unaligned reads); the last ones from a
        # zero-padded copy of the tail
        n = len(data)
        self.tail_at = max(0, n - 16)
        tail = np.zeros(32, dtype=np.uint8)
        tail[:n - self.tail_at] = self.bytes[self.tail_at:]
        self.tail = np.ndarray((24,), dtype="<u8", buffer=tail, strides=(1,))
        self.words = np.ndarray((max(0, n - 7),), dtype="<u8", buffer=data, strides=(1,))

    def _word(self, at: np.ndarray) -> np.ndarray:
        """The 8 bytes at each of `at` as a little-endian uint64 (zeros past the end)."""
        late = at >= self.tail_at
        if not late.any():
            return self.words[at]
        w = self.words[np.minimum(at, len(self.words) - 1)] if len(self.words) else \
            np.zeros(len(at), dtype=np.uint64)
        w[late] = self.tail[at[late] - self.tail_at]
        return w

    def views(self, starts: np.ndarray, lens: np.ndarray, name: str) -> pl.Series:
        """The strings data[starts[i]:starts[i] + lens[i]] as a String Series over `data`."""
        return self.series(self.view_words(starts, lens), name)

    def series(self, words: np.ndarray, name: str) -> pl.Series:
        """A String Series of views (`view_words`) into `data`."""
        arr = pa.Array.from_buffers(pa.string_view(), len(words) // 2,
                                    [None, pa.py_buffer(words), self.buffer])
        return string_series(name, arr)

    def view_words(self, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """Arrow string views of data[starts[i]:starts[i] + lens[i]], two uint64 each."""
        n = len(starts)
        lens = lens.astype(np.uint64)
        v = np.empty(2 * n, dtype=np.uint64)  # per view: length, 4 bytes | 8 bytes or offset
        head = self._word(starts)
        v[0::2] = lens | ((head & _MASK[np.minimum(lens, 4)]) << _32)
        short = lens <= _INLINE
        if short.all():
            v[1::2] = self._word(starts + 4) & _MASK[np.minimum(lens - np.minimum(lens, 4), 8)]
        elif not short.any():
            v[1::2] = starts.astype(np.uint64) << _32  # buffer 0 at that offset
        else:
            inline = self._word(starts + 4) & _MASK[np.minimum(lens - np.minimum(lens, 4), 8)]
            v[1::2] = np.where(short, inline, starts.astype(np.uint64) << _32)
        return v


class Cut:
    """Where each line of a block is cut: `ok` (the line has the shape), and for those lines the
    key, the value and the timestamp (null when the line has none) as String columns."""

    def __init__(self, text: BlockText, starts: np.ndarray, ends: np.ndarray,
                 ok: np.ndarray, key_end: np.ndarray, value_end: np.ndarray) -> None:
        self.text = text
        self.starts = starts  # every line's first byte
        self.ends = ends  # every line's '\n'
        self.ok = ok
        if ok.all():
            self.rows = np.arange(len(ok))  # the cut lines (0-based in the block)
            s, k, v, e = starts, key_end, value_end, ends
        else:
            self.rows = np.flatnonzero(ok)
            s, k, v, e = starts[ok], key_end[ok], value_end[ok], ends[ok]
        self.key = text.views(s, k - s, "key")
        self.value = text.views(k + 1, v - k - 1, "value")
        has_ts = v < e
        ts = text.views(np.where(has_ts, v + 1, e), np.where(has_ts, e - v - 1, 0), "ts")
        self.has_ts = has_ts
        self.ts_plus = has_ts & (text.bytes[np.minimum(v + 1, e)] == 0x2B)  # a time with a `+`
        self.ts = ts if has_ts.all() else ts.set(pl.Series(~has_ts), None)

    def raw(self, rows: np.ndarray) -> pl.Series:
        """The text of these lines (0-based in the block), without their '\\n'."""
        s = self.starts[rows]
        return self.text.views(s, self.ends[rows] - s, "raw")


def split_block(block: LineBlock) -> Cut | None:
    """Every line of the block cut into key, value, timestamp; None when the block is too big
    for string views (a single line of 2 GB)."""
    if len(block.data) > MAX_BLOCK:
        return None
    text = BlockText(block.data)
    a = text.bytes
    offsets = block.offsets
    starts, ends = offsets[:-1], offsets[1:] - 1
    end = len(a) + 1  # past every line: a sentinel for "none"
    braces = np.append(np.flatnonzero(a == 0x7D), end)
    spaces = np.append(np.flatnonzero(a == 0x20), [end, end, end])
    brace = braces[np.searchsorted(braces, starts)]
    key_end = brace + 1  # just past the key
    bare = brace > ends  # no '}': the key is a bare name, up to the first space
    if bare.any():
        key_end[bare] = spaces[np.searchsorted(spaces, starts[bare])]
    gap = np.searchsorted(spaces, key_end)  # the space after the key, if the line has it
    ok = (spaces[gap] == key_end) & (key_end < ends) & (key_end > starts)
    second = spaces[gap + 1]  # the space after the value, if the line has one
    value_end = np.minimum(second, ends)
    ok &= (second >= ends) | (spaces[gap + 2] >= ends)  # no fourth part
    return Cut(text, starts, ends, ok, key_end, value_end)
