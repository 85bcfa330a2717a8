"""Every key, listed from the same registry the screens bind from."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fabtwin.tui.actions import ACTIONS, HELP_SCOPES, SCOPE_TITLES, bindings, key_label

TABLE_KEYS = ("Arrows / PgUp / PgDn / Home / End move in tables; Tab moves focus; "
              "Ctrl+P opens the command palette (actions, and any device, link or port by name); "
              "Ctrl+Q also quits.")


def help_text() -> Text:
    """Every key of the rooms the help lists, under each room's title."""
    out = Text()
    out.append("fabtwin tui: keys\n\n", style="bold")
    for scope in HELP_SCOPES:
        out.append(SCOPE_TITLES[scope] + "\n", style="bold")
        for a in ACTIONS:
            if a.scope == scope:
                out.append(f"  {key_label(a.keys):<16} {a.description}\n")
        out.append("\n")
    dialogs = "; ".join(a.description for a in ACTIONS if a.scope not in HELP_SCOPES)
    out.append(f"{TABLE_KEYS}\n\n{dialogs}.")
    return out


class HelpScreen(ModalScreen):
    SCOPE = "help"
    BINDINGS = bindings(SCOPE)
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll { width: 90%; max-width: 100; height: 90%;
        border: thick $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help")
