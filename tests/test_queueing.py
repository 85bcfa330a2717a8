"""The queueing layer: known queue formulas, ECN at the bottleneck, PFC trees, drops."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from twin.maxmin import max_min_rates
from twin.queueing import MTU, QueueConfig, path_latency, queue_state
from twin.routing import FabricState, route
from twin.topology import FabricSpec, build


@pytest.fixture(scope="module")
def fab():
    return build(FabricSpec(hosts=16, leaf_radix=8, spine_radix=8, hosts_per_leaf=4))


def names(f, links):
    out = set()
    for link in links:
        c, d = divmod(int(link), 2)
        a, b = f.cable_port_a[c], f.cable_port_b[c]
        out.add(f"{b}->{a}" if d else f"{a}->{b}")
    return out


def run(f, src, dst, line=400e9, **kw):
    st = FabricState(f)
    inc = route(st, np.array(src), np.array(dst))
    cap = st.link_capacity_bps()
    flow_cap = kw.pop("flow_cap", None)
    r = max_min_rates(inc, cap, flow_cap=flow_cap)
    n = len(src)
    return inc, r, queue_state(inc, r, cap, np.full(n, line), np.ones(n, bool),
                               link_pos=f.link_position, **kw)


def test_unsaturated_port_follows_md1(fab):
    # one flow capped at 200G on 400G links: rho = 0.5 -> 0.25 packets queued on average
    inc, r, q = run(fab, [0], [5], flow_cap=np.array([200e9]))
    up = 2 * fab.ep_cable[0]
    assert q.utilization[up] == pytest.approx(0.5)
    assert q.queue_bytes[up] == pytest.approx(0.25 * MTU)
    assert q.ecn_marks_per_s[up] == 0 and q.paused_fraction.max() == 0


def test_incast_marks_ecn_at_the_receivers_port_and_pauses_its_feeders(fab):
    inc, r, q = run(fab, list(range(1, 8)), [0] * 7)
    hot = 2 * fab.ep_cable[0] + 1  # leaf -> receiver
    assert q.utilization[hot] == pytest.approx(1.0)
    assert q.bottleneck_flows[hot] == 7
    cfg = QueueConfig()
    assert q.queue_bytes[hot] == pytest.approx(cfg.kmin_bytes + (cfg.kmax_bytes - cfg.kmin_bytes) * 6 / 7)
    assert np.argmax(q.ecn_marks_per_s) == hot
    paused = names(fab, np.flatnonzero(q.paused_fraction > 0))
    assert paused == {"gpu-node-0002:eth0->leaf-p0-01:swp2", "gpu-node-0003:eth0->leaf-p0-01:swp3",
                      "gpu-node-0004:eth0->leaf-p0-01:swp4"} | {
        f"spine-p0-0{s}:swp1->leaf-p0-01:swp{4 + s}" for s in range(1, 5)}
    assert q.paused_fraction.max() == pytest.approx(0.1 * (1 - 1 / 7))


def test_lossy_ports_drop_the_excess_instead_of_pausing(fab):
    inc, r, q = run(fab, [1, 2], [0, 0], cfg=QueueConfig(lossless=False))
    hot = 2 * fab.ep_cable[0] + 1
    assert q.drops_per_s[hot] == pytest.approx((800e9 - 400e9) / 8 / MTU)
    assert q.paused_fraction.max() == 0


def test_pfc_storm_spreads_upstream_to_victims_but_not_downstream(fab):
    # host 0 -> 4 and host 1 -> 5 share the spines; host 5's NIC storms (pauses its leaf port)
    src, dst = [0, 1, 8], [4, 5, 12]
    storm = np.array([2 * fab.ep_cable[5] + 1])
    inc, r, q = run(fab, src, dst, storms=storm)
    paused = names(fab, np.flatnonzero(q.paused_fraction >= 1))
    assert "leaf-p0-02:swp2->gpu-node-0006:eth0" in paused  # the storm itself
    assert "gpu-node-0002:eth0->leaf-p0-01:swp2" in paused  # the sender to the stormer
    assert "gpu-node-0001:eth0->leaf-p0-01:swp1" in paused  # a victim through the same spines
    assert "leaf-p0-02:swp1->gpu-node-0005:eth0" not in paused  # downstream: starved, not paused
    assert not any(p.startswith("gpu-node-0009") for p in paused)  # leaf 3 -> 4 shares nothing


def test_path_latency_adds_hops_and_queueing(fab):
    inc, r, q = run(fab, [0], [5], flow_cap=np.array([200e9]))
    lat = path_latency(inc, q.delay_s)
    # 4 hops of 1 us plus M/D/1 queueing: rho = 0.5 on the two host links, 0.125 on the
    # sprayed fabric hops (each of the 4 spines carries a quarter)
    def q(rho):
        return rho**2 / (2 * (1 - rho)) * MTU * 8 / 400e9
    assert lat[0] == pytest.approx(4e-6 + 2 * q(0.5) + 2 * q(0.125))


def test_storm_stalls_its_victims_for_its_duration_and_counts_pauses(fab):
    from twin.engine import Flows, Storm, simulate
    from twin.telemetry import port_counters

    fl = Flows(np.array([0, 1, 8]), np.array([4, 5, 12]), np.full(3, 1e9), np.zeros(3))
    storm = Storm(0.005, 0.010, 2 * int(fab.ep_cable[5]) + 1)  # gpu-node-0006 storms 5 ms
    res = simulate(FabricState(fab), fl, storms=[storm], sample_every=0.001, telemetry=QueueConfig())
    # 1 GB at 400G is 20 ms: the stormer's sender and the victim sharing its spines lose 5 ms
    assert res.finish == pytest.approx([0.025, 0.025, 0.020])
    pc = port_counters(fab, res, t0_ns=0)
    last = pc.filter(pl.col("ts") == pc["ts"].max())
    tx_pause = dict(last.filter(pl.col("counter") == "tx_pause").group_by("device")
                    .agg(pl.col("value").sum()).iter_rows())
    # the stormer sends pause frames for 5 ms at the refresh rate of a 400G link
    stormer = last.filter((pl.col("counter") == "tx_pause") & (pl.col("device") == "gpu-node-0006"))
    assert stormer["value"][0] == pytest.approx(np.floor(0.005 * 400e9 / (65535 * 512) * 2))
    assert tx_pause["leaf-p0-01"] > 0  # the PFC tree reaches the senders' leaf
    # bytes: every host's tx equals what it sent
    sent = last.filter((pl.col("counter") == "tx_bytes") & pl.col("device").str.starts_with("gpu"))
    assert sent["value"].sum() == pytest.approx(3e9, rel=1e-6)
