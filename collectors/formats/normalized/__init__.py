"""The normalized schema itself, as CSV or Parquet, for users who export from their own TSDB.

Samples: columns `ts, device, ifname, value` and `counter` (a canonical name such as
`rx_bytes`) or `metric` (a vendor name that `counter_map` knows), optionally `qualifier`.
Events: columns `ts, device, ifname, kind` and optionally `message` (kinds of
`collectors.core.schema.EVENT_KINDS`). `ts` is ISO-8601 (UTC unless it has a zone) or epoch
s/ms/ns; in Parquet it may also be a timestamp column. Record = one row; line = the CSV line or
the 1-based Parquet row number.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

import pyarrow as pa

from collectors.core.schema import EVENT_KINDS, is_counter, value_problem
from collectors.core.source import Sink, SourceFile
from collectors.core.timeparse import NS, TimeError, checked, ns_to_iso, parse_any

_UNIT_NS = {"s": NS, "ms": 1_000_000, "us": 1000, "ns": 1}

SAMPLE_COLUMNS = {"ts", "device", "ifname", "value"}
EVENT_COLUMNS = {"ts", "device", "ifname", "kind"}


def _shape(columns: set[str]) -> str | None:
    if columns >= SAMPLE_COLUMNS and columns & {"counter", "metric"}:
        return "samples"
    if columns >= EVENT_COLUMNS:
        return "events"
    return None


def _shown(ns: int) -> str | int:
    """A time in ns as ISO-8601 where a datetime holds it (years 1..9999), else the number."""
    return ns_to_iso(ns) if -62_135_596_800 * NS <= ns < 253_402_300_800 * NS else ns


def _load_row(sink: Sink, shape: str, row: dict, line: int, raw: str) -> None:
    sink.current_line = line
    try:
        ts = row["ts"]
        # a Parquet timestamp (or an int column) is ns already; text goes through timeparse
        ts_ns = checked(ts, _shown(ts)) if isinstance(ts, int) else parse_any(str(ts))
        device, ifname = str(row["device"] or "").strip(), str(row["ifname"] or "").strip()
        if not device:
            raise ValueError("empty device")
        if shape == "samples":
            name = row.get("metric") or row.get("counter")
            if not name:
                raise ValueError("empty counter/metric")
            raw_value = row["value"]
            value = float(raw_value)
            why = value_problem(value, is_counter("normalized", str(name)), str(name),
                                raw_value if isinstance(raw_value, int | str) else None)
            if why is not None:
                raise ValueError(why)
            sink.sample(ts_ns, sink.device(device), ifname, str(name), value,
                        str(row.get("qualifier") or ""))
        else:
            kind = str(row["kind"])
            if kind not in EVENT_KINDS:
                raise ValueError(f"unknown event kind {kind!r}")
            sink.event(ts_ns, sink.device(device), ifname, kind, str(row.get("message") or ""))
    except (TimeError, ValueError, TypeError, KeyError, OverflowError) as exc:
        sink.reject(line, f"bad {shape} row: {exc}", raw)
        return
    sink.accept()


class NormalizedCsv:
    name = "normalized_csv"
    family = "normalized"
    priority = 40

    def sniff(self, head: str, rel: str) -> bool:
        first = head.split("\n", 1)[0].strip().lstrip("\ufeff")
        if "," not in first or first.startswith(("{", "[", "#")):
            return False
        return _shape({c.strip().strip('"') for c in first.split(",")}) is not None

    def parse(self, src: SourceFile, sink: Sink) -> None:
        with src.open_text() as fh:
            lines = _numbered(fh)
            try:
                header_line, header = next(lines)
            except StopIteration:
                return
            columns = [c.strip() for c in next(csv.reader([header.lstrip("\ufeff")]))]
            shape = _shape(set(columns))
            for number, text in lines:
                if not text.strip():
                    continue
                try:
                    values = next(csv.reader([text]))
                except csv.Error as exc:
                    sink.reject(number, f"bad CSV: {exc}", text)
                    continue
                if len(values) != len(columns):
                    sink.reject(number, f"{len(values)} fields, header has {len(columns)}", text)
                    continue
                _load_row(sink, shape, dict(zip(columns, values, strict=True)), number, text)


def _numbered(fh) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(fh, 1):
        yield number, line.rstrip("\r\n")


class NormalizedParquet:
    name = "normalized_parquet"
    family = "normalized"
    priority = 40

    def sniff(self, head: str, rel: str) -> bool:
        return head.startswith("PAR1")

    def parse(self, src: SourceFile, sink: Sink) -> None:
        import pyarrow.parquet as pq  # here: most bundles have no Parquet file

        try:
            pf = pq.ParquetFile(src.path)
        except Exception as exc:  # pyarrow raises several types for a corrupt footer
            sink.reject(1, f"unreadable Parquet file: {exc}", "")
            return
        shape = _shape(set(pf.schema_arrow.names))
        if shape is None:
            sink.reject(1, f"Parquet columns {pf.schema_arrow.names} are not the normalized "
                        "schema (ts, device, ifname, value and counter or metric)", "")
            return
        number = 0
        for batch in pf.iter_batches(batch_size=65_536):
            cols = batch.schema.names
            scale = 0
            if "ts" in cols and pa.types.is_timestamp(batch.schema.field("ts").type):
                # its own unit as int64, scaled in Python: a year-9999 time in ns would not fit
                # in int64 (pyarrow refuses the cast), and must be one reject, not the file's end
                scale = _UNIT_NS[batch.schema.field("ts").type.unit]
                batch = batch.set_column(cols.index("ts"), "ts", batch.column("ts").cast("int64"))
            for row in batch.to_pylist():
                number += 1
                if scale and row["ts"] is not None:
                    row["ts"] *= scale
                _load_row(sink, shape, row, number, str(row))


PARSERS = [NormalizedParquet(), NormalizedCsv()]
