"""A scrolling box that says in its top border how to reach what it hides.

At 80x24 the incident's explanation and evidence box shows two or three lines of a dozen or
more; a scroll bar alone does not say that the rest is there nor how to get to it from the
keyboard, so the border title does: `why it was ranked · e, then ↓: 12 more lines`.
"""

from __future__ import annotations

from textual.containers import VerticalScroll


class HintedScroll(VerticalScroll):
    """A VerticalScroll whose border title is `title` and, while lines are hidden, the key that
    focuses it (`key`, told when it is not focused) and how many lines lie below."""

    DEFAULT_CSS = """
    HintedScroll { border-top: solid $panel-lighten-2; border-title-color: $text; }
    HintedScroll:focus { border-top: solid $accent; }
    """

    def __init__(self, title: str, key: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.heading, self.focus_key = title, key

    def on_mount(self) -> None:
        self.watch(self, "scroll_y", self._later, init=False)
        self.watch(self, "virtual_size", self._later, init=False)
        # not on_focus / on_blur: they run before Textual's own handlers set has_focus
        self.watch(self, "has_focus", self._later, init=False)
        self.retitle()

    def _later(self, *_args) -> None:
        self.call_after_refresh(self.retitle)  # the new size's scroll range is known then

    def on_resize(self) -> None:
        self._later()

    def hint(self) -> str:
        """What the border says beside the title: how to reach the hidden lines."""
        below = max(0, round(self.max_scroll_y - self.scroll_y))
        lines = f"{below} more line{'' if below == 1 else 's'}"
        if self.has_focus:
            return f"↓ PgDn: {lines}, {self.focus_key}: back" if below else \
                (f"↑ PgUp: back up, {self.focus_key}: back" if self.scroll_y else "")
        return f"{self.focus_key}, then ↓: {lines}" if below else ""

    def retitle(self) -> None:
        hint = self.hint()
        self.border_title = f"{self.heading} · {hint}" if hint else self.heading
