"""The fabric heatmap's grid: each cell's text and colour come from an integer code in a numpy
array (one per window, fabric_windows.cell_codes), looked up in a table built once per code,
and only the rows on screen are rendered (linegrid.LineGrid), each cached per window.

A window step costs the rows visible (about 35 rows of 64 cells), whatever the size of the
fabric; the DataTable it replaces restyled every cell it held (6,000 per plane on a 256-switch
fabric: 0.4-1.1 s of CPU per step).

Column 0 holds the row labels (the leaves), fixed while scrolling sideways.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual.strip import Strip

from fabtwin.tui.linegrid import LineGrid

CELL_TEXT = 4  # the characters of a cell's look (" 25 ", "100!", " DN")
CELL_W = CELL_TEXT + 1  # a cell and the gap after it


class HeatGrid(LineGrid):
    """Cells `codes[row, column]` (ints), each drawn as `look(code)`: (text of at most 4
    characters, Rich style); rows and columns labelled."""

    COMPONENT_CLASSES = LineGrid.COMPONENT_CLASSES | {"heat-grid--label"}
    DEFAULT_CSS = "HeatGrid > .heat-grid--label { color: $text; }"

    def __init__(self, look: Callable[[int], tuple[str, str]], corner: str = "",
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self._look = look
        self._cells: dict[int, Segment] = {}  # code -> its segment (text and style)
        self.corner = corner
        self.row_labels: list[str] = []
        self.column_labels: list[str] = []  # the data columns' (column 1 onwards)
        self.codes = np.zeros((0, 0), dtype=np.int16)
        # the id of what a cell shows (a link, a leaf), for `y`; None: the cell's text
        self.cell_id: Callable[[Coordinate], str] | None = None

    def set_grid(self, rows: list[str], columns: list[str], codes: np.ndarray,
                 key: Hashable) -> None:
        """Show `codes` (rows x columns ints); `key` names them (the same key, the same
        codes: their rendered rows are reused)."""
        if codes.shape != (len(rows), len(columns)):
            raise ValueError(f"codes of shape {codes.shape} for {len(rows)} x {len(columns)}")
        if rows != self.row_labels or columns != self.column_labels:
            self.row_labels, self.column_labels = list(rows), list(columns)
            width = max([len(self.corner), *map(len, rows)], default=0) + 2
            self.set_geometry(len(rows), [width], [CELL_W] * len(columns))
        self.codes, self.version = codes, key
        self.refresh()

    def get_cell_at(self, coordinate: Coordinate) -> str:
        """The text of a cell: its row's label in column 0."""
        r, k = coordinate
        if not (0 <= r < self.row_count and 0 <= k < self.column_count):
            raise IndexError(f"no cell at {coordinate}")
        return self.row_labels[r] if k == 0 else self._look(int(self.codes[r, k - 1]))[0]

    def get_row_at(self, row: int) -> list[str]:
        """A row's label and the text of its cells."""
        return [self.get_cell_at(Coordinate(row, k)) for k in range(self.column_count)]

    def cursor_id(self) -> str:
        if self.cell_id is not None and self.row_count:
            return self.cell_id(self.cursor_coordinate)
        return super().cursor_id()

    def _segment(self, code: int) -> Segment:
        seg = self._cells.get(code)
        if seg is None:
            text, style = self._look(code)
            seg = self._cells[code] = Segment(text.ljust(CELL_TEXT)[:CELL_TEXT],
                                              Style.parse(style))
        return seg

    def render_row(self, row: int) -> Strip:
        gap = Segment(" ")
        segments = []
        for code in self.codes[row].tolist():
            segments += (self._segment(code), gap)
        return Strip(segments, CELL_W * len(self.column_labels))

    def render_fixed(self, row: int, cursor: Style | None) -> Strip:
        style = self.get_component_rich_style("heat-grid--label")
        width = self._fixed[0]
        return Strip([Segment(f" {self.row_labels[row]}".ljust(width),
                              style + cursor if cursor else style)], width)

    def render_header(self) -> tuple[Strip, Strip]:
        header = self.get_component_rich_style("line-grid--header")
        width = self._fixed[0] if self._fixed else 0
        # right-aligned over the cells' digits (" 25 ", "100!")
        labels = "".join(f"{c:>{CELL_TEXT - 1}.{CELL_TEXT}}".ljust(CELL_W)
                         for c in self.column_labels)
        return (Strip([Segment(f" {self.corner}".ljust(width), header)], width),
                Strip([Segment(labels, header)], len(labels)))
