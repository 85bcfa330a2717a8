"""The bounded byte and text streams every SourceFile reads through (`SourceFile.open_text`):
gzip decompressed a chunk at a time with every complete line before damage kept, lines longer
than `MAX_RECORD_BYTES` read past as one counted reject, whole-document reads capped at
`MAX_DOCUMENT_CHARS`. `src` is the SourceFile being read (typed Any: source imports this module): the streams
note what they cut in it."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from typing import Any

# The longest line (or one-line JSON record) read: a longer one is one counted reject, read
# past in chunks and never held whole. gnmic's biggest real lines (a whole device's counters in
# one update) are tens of KB; a 50 MB line cost a parser 0.5-0.8 GB before this limit
MAX_RECORD_BYTES = 8 << 20
# The most a whole-document format (LLDP JSON, sacct --json, containerlab YAML) may hold: a
# parser reading a file whole gets its first MAX_DOCUMENT_CHARS characters, and one reject says
# the rest was not read. Real documents of these kinds are at most a few MB
MAX_DOCUMENT_CHARS = 64 << 20
_READ_CHUNK = 1 << 20  # bytes read (and, for gzip, decompressed) at a time; <= MAX_RECORD_BYTES


class GzipStream(io.RawIOBase):
    """gzip members (concatenated, zero padding allowed) decompressed at most one read's worth
    at a time, so a small file that expands enormously is never held whole. Where the stream
    is truncated or corrupt it ends, recording why on the SourceFile (a file being written
    while collected is common): everything that decompressed before the damage is kept, as
    `zcat` prints it."""

    def __init__(self, raw: io.RawIOBase, src: Any) -> None:
        self.raw, self.src = raw, src
        self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.input = b""  # compressed bytes not fed to `z` yet
        self.read_pos = 0  # bytes read from the file
        self.member = (0, 0)  # where the current member starts, and its bytes passed on
        self.fed = False  # the current member has started
        self.done = False
        self.spill = b""  # what a salvage recovered, passed on before the end

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        while not self.done:
            if not self.input:
                self.input = self.raw.read(_GZIP_INPUT) or b""
                self.read_pos += len(self.input)
                if not self.input:
                    if self.fed:
                        self._broken("compressed stream is truncated (it ends before its "
                                     "end marker)")
                    self.done = True
                    break
            if not self.fed:
                self.input = self.input.lstrip(b"\0")  # gzip allows zero padding
                if not self.input:
                    continue
                self.member = (self.read_pos - len(self.input), 0)
            self.fed = True
            try:
                out = self.z.decompress(self.input, len(buf))
            except zlib.error as exc:
                self.spill = self._salvage(self.read_pos - len(self.input), len(self.input))
                self._broken(f"compressed stream is corrupt ({exc})")
                break
            self.input = self.z.unconsumed_tail
            self.member = (self.member[0], self.member[1] + len(out))
            if self.z.eof:  # a member ended: another may follow
                self.input = self.z.unused_data + self.input
                self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self.fed = False
            if out:
                buf[:len(out)] = out
                return len(out)
        n = min(len(buf), len(self.spill))
        buf[:n], self.spill = self.spill[:n], self.spill[n:]
        return n

    def _salvage(self, at: int, size: int) -> bytes:
        """What the `size` bytes from offset `at`, whose decompression failed in one call (and
        so gave nothing), decompress to before the damage: the member decompressed again up to
        them, then they are fed one byte at a time. Only on this error path; at most
        `_GZIP_INPUT` bytes' worth."""
        start, skip = self.member
        z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        kept: list[bytes] = []

        def keep(out: bytes) -> None:  # what was not passed on yet
            nonlocal skip
            if skip < len(out):
                kept.append(out[skip:])
            skip = max(0, skip - len(out))

        with open(self.src.path, "rb") as fh:
            fh.seek(start)
            left = at - start
            while left > 0:  # decompressed again: most of it was passed on already
                data = fh.read(min(left, 1 << 16))
                left -= len(data)
                while data:
                    keep(z.decompress(data, 1 << 20))
                    data = z.unconsumed_tail
            for byte in fh.read(size):
                try:
                    keep(z.decompress(bytes([byte])))
                except zlib.error:
                    break
        return b"".join(kept)

    def _broken(self, why: str) -> None:
        self.src.read_error = why
        self.done = True

    def close(self) -> None:
        self.raw.close()
        super().close()


_GZIP_INPUT = 1 << 14  # compressed bytes fed at a time (what a salvage feeds one by one)


class BoundedLines(io.RawIOBase):
    """The bytes of `inner`, whole lines at a time, with every line longer than
    `MAX_RECORD_BYTES` replaced by an empty one (its number noted in `src.long_lines`): such a
    line is skipped in chunks, never held. Where a damaged compressed stream broke, the partial
    line is dropped and its number kept in `src.read_error_line`."""

    def __init__(self, inner: io.RawIOBase, src: Any) -> None:
        self.inner, self.src = inner, src
        self.tail = bytearray()  # the line being read (no '\n' yet), at most MAX_RECORD_BYTES
        self.skipping = False  # inside a line too long to keep
        self.lines = 0  # '\n's passed on so far
        self.out: list[memoryview] = []  # what is ready to pass on, in order
        self.buf = bytearray(_READ_CHUNK)
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        while not self.out and not self.eof:
            self._refill()
        if not self.out:
            return 0
        n = min(len(buf), len(self.out[0]))
        buf[:n] = self.out[0][:n]
        self.out[0] = self.out[0][n:]
        if not self.out[0]:
            self.out.pop(0)
        return n

    def _refill(self) -> None:
        # into one buffer, reused: a fresh 1 MiB `bytes` per read cost a third more time
        # (each one mapped and unmapped by malloc); `out` is empty, so nothing points into it
        buf = self.buf
        n = self.inner.readinto(buf) or 0
        if not n:
            self.eof = True
            if self.src.read_error:  # the stream broke inside this line: it is not complete
                self.src.read_error_line = self.lines + 1
            elif self.skipping:  # a last line too long, without its '\n': empty, as others
                self.out = [memoryview(b"\n")]
            elif self.tail:
                self.out = [memoryview(bytes(self.tail))]
            self.tail = bytearray()
            return
        first = buf.find(b"\n", 0, n)
        if first < 0:  # the line goes on
            if not self.skipping and len(self.tail) + n > MAX_RECORD_BYTES:
                self._too_long()
            if not self.skipping:
                self.tail += memoryview(buf)[:n]
            return
        if not self.skipping and len(self.tail) + first > MAX_RECORD_BYTES:
            self._too_long()
        last = buf.rfind(b"\n", 0, n)
        head = b"\n" if self.skipping else bytes(self.tail) + buf[:first + 1]
        body = memoryview(buf)[first + 1:last + 1]  # whole lines, each shorter than a chunk
        self.out = [memoryview(head), body] if body else [memoryview(head)]
        self.lines += 1 + buf.count(b"\n", first + 1, last + 1)
        self.skipping = False
        self.tail = bytearray(buf[last + 1:n])

    def _too_long(self) -> None:
        self.src.long_lines.append(self.lines + 1)
        self.skipping = True
        self.tail = bytearray()

    def close(self) -> None:
        self.inner.close()
        super().close()


class TextStream:
    """The text of a file (a TextIOWrapper's, whose other methods it passes on); `read()` of
    it all stops at `MAX_DOCUMENT_CHARS` (noted as the file's `read_error`), so a parser
    reading a document whole holds a bounded text. Not a subclass: iterating a subclass of
    TextIOWrapper calls `readline` through Python, which made reading lines twice as slow."""

    def __init__(self, stream: io.BufferedReader, src: Any) -> None:
        self._text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        # reads of 64 KB, not 8: a buffered reader passes a small read on to the raw stream
        # (a Python one here) when its buffer is empty, once per 8 KB otherwise
        self._text._CHUNK_SIZE = 1 << 16  # type: ignore[attr-defined]
        self._src = src

    def __getattr__(self, name: str) -> Any:
        return getattr(self._text, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._text)

    def __enter__(self) -> TextStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._text.close()

    def read(self, size: int | None = -1) -> str:
        if size is not None and size >= 0:
            return self._text.read(size)
        # in pieces: a read of MAX_DOCUMENT_CHARS at once would allocate that much first
        parts, got = [], 0
        while got < MAX_DOCUMENT_CHARS and (part := self._text.read(
                min(_READ_CHUNK, MAX_DOCUMENT_CHARS - got))):
            parts.append(part)
            got += len(part)
        text = "".join(parts)
        if got == MAX_DOCUMENT_CHARS and self._text.read(1):
            self._src.read_error = (f"longer than {MAX_DOCUMENT_CHARS >> 20} Mi characters, the "
                                    "most a document read whole (JSON, YAML) may have: the rest "
                                    "was not read")
            self._src.read_error_line = text.count("\n") + 1
        return text
