"""Small helpers shared by the screens' tables."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import DataTable


def fitted_table(table_id: str) -> DataTable:
    """A row-cursor table as tall as its rows (the app's CSS gives every table 1fr, and wins
    over a screen's CSS: set on the widget's own styles)."""
    table = DataTable(cursor_type="row", id=table_id)
    table.styles.height = "auto"
    return table


def cursor_key(table: DataTable | None) -> str | None:
    """The row key under the table's cursor, None for no table or an empty one."""
    if table is None or not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


def fill_table(table: DataTable, labels: tuple[str, ...], rows: list[tuple[tuple, str]]) -> None:
    """Columns sized to their widest cell, then the rows (`(cells, key)` each). The DataTable
    sizes auto-width columns on its next idle; a frame painted before then (a busy machine, a
    worker's fill) showed the cells cut to the labels' widths, so the widths are given."""
    widths = [cell_len(label) for label in labels]
    for cells, _key in rows:
        widths = [max(w, cell_len(str(c))) for w, c in zip(widths, cells, strict=True)]
    for label, width in zip(labels, widths, strict=True):
        table.add_column(label, width=width)
    for cells, key in rows:
        table.add_row(*cells, key=key)
