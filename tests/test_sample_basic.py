"""End to end on the embedded sample bundle: what the README's first command shows."""

from __future__ import annotations

import pytest
from conftest import REPO

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

BASIC = REPO / "sample_traces" / "basic"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store.open(tmp_path_factory.mktemp("basic") / "basic.duckdb")
    s.summary = ingest_bundle(s, BASIC)
    yield s
    s.close()


def q(store, sql):
    return store.con.execute(sql).fetchall()


def test_every_file_is_recognized_and_accounted(store):
    summary = store.summary.as_json()
    assert summary["files_skipped"] == 0 and summary["files_loaded"] == 47
    assert summary["records_read"] == summary["loaded"] + summary["rejected"]
    assert summary["rejected"] == 1  # the gnmic line cut short when its collector died
    assert q(store, "SELECT path, line FROM rejects") == [("gnmi/leaf-p0-04.event.jsonl.gz", 1953)]


def test_every_sample_has_a_canonical_counter(store):
    assert q(store, "SELECT count(*) FROM unmapped_metrics") == [(0,)]


def test_topology_has_every_cable_once(store):
    assert q(store, "SELECT count(*), min(reports), max(reports) FROM links") == [(16, 2, 2)]
    assert ("gpu-node-0001:eth0--leaf-p0-01:swp1",) in q(store, "SELECT link_id FROM links")


def test_host_rdma_counters_land_on_the_netdev(store):
    assert q(store, "SELECT DISTINCT ifname FROM samples WHERE metric = 'np_cnp_sent'") == [("eth0",)]


def test_rates_match_the_traffic_that_was_written(store):
    rows = q(store, "SELECT round(avg(tx_bytes_per_s) / 1e9, 2) FROM port_rates "
                    "WHERE device LIKE 'gpu-node-%'")
    assert rows == [(35.0,)]
    # bytes are conserved through each leaf: what comes in leaves again
    leaf = q(store, "SELECT round(sum(rx_bytes_per_s) / sum(tx_bytes_per_s), 6) FROM port_rates "
                    "WHERE device = 'leaf-p0-03'")
    assert leaf == [(1.0,)]


def test_the_flap_is_one_20_second_down_interval_on_both_ends(store):
    rows = q(store, "SELECT port_id, duration_s FROM link_state_intervals WHERE state = 'down' "
                    "ORDER BY port_id")
    assert rows == [("leaf-p0-03:swp4", 20.0), ("spine-p0-02:swp3", 20.0)]
    assert q(store, "SELECT count(*) FROM events WHERE kind IN ('link_down', 'link_up')") == [(4,)]


def test_job_placement_expands_the_hostlist(store):
    assert q(store, "SELECT count(*) FROM job_hosts WHERE job_id = '1001'") == [(8,)]
