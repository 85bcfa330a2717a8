"""The twin of the fabric the store's cabling describes, built in one place for the replay,
the report and the TUI (which would otherwise each read the cabling their own way)."""

from __future__ import annotations

import duckdb

from twin.discover import from_cabling
from twin.topology import Fabric

CABLING_SQL = "SELECT device, ifname, peer_device, peer_ifname FROM neighbors"
SPEEDS_SQL = """
    SELECT device || ':' || ifname, max(value) / 1e9 FROM port_gauges
    WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY 1"""


def fabric_from_store(con: duckdb.DuckDBPyConnection, speeds: bool = True) -> Fabric:
    """The twin of the fabric the store's `neighbors` describe, each cable at the speed its
    ports report (`port_gauges`' port_speed_bps; `speeds=False` skips that read, which scans
    the gauges, and takes the discovery's default). TopologyError when it cannot be built."""
    rows = con.execute(CABLING_SQL).fetchall()
    gbps = dict(con.execute(SPEEDS_SQL).fetchall()) if speeds else None
    return from_cabling(rows, speeds_gbps=gbps)
