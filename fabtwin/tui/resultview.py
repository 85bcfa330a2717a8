"""The SQL console's results: Arrow record batches read from DuckDB a page at a time, drawn with
the Line API (linegrid.LineGrid), so only the rows on screen become text.

The DataTable before it measured every cell it was given: 240-280 ms a page of 200 rows, more
as it grew. Here a page is an Arrow batch appended to a list; the next one is read ahead on a
worker thread while the user reads, so scrolling never waits on DuckDB unless it outruns it.
Column widths come from the header and the first page (a longer value is cut with an ellipsis).
"""

from __future__ import annotations

import contextlib
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass

import duckdb
import pyarrow as pa
from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual.strip import Strip

from fabtwin.tui.linegrid import LineGrid

PAGE = 1000  # rows per read from DuckDB: cheap, nothing is rendered until it is on screen
MAX_CELL = 60  # characters of a cell at most
BLOCK = 64  # rows turned into text together (one Arrow slice per column)
CACHED_BLOCKS = 256


def cell_text(v) -> str:
    if v is None:
        return "∅"
    if isinstance(v, float):
        return f"{v:.6g}"
    text = str(v).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


@dataclass(frozen=True)
class ResultColumn:
    """A result column as the grid shows it (`label`: name and type, as DataTable's was)."""

    label: str
    width: int  # characters, padding included
    right: bool  # numbers align right


class ResultsGrid(LineGrid):
    """The rows of a DuckDB result, read PAGE at a time as the cursor or the scroll nears the
    last row read."""

    COMPONENT_CLASSES = LineGrid.COMPONENT_CLASSES | {"results-grid--stripe"}
    DEFAULT_CSS = """
    ResultsGrid > .line-grid--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: bold;
    }
    ResultsGrid > .results-grid--stripe { background: $surface-lighten-1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.columns: dict[int, ResultColumn] = {}
        self.batches: list[pa.RecordBatch] = []
        self._starts: list[int] = []  # the first row of each batch
        self._blocks: OrderedDict[int, list[list[str]]] = OrderedDict()
        self.reader: pa.RecordBatchReader | None = None
        self.cursor_owner: duckdb.DuckDBPyConnection | None = None
        self.pending: pa.RecordBatch | None = None  # the next page, read ahead
        self.exhausted = True
        self.reading = False  # a worker is reading the page after `pending`
        self._shown = 0  # results shown so far: a read ahead for an older one is dropped

    # -- the result -------------------------------------------------------------------------
    def show(self, cursor: duckdb.DuckDBPyConnection, reader: pa.RecordBatchReader,
             first: pa.RecordBatch | None, second: pa.RecordBatch | None) -> None:
        """Start showing a new result, its first page and the next one read ahead (off the UI
        thread), so the grid knows whether there is more."""
        self.clear(columns=True)
        self.cursor_owner, self.reader = cursor, reader
        self.pending, self.exhausted = second, second is None
        texts = self._texts_of(first, 0, first.num_rows) if first is not None else []
        for k, field in enumerate(reader.schema):
            label = f"{field.name} {field.type}"
            width = max([len(label), *(len(row[k]) for row in texts[:200])]) + 2
            numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type) \
                or pa.types.is_decimal(field.type)
            self.columns[k] = ResultColumn(label, width, numeric)
        if first is not None:
            self._append(first)
        if self.exhausted:
            self.release()
        self._geometry()

    def clear(self, columns: bool = False) -> None:
        """Drop the rows shown (and, with `columns`, the columns): a new result, or none."""
        self.release()
        self._shown += 1
        self.batches, self._starts, self.pending, self.exhausted = [], [], None, True
        self._blocks.clear()
        if columns:
            self.columns = {}
        self.cursor_coordinate = Coordinate(0, 0)
        self.scroll_to(0, 0, animate=False)
        self._geometry()

    def release(self) -> None:
        """Drop the running result (its cursor holds the query open); a read under way closes
        it when it ends."""
        if self.cursor_owner is not None and not self.reading:  # else the read closes it
            self.cursor_owner.close()
        self.cursor_owner, self.reader = None, None
        if self.pending is None:
            self.exhausted = True

    def on_unmount(self) -> None:
        # DuckDB's Arrow batches keep its database open (a store opened again in this process
        # would find its configuration locked): drop them with the cursor
        self.release()
        self.batches, self.pending = [], None
        self._blocks.clear()

    def _geometry(self) -> None:
        rows = self._starts[-1] + self.batches[-1].num_rows if self.batches else 0
        self.version = self._shown  # a row looks the same however many follow it
        self.set_geometry(rows, [], [c.width for c in self.columns.values()])
        more = "" if self.exhausted else "+ (more as you scroll)"
        self.border_title = f"{rows:,}{more} rows"

    def _append(self, batch: pa.RecordBatch) -> None:
        rows = self._starts[-1] + self.batches[-1].num_rows if self.batches else 0
        if batch.num_rows:
            self._starts.append(rows)
            self.batches.append(batch)

    def fetch_more(self) -> None:
        """Append the page read ahead, and read the one after it on a worker thread."""
        if self.pending is None:
            return
        self._append(self.pending)
        self.pending = None
        if self.reader is None:
            self.exhausted = True
        elif not self.reading:
            self.reading = True
            # the worker outlives the read (the app keeps its workers): it must not keep the
            # reader, which keeps the store open after the app ends
            job = [self.reader, self.cursor_owner]
            shown = self._shown

            def read() -> None:
                reader, cursor = job
                job.clear()
                batch = None
                with contextlib.suppress(StopIteration, duckdb.Error, pa.ArrowException):
                    batch = reader.read_next_batch()
                del reader
                try:
                    self.app.call_from_thread(self._ahead, batch, shown, cursor)
                except RuntimeError:  # the app has ended
                    cursor.close()

            self.run_worker(read, thread=True, group="results-page", exit_on_error=False)
        self._geometry()

    def _ahead(self, batch: pa.RecordBatch | None, shown: int,
               cursor: duckdb.DuckDBPyConnection) -> None:
        """The page after `pending` was read (None: the end), for result `shown`."""
        self.reading = False
        if shown != self._shown or self.reader is None:  # released while it read
            cursor.close()
            return
        self.pending = batch
        if batch is None:
            self.release()
            self._geometry()
        elif self.row_count - self.cursor_row <= PAGE // 5:
            self.fetch_more()  # the user got there meanwhile

    def rows_shown(self, last: int) -> None:
        if self.row_count - last <= PAGE // 5:
            self.fetch_more()

    # -- cells ------------------------------------------------------------------------------
    @staticmethod
    def _texts_of(batch: pa.RecordBatch, start: int, count: int) -> list[list[str]]:
        part = batch.slice(start, count)
        columns = [[cell_text(v) for v in c.to_pylist()] for c in part.columns]
        return [list(row) for row in zip(*columns, strict=True)] if columns else []

    def texts(self, row: int) -> list[str]:
        """The cells of `row` as text (converted BLOCK rows at a time, kept for a while)."""
        block = row // BLOCK
        rows = self._blocks.get(block)
        if rows is None:
            rows = []
            first = block * BLOCK
            b = bisect_right(self._starts, first) - 1
            while len(rows) < BLOCK and b < len(self.batches):
                at = first + len(rows) - self._starts[b]
                rows += self._texts_of(self.batches[b], at, BLOCK - len(rows))
                b += 1
            self._blocks[block] = rows
            if len(self._blocks) > CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end(block)
        return rows[row - block * BLOCK]

    def get_row_at(self, row: int) -> list[str]:
        if not 0 <= row < self.row_count:
            raise IndexError(f"no row {row}")
        return self.texts(row)

    def get_cell_at(self, coordinate: Coordinate) -> str:
        return self.get_row_at(coordinate.row)[coordinate.column]

    def _cells(self, texts: list[str], style: Style | None) -> Strip:
        segments = []
        for text, col in zip(texts, self.columns.values(), strict=True):
            inner = col.width - 2
            cut = text if len(text) <= inner else text[:inner - 1] + "…"
            segments.append(Segment(f" {cut:>{inner}} " if col.right else f" {cut:<{inner}} ",
                                    style))
        return Strip(segments, sum(c.width for c in self.columns.values()))

    def render_row(self, row: int) -> Strip:
        stripe = self.get_component_rich_style("results-grid--stripe", partial=True) \
            if row % 2 else None
        return self._cells(self.texts(row), stripe)

    def render_header(self) -> tuple[Strip, Strip]:
        header = self.get_component_rich_style("line-grid--header")
        return Strip([]), self._cells([c.label for c in self.columns.values()], header)
