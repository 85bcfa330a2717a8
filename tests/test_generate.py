"""fabtwin generate: bundles the collectors read back, with faults that leave their signatures
in the store (checked with SQL on the store, never on the generator's internals)."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import REPO

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
from twin.generate import generate

GEN = REPO / "scenarios" / "gen"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Every gallery scenario generated and ingested once: name -> (labels, store)."""
    out = {}
    root = tmp_path_factory.mktemp("gen")
    for scenario in sorted(GEN.glob("*.toml")):
        g = generate(scenario, root / scenario.stem, seed=3)
        store = Store.open(root / f"{scenario.stem}.duckdb")
        store.summary = ingest_bundle(store, root / scenario.stem)
        out[scenario.stem] = (g.labels, store)
    yield out
    for _, store in out.values():
        store.close()


def q(store, sql):
    return store.con.execute(sql).fetchall()


def test_same_scenario_and_seed_give_identical_bytes(tmp_path):
    digests = []
    for name in ("a", "b"):
        generate(GEN / "link_flap.toml", tmp_path / name, seed=5)
        h = hashlib.sha256()
        for p in sorted((tmp_path / name).rglob("*")):
            if p.is_file():
                h.update(p.relative_to(tmp_path / name).as_posix().encode())
                h.update(p.read_bytes())
        digests.append(h.hexdigest())
    assert digests[0] == digests[1]


@pytest.mark.parametrize("name", ["healthy", "link_flap", "pfc_storm", "two_faults"])
def test_ingest_rejects_exactly_the_malformed_lines(bundles, name):
    labels, store = bundles[name]
    s = store.summary.as_json()
    assert s["files_skipped"] == 0
    assert s["rejected"] == labels["malformed_lines"] > 0
    assert q(store, "SELECT count(*) FROM unmapped_metrics") == [(0,)]


def test_counters_give_back_the_twins_line_rate(bundles):
    _, store = bundles["healthy"]
    # a ring of 16 hosts on a non-blocking fabric: every host sends at 400 Gb/s
    (mean, lo, hi), = q(store, "SELECT avg(r), min(r), max(r) FROM (SELECT device, "
                               "avg(tx_bytes_per_s) * 8 / 1e9 AS r FROM port_rates "
                               "WHERE device LIKE 'gpu-node-%' GROUP BY device)")
    assert mean == pytest.approx(400, rel=0.01) and lo > 390 and hi < 410


def test_the_reboot_shows_as_a_reset_never_as_a_huge_rate(bundles):
    labels, store = bundles["healthy"]
    dev = labels["reboot"]["device"]
    assert q(store, f"SELECT bool_or(reset) FROM port_rates WHERE device = '{dev}'") == [(True,)]
    assert q(store, "SELECT max(tx_bytes_per_s) * 8 / 1e9 < 500 FROM port_rates") == [(True,)]


def test_link_down_signature(bundles):
    labels, store = bundles["link_down"]
    link = labels["faults"][0]["root_cause"]["id"]
    ends = sorted(link.split("--"))
    open_downs = q(store, "SELECT port_id FROM link_state_intervals WHERE state = 'down' "
                          "AND \"end\" IS NULL ORDER BY 1")
    assert [p for (p,) in open_downs] == ends


def test_link_flap_signature(bundles):
    labels, store = bundles["link_flap"]
    ends = labels["faults"][0]["root_cause"]["id"].split("--")
    rows = q(store, "SELECT port_id, max(duration_s) FROM link_state_intervals WHERE state = 'down' "
                    "GROUP BY 1")
    assert {p for p, _ in rows} == set(ends)
    assert all(15 < d < 25 for _, d in rows)  # down for 20 s, give or take clock skew
    # the NICs whose flows crossed the link saw transport timeouts; no other NIC did
    timed_out = {d for (d,) in q(store, "SELECT DISTINCT device FROM counter_rates "
                                        "WHERE counter = 'local_ack_timeout_err' AND delta > 0")}
    assert timed_out and timed_out <= set(labels["faults"][0]["victims"])


def test_sprayed_traffic_arrives_partly_out_of_order(bundles):
    _, store = bundles["healthy"]
    assert q(store, "SELECT min(rate) > 0 FROM counter_rates WHERE counter = 'out_of_sequence' "
                    "AND NOT reset") == [(True,)]


def test_link_degraded_signature(bundles):
    labels, store = bundles["link_degraded"]
    ends = set(labels["faults"][0]["root_cause"]["id"].split("--"))
    rows = q(store, "SELECT device || ':' || ifname FROM port_rates GROUP BY device, ifname "
                    "HAVING quantile_cont(errors_per_s, 0.5) = 0 AND max(errors_per_s) > 1000")
    assert {p for (p,) in rows} == ends


def test_congestion_signature(bundles):
    labels, store = bundles["congestion"]
    hot = labels["faults"][0]["root_cause"]["id"]  # the leaf port facing the incast receiver
    (port,), = q(store, "SELECT device || ':' || ifname FROM port_rates "
                        "ORDER BY ecn_marked_per_s DESC NULLS LAST LIMIT 1")
    assert port == hot


def test_pfc_storm_signature(bundles):
    labels, store = bundles["pfc_storm"]
    root = labels["faults"][0]["root_cause"]["id"]  # the stormer's NIC port
    pauses = dict(q(store, "SELECT device || ':' || ifname, max(tx_pause_per_s) FROM port_rates "
                           "WHERE device LIKE 'gpu-node-%' GROUP BY 1"))
    assert max(pauses, key=pauses.get) == root and pauses[root] > 1000
    (leaf_port,), = q(store, f"SELECT port_b FROM links WHERE port_a = '{root}'")
    assert q(store, f"SELECT max(rx_pause_per_s) > 1000 FROM port_rates "
                    f"WHERE device || ':' || ifname = '{leaf_port}'") == [(True,)]
    assert q(store, "SELECT count(*) FROM events WHERE kind = 'pfc_storm'") == [(1,)]


def test_load_imbalance_signature(bundles):
    labels, store = bundles["load_imbalance"]
    dev = labels["faults"][0]["root_cause"]["id"]
    spread = dict(q(store, "SELECT device, max(r) / min(r) FROM (SELECT device, ifname, "
                           "avg(tx_bytes_per_s) AS r FROM port_rates JOIN links ON "
                           "port_a = device || ':' || ifname OR port_b = device || ':' || ifname "
                           "WHERE device LIKE 'leaf-%' AND (device_a LIKE 'spine-%' OR device_b LIKE 'spine-%') "
                           "GROUP BY ALL) GROUP BY device"))
    assert spread[dev] > 1.3
    assert all(v < 1.05 for d, v in spread.items() if d != dev)


def test_labels_use_the_investigate_fields(bundles):
    labels, _ = bundles["two_faults"]
    assert [f["kind"] for f in labels["faults"]] == ["link_flap", "pfc_storm"]
    for f in labels["faults"]:
        assert set(f) >= {"kind", "root_cause", "start", "end", "victims"}
        assert f["victims"] and f["root_cause"]["id"] not in f["victims"]
        assert set(f["root_cause"]) == {"type", "id"}
    json.dumps(labels)


def test_a_job_with_iterations_stops_when_they_are_done(tmp_path):
    text = (GEN / "healthy.toml").read_text().replace('size = "1GiB"', 'size = "1GiB"\niterations = 100')
    (tmp_path / "s.toml").write_text(text)
    generate(tmp_path / "s.toml", tmp_path / "b", seed=1)
    with Store.open(tmp_path / "s.duckdb") as store:
        ingest_bundle(store, tmp_path / "b")
        # 100 ring all-reduces of 1 GiB on 16 hosts at 400G: 2 * 15/16 * 100 GiB per host = 10.07 s
        busy = q(store, "SELECT count(*) FILTER (WHERE tx_bytes_per_s > 1e9), count(*) FROM port_rates "
                        "WHERE device = 'gpu-node-0001'")[0]
        assert 1 <= busy[0] <= 3 and busy[1] > 50
