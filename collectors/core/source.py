"""What every parser sees: the file it reads (`SourceFile`) and where it puts rows (`Sink`).

A parser is a module-level object with a name, a `sniff(head, name)` that recognizes its
format from the first bytes of the (decompressed) text, and a `parse(src, sink)` that streams
the file and calls the sink once per record:

- `sink.accept()` after a record was understood (whatever rows it produced, possibly none),
- `sink.reject(line, reason, raw)` for a record it could not understand.

So `records_read = loaded + rejected` holds by construction. Comments, blank lines and
format preambles (HELP/TYPE lines, "NIC statistics:") are not records.

Rows go to the sink's typed appenders (`sample`, `text_sample`, `event`, `log`, `neighbor`,
`address`, `ifmap`, `job`). Timestamps are integers, nanoseconds since the Unix epoch, UTC.
Device names go through `sink.device()` so that `host:port` suffixes and management
addresses become the hostname the rest of the store uses (design section 3).
"""

from __future__ import annotations

import fnmatch
import io
import ipaddress
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Protocol

import polars as pl

from collectors.core.timeparse import time_problem

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 16384


# what a manifest may say about the files of a bundle, bundle-wide or per file/folder pattern
CONTEXT_KEYS = ("host", "interface", "collected_at", "boot_time", "timezone", "year")


@dataclass(frozen=True)
class Manifest:
    """The optional `manifest.json` of a bundle, or (`for_file`) what it says about one file.

    The context a person gives for output that does not carry it: the `host` it came from,
    the NIC `interface` a bare `ethtool -S` was run on, when it was collected (`collected_at`,
    ns) and when its host booted (`boot_time`, ns: dmesg's seconds since boot). `files` holds
    the manifest's `context` rules, (pattern, overrides), applied in order to the files they
    match (`for_file`).
    """

    name: str = ""
    description: str = ""
    timezone: str | None = None  # IANA name or "+HH:MM", for syslog lines without a zone
    year: int | None = None  # for RFC 3164 lines, which carry no year
    host: str | None = None
    interface: str | None = None
    collected_at: int | None = None
    boot_time: int | None = None
    time_from: str = "manifest"  # where collected_at / boot_time came from: manifest | cli
    files: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def for_file(self, rel: str) -> Manifest:
        """This manifest with the overrides of every `files` rule matching `rel` applied, in
        the manifest's order (later rules win). A pattern matches like a shell glob on the
        bundle-relative path (`prom/*.prom`, `*/gpu-node-01*`), or names a folder (`nic/h1`,
        `nic/h1/`) whose files it matches at any depth."""
        out: dict[str, object] = {}
        for pattern, overrides in self.files:
            if _matches(pattern, rel):
                out.update(overrides)
        if not out:
            return self
        return replace(self, **out)  # type: ignore[arg-type]


def _matches(pattern: str, rel: str) -> bool:
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(rel, pattern) or rel.startswith(folder + "/")


@dataclass
class SourceFile:
    """One file of a bundle, as parsers see it."""

    path: Path
    rel: str  # path relative to the bundle root, with forward slashes
    manifest: Manifest = field(default_factory=Manifest)
    # set while the file is read (`open_text`): why the text ended early (a damaged gzip
    # stream, a document over the maximum) and the line where; lines over the maximum record
    read_error: str | None = None
    read_error_line: int = 0
    long_lines: list[int] = field(default_factory=list)
    # where the times of this file's rows came from: `sample` (the file's own), or the context
    # a parser fell back on (`collection_ts`, `boot_ts`): manifest | cli | boot_time | mtime
    time_source: str = "sample"
    # a device the bundle names elsewhere (LLDP, jobs, other files) that this file's path
    # names (`known_host_of`), set by ingest
    known_host: str | None = None

    @property
    def host_hint(self) -> str | None:
        """The device this file belongs to: what its conventional name says, else the
        manifest's (or `--host`'s) `host`, else what its name suggests.

        `nic/<host>/<dev>.<kind>`, `topology|syslog/<host>/...` and `<host>__<dev>.<kind>` name a
        host, and win over the manifest's: a bundle-wide `host` (or `--host` on a folder) is for
        the files that name none, never one host for every host's files. Then a file or folder
        named after a device the bundle knows (`known_host`) names it; any other file is named
        after its device when the stem looks like a hostname (`leaf-p0-03.log.gz`).
        """
        parts = self.rel.split("/")
        name = parts[-1]
        for suffix in (".gz",):
            name = name.removesuffix(suffix)
        if "__" in name:
            return name.split("__", 1)[0]
        if len(parts) >= 3 and parts[-3] in ("nic", "topology", "syslog"):
            return parts[-2]
        if self.manifest.host:
            return self.manifest.host
        if self.known_host:
            return self.known_host
        stem = name.split(".", 1)[0]
        return stem if _HOSTNAME.fullmatch(stem) else None

    @property
    def nic_hint(self) -> str | None:
        """The NIC device (`eth2`, `mlx5_2`) of a NIC snapshot file: the one its conventional
        name gives (`<host>__<dev>`, `nic/<host>/<dev>`), else the manifest's `interface`, if
        any (as for `host_hint`: the manifest's is for files that name none)."""
        parts = self.rel.split("/")
        name = parts[-1].removesuffix(".gz")
        if "__" in name:
            return name.split("__", 1)[1].split(".", 1)[0]
        if len(parts) >= 3 and parts[-3] == "nic":
            return name.split(".", 1)[0]
        return self.manifest.interface or None

    def collection_ts(self) -> int | None:
        """When this file was collected, for output that carries no time of its own (a plain
        scrape, a bare `ethtool -S`): the manifest's or `--time`'s `collected_at`, else, as a
        last resort, the file's modification time. Records which in `time_source`. None when
        that modification time is no valid time (a file unpacked with mtime 0)."""
        if self.manifest.collected_at is not None:
            self._timed_by(self.manifest.time_from)
            return self.manifest.collected_at
        mtime = os.stat(self.path).st_mtime_ns
        if time_problem(mtime) is not None:
            return None
        self._timed_by("mtime")
        return mtime

    def boot_ts(self) -> int | None:
        """When the file's host booted (manifest `boot_time`), for dmesg's seconds since boot;
        None when unknown. A caller that uses it calls `timed_by_boot()`."""
        return self.manifest.boot_time

    def timed_by_boot(self) -> None:
        """Record that times were computed from the host's boot time."""
        self._timed_by("boot_time")

    def _timed_by(self, source: str) -> None:
        # the weakest source used is the one to show: a guess taints the whole file
        if _TIME_RANK.get(source, 0) > _TIME_RANK.get(self.time_source, 0):
            self.time_source = source

    def open_text(self) -> IO[str]:
        """Open the file as text, transparently gunzipping; undecodable bytes become U+FFFD.

        Reading is bounded whatever the bytes (`MAX_RECORD_BYTES`, `MAX_DOCUMENT_CHARS`): a
        line longer than the maximum record reads as an empty line (its number kept in
        `long_lines`, so `run_parser` counts it as one reject), a damaged gzip stream ends at the
        last complete line before the damage (`read_error`, `read_error_line`).
        """
        self.read_error, self.read_error_line, self.long_lines = None, 0, []
        raw = open(self.path, "rb", buffering=0)  # noqa: SIM115 - returned to the caller
        head = raw.read(2)
        raw.seek(0)
        inner: io.RawIOBase = _GzipStream(raw, self) if head == GZIP_MAGIC else raw
        stream = io.BufferedReader(_BoundedLines(inner, self), 1 << 16)
        return _TextStream(stream, self)  # type: ignore[return-value]

    def lines(self) -> Iterator[tuple[int, str]]:
        """Stream `(line_number, line)` pairs, 1-based, without the line terminator."""
        with self.open_text() as fh:
            for number, line in enumerate(fh, 1):
                yield number, line.rstrip("\r\n")


# The longest line (or one-line JSON record) read: a longer one is one counted reject, read
# past in chunks and never held whole. gnmic's biggest real lines (a whole device's counters in
# one update) are tens of KB; a 50 MB line cost a parser 0.5-0.8 GB before this limit
MAX_RECORD_BYTES = 8 << 20
# The most a whole-document format (LLDP JSON, sacct --json, containerlab YAML) may hold: a
# parser reading a file whole gets its first MAX_DOCUMENT_CHARS characters, and one reject says
# the rest was not read. Real documents of these kinds are at most a few MB
MAX_DOCUMENT_CHARS = 64 << 20
_READ_CHUNK = 1 << 20  # bytes read (and, for gzip, decompressed) at a time; <= MAX_RECORD_BYTES


class _GzipStream(io.RawIOBase):
    """gzip members (concatenated, zero padding allowed) decompressed at most one read's worth
    at a time, so a small file that expands enormously is never held whole. Where the stream
    is truncated or corrupt it ends, recording why on the SourceFile (a file being written
    while collected is common): everything that decompressed before the damage is kept, as
    `zcat` prints it."""

    def __init__(self, raw: io.RawIOBase, src: SourceFile) -> None:
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


class _BoundedLines(io.RawIOBase):
    """The bytes of `inner`, whole lines at a time, with every line longer than
    `MAX_RECORD_BYTES` replaced by an empty one (its number noted in `src.long_lines`): such a
    line is skipped in chunks, never held. Where a damaged compressed stream broke, the partial
    line is dropped and its number kept in `src.read_error_line`."""

    def __init__(self, inner: io.RawIOBase, src: SourceFile) -> None:
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


class _TextStream:
    """The text of a file (a TextIOWrapper's, whose other methods it passes on); `read()` of
    it all stops at `MAX_DOCUMENT_CHARS` (noted as the file's `read_error`), so a parser
    reading a document whole holds a bounded text. Not a subclass: iterating a subclass of
    TextIOWrapper calls `readline` through Python, which made reading lines twice as slow."""

    def __init__(self, stream: io.BufferedReader, src: SourceFile) -> None:
        self._text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        # reads of 64 KB, not 8: a buffered reader passes a small read on to the raw stream
        # (a Python one here) when its buffer is empty, once per 8 KB otherwise
        self._text._CHUNK_SIZE = 1 << 16  # type: ignore[attr-defined]
        self._src = src

    def __getattr__(self, name: str) -> Any:
        return getattr(self._text, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._text)

    def __enter__(self) -> _TextStream:
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


def known_host_of(rel: str, devices: set[str]) -> str | None:
    """The device among `devices` (those the bundle's topology, jobs and counters name) that a
    bundle-relative path names: its file name starting with it followed by `-`, `_` or `.`
    (`gpu-node-01-ibdev2netdev.txt`; the longest such), else the nearest folder called after
    it (`ethtool/gpu-node-01/ibdev2netdev.txt`); None if none does."""
    parts = rel.split("/")
    name = parts[-1]
    best = None
    for cut in (i for i, c in enumerate(name) if c in "-_."):
        if name[:cut] in devices:
            best = name[:cut]
    if best is None:
        best = next((folder for folder in reversed(parts[:-1]) if folder in devices), None)
    return best


# how far a file's times are from measured ones (`SourceFile.time_source`), least first
_TIME_RANK = {"sample": 0, "boot_time": 1, "manifest": 2, "cli": 2, "mtime": 3}

_HOSTNAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*[0-9A-Za-z]")


class Parser(Protocol):
    """The interface of one format's reader."""

    name: str
    family: str  # topology | gnmi | prom | nic | syslog | jobs | normalized
    priority: int  # lower is ingested first: topology and address maps before counters
    # optional `ordered = True`: the parser reads lookups (addresses) that other files of the
    # same priority write, so its files are parsed one after another, never in parallel

    def sniff(self, head: str, rel: str) -> bool: ...

    def parse(self, src: SourceFile, sink: Sink) -> None: ...


def run_parser(parser: Parser, src: SourceFile, sink: Sink) -> None:
    """Parse `src` into `sink` and flush it. Each line over `MAX_RECORD_BYTES` is one more
    reject, and so is a text that ended early (a damaged gzip stream: the complete lines before
    the break were parsed; a document over `MAX_DOCUMENT_CHARS`)."""
    src.time_source = "sample"
    parser.parse(src, sink)
    sink.time_source = src.time_source
    for line in src.long_lines:
        sink.reject(line, f"line longer than {MAX_RECORD_BYTES >> 20} MiB (the maximum record "
                    "size): skipped unread", "")
    if src.read_error:
        line = src.read_error_line or sink.current_line + 1
        reason = f"{src.read_error}; the {line - 1} complete lines before it were read"
        sink.reject(line, reason, "")
        sink.ended_early = f"{src.rel}:{line}: {reason}"
    sink.close()


def strip_port(name: str) -> str:
    """`10.0.0.1:57400` -> `10.0.0.1`, `leaf-01:9100` -> `leaf-01`, `[::1]:80` -> `::1`."""
    name = name.strip()
    if name.startswith("["):
        return name[1:].split("]", 1)[0]
    if name.count(":") == 1:
        return name.split(":", 1)[0]
    return name


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def concat_samples(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Sample frames as one; their series ids (`sid`) kept only when every frame has them (ids
    beside rows without any would mean nothing)."""
    if not all("sid" in f.columns for f in frames):
        frames = [f.drop("sid", strict=False) for f in frames]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")


class Sink:
    """Collects the rows of one file, in column lists flushed in batches by the store.

    `flush` is called with (table, columns) whenever a table's buffer reaches `batch_rows`, so a
    file of any size is held in memory only one batch at a time.
    """

    TABLES: dict[str, tuple[str, ...]] = {
        "samples": ("ts", "device", "ifname", "metric", "qualifier", "value", "line"),
        "text_samples": ("ts", "device", "ifname", "metric", "qualifier", "value", "line"),
        "events": ("ts", "device", "ifname", "kind", "message", "line"),
        "logs": ("ts", "device", "program", "message", "line"),
        "neighbors": ("device", "ifname", "peer_device", "peer_ifname", "peer_mgmt_ip", "line"),
        "addresses": ("address", "device", "line"),
        "ifmap": ("host", "ibdev", "port", "netdev", "state", "line"),
        "jobs": ("job_id", "tenant", "start", "end", "state", "nodelist", "line"),
        "job_hosts": ("job_id", "host"),
    }

    def __init__(
        self,
        flush: Callable[[str, dict[str, list]], None] | None = None,
        batch_rows: int = 200_000,
        addresses: dict[str, str] | None = None,
        ifmaps: dict[tuple[str, str, int], str] | None = None,
    ) -> None:
        self._flush = flush
        self.batch_rows = batch_rows
        self.buffers: dict[str, dict[str, list]] = {
            t: {c: [] for c in cols} for t, cols in self.TABLES.items()
        }
        self.rows: dict[str, int] = dict.fromkeys(self.TABLES, 0)
        self.loaded = 0
        self.rejected = 0
        self.rejects: list[tuple[int, str, str]] = []  # pending (tests: all of them)
        self.first_reject: tuple[int, str, str] | None = None
        self.ended_early: str | None = None  # "file:line: reason" where the text broke off
        self.time_source = "sample"  # the file's `SourceFile.time_source`, set by run_parser
        self.addresses = addresses if addresses is not None else {}
        self.ifmaps = ifmaps if ifmaps is not None else {}
        self.current_line = 0
        # fast path for the hottest appender
        s = self.buffers["samples"]
        self._s = (s["ts"], s["device"], s["ifname"], s["metric"], s["qualifier"], s["value"], s["line"])

    # -- accounting -------------------------------------------------------------------------
    def accept(self, count: int = 1) -> None:
        """Count `count` records as understood and loaded."""
        self.loaded += count

    def reject(self, line: int, reason: str, raw: str) -> None:
        """Count one record as rejected, keeping where it was, why, and its raw text."""
        self.rejected += 1
        self.rejects.append((line, reason, raw[:4096]))
        if self.first_reject is None:
            self.first_reject = self.rejects[-1]
        if self._flush is not None and len(self.rejects) >= 10_000:
            self._emit_rejects()

    def _emit_rejects(self) -> None:
        if self.rejects and self._flush is not None:
            line, reason, raw = zip(*self.rejects, strict=True)
            self._flush("rejects", {"line": list(line), "reason": list(reason), "raw": list(raw)})
            self.rejects = []

    # -- names ------------------------------------------------------------------------------
    def device(self, name: str, fallback: str | None = None) -> str:
        """The canonical device id for a name or address seen in telemetry.

        Strips a `:port`; an address maps to the host the bundle associates with it (LLDP
        management address); an unmapped address becomes `fallback` (the file's host) if given.
        """
        bare = strip_port(name)
        if is_address(bare):
            mapped = self.addresses.get(bare)
            if mapped:
                return mapped
            if fallback:
                return fallback
        return bare

    def netdev(self, host: str, ibdev: str, port: int = 1) -> str:
        """The netdev of a host's RDMA device port (`mlx5_2` port 1 -> `eth2`) from ibdev2netdev.

        Unmapped: the RDMA device name for port 1, `ibdev/port` for the others.
        """
        found = self.ifmaps.get((host, ibdev, port))
        if found:
            return found
        return ibdev if port == 1 else f"{ibdev}/{port}"

    # -- rows -------------------------------------------------------------------------------
    def sample(
        self, ts: int, device: str, ifname: str, metric: str, value: float, qualifier: str = ""
    ) -> None:
        """One numeric sample of a counter or gauge, under its vendor name `metric`."""
        ts_, dev_, if_, met_, q_, val_, line_ = self._s
        ts_.append(ts)
        dev_.append(device)
        if_.append(ifname)
        met_.append(metric)
        q_.append(qualifier)
        val_.append(value)
        line_.append(self.current_line)
        if len(ts_) >= self.batch_rows:
            self._emit("samples")

    def samples_bulk(
        self,
        ts: list[int],
        device: list[str],
        ifname: list[str],
        metric: list[str],
        qualifier: list[str],
        value: list[float],
        line: list[int],
    ) -> None:
        """Append many samples at once (vectorized parsers); lists must have equal lengths.

        Accounting stays the caller's: call `accept(n)` / `reject(...)` for the records.
        """
        n = len(ts)
        if not all(len(c) == n for c in (device, ifname, metric, qualifier, value, line)):
            raise ValueError("samples_bulk: columns of unequal length")
        for col, new in zip(self._s, (ts, device, ifname, metric, qualifier, value, line),
                            strict=True):
            col.extend(new)
        if len(self._s[0]) >= self.batch_rows:
            self._emit("samples")

    def samples_frame(self, frame: pl.DataFrame) -> None:
        """Append samples given as a polars DataFrame with the `samples` columns (ts, device,
        ifname, metric, qualifier, value, line): the vectorized parsers' path, no Python lists.

        Accounting stays the caller's, as with `samples_bulk`. A parser that numbers its series
        may add `sid` (equal: the same series; `collectors.store.frames.with_predecessors`).
        """
        if frame.height == 0:
            return
        frame = frame.select(*self.TABLES["samples"], *(["sid"] if "sid" in frame.columns else []))
        if self._flush is None:  # tests: keep everything in the buffers
            for col, name in zip(self._s, self.TABLES["samples"], strict=True):
                col.extend(frame[name].to_list())
            return
        self._emit("samples")  # rows appended one by one go first, in order
        self.rows["samples"] += frame.height
        self._flush("samples", frame)

    def _append(self, table: str, values: tuple) -> None:
        buf = self.buffers[table]
        for col, v in zip(self.TABLES[table], values, strict=True):
            buf[col].append(v)
        if len(buf[self.TABLES[table][0]]) >= self.batch_rows:
            self._emit(table)

    def text_sample(
        self, ts: int, device: str, ifname: str, metric: str, value: str, qualifier: str = ""
    ) -> None:
        """A non-numeric value (an enum we do not map, a JSON document)."""
        self._append("text_samples", (ts, device, ifname, metric, qualifier, value, self.current_line))

    def event(self, ts: int, device: str, ifname: str, kind: str, message: str) -> None:
        """A discrete event: kind is one of `collectors.core.schema.EVENT_KINDS`."""
        self._append("events", (ts, device, ifname, kind, message, self.current_line))

    def log(self, ts: int, device: str, program: str, message: str) -> None:
        """One syslog line, kept whole whether or not it became an event."""
        self._append("logs", (ts, device, program, message, self.current_line))

    def neighbor(
        self, device: str, ifname: str, peer_device: str, peer_ifname: str, peer_mgmt_ip: str = ""
    ) -> None:
        """A cable seen from `device:ifname` (LLDP) or declared (containerlab)."""
        self._append(
            "neighbors", (device, ifname, peer_device, peer_ifname, peer_mgmt_ip, self.current_line)
        )

    def address(self, address: str, device: str) -> None:
        """An address that names `device` (LLDP management address, for instance)."""
        self.addresses.setdefault(address, device)
        self._append("addresses", (address, device, self.current_line))

    def ifmap(self, host: str, ibdev: str, port: int, netdev: str, state: str) -> None:
        """One ibdev2netdev line: `mlx5_2 port 1 ==> eth2 (Up)` on `host`."""
        self.ifmaps.setdefault((host, ibdev, port), netdev)
        self._append("ifmap", (host, ibdev, port, netdev, state, self.current_line))

    def job(
        self,
        job_id: str,
        tenant: str,
        start: int | None,
        end: int | None,
        state: str,
        nodelist: str,
        hosts: list[str],
    ) -> None:
        """One job and the hosts it ran on (start/end in ns; None when unknown or running)."""
        self._append("jobs", (job_id, tenant, start, end, state, nodelist, self.current_line))
        for host in hosts:
            self._append("job_hosts", (job_id, host))

    # -- batches ----------------------------------------------------------------------------
    def _emit(self, table: str) -> None:
        if self._flush is None:  # no store behind us (tests): keep everything buffered
            return
        buf = self.buffers[table]
        n = len(buf[self.TABLES[table][0]])
        if n == 0:
            return
        self.rows[table] += n
        self._flush(table, buf)
        fresh = {c: [] for c in self.TABLES[table]}
        self.buffers[table] = fresh
        if table == "samples":
            self._s = tuple(fresh[c] for c in self.TABLES["samples"])

    def close(self) -> None:
        """Flush every buffer."""
        for table in self.TABLES:
            self._emit(table)
        self._emit_rejects()

    def collected(self, table: str) -> list[dict]:
        """Rows still buffered for `table`, as dicts (for tests without a store)."""
        buf = self.buffers[table]
        cols = self.TABLES[table]
        return [dict(zip(cols, vals, strict=True)) for vals in zip(*(buf[c] for c in cols), strict=True)]
