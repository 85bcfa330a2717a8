"""The Line API grids (fabtwin/tui/linegrid.py): only the rows on screen are rendered, the
cursor scrolls into view, a click on the cursor's cell selects it, and the SQL results turn into
text only the rows shown while DuckDB is read a page ahead."""

from __future__ import annotations

import duckdb
import numpy as np
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate

from fabtwin.tui.fabric_windows import PCT_CODES, cell_codes, decode
from fabtwin.tui.heatgrid import CELL_W, HeatGrid
from fabtwin.tui.resultview import PAGE, ResultsGrid
from fabtwin.tui.rowgrid import KeyedGrid
from fabtwin.tui.screens.fabric import code_look

LEAVES = [f"leaf-p0-{i:02d}" for i in range(96)]
COLUMNS = [f"{s:02d}" for s in range(1, 33)] + [f"h{k}" for k in range(1, 33)]


class Host(App):
    """One grid, filling an 80x24 terminal."""

    def __init__(self, grid) -> None:
        super().__init__()
        self.grid = grid
        self.selected: list[Coordinate] = []

    def compose(self) -> ComposeResult:
        yield self.grid

    def on_line_grid_selected(self, event) -> None:
        self.selected.append(event.coordinate)


def fabric_codes(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    util = rng.uniform(0, 1.1, (len(LEAVES), len(COLUMNS)))
    state = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=util.shape, p=[0.9, 0.05, 0.05])
    return cell_codes(util, state)


def test_cell_codes_keep_the_rounded_percent_and_the_state():
    util = np.array([0.246, 0.254, np.nan, 12.0, 0.5])
    state = np.array([0, 0, 0, 2, 3], dtype=np.int8)
    codes = cell_codes(util, state)
    assert codes[0] == codes[1]  # both read 25: one code, one colour
    assert [decode(c) for c in codes] == [(0.25, ""), (0.25, ""), (None, ""),
                                         (9.99, "degraded"), (None, "-")]
    assert code_look(int(codes[0]))[0] == " 25 " and code_look(int(codes[3]))[0] == "999!"
    assert codes.max() < 4 * PCT_CODES


async def test_heat_grid_renders_only_the_rows_on_screen_and_follows_the_cursor():
    grid = HeatGrid(code_look, corner="leaf \\ spine")
    rendered: list[int] = []
    render_row = grid.render_row
    grid.render_row = lambda r: rendered.append(r) or render_row(r)
    app = Host(grid)
    async with app.run_test(size=(80, 24)) as pilot:
        codes = fabric_codes(1)
        grid.set_grid(LEAVES, COLUMNS, codes, key="window 1")
        grid.focus()
        await pilot.pause()
        assert rendered and max(rendered) < 24 and len(set(rendered)) <= 23
        assert grid.get_cell_at(Coordinate(5, 0)) == LEAVES[5]
        assert grid.get_cell_at(Coordinate(5, 3)) == code_look(int(codes[5, 2]))[0]
        rendered.clear()
        await pilot.press("ctrl+end", "end")  # the last row, the last column
        await pilot.pause()
        assert grid.cursor_coordinate == Coordinate(95, 64)
        assert grid.scroll_offset.y == 95 - (grid.scrollable_content_region.height - 2)
        assert grid.scroll_offset.x == grid.max_scroll_x  # the last column in view
        span = grid.scrollable_content_region.width - len("leaf \\ spine") - 2
        assert grid._x[-1] <= grid.scroll_offset.x + span  # whole
        assert grid.scroll_offset.x in grid._x  # and the leftmost cell shown is not cut
        assert set(rendered) <= set(range(95 - 23, 96))  # the rows now on screen, only
        # the same window again: its rows come from the cache, a new window renders anew
        rendered.clear()
        grid.set_grid(LEAVES, COLUMNS, codes, key="window 1")
        await pilot.pause()
        assert rendered == []
        grid.set_grid(LEAVES, COLUMNS, fabric_codes(2), key="window 2")
        await pilot.pause()
        assert rendered and len(set(rendered)) <= 23


async def test_heat_grid_click_moves_the_cursor_then_selects_its_cell():
    grid = HeatGrid(code_look, corner="leaf \\ spine")
    app = Host(grid)
    async with app.run_test(size=(80, 24)) as pilot:
        grid.set_grid(LEAVES, COLUMNS, fabric_codes(3), key=1)
        await pilot.pause()
        label_w = len("leaf \\ spine") + 2
        at = (label_w + 2 * CELL_W + 1, 4)  # the third data column, the fourth row
        await pilot.click(HeatGrid, offset=at)
        assert grid.cursor_coordinate == Coordinate(3, 3) and app.selected == []
        await pilot.click(HeatGrid, offset=at)
        assert app.selected == [Coordinate(3, 3)]
        await pilot.click(HeatGrid, offset=(1, 2))  # a leaf's name: column 0
        assert grid.cursor_coordinate == Coordinate(1, 0)


async def test_results_grid_reads_a_page_ahead_and_renders_only_what_is_shown():
    con = duckdb.connect()
    cur = con.cursor()
    reader = cur.sql("SELECT range AS n, 'row ' || range AS label FROM range(1000000)"
                     ).to_arrow_reader(PAGE)
    grid = ResultsGrid()
    app = Host(grid)
    async with app.run_test(size=(80, 24)) as pilot:
        grid.show(cur, reader, reader.read_next_batch(), reader.read_next_batch())
        grid.focus()
        await pilot.pause()
        assert grid.row_count == PAGE and not grid.exhausted
        assert [c.label for c in grid.columns.values()] == ["n int64", "label string"]
        assert len(grid._blocks) == 1  # the rows on screen became text, not the page
        await pilot.press("ctrl+end")  # the last row read: the page read ahead is appended
        assert grid.row_count == 2 * PAGE
        await pilot.pause()
        for _ in range(100):  # the page after it is read on a worker thread
            if grid.pending is not None:
                break
            await pilot.pause(0.01)
        assert grid.pending is not None and grid.pending.num_rows == PAGE
        assert grid.get_row_at(2 * PAGE - 1) == [str(2 * PAGE - 1), f"row {2 * PAGE - 1}"]
        assert len(grid._blocks) <= 4
        grid.clear(columns=True)
        assert grid.row_count == 0 and not grid.columns
    con.close()


async def test_keyed_grid_draws_the_rows_on_screen_and_its_cursor_is_a_row():
    grid = KeyedGrid()
    rendered: list[int] = []
    render_row = grid.render_row
    grid.render_row = lambda r: rendered.append(r) or render_row(r)
    app = Host(grid)
    ports = [f"leaf-p0-17:swp{i}" for i in range(1, 201)]
    async with app.run_test(size=(80, 24)) as pilot:
        grid.set_rows(["port", "peer", "link", "note"],  # wider than the terminal
                      [(p, f"spine-p0-{i:02d}:swp17", f"{p}--spine-p0-{i:02d}:swp17", "x" * 30)
                       for i, p in enumerate(ports)], [f"port|{p}" for p in ports])
        grid.focus()
        await pilot.pause()
        assert rendered and max(rendered) < 24  # 200 rows held, a screen of them drawn
        header = grid.render_line(0).text
        assert header.startswith(" port") and "peer" in header and "link" in header
        assert grid.render_line(1).text.startswith(f" {ports[0]} ")
        await pilot.press("down", "down", "right")  # sideways scrolls, the cursor stays a row
        assert grid.cursor_coordinate == Coordinate(2, 0) and grid.scroll_offset.x > 0
        assert grid.cursor_key() == f"port|{ports[2]}" and grid.cursor_id() == ports[2]
        assert grid.get_row_at(2)[0] == ports[2]
        # the cursor's style covers the whole row, not one cell
        row = grid.render_line(3)
        cursor = grid.get_component_rich_style("line-grid--cursor", partial=True)
        assert all(s is not None and s.bgcolor == cursor.bgcolor for _t, s, _c in row)
        await pilot.press("ctrl+end")
        assert grid.cursor_row == 199 and set(rendered) - set(range(24)) <= set(range(170, 200))
        await pilot.click(KeyedGrid, offset=(30, 5))  # twice on a row: selected, any column
        row = grid.cursor_row
        await pilot.click(KeyedGrid, offset=(30, 5))
        assert app.selected == [Coordinate(row, 0)]
        grid.set_rows(["port"], [("only",)], ["port|only"])  # fewer rows: the cursor follows
        assert grid.cursor_row == 0 and grid.cursor_key() == "port|only"
