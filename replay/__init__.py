"""Replay: rebuild fabric state from a stored trace, drive the twin, localize root causes."""

import replay.results  # noqa: F401  registers the result tables with the store (see there)
