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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Protocol

import polars as pl

from collectors.core.streams import (  # noqa: F401 - the limits are re-exported
    _READ_CHUNK,
    MAX_DOCUMENT_CHARS,
    MAX_RECORD_BYTES,
    BoundedLines,
    GzipStream,
    TextStream,
)
from collectors.core.timeparse import time_problem

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 16384


# what a manifest may say about the files of a bundle, bundle-wide or per file/folder pattern
CONTEXT_KEYS = ("host", "interface", "collected_at", "boot_time", "timezone", "year")
# the end of every "cannot tell which host" reject: the context issue 22 lets a person give
SAY_HOST = "or say it: 'host' in manifest.json, or `fabtwin ingest FILE --host H`"


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
        inner: io.RawIOBase = GzipStream(raw, self) if head == GZIP_MAGIC else raw
        stream = io.BufferedReader(BoundedLines(inner, self), 1 << 16)
        return TextStream(stream, self)  # type: ignore[return-value]

    def lines(self) -> Iterator[tuple[int, str]]:
        """Stream `(line_number, line)` pairs, 1-based, without the line terminator."""
        with self.open_text() as fh:
            for number, line in enumerate(fh, 1):
                yield number, line.rstrip("\r\n")


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
