"""A table drawn with Textual's Line API (a ScrollView with render_line): the base of the fabric
heatmap (heatgrid.HeatGrid) and the SQL results (resultview.ResultsGrid).

A DataTable measures, renders and restyles every cell it holds, so its cost grows with the
rows it is given (6,000 heatmap cells: 0.4-1.1 s of CPU per window step; 200 result rows a
page: 240-280 ms). Here only the lines on screen are rendered: a row's Strip is built once per
`version` of the data and kept (an LRU), the cursor is drawn over it, and the header row and
the fixed columns on the left stay put while the rest scrolls.

A subclass sets the geometry (`set_geometry`), bumps `version` when its data changes, and
says how a row looks (`render_row`, `render_fixed`, `render_header`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Hashable
from itertools import accumulate

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

CACHED_STRIPS = 8192  # rendered rows kept: every row of about 40 windows of a 96-leaf plane


class LineGrid(ScrollView, can_focus=True):
    """Rows of cells under a header row; `fixed` columns on the left (the row labels) do not
    scroll sideways. The cursor is a cell, `Coordinate(row, column)`, columns counted from the
    first fixed one (as a DataTable counts them)."""

    COMPONENT_CLASSES = {"line-grid--header", "line-grid--cursor"}
    DEFAULT_CSS = """
    LineGrid { height: 1fr; }
    LineGrid > .line-grid--header { text-style: bold; color: $text; }
    LineGrid > .line-grid--cursor { text-style: bold reverse; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1, 0)", "Cursor up", show=False),
        Binding("down", "cursor(1, 0)", "Cursor down", show=False),
        Binding("left", "cursor(0, -1)", "Cursor left", show=False),
        Binding("right", "cursor(0, 1)", "Cursor right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor(0, -1000000)", "First column", show=False),
        Binding("end", "cursor(0, 1000000)", "Last column", show=False),
        Binding("ctrl+home", "cursor(-1000000000, 0)", "Top", show=False),
        Binding("ctrl+end", "cursor(1000000000, 0)", "Bottom", show=False),
    ]
    cursor_type = "cell"  # as a DataTable's: what the copy keys read (clip.cursor_id)
    row_cursor = False  # True: the cursor is a whole row; left / right scroll sideways

    class Selected(Message):
        """The cell under the cursor was clicked (a second click on a cell, as a DataTable)."""

        def __init__(self, grid: LineGrid, coordinate: Coordinate) -> None:
            super().__init__()
            self.grid, self.coordinate = grid, coordinate

        @property
        def control(self) -> LineGrid:
            return self.grid

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.version: Hashable = None  # what the rows show: a new one, the strips are redrawn
        self._rows = 0
        self._fixed: list[int] = []  # widths of the fixed columns
        self._x: list[int] = []  # where each scrolling column starts, and (last) their end
        self._strips: OrderedDict[tuple[Hashable, int], Strip] = OrderedDict()
        self._cursor = Coordinate(0, 0)

    # -- geometry, to be set by the subclass -------------------------------------------------
    def set_geometry(self, rows: int, fixed: list[int], widths: list[int]) -> None:
        """`rows` rows; fixed columns of `fixed` widths, then scrolling ones of `widths`
        (each with the gap after it)."""
        self._rows, self._fixed = rows, list(fixed)
        self._x = [0]
        for w in widths:
            self._x.append(self._x[-1] + w)
        self._strips.clear()
        self._fit_width()
        self._cursor = self._clamp(self._cursor)
        self.refresh()

    def _fit_width(self) -> None:
        """The virtual width: the columns', and enough beyond them that the scroll which
        shows the last column starts at a column's edge (a cell is never shown cut in half at
        the left)."""
        fixed, end = sum(self._fixed), self._x[-1] if self._x else 0
        span = max(1, self.scrollable_content_region.width - fixed)
        width = fixed + end
        if end > span:
            width = max(width, fixed + self._x[bisect_left(self._x, end - span)] + span)
        self.virtual_size = Size(width, self._rows + 1)

    def on_resize(self, event: events.Resize) -> None:
        if self._x:
            self._fit_width()

    @property
    def row_count(self) -> int:
        return self._rows

    @property
    def column_count(self) -> int:
        return len(self._fixed) + len(self._x) - 1 if self._rows else 0

    # -- what a subclass draws ---------------------------------------------------------------
    def render_row(self, row: int) -> Strip:
        """The scrolling cells of `row`, all of them (cached per version)."""
        raise NotImplementedError

    def render_fixed(self, row: int, cursor: Style | None) -> Strip:
        """The fixed cells of `row` (the cursor's style when it is on the first)."""
        return Strip([])

    def render_header(self) -> tuple[Strip, Strip]:
        """The header row: its fixed part and its scrolling part."""
        raise NotImplementedError

    def rows_shown(self, last: int) -> None:
        """Rows up to `last` are on screen (a lazily read result fetches more)."""

    # -- cursor -----------------------------------------------------------------------------
    @property
    def cursor_coordinate(self) -> Coordinate:
        return self._cursor

    @cursor_coordinate.setter
    def cursor_coordinate(self, value: Coordinate) -> None:
        old, self._cursor = self._cursor, self._clamp(value)
        if old != self._cursor:
            self.refresh_line(old.row + 1)
            self.refresh_line(self._cursor.row + 1)
        self._scroll_to_cursor()
        self.rows_shown(self._cursor.row)

    @property
    def cursor_row(self) -> int:
        return self._cursor.row

    def get_cell_at(self, coordinate: Coordinate) -> str:
        """The text of a cell."""
        raise NotImplementedError

    def cursor_id(self) -> str:
        """What `y` copies: the id of what the cell under the cursor shows (its text here)."""
        return self.get_cell_at(self._cursor) if self._rows else ""

    def _clamp(self, c: Coordinate) -> Coordinate:
        columns = 1 if self.row_cursor else self.column_count
        return Coordinate(max(0, min(self._rows - 1, c.row)), max(0, min(columns - 1, c.column)))

    def action_cursor(self, rows: int, columns: int) -> None:
        r, k = self._cursor
        if self.row_cursor and columns:  # a row cursor: sideways is a scroll (home / end: all)
            step = 8 if abs(columns) == 1 else self.virtual_size.width
            self.scroll_to(self.scroll_offset.x + (step if columns > 0 else -step), None,
                           animate=False)
        self.cursor_coordinate = Coordinate(r + rows, 0 if self.row_cursor else k + columns)

    def action_cursor_down(self) -> None:
        self.action_cursor(1, 0)

    def action_cursor_up(self) -> None:
        self.action_cursor(-1, 0)

    def action_page(self, pages: int) -> None:
        self.action_cursor(pages * max(1, self.scrollable_content_region.height - 1), 0)

    def _scroll_to_cursor(self) -> None:
        self._fit_width()  # the width on screen now (set_geometry may have run before layout)
        width, height = self.scrollable_content_region.size
        r, k = self._cursor
        x, y = self.scroll_offset
        rows = max(1, height - 1)  # under the header
        y = r if r < y else r - rows + 1 if r >= y + rows else y
        j = k - len(self._fixed)
        if j >= 0 and j + 1 < len(self._x) and not self.row_cursor:
            span = max(1, width - sum(self._fixed))
            x0, x1 = self._x[j], self._x[j + 1]
            if x0 < x or x1 - x0 > span:
                x = x0
            elif x1 > x + span:  # the first column edge that shows column j whole
                x = self._x[bisect_left(self._x, x1 - span)]
        if (x, y) != tuple(self.scroll_offset):  # a row cursor leaves the sideways scroll be
            self.scroll_to(None if self.row_cursor else x, y, animate=False)

    def on_click(self, event: events.Click) -> None:
        at = event.get_content_offset(self)
        if at is None or at.y < 1 or not self._rows:
            return
        r = at.y - 1 + self.scroll_offset.y
        k = bisect_right(list(accumulate(self._fixed)), at.x)  # a fixed column, or past them
        if k == len(self._fixed):
            k += bisect_right(self._x, at.x - sum(self._fixed) + self.scroll_offset.x) - 1
        if r >= self._rows or k >= self.column_count:
            return
        clicked = Coordinate(r, 0 if self.row_cursor else k)
        if clicked == self._cursor:
            self.post_message(self.Selected(self, clicked))
        self.cursor_coordinate = clicked

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self.rows_shown(int(new) + self.scrollable_content_region.height - 1)

    # -- rendering --------------------------------------------------------------------------
    def _row(self, r: int) -> Strip:
        key = (self.version, r)
        strip = self._strips.get(key)
        if strip is not None:
            self._strips.move_to_end(key)
            return strip
        strip = self._strips[key] = self.render_row(r)
        if len(self._strips) > CACHED_STRIPS:
            self._strips.popitem(last=False)
        return strip

    def _with_cursor(self, strip: Strip, j: int, cursor: Style) -> Strip:
        """`strip` (a row's scrolling cells) with column j in the cursor's style, on top of
        the cell's own (a reverse over a heatmap colour keeps that colour visible)."""
        x0, x1 = self._x[j], self._x[j + 1]
        head, cell, tail = strip.divide([x0, x1, strip.cell_length])
        text = [Segment(t, (s or Style()) + cursor) for t, s, _ in cell]
        return Strip.join([head, Strip(text, cell.cell_length), tail])

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if not self._rows and y > 0:
            return Strip.blank(width, self.rich_style)
        scroll_x, scroll_y = self.scroll_offset
        span = max(0, width - sum(self._fixed))
        if y == 0:
            fixed, cells = self.render_header()
        else:
            r = y - 1 + scroll_y
            if r >= self._rows:
                return Strip.blank(width, self.rich_style)
            # partial: only the cursor's own attributes, over the cell's colours
            cursor = self.get_component_rich_style("line-grid--cursor", partial=True)
            on_row = r == self._cursor.row
            j = self._cursor.column - len(self._fixed)
            whole = on_row and self.row_cursor
            fixed = self.render_fixed(r, cursor if on_row and (j < 0 or whole) else None)
            cells = self._row(r)
            if whole:
                cells = Strip([Segment(t, (s or Style()) + cursor) for t, s, _ in cells],
                              cells.cell_length)
            elif on_row and j >= 0:
                cells = self._with_cursor(cells, j, cursor)
        line = Strip.join([fixed, cells.crop(scroll_x, scroll_x + span)])
        if line.cell_length == width:  # a full row: the widget's style (a third of a line's
            return line  # cost: a heatmap screen 21-24 -> 13-15 ms of CPU) is asked only to pad
        return line.adjust_cell_length(width, self.rich_style)
