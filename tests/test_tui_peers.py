"""A drill-down's equal-cost peers from one read of the replay's port roles per store: the same
ports the join over `expected_ports` gives, for every replayed port and device."""

from __future__ import annotations

from fabtwin.tui.data import StoreData, natural_key

pytest_plugins = ["tui_fixtures"]  # two_faults_db


def _joined(data: StoreData, ports: list[str]) -> list[str]:
    marks = ", ".join("?" * len(ports))
    rows = data._rows(f"""
        WITH mine AS (SELECT DISTINCT device, tier, uplink FROM expected_ports
                      WHERE port_id IN ({marks}))
        SELECT DISTINCT e.port_id FROM expected_ports e JOIN mine USING (device, tier, uplink)
        WHERE e.port_id NOT IN ({marks})""", list(ports) * 2)
    return sorted((r[0] for r in rows), key=natural_key)


def test_peers_and_uplinks_are_the_joins(two_faults_db):
    data = StoreData(two_faults_db)
    try:
        ports = [p for (p,) in data._rows("SELECT DISTINCT port_id FROM expected_ports")]
        assert len(ports) > 20
        for p in ports:
            assert data.uplink_peers([p]) == _joined(data, [p]), p
        flap = ["leaf-p0-02:swp5", "spine-p0-01:swp2"]
        assert data.uplink_peers(flap) == _joined(data, flap)
        assert "leaf-p0-02:swp6" in data.uplink_peers(flap)  # the leaf's other uplinks
        for (device,) in data._rows("SELECT DISTINCT device FROM expected_ports"):
            joined = sorted((r[0] for r in data._rows(
                "SELECT DISTINCT port_id FROM expected_ports WHERE device = ? AND uplink",
                [device])), key=natural_key)
            assert data.uplinks_of(device) == joined, device
        assert data.uplink_peers([]) == [] and data.uplink_peers(["nowhere:eth9"]) == []
    finally:
        data.close()


def _cabled(data: StoreData, ports: list[str]) -> list[tuple]:
    marks = ", ".join("?" * len(ports))
    return sorted(tuple(r) for r in data._rows(f"""
        SELECT CASE WHEN port_a IN ({marks}) THEN port_a ELSE port_b END AS port,
            CASE WHEN port_a IN ({marks}) THEN port_b ELSE port_a END AS peer, link_id
        FROM links WHERE port_a IN ({marks}) OR port_b IN ({marks})""", list(ports) * 4))


def test_cabling_peers_are_the_links_view(two_faults_db):
    data = StoreData(two_faults_db)
    try:
        ports = [p for (p,) in data._rows("SELECT port_a FROM links UNION SELECT port_b "
                                          "FROM links")]
        assert len(ports) > 20
        for p in ports:
            assert data.peers([p]) == _cabled(data, [p]), p
        leaf = data.entity_ports("device", "leaf-p0-02")
        both = ["leaf-p0-02:swp5", "spine-p0-01:swp2"]  # a cable with both ends asked for
        for group in (leaf, both, ports):
            assert data.peers(group) == _cabled(data, group)
        assert data.peers(both) == [("leaf-p0-02:swp5", "spine-p0-01:swp2",
                                     "leaf-p0-02:swp5--spine-p0-01:swp2")]
        assert data.peers([]) == [] and data.peers(["nowhere:eth9"]) == []
    finally:
        data.close()
