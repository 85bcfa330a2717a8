"""Every screen and every key of the UI, declared once.

ROOMS declares the screens (name, opening key, title, class, place in the tabs and the help);
ACTIONS declares the keys. The app registers its tabs and binds its keys from here, each
screen binds `bindings(SCOPE)`, the help screen, the key bar and the command palette list from
here: a key, its help line and its palette entry cannot disagree. Adding a screen is one
class and one Room line (and its keys, one Action line each).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Room:
    """One screen of the UI."""

    scope: str  # the screen's SCOPE: its actions' scope, its mode name when it is a tab
    title: str  # the heading of its keys in the help screen and in the palette
    screen: str  # `module.Class` under fabtwin.tui.screens, imported when first needed
    keys: str = ""  # the keys opening it from anywhere; "" : another screen opens it
    label: str = ""  # what its opening key is called in the key bar, help and palette
    tab: bool = False  # a Textual mode: its own screen stack, built while the user reads
    help: bool = True  # its keys have a section in the help screen

    def __post_init__(self) -> None:
        if self.tab and not self.keys:
            raise ValueError(f"room {self.scope!r}: a tab needs the keys that switch to it")
        if bool(self.keys) != bool(self.label):
            raise ValueError(f"room {self.scope!r}: opening keys and their label go together")

    @property
    def module(self) -> str:
        """The module its screen class lives in."""
        return "fabtwin.tui.screens." + self.screen.rsplit(".", 1)[0]

    @property
    def open_action(self) -> str:
        """The action string its opening keys run."""
        return f"app.open_tab('{self.scope}')" if self.tab else f"app.open_room('{self.scope}')"


# in help-screen order; the first tab is the one the UI opens on
ROOMS: tuple[Room, ...] = (
    Room("incidents", "Incidents", "incidents.IncidentsScreen", "1,f2", "Incidents", tab=True),
    Room("incident", "Incident detail", "incident.IncidentScreen"),
    Room("drill", "Incident drill-down", "drill.DrillScreen"),
    Room("fabric", "Fabric", "fabric.FabricScreen", "2,f3", "Fabric", tab=True),
    Room("events", "Events", "events.EventsScreen", "3,f4", "Events", tab=True),
    Room("entity", "Drill-down (port, link, device, host)", "entity.EntityScreen"),
    Room("sql", "SQL console", "sql.SqlScreen", "4,f5", "SQL", tab=True),
    Room("checks", "Checks (fabtwin check)", "checks.ChecksScreen", "5,f6", "Checks", tab=True),
    # dialogs: their keys are told on the help's last line, not in a section
    Room("help", "Help", "help.HelpScreen", "question_mark,f1", "Help", help=False),
    Room("export", "Export", "sql.ExportScreen", help=False),
)
TABS: tuple[Room, ...] = tuple(r for r in ROOMS if r.tab)
START = TABS[0].scope


@dataclass(frozen=True)
class Action:
    """One key (or several keys for the same thing) of the app or of a room."""

    keys: str  # Textual key names, comma-separated
    action: str  # the action string Textual runs
    description: str
    scope: str  # "app" or a room's scope
    show: bool = True  # in the key bar
    palette: bool = True  # offered by the command palette


ACTIONS: tuple[Action, ...] = (
    *(Action(r.keys, r.open_action, r.label, "app") for r in ROOMS if r.keys),
    Action("q", "app.quit", "Quit", "app"),
    Action("j", "app.cursor(1)", "Down (in a table)", "app", show=False),
    Action("k", "app.cursor(-1)", "Up (in a table)", "app", show=False),
    Action("y", "app.copy('id')", "Copy id", "app", show=False),
    Action("Y", "app.copy('row')", "Copy row", "app", show=False),
    Action("slash", "filter", "Filter", "incidents"),
    Action("s", "sort", "Sort", "incidents"),
    Action("enter", "open", "Open", "incidents", palette=False),
    Action("escape", "clear_filter", "Clear filter", "incidents", show=False),
    # in the order a narrow key bar keeps them: `c` last, the plot's title tells it
    Action("r", "root_cause", "Root cause", "incident"),
    Action("e", "toggle_explanation", "Why", "incident"),
    Action("d", "drill_down", "Drill", "incident"),
    Action("x", "export_ticket", "Export", "incident"),
    Action("f", "fabric_at_start", "Fabric", "incident"),
    Action("c", "next_counter", "Counter", "incident"),
    # the tables' titles say "Enter opens": the key bar keeps its 80 columns for the rest
    Action("enter", "open_affected", "Open", "incident", show=False, palette=False),
    Action("escape", "back", "Back", "incident"),
    Action("plus,equals_sign", "zoom(0.5)", "Zoom in", "drill"),
    Action("minus", "zoom(2)", "Zoom out", "drill"),
    Action("c", "next_counter", "Counter", "drill"),
    Action("enter", "open_row", "Open port", "drill", show=False, palette=False),
    Action("escape", "back", "Back", "drill"),
    Action("right_square_bracket,l", "step(1)", "Next window", "fabric"),
    Action("left_square_bracket,h", "step(-1)", "Prev window", "fabric"),
    Action("right_curly_bracket", "step(10)", "+10 windows", "fabric", show=False),
    Action("left_curly_bracket", "step(-10)", "-10 windows", "fabric", show=False),
    Action("p", "next_plane", "Next plane", "fabric"),
    Action("enter", "open_link", "Open link", "fabric", palette=False),
    Action("slash", "filter", "Device filter", "events"),
    Action("K", "next_kind", "Kind filter", "events"),
    Action("enter", "open_row", "Open device", "events", palette=False),
    Action("escape", "clear_filter", "Clear filters", "events", show=False),
    Action("c", "next_counter", "Counter", "entity"),
    Action("enter", "open_row", "Open", "entity", palette=False),
    Action("escape", "back", "Back", "entity"),
    Action("enter", "open", "Open", "checks"),
    # F5 first: terminals and tmux deliver Ctrl+Enter as Enter; on this screen F5 (the SQL
    # tab's key elsewhere) runs the statement under the cursor, as Harlequin's Ctrl+Enter
    Action("f5,ctrl+enter", "run_statement", "Run", "sql"),
    Action("ctrl+r,f9", "run", "Run all", "sql"),
    Action("ctrl+b", "toggle_schema", "Schema", "sql"),
    Action("ctrl+up", "history(-1)", "Older query", "sql", show=False),
    Action("ctrl+down", "history(1)", "Newer query", "sql", show=False),
    Action("ctrl+o", "export", "Export", "sql"),
    Action("ctrl+t", "toggle_focus", "Editor", "sql"),
    Action("escape,ctrl+g", "cancel", "Leave editor", "sql"),
    # the help's last line tells these (? and F1, which open the help, close it too)
    Action("escape,q,question_mark,f1", "dismiss", "Esc or q closes this help", "help",
           show=False, palette=False),
    Action("escape", "cancel", "Esc cancels an export", "export", show=False, palette=False),
)

SCOPE_TITLES = {"app": "Everywhere"} | {r.scope: r.title for r in ROOMS}
HELP_SCOPES = ("app", *(r.scope for r in ROOMS if r.help))  # the help screen's sections


def room(scope: str) -> Room:
    """The declaration of the room `scope`."""
    return next(r for r in ROOMS if r.scope == scope)


# keys Textual's TextArea binds (F6 selects the line, F7 all): a key of the app among them (the
# Checks tab's F6) is bound with priority, or in the SQL editor it would select instead
EDITOR_FKEYS = ("f6", "f7")


def bindings(scope: str) -> list[Binding]:
    """The Textual bindings of one scope."""
    out = []
    for a in ACTIONS:
        if a.scope != scope:
            continue
        keys = a.keys.split(",")
        first = [k for k in keys if scope != "app" or k not in EDITOR_FKEYS]
        if first:
            out.append(Binding(",".join(first), a.action, a.description, show=a.show))
        if len(first) < len(keys):
            out.append(Binding(",".join(k for k in keys if k not in first), a.action,
                               a.description, show=False, priority=True))
    return out


def key_label(keys: str) -> str:
    """`question_mark,f1` -> `? / F1` for the help screen."""
    names = {"question_mark": "?", "slash": "/", "right_square_bracket": "]",
             "left_square_bracket": "[", "right_curly_bracket": "}", "left_curly_bracket": "{",
             "escape": "Esc", "enter": "Enter", "plus": "+", "minus": "-", "equals_sign": "="}
    return " / ".join(names.get(k, k.replace("ctrl+", "Ctrl+").upper() if k.startswith("f")
                                and k[1:].isdigit() else k.replace("ctrl+", "Ctrl+"))
                      for k in keys.split(","))
