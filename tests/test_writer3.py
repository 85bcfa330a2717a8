"""benchmarks/writer3, the third (blind) bundle writer of the accuracy benchmark: it imports only
the standard library and numpy, same seed same bytes, its bundles ingest with exactly the
rejects it plants, its labels name entities the bundle's cabling has, and its physics conserves
what it carries."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ingested_facts

from benchmarks.writer3 import (
    CYCLE,
    HARD,
    KINDS,
    _faults,
    _jobs,
    measure_load,
    suite_cases,
    write_bundle,
)
from benchmarks.writer3.fabric import build_fabric
from benchmarks.writer3.physics import new_state, simulate
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

WRITER3 = Path(__file__).resolve().parents[1] / "benchmarks" / "writer3"
ISO_US = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
ROOT_TYPE = {"link_down": "link", "link_flap": "link", "link_degraded": "link",
             "congestion": "port", "pfc_storm": "port", "load_imbalance": "device"}


def _imports(path: Path) -> set[str]:
    seen = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            seen |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            seen.add(node.module.split(".")[0])
    return seen


def test_writer3_imports_only_stdlib_numpy_and_yaml():
    seen = set()
    for path in WRITER3.glob("*.py"):
        if path.name != "score.py":  # the scorer reuses accuracy.py's scoring, nothing else
            seen |= _imports(path)
    assert {"numpy", "json", "gzip"} <= seen  # the scan sees imports at all
    outside = {m for m in seen if m not in sys.stdlib_module_names} - {"numpy", "yaml"}
    assert not outside, f"writer3 imports {outside}"
    score = _imports(WRITER3 / "score.py")
    assert {m for m in score if m not in sys.stdlib_module_names} == {"benchmarks"}


# seed 3: containerlab cabling, Cumulus, SONiC and EOS switches over gnmic json, gnmic event and
# Prometheus (timestamped and scrape-framed), a counter clear, 3 planted bad lines; seed 7:
# lldpctl json/json0 on every device that exports, the same vendors, 1 bad line. Both: a link
# flap and a PFC storm.
@pytest.fixture(scope="module", params=[3, 7])
def ingested(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"w3_{request.param}")
    labels = write_bundle(root / "b", request.param, "two:link_flap,pfc_storm", small=True)
    with Store.open(root / "s.duckdb") as store:
        summary = ingest_bundle(store, root / "b", workers=1).as_json()
        con = store.con
        rows = {
            **ingested_facts(con),
            "events": dict(con.execute("SELECT kind, count(*) FROM events GROUP BY ALL").fetchall()),
            "resets": con.execute("SELECT count(DISTINCT device) FROM counter_rates WHERE reset"
                                  ).fetchone()[0],
            "jobs": con.execute("SELECT count(*) FROM jobs").fetchone()[0],
        }
    return root / "b", labels, summary, rows


def test_ingests_with_exactly_the_planted_rejects(ingested):
    _, labels, s, rows = ingested
    assert labels["malformed_lines"] > 0
    assert s["rejected"] == labels["malformed_lines"] == len(rows["rejects"])
    assert s["records_read"] == s["loaded"] + s["rejected"]
    assert not s["skipped"], s["skipped"]  # every file recognized
    parsers = {f["parser"] for f in s["files"]}
    assert {"gnmic_json", "gnmic_event"} <= parsers, parsers
    assert rows["events"].get("link_down", 0) >= 1 and rows["events"].get("link_up", 0) >= 1
    assert rows["resets"] >= len(labels["counter_clears"])  # a clear reads as a reset
    assert rows["jobs"] >= 1


def test_labels_follow_design_sections_3_and_8(ingested):
    _, labels, _, rows = ingested
    assert labels["writer"] == "writer3"
    assert [f["kind"] for f in labels["faults"]] == ["link_flap", "pfc_storm"]
    for f in labels["faults"]:
        assert f["kind"] in KINDS and set(f["root_cause"]) == {"type", "id"}
        assert f["root_cause"]["type"] == ROOT_TYPE[f["kind"]]
        assert ISO_US.fullmatch(f["start"]) and ISO_US.fullmatch(f["end"])
        assert labels["window"]["start"] <= f["start"] < f["end"] <= labels["window"]["end"]
    flap, storm = labels["faults"]
    a, b = flap["root_cause"]["id"].split("--")
    assert a < b and flap["root_cause"]["id"] in rows["links"]  # the cabling has the link
    assert {a, b} & rows["ports"]  # and telemetry of at least one of its ends
    host, _ = storm["root_cause"]["id"].split(":")
    assert any(storm["root_cause"]["id"] in link.split("--") for link in rows["links"])
    assert (storm["root_cause"]["id"] in rows["ports"]) == (host not in labels["silent_devices"])
    assert not any(":" in d for d in rows["devices"])  # no `:port` suffix left on a device
    assert not rows["devices"] & set(labels["silent_devices"])  # silent means no telemetry


def test_same_seed_same_bytes_and_never_into_a_full_folder(tmp_path):
    one = write_bundle(tmp_path / "a", 5, "link_flap:short", small=True)
    two = write_bundle(tmp_path / "b", 5, "link_flap:short", small=True)
    assert one == two and one["faults"][0]["hard_case"] == "short_flap"
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) > 20
    same = [(tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files]
    assert [str(f) for f, ok in zip(files, same, strict=True) if not ok] == ["manifest.json"]  # its folder's name
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["name"] == "b"
    assert write_bundle(tmp_path / "c", 6, "link_flap:short", small=True) != one
    with pytest.raises(FileExistsError):
        write_bundle(tmp_path / "a", 5, "link_flap:short", small=True)
    cases = set(suite_cases(24))
    assert {c.split(":")[0] for c in cases} >= set(KINDS) | {"healthy", "two"}
    hard = {"link_down:silent_upper", "link_flap:short", "congestion:loud_victims",
            "pfc_storm:silent_host", "link_degraded:silent_loss", "load_imbalance:mild",
            "link_degraded:low_speed"}  # issue 17's hard cases, one per entry of HARD
    assert hard <= cases <= set(CYCLE) | {c for c in cases if c.startswith("two:")}
    assert len(hard) == len(HARD)


@pytest.mark.parametrize("seed,case", [(11, "congestion"), (12, "pfc_storm"),
                                       (13, "link_degraded:silent_loss"), (14, "link_down")])
def test_physics_conserves_and_respects_speeds(seed, case):
    rng = np.random.default_rng(seed)
    fab = build_fabric(rng, small=True)
    seconds = 120
    jobs = _jobs(fab, rng, seconds)
    measure_load(fab, jobs, seconds, seed)
    state = new_state(fab, seconds)
    _faults(fab, state, jobs, rng, seconds, 10, case)
    r = simulate(fab, jobs, state, rng)
    for dv in fab.devices:  # every switch forwards what it receives, bytes and packets
        if dv.role != "host":
            for got, sent in ((r.rx_bytes, r.tx_bytes), (r.rx_pkts, r.tx_pkts)):
                inn = sum(got[:, fab.rx_dir(p)] for p in dv.ports)
                out = sum(sent[:, fab.tx_dir(p)] for p in dv.ports)
                assert np.allclose(inn, out, rtol=1e-9), dv.name
    line = state.speed[np.arange(r.tx_bytes.shape[1]) // 2] / 8
    assert (r.tx_bytes <= line * state.up[:, np.arange(r.tx_bytes.shape[1]) // 2] * (1 - state.phi)
            + 1e3).all()  # no direction beyond its speed, its up time and its unpaused time
    lost = r.tx_bytes - r.rx_bytes
    assert (lost >= -1e-6).all()
    assert (np.abs(lost) > 1).any(axis=0).sum() == (case.endswith("silent_loss"))
    if case == "congestion":
        assert r.ecn.max() > 1e4 and r.pauses.max() > 100  # marks at the overloaded egress
    if case == "pfc_storm":  # the NIC keeps its leaf port paused: the full-pause frame rate
        (i, p, rail, _), = state.storms
        d = fab.rx_dir(fab.nic[i, p, rail])
        assert r.pauses[:, d].max() >= 0.99 * fab.port_speed[fab.nic[i, p, rail]] / (65535 * 512)
        assert r.tx_bytes[r.pauses[:, d] > 0, d].max() < 1e4  # and it receives nothing


def test_runner_refuses_a_folder_it_did_not_write(tmp_path, capsys):
    from benchmarks.writer3.__main__ import main

    (tmp_path / "mine.txt").write_text("keep")
    assert main(["--out", str(tmp_path), "--count", "1", "--small"]) == 2
    assert (tmp_path / "mine.txt").read_text() == "keep" and len(list(tmp_path.iterdir())) == 1
    assert "not written by writer3" in capsys.readouterr().err
    out = tmp_path / "new"
    assert main(["--out", str(out), "--count", "1", "--small"]) == 0
    index = json.loads((out / "writer3.json").read_text())
    assert index["bundles"] == ["w3_000"] and (out / "w3_000" / "labels.json").is_file()
    assert main(["--out", str(out), "--count", "1", "--small"]) == 0  # its own: rewritten
