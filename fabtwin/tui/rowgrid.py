"""A table of text rows with a key each, drawn with the Line API (linegrid.LineGrid): what a
DataTable with a row cursor shows, for tables that can be long (a 64-port leaf's ports on its
drill-down). A DataTable measures and renders every row it is given as the screen is pushed
(10-29 ms of the UI thread for 64 rows); here only the rows on screen are rendered.

Each column is as wide as its longest cell (at most MAX_CELL characters) plus a space on each
side, as a DataTable pads them; `row_key` is what Enter opens (a screen's `kind|id`).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual.strip import Strip

from fabtwin.tui.linegrid import LineGrid

MAX_CELL = 80  # characters of a cell at most (longer ones end in an ellipsis)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


class KeyedGrid(LineGrid):
    """Rows of text cells under a header, the cursor a whole row, a key per row."""

    row_cursor = True
    cursor_type = "row"  # what the copy keys read (clip.cursor_id)
    DEFAULT_CSS = """
    KeyedGrid { background: $surface; }
    KeyedGrid > .line-grid--header { background: $panel; color: $foreground; }
    KeyedGrid > .line-grid--cursor {
        background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    KeyedGrid:focus > .line-grid--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.labels: list[str] = []
        self.rows: list[tuple[str, ...]] = []
        self.keys: list[str] = []
        self.widths: list[int] = []
        self._shown = 0  # a version per set_rows: the kept strips of older rows are not used

    def set_rows(self, labels: list[str], rows: list[tuple[str, ...]], keys: list[str]) -> None:
        """Show `rows` (one text per label) under `labels`, row r opened by `keys[r]`; the
        cursor stays on its row number (the last row at most)."""
        if len(keys) != len(rows) or any(len(r) != len(labels) for r in rows):
            raise ValueError(f"{len(rows)} rows of {len(labels)} cells and {len(keys)} keys")
        self.labels, self.keys = list(labels), list(keys)
        self.rows = [tuple(_cut(str(c)) for c in r) for r in rows]
        self.widths = [max([len(label), *(len(r[k]) for r in self.rows)]) + 2
                       for k, label in enumerate(self.labels)]
        self._shown += 1
        self.version = self._shown
        self.set_geometry(len(self.rows), [], self.widths)

    def row_key(self, row: int) -> str:
        return self.keys[row]

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor; None for no rows."""
        return self.keys[self.cursor_row] if self.row_count else None

    def cursor_id(self) -> str:
        """What `y` copies: the id part of the cursor row's `kind|id` key, else its first cell."""
        key = self.cursor_key()
        if key is None:
            return ""
        return key.rsplit("|", 1)[1] if "|" in key and key.rsplit("|", 1)[1] else self.rows[
            self.cursor_row][0]

    def move_cursor(self, row: int) -> None:
        self.cursor_coordinate = Coordinate(row, 0)

    def get_row_at(self, row: int) -> list[str]:
        if not 0 <= row < self.row_count:
            raise IndexError(f"no row {row}")
        return list(self.rows[row])

    def get_cell_at(self, coordinate: Coordinate) -> str:
        return self.get_row_at(coordinate.row)[coordinate.column]

    def _cells(self, texts: tuple[str, ...] | list[str], style: Style | None) -> Strip:
        line = "".join(f" {t:<{w - 2}} " for t, w in zip(texts, self.widths, strict=True))
        return Strip([Segment(line, style)])

    def render_row(self, row: int) -> Strip:
        return self._cells(self.rows[row], None)

    def render_header(self) -> tuple[Strip, Strip]:
        return Strip([]), self._cells(self.labels,
                                      self.get_component_rich_style("line-grid--header"))
