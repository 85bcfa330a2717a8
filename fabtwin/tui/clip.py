"""What `y` and `Y` copy from the focused table: the id under the cursor, or its whole row
(tab-separated, as a spreadsheet pastes it). The app sends it with OSC 52
(App.copy_to_clipboard), which reaches the local clipboard over ssh and tmux too."""

from __future__ import annotations

from textual.widgets import DataTable

from fabtwin.tui.linegrid import LineGrid
from fabtwin.tui.tables import cursor_key


def row_cells(table: DataTable | LineGrid) -> list[str]:
    """The cells of the row under the cursor, as text."""
    if not table.row_count:
        return []
    return [str(c) for c in table.get_row_at(table.cursor_row)]


def row_text(table: DataTable | LineGrid) -> str:
    return "\t".join(row_cells(table))


def cursor_id(table: DataTable | LineGrid) -> str:
    """The entity id of the row under the cursor: the id part of a screen's `kind|id` row key,
    else the first cell naming a port or a link (`type id` cells give their id), else the cell
    under the cursor (a results grid, the heatmap)."""
    if not table.row_count:
        return ""
    if isinstance(table, LineGrid):  # the heatmap names the link under its cursor
        return table.cursor_id()
    key = cursor_key(table)
    if key and "|" in key:
        return key.rsplit("|", 1)[1]
    if table.cursor_type == "row":
        for cell in row_cells(table):
            last = cell.split()[-1] if cell.split() else ""
            if ":" in last or "--" in last:
                return last
        return row_cells(table)[0]
    return str(table.get_cell_at(table.cursor_coordinate))
