"""The screens and keys of `fabtwin tui` are declared once (fabtwin/tui/actions.py): every
screen class is declared, binds exactly its declared keys, and the help screen, the command
palette and the live key bindings list exactly the declared screens and actions."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import re

import pytest
from test_tui_app import until  # the Pilot's wait, shared
from textual.app import App
from textual.keys import key_to_character
from textual.screen import Screen

import fabtwin.tui.screens
from fabtwin.tui.actions import ACTIONS, HELP_SCOPES, ROOMS, SCOPE_TITLES, TABS, Room, key_label
from fabtwin.tui.app import FabtwinApp
from fabtwin.tui.bars import key_text
from fabtwin.tui.palette import ActionsProvider

pytest_plugins = ["tui_fixtures"]  # the stores these tests open


def declared(scope: str) -> list[tuple[str, str]]:
    """(key, action) of every key declared for `scope`, one pair per key."""
    return [(k, a.action) for a in ACTIONS if a.scope == scope for k in a.keys.split(",")]


def screen_classes() -> dict[str, type[Screen]]:
    """Every Screen class defined under fabtwin.tui.screens, as `module.Class`."""
    found = {}
    for info in pkgutil.iter_modules(fabtwin.tui.screens.__path__):
        module = importlib.import_module(f"fabtwin.tui.screens.{info.name}")
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, Screen) and cls.__module__ == module.__name__:
                found[f"{info.name}.{name}"] = cls
    return found


def test_a_room_needs_its_keys():
    with pytest.raises(ValueError, match="tab needs the keys"):
        Room("x", "X", "x.XScreen", tab=True)
    with pytest.raises(ValueError, match="go together"):
        Room("x", "X", "x.XScreen", keys="9")


def test_every_screen_is_declared_and_binds_only_its_declared_keys():
    classes = screen_classes()
    assert set(classes) == {r.screen for r in ROOMS}  # no screen without its Room line
    assert len({r.scope for r in ROOMS}) == len(ROOMS)
    assert {a.scope for a in ACTIONS} <= {"app"} | {r.scope for r in ROOMS}
    assert all(a.keys and a.description for a in ACTIONS)
    for r in ROOMS:
        cls = classes[r.screen]
        assert r.scope == cls.SCOPE, r
        assert [(k, b.action) for b in cls.BINDINGS for k in b.key.split(",")] == declared(r.scope)
        # a key handled by a method (key_x) would be a key outside the registry
        assert not [n for n in dir(cls) if n.startswith("key_") and n not in dir(Screen)], r
        for a in ACTIONS:  # each declared action runs a method of its screen
            if a.scope == r.scope:
                assert hasattr(cls, "action_" + re.match(r"\w+", a.action)[0]), a
    assert [(k, b.action) for b in FabtwinApp.BINDINGS for k in b.key.split(",")] == declared("app")
    for a in ACTIONS:
        if a.scope == "app":
            assert hasattr(FabtwinApp, "action_" + re.match(r"app\.(\w+)", a.action)[1]), a
    # each room with opening keys is opened by them, from anywhere
    assert [(r.keys, r.open_action) for r in ROOMS if r.keys] == \
        [(a.keys, a.action) for a in ACTIONS if a.scope == "app"
         and a.action in {r.open_action for r in ROOMS}]


def help_lines(text: str) -> tuple[set[tuple[str, str, str]], str]:
    """(section, keys, description) of each key line of the help, and its last line."""
    found, section = set(), None
    lines = text.strip().splitlines()
    for line in lines[1:]:
        if m := re.fullmatch(r" {2}(\S.*?) {2,}(\S.*)", line):
            found.add((section, m[1].strip(), m[2]))
        elif line and not line.startswith(" "):
            section = line
    return found, lines[-1]


def own_bindings(app: App) -> set[tuple[str, str]]:
    """(key, action) of the bindings live now on the app and its screen, Textual's own
    (Ctrl+Q, Ctrl+P, Tab...) left out."""
    textual = {(k, b.action) for b in (*App.BINDINGS, *Screen.BINDINGS)
               for k in b.key.split(",")} | {(app.COMMAND_PALETTE_BINDING, "command_palette")}
    return {(k, ab.binding.action) for k, ab in app.active_bindings.items()
            if ab.node in (app, app.screen)} - textual


def live_expected(app: App, scope: str) -> set[tuple[str, str]]:
    """The declared keys of `scope` and of the app (the screen's first), less the keys the
    focused widget takes first (a table's Enter selects its row: the same thing; the SQL
    editor types digits: F2-F5 switch screens there)."""
    widget = {k for k, ab in app.active_bindings.items() if ab.node not in (app, app.screen)}
    if app.focused is not None:
        widget |= {k for k, _ in declared(scope) + declared("app")
                   if app.focused.check_consume_key(k, key_to_character(k))}
    keys = dict(declared(scope))
    app_keys = [] if app.screen.is_modal else [  # a dialog takes every key
        (k, a) for k, a in declared("app") if k not in keys]
    return {(k, a) for k, a in declared(scope) + app_keys if k not in widget}


async def palette_texts(screen: Screen) -> list[str]:
    return [hit.text or str(hit.display) async for hit in ActionsProvider(screen).discover()]


async def test_help_palette_and_live_keys_list_exactly_the_declared(store_copy):
    app = FabtwinApp(str(store_copy))
    async with app.run_test(size=(120, 40)) as pilot:
        for tab in TABS:  # each tab, by its first key, from the one before
            await pilot.press(tab.keys.split(",")[0] if tab.scope != "sql" else "f5")
            await until(pilot, lambda tab=tab: getattr(app.screen, "SCOPE", "") == tab.scope)
            assert own_bindings(app) == live_expected(app, tab.scope), tab
            texts = await palette_texts(app.screen)
            assert texts == [f"{a.description} ({SCOPE_TITLES[a.scope]})" for a in ACTIONS
                             if a.palette and a.scope in ("app", tab.scope)]
            assert {f"{r.label} (Everywhere)" for r in ROOMS if r.keys} <= set(texts)
            bar = str(key_text(tab.scope))  # the tabs as one range, the rest by name
            assert all(f" {a.description} " in bar for a in ACTIONS if a.show and (
                a.scope == tab.scope or a.scope == "app" and a.action.startswith("app.quit")))
            assert " Screens " in bar and " Help " in bar
        # the palette's entry for a tab opens it
        hits = {hit.text or str(hit.display): hit async for hit in
                ActionsProvider(app.screen).discover()}
        await hits["Fabric (Everywhere)"].command()
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "fabric")
        await pilot.press("f1")
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "help")
        assert own_bindings(app) == live_expected(app, "help")
        found, last = help_lines(str(app.screen.query_one("#help").render()))
        assert found == {(SCOPE_TITLES[a.scope], key_label(a.keys), a.description)
                         for a in ACTIONS if a.scope in HELP_SCOPES}
        assert {s for s, _, _ in found} == {SCOPE_TITLES[s] for s in HELP_SCOPES}
        for a in ACTIONS:  # the dialogs' keys are told on the last line
            if a.scope not in HELP_SCOPES:
                assert a.description in last, a
        await pilot.press("question_mark")  # the help's own key closes it
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "fabric")
        await pilot.press("4", "ctrl+r")  # a query to export, then the export dialog
        await until(pilot, lambda: app.screen.last_sql)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "export")
        await pilot.press("escape")
        await until(pilot, lambda: getattr(app.screen, "SCOPE", "") == "sql")
        await asyncio.sleep(0)
