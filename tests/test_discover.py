"""A twin of the fabric the telemetry describes (LLDP in the store)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

from collectors.ingest import ingest_bundle
from collectors.store import Store
from twin.discover import from_cabling
from twin.maxmin import max_min_rates
from twin.routing import FabricState, route
from twin.topology import TopologyError
from twin.workload import endpoints


@pytest.fixture(scope="module")
def cabling(tmp_path_factory):
    with Store.open(tmp_path_factory.mktemp("d") / "s.duckdb") as s:
        ingest_bundle(s, REPO / "sample_traces" / "basic")
        return s.con.execute("SELECT device, ifname, peer_device, peer_ifname FROM neighbors").fetchall()


def test_the_sample_fabric_is_rediscovered_from_lldp(cabling):
    f = from_cabling(cabling)
    assert (f.spec.hosts, f.spec.nics_per_host, f.spec.planes) == (8, 1, 1)
    assert sorted(f.node_name[i] for i in f.leaf_up_cables) == [f"leaf-p0-0{i}" for i in range(1, 5)]
    assert f.n_cables == 16
    assert "gpu-node-0001:eth0--leaf-p0-01:swp1" in {f.link_id(c) for c in range(f.n_cables)}
    # a ring across the leaves runs at line rate with adaptive routing on the discovered twin
    src = endpoints(f, np.arange(8))
    dst = endpoints(f, (np.arange(8) + 2) % 8)
    st = FabricState(f, mode=["ar"])
    assert max_min_rates(route(st, src, dst), st.link_capacity_bps()) == pytest.approx(np.full(8, 400e9))


def test_a_missing_host_cable_is_named(cabling):
    rows = [r for r in cabling if "gpu-node-0003" not in (r[0], r[2])]
    rows += [("gpu-node-0003", "eth0", "leaf-p0-02", "swp1")]
    rows += [("gpu-node-0003", "eth1", "leaf-p0-02", "swp9")]
    with pytest.raises(TopologyError, match="gpu-node-0003 has 2 port"):
        from_cabling(rows)


def test_no_cabling_says_what_to_ingest():
    with pytest.raises(TopologyError, match="ingest LLDP"):
        from_cabling([])
