"""Blocks of whole lines for the vectorized parsers (gnmic, Prometheus text).

`line_blocks(fh)` reads the bytes under a text stream (`SourceFile.open_text()`) a few MB at a
time and yields `LineBlock`s: whole lines, each ending with '\\n', whose text is exactly what the
text stream gives line by line (undecodable bytes as U+FFFD, '\\r\\n' and a lone '\\r' as '\\n'),
so a parser may take some lines the vectorized way and the others one by one without the two
ever disagreeing on what a line is or which number it has. `LineBlock.series()` makes the lines a
polars Series without a copy per line in Python: an Arrow string array over the block's bytes,
each line keeping its '\\n' (patterns anchor on it).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa

BLOCK_BYTES = 1 << 22


class LineBlock:
    """Lines `first`, `first + 1`, ... of a file: `data` holds them, each ending with '\\n'."""

    def __init__(self, data: bytes, first: int) -> None:
        self.data = data
        self.first = first
        self._offsets: np.ndarray | None = None
        self._len: int | None = None

    @property
    def offsets(self) -> np.ndarray:
        """Where each line starts in `data`, and (last) the end of the data."""
        if self._offsets is None:
            ends = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10)
            self._offsets = np.empty(len(ends) + 1, dtype=np.int64)
            self._offsets[0] = 0
            self._offsets[1:] = ends + 1
        return self._offsets

    def __len__(self) -> int:
        if self._len is None:
            self._len = self.data.count(b"\n")
        return self._len

    def head(self, n: int) -> LineBlock:
        """The block's first `n` lines (fewer if it has fewer)."""
        end = -1
        for _ in range(n):
            end = self.data.find(b"\n", end + 1)
            if end < 0:
                return self
        return LineBlock(self.data[:end + 1], self.first)

    def series(self, newline: bool = True) -> pl.Series:
        """Every line as a polars String Series, with its '\\n' or (`newline=False`) without."""
        data, offsets = self.data, self.offsets
        if not newline:
            data = data.replace(b"\n", b"")
            offsets = offsets - np.arange(len(offsets), dtype=np.int64)
        arr = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(offsets),
                                               pa.py_buffer(data))
        return string_series("raw", arr)

    def text(self, i: int) -> str:
        """Line `i` of the block (0-based), without its '\\n'."""
        return self.data[self.offsets[i]:self.offsets[i + 1] - 1].decode()

    def texts(self) -> list[str]:
        """Every line of the block, without its '\\n'."""
        return str(memoryview(self.data)[:-1], "utf-8").split("\n")


class _CArray:
    """A pyarrow array seen only through the Arrow C data interface."""

    def __init__(self, arr: pa.Array) -> None:
        self.arr = arr

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple:
        return self.arr.__arrow_c_array__(requested_schema)


def string_series(name: str, arr: pa.Array) -> pl.Series:
    """A polars String Series named `name` over an Arrow string array (large_string or
    string_view), without a copy. Through the Arrow C data interface: polars' constructor from
    a pyarrow array imports pyarrow.compute (about 60 ms of CPU, on every `fabtwin investigate`)
    for a cast of dictionary arrays that strings never need."""
    return pl.Series(_CArray(arr)).rename(name)


def line_blocks(fh: IO[str], size: int = BLOCK_BYTES) -> Iterator[LineBlock]:
    """Blocks of about `size` bytes of whole lines, numbered from 1.

    A block ends at a '\\n', so it never splits a UTF-8 sequence; a '\\r' at the end of a read
    waits for the next one (it may be half of a '\\r\\n'); a line longer than `size` makes its
    block longer.
    """
    raw = getattr(fh, "buffer", None)
    if raw is None:  # a plain text stream (tests): same blocks, through str
        raw = io.BytesIO(fh.read().encode())
    buf = bytearray(max(size, 1))
    held = 0  # bytes at the start of buf not yet in a block
    first = 1
    while True:
        if held == len(buf):  # a line longer than the buffer
            buf.extend(bytes(len(buf)))
        with memoryview(buf) as view:
            got = raw.readinto(view[held:])
        end = held + got
        if not got:
            break
        keep = 1 if buf[end - 1] == 13 else 0  # a '\\r' that may start a '\\r\\n'
        cut = buf.rfind(b"\n", 0, end - keep) + 1
        if buf.find(b"\r", 0, end - keep) >= 0:
            cut = max(cut, buf.rfind(b"\r", 0, end - keep) + 1)
        if not cut:
            held = end
            continue
        with memoryview(buf) as view:
            block = LineBlock(_text(bytes(view[:cut])), first)
        first += len(block)
        yield block
        held = end - cut
        buf[:held] = buf[cut:end]
    if held:
        data = _text(bytes(buf[:held]))
        yield LineBlock(data if data.endswith(b"\n") else data + b"\n", first)


def _text(data: bytes) -> bytes:
    """The bytes as the text stream decodes them: undecodable bytes as U+FFFD, '\\r\\n' and a
    lone '\\r' as '\\n'."""
    if not data.isascii():
        try:
            data.decode()
        except UnicodeDecodeError:
            data = data.decode("utf-8", "replace").encode()
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data
