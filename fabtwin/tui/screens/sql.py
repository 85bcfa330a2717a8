"""SQL console: an editor with history, Ctrl+R runs, results page lazily from DuckDB,
Ctrl+O exports the whole result to CSV or Parquet. Read-only (fabtwin.tui.sqlrun)."""

from __future__ import annotations

import time

import duckdb
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static, TextArea

from collectors.store.query import QueryRefused
from fabtwin.tui import history
from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.resultview import PAGE, ResultsGrid
from fabtwin.tui.schema import SchemaTree, offset_of, statement_at
from fabtwin.tui.sqlrun import export, start_query

SCHEMA_MIN_WIDTH = 100  # narrower terminals open the schema with Ctrl+B
EXAMPLE = ("SELECT rank, kind, root_id, start, score FROM incidents ORDER BY rank;\n"
           "-- tables: samples events logs neighbors jobs job_hosts incidents expected_ports;\n"
           "-- views: port_rates links ports devices link_state_intervals")


class ExportScreen(ModalScreen[str | None]):
    """Ask where to export (the suffix picks the format)."""

    SCOPE = "export"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen Input { width: 70; }
    """

    def compose(self) -> ComposeResult:
        yield Input(value="result.csv", placeholder="file.csv or file.parquet (Esc cancels)",
                    id="path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SqlScreen(Screen):
    SCOPE = "sql"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = """
    SqlScreen #editor { height: 8; }
    SqlScreen #status { height: auto; padding: 0 1; }
    SqlScreen ResultsGrid { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: list[str] = history.load()
        self.position = len(self.history)
        self.last_sql = ""
        self.running: duckdb.DuckDBPyConnection | None = None  # the cursor of a query running

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Horizontal(id="body"):  # the schema beside the editor and results, as Harlequin
            yield SchemaTree(id="schema")
            with Vertical():
                yield from self._console()
        yield KeyBar(self.SCOPE)

    def _console(self) -> ComposeResult:
        yield TextArea(EXAMPLE, id="editor", soft_wrap=True, tab_behavior="indent")
        yield Static("F5 runs the statement under the cursor, Ctrl+R all (read-only); Esc "
                     "leaves the editor (then 1-5 and q work), Ctrl+T returns; Ctrl+B: schema "
                     "(Enter inserts a name); Ctrl+O exports.", classes="hint", id="status")
        yield ResultsGrid(id="results")

    def on_mount(self) -> None:
        self.title = "SQL"
        if not self.query("#editor"):  # the app quit while it built this screen ahead
            return
        self.query_one("#editor", TextArea).focus()
        schema = self.query_one("#schema", SchemaTree)
        schema.display = self.app.size.width >= SCHEMA_MIN_WIDTH  # Ctrl+B shows it anyway
        self.run_worker(self.app.data.schema, thread=True, group="schema")

    def on_worker_state_changed(self, event) -> None:
        if event.worker.group == "schema" and event.worker.is_finished and event.worker.result:
            self.query_one("#schema", SchemaTree).fill(event.worker.result)

    def action_toggle_schema(self) -> None:
        """Show the schema and move there, or hide it and go back to the editor."""
        schema = self.query_one("#schema", SchemaTree)
        schema.display = not (schema.display and schema.has_focus)
        (schema if schema.display else self.query_one("#editor", TextArea)).focus()

    def on_tree_node_selected(self, event: SchemaTree.NodeSelected) -> None:
        """Enter on a table, view or column: its name into the editor at the cursor."""
        if event.node.data:
            editor = self.query_one("#editor", TextArea)
            editor.insert(event.node.data)
            editor.focus()

    def action_run_statement(self) -> None:
        """Ctrl+Enter / F5: only the statement under the editor's cursor (or the selection)."""
        editor = self.query_one("#editor", TextArea)
        sql = editor.selected_text or statement_at(
            editor.text, offset_of(editor.text, editor.cursor_location))
        self.action_run(sql)

    def set_query(self, sql: str) -> None:
        """Put `sql` in the editor and run it."""
        self.query_one("#editor", TextArea).text = sql
        self.action_run()

    def status(self, text: str | Text) -> None:
        self.query_one("#status", Static).update(text if isinstance(text, Text) else Text(text))

    def action_run(self, sql: str | None = None) -> None:
        """Run `sql`, or the editor's whole text (its last statement's result shows)."""
        sql = (self.query_one("#editor", TextArea).text if sql is None else sql).strip()
        if not sql:
            self.status("nothing to run")
            return
        if not self.history or self.history[-1] != sql:
            self.history.append(sql)
            history.save(self.history)
        self.position = len(self.history) - 1  # the editor shows this entry; Ctrl+Up: older
        self._interrupt()
        self.query_one(ResultsGrid).release()
        self.status("running...")
        self._run(sql)

    @work(thread=True, exclusive=True, group="sql")
    def _run(self, sql: str) -> None:
        t = time.perf_counter()
        try:
            cursor, reader = start_query(self.app.data.con, sql, batch_rows=PAGE,
                                         on_cursor=lambda c: setattr(self, "running", c))
            pages = []
            for _ in range(2):  # the first page, and the next read ahead
                try:
                    pages.append(reader.read_next_batch())
                except StopIteration:
                    pages.append(None)
                    break
        except (QueryRefused, duckdb.Error) as exc:
            if self.running is not None:
                self.running.close()
            self.running = None
            text = "cancelled" if "interrupt" in str(exc).lower() else str(exc)
            self.app.call_from_thread(self._failed, text)
            return
        self.running = None
        took = time.perf_counter() - t
        pages += [None] * (2 - len(pages))
        self.app.call_from_thread(self._show, sql, cursor, reader, pages, took)

    def _show(self, sql, cursor, reader, pages, took: float) -> None:
        grid = self.query_one(ResultsGrid)
        grid.show(cursor, reader, *pages)
        self.last_sql = sql
        self.status(f"first page in {took * 1000:.0f} ms; more rows load as you scroll. "
                    "Ctrl+O exports the whole result.")

    def _failed(self, message: str) -> None:
        """A query failed: its error, and no result left under it (the grid showing the
        previous query's rows would read as this one's)."""
        grid = self.query_one(ResultsGrid)
        grid.clear(columns=True)
        grid.border_title = "no result"
        self.last_sql = ""  # Ctrl+O exports the result shown, and none is
        self.status(Text(message, style="red"))

    def action_cancel(self) -> None:
        """Interrupt the query still computing its first page (a sort of millions of rows);
        with none running, leave the editor for the results, where 1-5 and q work again."""
        if not self._interrupt() and self.query_one("#editor", TextArea).has_focus:
            self.query_one(ResultsGrid).focus()

    def _interrupt(self) -> bool:
        """Interrupt the running query, if any; whether one was running."""
        if self.running is None:
            return False
        self.running.interrupt()
        self.status("cancelling...")
        return True

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self.position = max(0, min(len(self.history), self.position + step))
        editor = self.query_one("#editor", TextArea)
        editor.text = self.history[self.position] if self.position < len(self.history) else ""

    def action_toggle_focus(self) -> None:
        editor = self.query_one("#editor", TextArea)
        (self.query_one(ResultsGrid) if editor.has_focus else editor).focus()

    def action_export(self) -> None:
        if not self.last_sql:
            self.status("run a query first, then export it")
            return
        self.app.push_screen(ExportScreen(), self._export_to)

    def _export_to(self, path: str | None) -> None:
        if path:
            self.status(f"exporting to {path}...")
            self._export(self.last_sql, path)

    @work(thread=True, exclusive=True, group="export")
    def _export(self, sql: str, path: str) -> None:
        try:
            rows = export(self.app.data.con, sql, path, self.app.data.db)
        except (QueryRefused, ValueError, OSError, duckdb.Error) as exc:
            self.app.call_from_thread(self.status,
                                  Text(f"export failed: {exc}", style="red"))
            return
        self.app.call_from_thread(self.status, f"exported {rows:,} rows to {path}")
