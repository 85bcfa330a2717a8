"""A one-line title bar and key bar: plain text, one widget each.

Textual's Header and Footer rebuild a dozen child widgets (one per key) on every screen switch
and focus change, which cost more than the switch itself on a busy machine; these are drawn
once from the action registry, so they also list exactly what the help screen lists.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from fabtwin.tui.actions import ACTIONS, key_label, room


def key_text(scope: str) -> Text:
    """Help first (a narrow terminal cuts the end off), then the screen's keys, then the rest."""
    app = [a for a in ACTIONS if a.scope == "app" and a.show]
    first = [a for a in app if a.action == room("help").open_action]
    keys = first + [a for a in ACTIONS if a.scope == scope and a.show] + \
        [a for a in app if a not in first]
    out = Text()
    for a in keys:
        names = key_label(a.keys).split(" / ")
        # in the SQL editor digits are typed, so the F keys are the ones to show there
        name = names[-1] if scope == "sql" and a.scope == "app" else names[0]
        name = name.replace("Ctrl+", "^").upper() if name.startswith("Ctrl+") else name
        out.append(name, style="bold reverse")
        out.append(f" {a.description} ")
    out.append("^P", style="bold reverse")
    out.append(" Palette")
    return out


class KeyBar(Static):
    """The keys of a screen, then the keys that work everywhere."""

    DEFAULT_CSS = "KeyBar { dock: bottom; height: 1; background: $panel; }"

    def __init__(self, scope: str) -> None:
        super().__init__(key_text(scope))


class TitleBar(Static):
    """The screen's title and the store."""

    DEFAULT_CSS = """TitleBar { dock: top; height: 1; background: $primary; color: $text;
        text-style: bold; padding: 0 1; }"""

    def on_mount(self) -> None:
        self.watch(self.screen, "title", self._retitle)

    def _retitle(self, title: str | None) -> None:
        self.update(Text(f"fabtwin · {title or ''} · {self.app.sub_title}"))
