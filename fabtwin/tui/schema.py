"""The SQL console's helpers in Harlequin's manner: the store's schema as a tree (tables, views,
their columns; Enter inserts a name into the editor) and the statement under the editor's
cursor, found with DuckDB's own parser (duckdb.extract_statements)."""

from __future__ import annotations

import duckdb
from textual.widgets import Tree


class SchemaTree(Tree[str]):
    """Tables and views of the store, each with its columns and their types. A node's data is
    the name Enter inserts; Space opens or closes a node."""

    DEFAULT_CSS = "SchemaTree { width: 30; height: 1fr; border-right: tall $panel; }"

    def __init__(self, **kwargs) -> None:
        super().__init__("store", **kwargs)
        self.auto_expand = False  # Enter inserts, as in Harlequin; Space expands
        self.show_root = False

    def fill(self, schema: list[tuple[str, str, list[tuple[str, str]]]]) -> None:
        """`schema`: StoreData.schema()'s (kind, name, [(column, type)])."""
        self.clear()
        for kind, title in (("table", "tables"), ("view", "views")):
            objects = [(name, cols) for k, name, cols in schema if k == kind]
            group = self.root.add(f"{title} ({len(objects)})", expand=True)
            for name, cols in objects:
                node = group.add(name, data=name)
                for col, typ in cols:
                    node.add_leaf(f"{col} [dim]{typ.lower()}[/dim]", data=col)


def statement_at(text: str, offset: int) -> str:
    """The statement of `text` (SQL, `;`-separated) holding character `offset`; a cursor in
    the blank or comment after the last `;` belongs to the statement before it. The whole
    text when DuckDB cannot split it (the run then reports the syntax error)."""
    try:
        parts = [s.query for s in duckdb.extract_statements(text)]
    except duckdb.Error:
        return text.strip()
    if not parts or "".join(parts) != text[:sum(map(len, parts))]:
        return text.strip()
    start = 0
    for i, part in enumerate(parts):
        end = start + len(part)
        if offset <= end or i == len(parts) - 1:  # just after its `;` is still it
            return part.strip()
        start = end
    return text.strip()


def offset_of(text: str, location: tuple[int, int]) -> int:
    """A TextArea (row, column) location as a character offset into `text`."""
    row, col = location
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[:row]) + min(col, len(lines[row]) if
                                                             row < len(lines) else 0)
