"""Command palette sources: every action of actions.py, and every device, link and port."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from fabtwin.tui.actions import ACTIONS, SCOPE_TITLES


class ActionsProvider(Provider):
    """The actions of the app and of the current screen, by their help text."""

    def _actions(self):
        scope = getattr(self.screen, "SCOPE", "")
        for a in ACTIONS:
            if a.palette and a.scope in ("app", scope):
                yield a, f"{a.description} ({SCOPE_TITLES[a.scope]})"

    async def _run(self, action: str) -> None:
        await self.screen.run_action(action)

    async def discover(self) -> Hits:
        for a, text in self._actions():
            yield DiscoveryHit(text, partial(self._run, a.action))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for a, text in self._actions():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self._run, a.action))


class EntitiesProvider(Provider):
    """Open a drill-down on any device, link or port by typing part of its name."""

    async def startup(self) -> None:
        worker = self.app.run_worker(self.app.data.entities, thread=True)
        self._entities = await worker.wait()

    async def search(self, query: str) -> Hits:
        if len(query) < 2:
            return
        matcher = self.matcher(query)
        for kind, ident in self._entities:
            text = f"open {kind} {ident}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self.app.open_entity, kind, ident))
