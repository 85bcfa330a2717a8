"""The shared core the format families and the store both build on: sources, sinks, time and
value policy, line blocks and the counter map data."""
