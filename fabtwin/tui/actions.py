"""Every key of the UI, defined once: screens bind from here, the help screen and the command
palette list from here, so a key, its help line and its palette entry cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Action:
    keys: str  # Textual key names, comma-separated
    action: str  # the action string Textual runs
    description: str
    scope: str  # "app" or a screen's name
    show: bool = True  # in the footer
    palette: bool = True  # offered by the command palette


ACTIONS: tuple[Action, ...] = (
    Action("1,f2", "app.switch_mode('incidents')", "Incidents", "app"),
    Action("2,f3", "app.switch_mode('fabric')", "Fabric", "app"),
    Action("3,f4", "app.switch_mode('events')", "Events", "app"),
    Action("4,f5", "app.switch_mode('sql')", "SQL", "app"),
    Action("question_mark,f1", "app.help", "Help", "app"),
    Action("q", "app.quit", "Quit", "app"),
    Action("slash", "filter", "Filter", "incidents"),
    Action("s", "sort", "Sort", "incidents"),
    Action("enter", "open", "Open incident", "incidents", palette=False),
    Action("escape", "clear_filter", "Clear filter", "incidents", show=False),
    Action("r", "root_cause", "Root cause", "incident"),
    Action("c", "next_counter", "Next counter", "incident"),
    Action("f", "fabric_at_start", "Fabric at start", "incident"),
    Action("enter", "open_affected", "Open affected", "incident", palette=False),
    Action("escape", "back", "Back", "incident"),
    Action("right_square_bracket,l", "step(1)", "Next window", "fabric"),
    Action("left_square_bracket,h", "step(-1)", "Prev window", "fabric"),
    Action("right_curly_bracket", "step(10)", "+10 windows", "fabric", show=False),
    Action("left_curly_bracket", "step(-10)", "-10 windows", "fabric", show=False),
    Action("p", "next_plane", "Next plane", "fabric"),
    Action("enter", "open_link", "Open link", "fabric", palette=False),
    Action("slash", "filter", "Device filter", "events"),
    Action("k", "next_kind", "Kind filter", "events"),
    Action("enter", "open_row", "Open device", "events", palette=False),
    Action("escape", "clear_filter", "Clear filters", "events", show=False),
    Action("c", "next_counter", "Next counter", "entity"),
    Action("enter", "open_row", "Open row", "entity", palette=False),
    Action("escape", "back", "Back", "entity"),
    Action("ctrl+r,f9", "run", "Run query", "sql"),
    Action("ctrl+up", "history(-1)", "Older query", "sql"),
    Action("ctrl+down", "history(1)", "Newer query", "sql"),
    Action("ctrl+o", "export", "Export (CSV, Parquet)", "sql"),
    Action("ctrl+t", "toggle_focus", "Editor/results", "sql"),
    Action("ctrl+g,escape", "cancel", "Cancel query", "sql"),
)

SCOPE_TITLES = {"app": "Everywhere", "incidents": "Incidents", "incident": "Incident detail",
                "fabric": "Fabric", "events": "Events", "entity": "Drill-down (port, link, device, host)",
                "sql": "SQL console"}


def bindings(scope: str) -> list[Binding]:
    """The Textual bindings of one scope."""
    return [Binding(a.keys, a.action, a.description, show=a.show)
            for a in ACTIONS if a.scope == scope]


def key_label(keys: str) -> str:
    """`question_mark,f1` -> `? / F1` for the help screen."""
    names = {"question_mark": "?", "slash": "/", "right_square_bracket": "]",
             "left_square_bracket": "[", "right_curly_bracket": "}", "left_curly_bracket": "{",
             "escape": "Esc", "enter": "Enter"}
    return " / ".join(names.get(k, k.replace("ctrl+", "Ctrl+").upper() if k.startswith("f")
                                and k[1:].isdigit() else k.replace("ctrl+", "Ctrl+"))
                      for k in keys.split(","))
