"""Small helpers shared by the screens' tables."""

from __future__ import annotations

from textual.widgets import DataTable


def cursor_key(table: DataTable | None) -> str | None:
    """The row key under the table's cursor, None for no table or an empty one."""
    if table is None or not table.row_count:
        return None
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
