"""One incident: summary, the counter plot (observed, expected, fault window), evidence,
affected jobs and links; `r` jumps to the root cause, Enter opens an affected entity."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from textual.app import ComposeResult
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Static

from fabtwin.explanation import as_text
from fabtwin.incident_text import evidence_line
from fabtwin.ticket import write_ticket
from fabtwin.tui.actions import bindings
from fabtwin.tui.bars import KeyBar, TitleBar
from fabtwin.tui.data import Incident, Series, counters_for
from fabtwin.tui.plot import plot_height, render_plot
from fabtwin.tui.scrollbox import HintedScroll
from fabtwin.tui.tables import cursor_key, fill_table, fitted_table


class IncidentScreen(Screen):
    SCOPE = "incident"
    BINDINGS = bindings(SCOPE)
    # the plot takes what the head and the two tables leave (plot_height); the affected table
    # takes its rows (up to 12, then it scrolls) and the explanation and evidence the rest,
    # scrolling: both show rows at 80x24, and a tall terminal gives its rows to the evidence
    DEFAULT_CSS = """
    IncidentScreen #plot { height: auto; padding: 0 1; }
    IncidentScreen #evidence-box { height: 1fr; min-height: 3; }
    IncidentScreen #evidence { height: auto; padding: 0 1; }
    IncidentScreen #affected { max-height: 12; min-height: 4; }
    """

    def __init__(self, incident: Incident) -> None:
        super().__init__()
        self.incident = incident
        self.counters = counters_for(incident.kind)
        self.counter = 0
        self.series: Series | None = None
        self._plot_ports: list[str] = []
        self.evidence: list[dict] = []  # read by a worker (the ticket export waits for it)
        self.explanation: dict | None = None
        self.loaded = False  # the evidence and the affected table are filled (tests wait)

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static("", classes="summary", id="head")
        yield Static("", id="plot")
        # its border says how to reach the lines it hides (e focuses it, then the arrows scroll)
        with HintedScroll("why it was ranked", "e", id="evidence-box"):
            yield Static("", id="evidence")
        yield fitted_table("affected")
        yield KeyBar(self.SCOPE)

    def on_mount(self) -> None:
        inc = self.incident
        self.title = f"Incident #{inc.rank}: {inc.kind}"
        when = (f"{inc.start:%Y-%m-%d %H:%M:%S} .. {inc.end:%H:%M:%S}" if inc.start and inc.end
                else f"{inc.start:%Y-%m-%d %H:%M:%S} .. still going" if inc.start else "no time")
        self.query_one("#head", Static).update(
            f"[b]#{inc.rank} {escape(inc.kind)}[/b]  score {inc.score:.2f}  {when}\n"
            f"root cause: [b]{escape(inc.root_type)} {escape(inc.root_id)}[/b]\n"
            f"{escape(inc.summary)}")
        self.query_one("#evidence", Static).update("loading...")
        self.query_one("#affected", DataTable).focus()
        # the frame paints at once; the store is read on worker threads (the evidence and the
        # affected jobs, the plot's counter, side by side) and each part fills in on arrival
        data, rank, links, hosts = self.app.data, inc.rank, self._links(), \
            [p.split(":", 1)[0] for p in inc.ports()]

        def facts() -> tuple[list[dict], dict | None, list[tuple]]:
            return (data.evidence(rank), data.explanation(rank),
                    data.jobs_of(data.hosts_of_links(links) + hosts))

        self.run_worker(facts, thread=True, group="facts")
        self._load_series()

    def _links(self) -> list[str]:
        """The incident's affected links and, for a link's fault, its root cause."""
        inc = self.incident
        links = list(inc.impact.get("links", []))
        return links + [inc.root_id] if inc.root_type == "link" else links

    def _fill(self, evidence: list[dict], explanation: dict | None, jobs: list[tuple]) -> None:
        """The explanation, the evidence and the affected table, from what the worker read."""
        inc = self.incident
        day = f"{inc.start:%Y-%m-%d}" if inc.start else ""  # the head says the date once
        lines = [escape(evidence_line(e, day)) for e in evidence[:20]]
        if len(evidence) > 20:
            lines.append(f"... and {len(evidence) - 20} more (SQL: incident_evidence)")
        self.evidence, self.explanation = evidence, explanation
        why = escape(as_text(self.explanation))
        self.query_one("#evidence", Static).update(
            f"{why}\n"
            "[b]evidence[/b]\n" + ("\n".join(lines) if lines else "none recorded"))
        self._fill_affected(jobs)
        self.loaded = True

    def _fill_affected(self, found: list[tuple]) -> None:
        inc = self.incident
        rows = [(("root cause", inc.root_id, inc.root_type), f"{inc.root_type}|{inc.root_id}")]
        for key, values in inc.impact.items():
            if not isinstance(values, list):
                continue
            for v in values:
                kind = {"links": "link", "jobs": "job"}.get(key, "auto")
                if kind != "job":
                    rows.append(((key, str(v), ""), f"{kind}|{v}"))
        jobs = {j[0]: j for j in found}
        for job_id in inc.impact.get("jobs", []):
            jobs.setdefault(str(job_id), (job_id, "", None, None, ""))
        for job_id, tenant, start, _end, state in jobs.values():
            rows.append((("job", str(job_id), f"{tenant or ''} {state or ''} "
                          f"{start:%H:%M:%S}" if start else f"{tenant or ''}"), f"job|{job_id}"))
        table = self.query_one("#affected", DataTable)
        fill_table(table, ("affected", "id", "detail"), rows)
        table.border_title = "affected (Enter opens)"

    def _load_series(self) -> None:
        inc, data = self.incident, self.app.data
        pad = timedelta(minutes=5)
        t0 = inc.start - pad if inc.start else None
        t1 = (inc.end or inc.start) + pad if inc.start else None
        counter = self.counters[self.counter]

        def fetch() -> tuple[list[str], Series]:
            ports = inc.ports()[:1] or data.entity_ports(inc.root_type, inc.root_id)
            return ports, data.port_series(ports, counter, t0, t1)

        self.run_worker(fetch, thread=True, exclusive=True, group="series")

    def on_worker_state_changed(self, event) -> None:
        if not event.worker.is_finished or not event.worker.result:
            return
        if event.worker.group == "series":
            self._plot_ports, self.series = event.worker.result
            self._draw()
        elif event.worker.group == "facts":
            self._fill(*event.worker.result)

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.series is None:
            return
        inc = self.incident
        where = ", ".join(self._plot_ports[:3]) + ("..." if len(self._plot_ports) > 3 else "")
        self.query_one("#plot", Static).update(render_plot(
            self.series, self.size.width - 4, height=plot_height(self.size.height), fault=(inc.start, inc.end),
            title=f"{self.series.counter} of {where}   (c: next counter)"))

    def action_next_counter(self) -> None:
        self.counter = (self.counter + 1) % len(self.counters)
        self._load_series()

    def action_root_cause(self) -> None:
        inc = self.incident
        self.app.open_entity(inc.root_type, inc.root_id, inc.start)

    def action_export_ticket(self) -> None:
        """incident-<rank>.md and .json in the working directory, for the ticket."""
        if not self.loaded:  # the evidence is still being read: a ticket without it misleads
            self.notify("the evidence is still loading: export again in a moment",
                        severity="warning")
            return
        try:
            md, js = write_ticket(self.incident, self.evidence, self.explanation, Path.cwd())
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"wrote {md.name} and {js.name} in {md.parent}")

    def action_drill_down(self) -> None:
        from fabtwin.tui.screens.drill import DrillScreen  # imported when first opened

        self.app.push_screen(DrillScreen(self.incident))

    def action_fabric_at_start(self) -> None:
        inc = self.incident
        # a port's cell is its link's (a host port's: its leaf's host column)
        self.app.fabric_at(inc.start, inc.root_id if inc.root_type in ("link", "port") else None)

    def action_open_affected(self) -> None:
        self._open(cursor_key(self.query_one("#affected", DataTable)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.row_key.value)

    def _open(self, key: str | None) -> None:
        if not key:
            return
        kind, ident = key.split("|", 1)
        if kind == "job":
            self.app.open_job(ident)
        else:
            self.app.open_entity(kind, ident, self.incident.start)

    def action_toggle_explanation(self) -> None:
        """e: into the explanation and evidence box (the arrows scroll it), and out again."""
        box = self.query_one("#evidence-box", HintedScroll)
        (self.query_one("#affected", DataTable) if box.has_focus else box).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
