"""A results grid that pages lazily: rows come from DuckDB's Arrow reader a page at a time,
fetched when the cursor or the scroll nears the last loaded row, so a million-row result costs
one page until someone scrolls (Harlequin caps its results; this reads on demand instead)."""

from __future__ import annotations

import contextlib

import duckdb
import pyarrow as pa
from textual.widgets import DataTable

PAGE = 200  # rows per fetch: small, since DataTable measures every cell it is given


def cell_text(v) -> str:
    if v is None:
        return "∅"
    if isinstance(v, float):
        return f"{v:.6g}"
    text = str(v)
    return text if len(text) <= 60 else text[:59] + "…"


class ResultsGrid(DataTable):
    """A DataTable fed from an Arrow RecordBatchReader, PAGE rows at a time."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="cell", zebra_stripes=True, **kwargs)
        self.reader: pa.RecordBatchReader | None = None
        self.cursor_owner: duckdb.DuckDBPyConnection | None = None
        self.pending: pa.RecordBatch | None = None  # the next page, read ahead
        self.exhausted = True
        self.fetching = False

    def show(self, cursor: duckdb.DuckDBPyConnection, reader: pa.RecordBatchReader,
             first: pa.RecordBatch | None, second: pa.RecordBatch | None) -> None:
        """Start showing a new result, its first page and the next one read ahead (off the UI
        thread), so the grid knows whether there is more."""
        self.release()
        self.clear(columns=True)
        self.cursor_owner, self.reader = cursor, reader
        self.add_columns(*(f"{f.name} {f.type}" for f in reader.schema))
        if first is not None:
            self._append(first)
        self.pending = second
        self.exhausted = second is None
        if self.exhausted:
            self.release()
        self._title()

    def release(self) -> None:
        """Drop the running result (its cursor holds the query open)."""
        if self.cursor_owner is not None:
            self.cursor_owner.close()
        self.cursor_owner, self.reader = None, None
        if self.pending is None:
            self.exhausted = True

    def on_unmount(self) -> None:
        self.release()

    def _append(self, batch: pa.RecordBatch) -> None:
        columns = [c.to_pylist() for c in batch.columns]
        self.add_rows([[cell_text(v) for v in row] for row in zip(*columns, strict=True)])

    def _title(self) -> None:
        more = "" if self.exhausted else "+ (more as you scroll)"
        self.border_title = f"{self.row_count:,}{more} rows"

    def fetch_more(self) -> None:
        """Append the page read ahead, and read the one after it."""
        if self.pending is None or self.fetching:
            return
        self.fetching = True
        try:
            self._append(self.pending)
            self.pending = None
            if self.reader is not None:
                with contextlib.suppress(StopIteration):
                    self.pending = self.reader.read_next_batch()
            if self.pending is None:
                self.release()
        finally:
            self.fetching = False
        self._title()

    def watch_cursor_coordinate(self, old, new) -> None:
        super().watch_cursor_coordinate(old, new)
        if new.row > old.row and self.row_count - new.row <= PAGE // 5:
            self.fetch_more()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new > old and new >= self.max_scroll_y - 5:  # the wheel or the scroll bar
            self.fetch_more()
