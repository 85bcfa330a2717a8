"""The three things the UI needs that Textual (8.2) has no public API for, kept here so that
nothing else touches a Textual private attribute. Each degrades to Textual's own behaviour
(slower, never wrong) if a Textual release renames what it relies on."""

from __future__ import annotations

from textual.app import App
from textual.screen import Screen


def mark_styled(app: App, screen: Screen) -> None:
    """Tell Textual that `screen`, built just now, has the app's current CSS.

    A mode's screen starts with a stale CSS counter, so Textual reparses every stylesheet
    (100-200 ms) when it is built and again on its first visit; the CSS cannot have changed
    since the app started. Textual's only public call, App.refresh_css, is the reparse itself."""
    count = getattr(app, "_css_update_count", None)
    if count is not None and hasattr(screen, "_css_update_count"):
        screen._css_update_count = count


def build_mode(app: App, mode: str) -> bool:
    """Build (compose and mount) the screen of `mode` without showing it, so that its first
    visit shows at once; False when Textual cannot. App.switch_mode is the only public way to
    build a mode's screen, and it shows it: the screen would flash and take the focus."""
    init = getattr(app, "_init_mode", None)
    if init is None:
        return False
    init(mode)
    return True


def build_screen(app: App, screen: Screen) -> bool:
    """Compose and mount `screen` (not a mode's) without showing it, as push_screen would
    before showing it; False when Textual cannot (it is then built on its first push). Textual
    has no public call that builds a screen without pushing it."""
    register = getattr(app, "_register", None)
    if register is None or screen.is_running:
        return False
    register(app, screen)
    return True
