"""A one-line title bar and key bar: plain text, one widget each.

Textual's Header and Footer rebuild a dozen child widgets (one per key) on every screen switch
and focus change, which cost more than the switch itself on a busy machine; these are one
widget each, drawn from the action registry (so they list exactly what the help lists); the key
bar keeps the most important keys that fit its width, the help first (it lists the rest).
"""

from __future__ import annotations

from functools import cache

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from fabtwin.tui.actions import ACTIONS, TABS, key_label, room


def _key_name(keys: str, typing: bool) -> str:
    """The key to show for `keys`: where digits are typed (the SQL editor) the F key."""
    names = key_label(keys).split(" / ")
    name = names[-1] if typing else names[0]
    return name.replace("Ctrl+", "^").upper() if name.startswith("Ctrl+") else name


# what a narrow bar keeps first (a lower number is kept before a higher): the help (it lists
# the rest), the screen's way back, quit, the tabs; then the screen's own keys in their declared
# order; the palette last (the help lists it too)
HELP, BACK, QUIT, SCREENS, OWN = range(5)
PALETTE = 10_000  # after every own key


@cache  # the registry is fixed: one list per scope, however often a bar is drawn
def key_items(scope: str) -> tuple[tuple[str, str, int], ...]:
    """(key, label, rank) of a screen's key bar in the order shown: the help, the screen's own
    keys, the tabs as one range, quit, the palette; `rank` says what a narrow bar keeps first
    (HELP .. PALETTE, then the own keys by their place)."""
    typing = scope == "sql"  # its editor takes digits and q: F keys and Ctrl+Q work there
    app = [a for a in ACTIONS if a.scope == "app" and a.show]
    helps = [a for a in app if a.action == room("help").open_action]
    tabs = [a for a in app if a.action in {r.open_action for r in TABS}]
    quits = [a for a in app if a.action == "app.quit"]
    own = [(_key_name(a.keys, False), a.description, BACK if a.keys.startswith("escape")
            else OWN + i) for i, a in enumerate(x for x in ACTIONS if x.scope == scope and x.show)]
    out = [(f"{_key_name(tabs[0].keys, typing)}-{_key_name(tabs[-1].keys, typing)}", "Screens",
            SCREENS)]
    out += [("^Q" if typing else _key_name(a.keys, False), a.description, QUIT) for a in quits]
    if typing:  # the way out of the editor first, or a narrow bar would hide it
        leave = [k for k in own if k[0] == "Esc"]
        out = leave + out + [k for k in own if k not in leave]
    else:
        out = own + out
    return (*[(_key_name(a.keys, typing), "Help", HELP) for a in helps], *out,
            ("^P", "Palette", PALETTE))


def key_text(scope: str, width: int = 10_000) -> Text:
    """The key bar of `scope` in `width` cells, whole keys only (never mid-label): the keys a
    narrow bar keeps first (key_items's rank) that fit, shown in their order; what does not fit
    is in the help, which is kept first."""
    items = key_items(scope)
    kept, used = set(), 0
    for i in sorted(range(len(items)), key=lambda i: items[i][2]):
        cells = cell_len(f"{items[i][0]} {items[i][1]} ")
        if used + cells <= width:  # a shorter key further down may still fit
            kept.add(i)
            used += cells
    out = Text()
    for i, (name, label, _rank) in enumerate(items):
        if i in kept:
            out.append(name, style="bold reverse")
            out.append(f" {label} ")
    return out


class KeyBar(Static):
    """The keys of a screen, then the keys that work everywhere, as many as the width holds."""

    DEFAULT_CSS = "KeyBar { dock: bottom; height: 1; background: $panel; }"

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def render(self) -> Text:
        return key_text(self.scope, self.size.width or 10_000)


class TitleBar(Static):
    """The screen's title and the store."""

    DEFAULT_CSS = """TitleBar { dock: top; height: 1; background: $primary; color: $text;
        text-style: bold; padding: 0 1; }"""

    def on_mount(self) -> None:
        self.watch(self.screen, "title", self._retitle)

    def _retitle(self, title: str | None) -> None:
        self.update(Text(f"fabtwin · {title or ''} · {self.app.sub_title}"))
