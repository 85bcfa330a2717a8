"""Command palette sources: every action of actions.py, and every device, link and port."""

from __future__ import annotations

import re
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
    """Open a drill-down on any device, link or port by typing part of its name.

    A 256-switch fabric has 40,000 of them, too many to score one by one as the user types
    (the fuzzy score of one name can take a millisecond): names holding the query as typed
    come first; names holding its letters in order fill up to MAX_HITS."""

    MAX_HITS = 100

    async def startup(self) -> None:
        worker = self.app.run_worker(self.app.data.entities, thread=True)
        self._entities = [(kind, ident, f"open {kind} {ident}")
                          for kind, ident in await worker.wait()]
        self._lower = [text.lower() for _, _, text in self._entities]

    def _candidates(self, query: str) -> list[tuple[str, str, str]]:
        q = query.lower()
        hits = [i for i, text in enumerate(self._lower) if q in text][:self.MAX_HITS]
        if len(hits) < self.MAX_HITS:
            # each letter after the previous one; [^c]*c cannot backtrack (.*? can, badly)
            letters = re.compile("".join(f"[^{re.escape(c)}]*{re.escape(c)}" for c in q))
            taken = set(hits)
            hits += [i for i, text in enumerate(self._lower)
                     if i not in taken and letters.match(text)][:self.MAX_HITS - len(hits)]
        return [self._entities[i] for i in hits]

    async def search(self, query: str) -> Hits:
        if len(query) < 2:
            return
        matcher = self.matcher(query)
        for kind, ident, text in self._candidates(query):
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self.app.open_entity, kind, ident))
