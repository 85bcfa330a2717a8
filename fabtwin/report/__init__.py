"""The HTML report of a store (`fabtwin report`, whose command is `fabtwin.commands.report`).

The store summary, the ranked incidents, per-plane link utilization heatmaps (the busiest window
and each incident's) and, per top incident, the load of the ports involved around it.
"""
