"""fabtwin generate's fleet realism and issue 17's hard cases: small bundles written, ingested
with the real parsers, and each phenomenon found in the store with SQL (never in the writer's
internals). Three bundles of two minutes on a 16-host fabric, a few seconds each."""

from __future__ import annotations

import json

import pytest

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store
from twin.scenario import from_document, read_document
from twin.schema import ScenarioError
from twin.synth import generate

FABRIC = """[fabric]
hosts = 16
planes = {planes}
leaf_radix = 8
spine_radix = 4
hosts_per_leaf = 4

[[jobs]]
collective = "{job}"
size = "1GiB"

[telemetry]
start = "2026-11-30T03:00:00Z"
duration_s = 120
sample_s = 10
jitter = "read"
"""
T0 = "2026-11-30 03:00:00"

# links of that fabric: leaf-p0-L:swp(4+S) -- spine-p0-S:swpL
LOSSY = "leaf-p0-01:swp5--spine-p0-01:swp1"
SLOW = "leaf-p0-02:swp6--spine-p0-02:swp2"
FLAPPY = "leaf-p0-03:swp7--spine-p0-03:swp3"
DEAD = "leaf-p0-04:swp8--spine-p0-04:swp4"


def fault(kind: str, **keys) -> str:
    """A `[[faults]]` table (JSON's strings, numbers and booleans are TOML's)."""
    return "\n[[faults]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"kind": kind, **keys}.items())


LINK_CASES = FABRIC.format(planes=1, job="alltoall") + "".join([
    fault("link_degraded", link=LOSSY, at_s=30, duration_s=60, loss=0.02, counted=False),
    fault("link_degraded", link=SLOW, at_s=0, duration_s=1000, speed_gbps=100),
    fault("link_flap", link=FLAPPY, at_s=43, duration_s=2, logged=False)])
STORM = {"host": "gpu-node-0010", "at_s": 20, "duration_s": 60}
SILENT_CASES = FABRIC.format(planes=1, job="allreduce_ring") + 'vendors = ["sonic", "eos"]\n' + "".join([
    fault("link_down", link=DEAD, at_s=30, silent_root=True),
    fault("pfc_storm", **STORM, silent_root=True)])
TRAFFIC_CASES = FABRIC.format(planes=1, job="alltoall") + "".join([
    fault("congestion", host="gpu-node-0014", senders=8, at_s=20, duration_s=60, victim_marks=2.0),
    fault("load_imbalance", device="leaf-p0-02", duration_s=120, weights_cv=0.2)])

FLEET = FABRIC.format(planes=2, job="allreduce_ring") + """skew_ms = 2500
vendors = ["cumulus", "sonic", "eos"]
counters = "full"
noise = true
"""


def _bundle(tmp_path_factory, name: str, text: str):
    root = tmp_path_factory.mktemp(name)
    (root / "s.toml").write_text(text)
    g = generate(root / "s.toml", root / "b", seed=11)
    store = Store.open(root / "s.duckdb")
    ingest_bundle(store, root / "b", workers=1)
    return g.labels, store


def _fixture(name: str, text: str):
    """A module-scoped fixture: the bundle of `text` generated and ingested, (labels, store)."""
    @pytest.fixture(scope="module", name=name)
    def fixture(tmp_path_factory):
        labels, store = _bundle(tmp_path_factory, name, text)
        yield labels, store
        store.close()
    return fixture


links = _fixture("links", LINK_CASES)
silent = _fixture("silent", SILENT_CASES)
traffic = _fixture("traffic", TRAFFIC_CASES)
fleet = _fixture("fleet", FLEET)


def q(store, sql, *params):
    return store.con.execute(sql, list(params)).fetchall()


def _rate(store, port: str, col: str, lo: int, hi: int) -> float:
    """Median of a port_rates column over the intervals inside [T0 + lo, T0 + hi] s."""
    dev, ifn = port.split(":", 1)
    (v,), = q(store, f"SELECT median({col}) FROM port_rates WHERE device = ? AND ifname = ? "
                     f"AND ts - to_seconds(interval_s) >= TIMESTAMP '{T0}' + to_seconds({lo}) "
                     f"AND ts <= TIMESTAMP '{T0}' + to_seconds({hi})", dev, ifn)
    return v


def test_labels_name_each_hard_case_and_keep_the_fields(links, silent, traffic):
    got = [(f["kind"], f.get("hard_case")) for f in
           links[0]["faults"] + silent[0]["faults"] + traffic[0]["faults"]]
    assert got == [("link_degraded", "silent_loss"), ("link_degraded", "low_speed"),
                   ("link_flap", "short_flap"), ("link_down", "silent_device"),
                   ("pfc_storm", "silent_device"), ("congestion", "loud_victims"),
                   ("load_imbalance", "mild_imbalance")]
    for f in links[0]["faults"]:
        assert set(f) == {"kind", "root_cause", "start", "end", "victims", "hard_case"}
    assert silent[0]["silent_devices"] == ["gpu-node-0010", "spine-p0-04"]


def test_silent_loss_receiver_counts_fewer_packets_and_no_error_counter_moves(links):
    _, store = links
    a, b = LOSSY.split("--")
    for sender, receiver in ((a, b), (b, a)):
        ratio = (_rate(store, receiver, "rx_packets_per_s", 35, 85)
                 / _rate(store, sender, "tx_packets_per_s", 35, 85))
        assert 0.975 < ratio < 0.985  # 2% lost on the way
        before = (_rate(store, receiver, "rx_packets_per_s", 0, 28)
                  / _rate(store, sender, "tx_packets_per_s", 0, 28))
        assert before == pytest.approx(1.0, abs=6e-3)  # no loss before: only sampling noise
    for port in (a, b):
        dev, ifn = port.split(":", 1)
        assert q(store, "SELECT max(errors_per_s), max(discards_per_s) FROM port_rates "
                        "WHERE device = ? AND ifname = ?", dev, ifn) == [(0.0, 0.0)]
        assert q(store, "SELECT max(delta) FROM counter_rates WHERE device = ? AND ifname = ? "
                        "AND counter IN ('rx_fcs_errors', 'symbol_errors')", dev, ifn) == [(0.0,)]


def test_lower_negotiated_speed_is_in_the_speed_gauge_and_caps_the_link(links):
    _, store = links
    speeds = dict(q(store, "SELECT device || ':' || ifname, value FROM port_gauges "
                           "WHERE counter = 'port_speed_bps'"))
    slow = SLOW.split("--")
    assert {speeds[p] for p in slow} == {100e9}
    assert {v for p, v in speeds.items() if p not in slow} == {400e9}
    peers = [f"leaf-p0-02:swp{k}" for k in (5, 7, 8)]
    (cap,), = q(store, "SELECT max(tx_bytes_per_s) * 8 FROM port_rates WHERE device || ':' || ifname "
                       "= ?", slow[0])
    assert cap <= 100e9 * 1.11  # a rate over a jittered interval: up to 2 x 5% off
    assert _rate(store, slow[0], "tx_bytes_per_s", 0, 120) * 8 <= 100e9 * 1.01
    assert min(_rate(store, p, "tx_bytes_per_s", 0, 120) * 8 for p in peers) > 1.5 * cap


def test_flap_shorter_than_a_sample_moves_only_the_carrier_counters(links):
    _, store = links
    for port in FLAPPY.split("--"):
        dev, ifn = port.split(":", 1)
        rows = q(store, "SELECT ts_start, ts, delta FROM counter_rates WHERE device = ? AND "
                        "ifname = ? AND counter = 'carrier_transitions' AND delta > 0", dev, ifn)
        assert len(rows) == 1 and rows[0][2] == 2  # down and up again inside one interval
        assert str(rows[0][0]) < "2026-11-30 03:00:43" and str(rows[0][1]) > "2026-11-30 03:00:45"
        assert q(store, "SELECT count(*) FROM link_state_changes WHERE device = ? AND ifname = ? "
                        "AND state = 'down'", dev, ifn) == [(0,)]
    assert q(store, "SELECT count(*) FROM events WHERE ifname IN ('swp7', 'swp3')") == [(0,)]


def test_a_silent_device_exports_nothing_and_is_seen_through_its_neighbours(silent):
    labels, store = silent
    for dev in ("gpu-node-0010", "spine-p0-04"):
        assert q(store, "SELECT count(*) FROM samples WHERE device = ?", dev) == [(0,)]
        assert q(store, "SELECT count(*) FROM files WHERE path LIKE ?", f"%{dev}%") == [(0,)]
    # the dead link from the leaf's end (EOS: Ethernet8/1, its LINEPROTO line), the storming
    # NIC's pauses as its leaf port receives them (SONiC: Ethernet4, its PFC watchdog line)
    assert labels["faults"][0]["root_cause"]["id"] == "leaf-p0-04:Ethernet8/1--spine-p0-04:Ethernet12"
    assert q(store, "SELECT state FROM link_state_intervals WHERE port_id = 'leaf-p0-04:Ethernet8/1' "
                    "AND \"end\" IS NULL") == [("down",)]
    assert q(store, "SELECT device, ifname, kind FROM events ORDER BY ts") == [
        ("leaf-p0-03", "Ethernet4", "pfc_storm"), ("leaf-p0-04", "Ethernet8/1", "link_down"),
        ("leaf-p0-03", "Ethernet4", "pfc_storm_restored")]
    assert _rate(store, "leaf-p0-03:Ethernet4", "rx_pause_per_s", 25, 75) > 1000


def test_victims_mark_more_ecn_than_the_root(traffic):
    labels, store = traffic
    fault = labels["faults"][0]
    root = fault["root_cause"]["id"]
    victims = [v for v in fault["victims"] if v.startswith("spine-")]
    assert victims == [f"spine-p0-0{k}:swp4" for k in (1, 2, 3, 4)]
    root_ecn = _rate(store, root, "ecn_marked_per_s", 25, 75)
    assert root_ecn > 0
    for v in victims:
        assert _rate(store, v, "ecn_marked_per_s", 25, 75) > 1.5 * root_ecn


def test_mild_imbalance_spreads_the_uplinks_by_a_cv_of_about_0_2(traffic):
    _, store = traffic
    cv = dict(q(store, "SELECT device, stddev_pop(r) / avg(r) FROM (SELECT device, ifname, "
                       "avg(tx_bytes_per_s) AS r FROM port_rates WHERE device LIKE 'leaf-%' AND "
                       "ifname IN ('swp5', 'swp6', 'swp7', 'swp8') GROUP BY ALL) GROUP BY device"))
    assert 0.15 < cv["leaf-p0-02"] < 0.25
    assert all(v < 0.05 for d, v in cv.items() if d != "leaf-p0-02")


def test_vendors_name_interfaces_their_way_and_lldp_agrees(fleet):
    labels, store = fleet
    vendors = labels["vendors"]
    assert set(vendors.values()) == {"sonic", "eos"}
    names = dict(q(store, "SELECT device, list(DISTINCT ifname) FROM samples "
                          "WHERE device NOT LIKE 'gpu-%' GROUP BY 1"))
    for dev, ifnames in names.items():
        want = {"sonic": r"Ethernet\d+", "eos": r"Ethernet\d+/1"}.get(vendors.get(dev), r"swp\d+")
        assert all(__import__("re").fullmatch(want, i) for i in ifnames), (dev, ifnames)
    # every switch port that reports counters is a cable LLDP describes from both ends
    assert q(store, "SELECT count(*) FROM (SELECT DISTINCT device || ':' || ifname AS p FROM samples) "
                    "WHERE p NOT IN (SELECT port_a FROM links UNION SELECT port_b FROM links)") == [(0,)]
    assert q(store, "SELECT min(reports) FROM links") == [(2,)]


def test_clock_skew_of_seconds_shows_as_the_offset_of_a_devices_samples(fleet):
    labels, store = fleet
    skew = labels["clock_skew_ms"]
    dev = max(skew, key=lambda d: abs(skew[d]))
    assert abs(skew[dev]) > 1000  # seconds, not the default's 300 ms
    (offset,), = q(store, f"SELECT epoch(min(ts)) - epoch(TIMESTAMP '{T0}') FROM samples "
                          "WHERE device = ?", dev)
    assert offset == pytest.approx(skew[dev] / 1e3, abs=0.55)  # plus up to 5% of 10 s jitter


def test_fleet_noise_fcs_errors_pauses_ecn_bursts_and_a_counter_clear(fleet):
    labels, store = fleet
    fcs = q(store, "SELECT DISTINCT device, ifname FROM counter_rates WHERE counter = 'rx_fcs_errors' "
                   "AND delta > 0")
    assert 1 <= len(fcs) <= 3
    assert q(store, "SELECT max(delta) FROM counter_rates WHERE counter = 'rx_fcs_errors'")[0][0] <= 3
    (paused,), = q(store, "SELECT count(DISTINCT device) FROM counter_rates WHERE counter = 'tx_pause' "
                          "AND delta > 0 AND device LIKE 'gpu-%'")
    assert 1 <= paused <= 3
    (bursts,), = q(store, "SELECT count(*) FROM counter_rates WHERE counter = 'ecn_marked' AND delta > 0 "
                          "AND device NOT LIKE 'gpu-%'")
    assert 1 <= bursts <= 3
    clear = labels["counter_clear"]["device"]
    assert clear != labels["reboot"]["device"]
    for dev in (clear, labels["reboot"]["device"]):
        assert q(store, "SELECT bool_or(reset) FROM port_rates WHERE device = ?", dev) == [(True,)]
    assert q(store, "SELECT max(tx_bytes_per_s) * 8 / 1e9 < 450 FROM port_rates") == [(True,)]
    # samples read twice, in every family (gnmic lines were duplicated before: NIC and Prometheus too)
    dups = dict(q(store, "SELECT f.family, count(*) FROM (SELECT file_id, device, ifname, counter, "
                         "qualifier, ts FROM samples GROUP BY ALL HAVING count(*) > 1) JOIN files f "
                         "USING (file_id) GROUP BY 1"))
    assert set(dups) == {"gnmi", "nic", "prom"}
    # full counters: carrier transitions that do not move on a healthy fabric, speeds of 400G
    assert q(store, "SELECT count(*), max(delta) FROM counter_rates "
                    "WHERE counter = 'carrier_transitions'")[0][1] == 0
    assert q(store, "SELECT DISTINCT value FROM port_gauges WHERE counter = 'port_speed_bps'") == [(400e9,)]


def test_the_new_keys_are_checked_like_the_others(tmp_path):
    cases = {
        'silent = ["gpu-node-9999"]': "telemetry.silent: 'gpu-node-9999' is no device of this fabric",
        'vendors = ["junos"]': "telemetry.vendors[0]: 'junos' is not one of cumulus, sonic, eos",
        "skew_ms = -1": "telemetry.skew_ms: expected int >= 0, got -1",
        "vendors = []": "telemetry.vendors: Expected array of length >= 1",
    }
    for key, message in cases.items():
        (tmp_path / "s.toml").write_text(FABRIC.format(planes=1, job="allreduce_ring") + key + "\n")
        with pytest.raises(ScenarioError) as err:
            generate(tmp_path / "s.toml", tmp_path / "b")
        assert message in str(err.value) and "(line 17)" in str(err.value)
    (tmp_path / "s.toml").write_text(TRAFFIC_CASES.replace("weights_cv = 0.2", "weights_cv = 1.5"))
    with pytest.raises(ScenarioError, match=r"faults\[1\]\.weights_cv: expected float <= 1.0, got 1.5 \(line 30\)"):
        read_document(tmp_path / "s.toml")
    assert not (tmp_path / "b").exists()


def test_scenarios_without_the_new_keys_write_none_of_it(tmp_path):
    """The gallery's byte-for-byte test covers the bytes; here, what a default bundle lacks."""
    (tmp_path / "s.toml").write_text(FABRIC.format(planes=1, job="allreduce_ring").replace(
        'jitter = "read"\n', ""))
    g = generate(tmp_path / "s.toml", tmp_path / "b")
    assert not {"counter_clear", "silent_devices", "vendors"} & set(g.labels)
    assert max(abs(v) for v in g.labels["clock_skew_ms"].values()) <= 300
    text = json.dumps(g.labels)
    assert "Ethernet" not in text and "hard_case" not in text


def test_the_benchmarks_project_draws_carry_every_hard_case_and_fleet_noise(tmp_path):
    """benchmarks/accuracy.py's scenarios (seeds fixed): every third one a hard case in turn,
    each a valid scenario whose faults inject into its fabric, all with the fleet's noise."""
    import numpy as np

    from benchmarks.accuracy import HARD, draw
    from twin.faults import inject
    from twin.topology import build

    seen = []
    for i in range(3 * len(HARD)):
        text, kinds = draw(np.random.default_rng(1000 + i), i)
        (tmp_path / "s.toml").write_text(text)
        doc, source = read_document(tmp_path / "s.toml")
        assert doc.telemetry.noise and doc.telemetry.counters == "full" and doc.telemetry.jitter == "read"
        faults = inject(build(from_document(doc, source).spec), doc.faults, source, 0, generated=True)
        assert [f.kind for f in faults] == list(kinds)
        seen += [h for f in faults for h in f.hard_cases]
        assert bool(i % 3 == 2) == any(f.hard_cases for f in faults)
    assert sorted(set(seen)) == sorted({"silent_device", "silent_loss", "low_speed", "short_flap",
                                        "loud_victims", "mild_imbalance"})
    assert seen.count("silent_device") == 2  # a silent spine and a silent storming host


def test_a_leaf_that_logs_a_flap_and_a_storm_keeps_both(tmp_path):
    """Its flap in switchd's phrasing, its storm in the watchdog's: two files, both read."""
    text = FABRIC.format(planes=1, job="allreduce_ring") + fault(
        "link_flap", link=FLAPPY, at_s=20, duration_s=15) + fault("pfc_storm", **STORM)
    (tmp_path / "s.toml").write_text(text)
    generate(tmp_path / "s.toml", tmp_path / "b")
    with Store.open(tmp_path / "s.duckdb") as store:
        ingest_bundle(store, tmp_path / "b", workers=1)
        assert q(store, "SELECT ifname, kind, count(*) FROM events WHERE device = 'leaf-p0-03' "
                        "GROUP BY ALL ORDER BY ALL") == [
            ("swp2", "pfc_storm", 1), ("swp2", "pfc_storm_restored", 1),
            ("swp7", "link_down", 1), ("swp7", "link_up", 1)]
