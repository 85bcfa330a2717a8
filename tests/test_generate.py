"""fabtwin generate: bundles the collectors read back, with faults that leave their signatures
in the store (checked with SQL on the store, never on the generator's internals)."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import REPO

from collectors.store.ingest import ingest_bundle
from collectors.store.readonly import open_readonly
from collectors.store.writer import Store
from twin.synth import generate

GEN = REPO / "scenarios" / "gen"


@pytest.fixture(scope="module")
def bundles(sample_stores):
    """Every gallery scenario, generated and ingested: name -> (labels, read-only connection).
    The committed sample_traces are generate's output at seed 7 byte for byte (checked by
    test_the_gallery_bundles_are_regenerated_byte_for_byte), so the session's ingests of them
    (`sample_stores`, shared with test_check) stand for a fresh generate-and-ingest."""
    out = {}
    for scenario in sorted(GEN.glob("*.toml")):
        labels = json.loads((REPO / "sample_traces" / scenario.stem / "labels.json").read_text())
        out[scenario.stem] = (labels, open_readonly(sample_stores.ingested(scenario.stem)))
    yield out
    for _, con in out.values():
        con.close()


def q(store, sql):
    """Rows of `sql` on a Store or a connection."""
    return getattr(store, "con", store).execute(sql).fetchall()


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
    # the ingest's own account of each file, as it recorded it in the store
    (skipped, rejected), = q(store, "SELECT count(*) FILTER (WHERE status = 'skipped'), "
                                    "sum(rejected) FILTER (WHERE status = 'loaded') FROM files")
    assert skipped == 0
    assert rejected == labels["malformed_lines"] > 0
    assert q(store, "SELECT count(*) FROM rejects") == [(rejected,)]
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



def test_every_counter_written_parses_back_to_the_one_it_meant(bundles):
    """Round trip: the vendor names the synthesizer writes (the counter maps inverted) come back
    through the real parsers and the store as the canonical counters they were meant for."""
    from twin.synth import names

    meant = {("gnmi", leaf, c) for group in names.GNMI_LEAVES.values() for c, leaf in group.items()}
    meant |= {("gnmi", names.GNMI_OPER_STATUS, "oper_status"),
              ("prom", names.PROM_OPER_STATE, "oper_status")}
    meant |= {("prom", name, c) for c, name in names.PROM_NAMES.items()}
    meant |= {("nic", name, c) for c, name in {**names.ETHTOOL_NAMES, **names.RDMA_NAMES}.items()}
    for name, (_, store) in bundles.items():
        got = set(q(store, "SELECT DISTINCT f.family, s.metric, s.counter FROM samples s "
                           "JOIN files f USING (file_id)"))
        assert got == meant, name
    # what was meant is the twin's per-port counters, whatever the map calls them
    switch = {*names.SWITCH_COUNTERS, "oper_status"}
    assert {c for fam, _, c in meant if fam == "gnmi"} == switch
    assert {c for fam, _, c in meant if fam == "prom"} == switch
    assert {c for fam, _, c in meant if fam == "nic"} == {*names.NIC_COUNTERS, *names.RDMA_COUNTERS}
    _, store = bundles["healthy"]  # pauses are the RoCE priority's, on switches and NICs alike
    assert set(q(store, "SELECT DISTINCT f.family, s.qualifier FROM samples s JOIN files f "
                        "USING (file_id) WHERE s.counter IN ('rx_pause', 'tx_pause')")) == {
        ("gnmi", "priority=3"), ("nic", "priority=3"), ("prom", "")}


def test_vendor_names_invert_the_counter_map_or_say_which_map_lacks_one():
    from collectors.core.schema import vendor_name, vendor_names

    assert vendor_name("prom", "rx_bytes", "nvidia-cumulus/otel") == "nvswitch_interface_if_in_octets"
    assert vendor_name("gnmi", "rx_pause", "gnmic/openconfig") == "in-mac-pause-frames"
    assert vendor_name("gnmi", "rx_pause", "gnmic/Cumulus qos switch-priority") == "in-pause-pkts"
    assert vendor_names("nic", "tx_pause", "ethtool -S (mlx5)") == (
        *(f"tx_prio{p}_pause" for p in range(8)), "tx_global_pause")  # file order
    with pytest.raises(ValueError, match=r"^counter_map_prom\.csv: no vendor name for canonical "
                                         r"counter 'cnp_sent' from source 'nvidia-cumulus/otel'$"):
        vendor_name("prom", "cnp_sent", "nvidia-cumulus/otel")
    with pytest.raises(ValueError, match=r"^counter_map_nic\.csv: 9 vendor names for canonical "
                                         r"counter 'rx_pause' from source 'ethtool -S \(mlx5\)'"):
        vendor_name("nic", "rx_pause", "ethtool -S (mlx5)")


@pytest.mark.parametrize("name", sorted(p.stem for p in GEN.glob("*.toml")))
def test_the_gallery_bundles_are_regenerated_byte_for_byte(tmp_path, monkeypatch, name):
    """sample_traces/README.md's loop (seed 7, from the repository root: labels.json names the
    scenario as given) gives back the committed bundles exactly."""
    committed = REPO / "sample_traces" / name
    monkeypatch.chdir(REPO)
    generate(f"scenarios/gen/{name}.toml", tmp_path / name, seed=7)

    def tree(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    new, old = tree(tmp_path / name), tree(committed)
    assert sorted(new) == sorted(old)
    assert [rel for rel in sorted(new) if new[rel] != old[rel]] == []


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


# -- the output directory ------------------------------------------------------------------------

def _gen(out, *args, scenario="healthy"):
    from click.testing import CliRunner

    from fabtwin.cli import main

    return CliRunner().invoke(main, ["generate", str(GEN / f"{scenario}.toml"), "--out", str(out),
                                     "-q", *args])


def _tree(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_generate_refuses_a_folder_it_did_not_write_and_changes_nothing(tmp_path):
    out = tmp_path / "mine"
    (out / "gnmi").mkdir(parents=True)
    (out / "notes.txt").write_text("my notes\n")
    (out / "gnmi" / "capture.jsonl").write_text("{}\n")
    before = _tree(out)
    r = _gen(out)
    assert r.exit_code == 2, r.output
    assert r.stderr == (f"fabtwin: error: {out}: not empty and not a bundle fabtwin generate "
                        "wrote; nothing was changed: give a new or empty --out directory\n")
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no staging left beside it
    # a bundle of someone else's with labels.json but no generator mark is refused alike
    (out / "labels.json").write_text("{}")
    (out / "manifest.json").write_text('{"name": "x", "files": ["notes.txt"]}')
    assert _gen(out).exit_code == 2 and (out / "notes.txt").exists()


def test_generate_replaces_only_the_files_of_its_own_bundle(tmp_path):
    out = tmp_path / "b"
    (out).mkdir()  # an empty folder is fine
    assert _gen(out, "--seed", "1").exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator"] == "fabtwin generate"
    assert manifest["files"] == sorted(_tree(out))  # it lists exactly what it wrote
    (out / "analysis.md").write_text("mine\n")
    (out / "prom" / "extra.txt").write_text("mine too\n")
    r = _gen(out, "--seed", "2", scenario="link_down")
    assert r.exit_code == 0, r.output
    after = _tree(out)
    assert after.pop("analysis.md") == b"mine\n" and after.pop("prom/extra.txt") == b"mine too\n"
    fresh = tmp_path / "fresh"
    assert _gen(fresh, "--seed", "2", scenario="link_down").exit_code == 0
    assert after == _tree(fresh)  # the new bundle, byte for byte, nothing of the old one
    assert f"wrote {len(after)} files to {out}" in r.stdout


def test_generate_keeps_a_user_file_where_the_new_bundle_would_write(tmp_path):
    out = tmp_path / "b"
    assert _gen(out).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    victim = manifest["files"][0]
    manifest["files"].remove(victim)  # now a file generate does not claim
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = _tree(out)
    r = _gen(out)
    assert r.exit_code == 2 and f"{out / victim}: not written by fabtwin generate" in r.stderr
    assert _tree(out) == before


def test_generate_into_an_unwritable_folder_is_one_line(tmp_path, monkeypatch):
    import errno
    import os

    import twin.synth.bundle

    ro = tmp_path / "ro"
    ro.mkdir()

    def denied(*args, dir=None, **kwargs):  # what mkdtemp raises in a folder one may not write
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), f"{dir}/.b.generating-x")

    if os.geteuid() != 0:
        ro.chmod(0o555)
    else:  # root writes anywhere: the refusal comes from the call that would create the bundle
        monkeypatch.setattr(twin.synth.bundle.tempfile, "mkdtemp", denied)
    r = _gen(ro / "b")
    ro.chmod(0o755)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output
    assert r.stderr.startswith(f"fabtwin: error: {ro}/") and "Permission denied" in r.stderr


def test_generate_with_a_binary_scenario_is_one_line(tmp_path):
    from click.testing import CliRunner

    from fabtwin.cli import main

    bad = tmp_path / "s.toml"
    bad.write_bytes(b"\x00\x01\xff\xfe")
    r = CliRunner().invoke(main, ["generate", str(bad), "--out", str(tmp_path / "b")])
    assert r.exit_code == 2 and r.stderr == (f"fabtwin: error: {bad}: not UTF-8 text "
                                             "(byte 2: a binary file?) (line 1)\n")
    assert not (tmp_path / "b").exists()
