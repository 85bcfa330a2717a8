"""A twin of the fabric the telemetry describes (LLDP in the store)."""

from __future__ import annotations

import numpy as np
import pytest

from collectors.store.writer import open_readonly
from twin.discover import from_cabling
from twin.maxmin import max_min_rates
from twin.routing import FabricState, route
from twin.topology import FabricSpec, TopologyError, build
from twin.workload import endpoints


@pytest.fixture(scope="module")
def cabling(sample_stores):
    con = open_readonly(sample_stores.ingested("basic"))  # the session's ingest of the bundle
    try:
        return con.execute("SELECT device, ifname, peer_device, peer_ifname FROM neighbors").fetchall()
    finally:
        con.close()


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


def _cabling_of(f):
    return [(*f.cable_port_a[c].split(":", 1), *f.cable_port_b[c].split(":", 1))
            for c in range(f.n_cables)]


@pytest.mark.parametrize("spec", [
    FabricSpec(hosts=64, nics_per_host=2, planes=2, leaf_radix=16, spine_radix=16, hosts_per_leaf=8),
    FabricSpec(hosts=128, tiers=3, leaf_radix=8, spine_radix=8, host_speed_gbps=100,
               fabric_speed_gbps=100),
], ids=["2-tier-2-planes", "3-tier"])
@pytest.mark.parametrize("mode", ["ar", "ecmp"])
def test_a_built_fabric_is_rediscovered_from_its_own_cabling(spec, mode):
    built = build(spec)
    found = from_cabling(_cabling_of(built), default_gbps=spec.fabric_speed_gbps)
    assert (found.spec.hosts, found.spec.nics_per_host, found.spec.planes, found.spec.tiers) == (
        spec.hosts, spec.nics_per_host, spec.planes, spec.tiers)
    assert {found.link_id(c) for c in range(found.n_cables)} == {
        built.link_id(c) for c in range(built.n_cables)}
    # the same traffic gets the same aggregate rate on both twins
    rng = np.random.default_rng(2)
    hosts = rng.permutation(spec.hosts)
    rates = []
    for f in (built, found):
        st = FabricState(f, mode=[mode] * spec.planes)
        src, dst = endpoints(f, np.arange(spec.hosts)), endpoints(f, hosts)
        rates.append(max_min_rates(route(st, src, dst), st.link_capacity_bps()).sum())
    assert rates[1] == pytest.approx(rates[0], rel=1e-9 if mode == "ar" else 0.25)
