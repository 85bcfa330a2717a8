"""benchmarks/writer2, the independent bundle writer of the accuracy benchmark: it imports
nothing of the project, its bundles ingest with exactly the rejects it plants, its labels and
entity ids follow design sections 3 and 8."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from conftest import ingested_facts

from benchmarks.writer2 import CYCLE, HARD, KINDS, write_bundle
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

WRITER2 = Path(__file__).resolve().parents[1] / "benchmarks" / "writer2"
ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ROOT_TYPE = {"link_down": "link", "link_flap": "link", "link_degraded": "link",
             "congestion": "port", "pfc_storm": "port", "load_imbalance": "device"}


def test_writer2_imports_only_stdlib_numpy_and_yaml():
    seen = set()
    for path in WRITER2.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                seen |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                seen.add(node.module.split(".")[0])
    assert {"numpy", "yaml", "json"} <= seen  # the scan sees imports at all
    outside = {m for m in seen if m not in sys.stdlib_module_names} - {"numpy", "yaml"}
    assert not outside, f"writer2 imports {outside}"


# seed 31: containerlab switch topology, a counter clear, 4 planted bad lines;
# seed 36: lldpctl json0 on every device, a counter clear, 2 bad lines. Both: gnmic json, gnmic
# event and Prometheus switches (Cumulus, SONiC, EOS), a link flap and a PFC storm.
@pytest.fixture(scope="module", params=[31, 36])
def ingested(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"w2_{request.param}")
    labels = write_bundle(root / "b", request.param, "two:link_flap,pfc_storm", small=True)
    with Store.open(root / "s.duckdb") as store:
        summary = ingest_bundle(store, root / "b", workers=1).as_json()
        con = store.con
        rows = {
            **ingested_facts(con),
            "events": con.execute("SELECT kind, count(*) FROM events GROUP BY ALL").fetchall(),
            "clears": con.execute("SELECT count(*) FROM counter_rates WHERE reset").fetchone()[0],
        }
    return root / "b", labels, summary, rows


def test_ingests_with_exactly_the_planted_rejects(ingested):
    bundle, labels, s, rows = ingested
    assert labels["malformed_lines"] > 0
    assert s["rejected"] == labels["malformed_lines"] == len(rows["rejects"])
    assert s["records_read"] == s["loaded"] + s["rejected"]
    assert not s["skipped"], s["skipped"]  # every file recognized
    reasons = {r for _, r in rows["rejects"]}
    assert all("gnmic status line" in r or "malformed label" in r for r in reasons), reasons
    families = {f["parser"] for f in s["files"]}
    assert {"gnmic_json", "gnmic_event"} <= families and any("prom" in f for f in families)
    kinds = dict(rows["events"])
    assert kinds.get("link_down", 0) >= 1 and kinds.get("link_up", 0) >= 1
    assert rows["clears"] > 0  # the planted counter clear reads as a reset, not a huge rate
    assert labels["counter_clears"]


def test_labels_follow_design_section_8(ingested):
    _, labels, _, rows = ingested
    assert [f["kind"] for f in labels["faults"]] == ["link_flap", "pfc_storm"]
    for f in labels["faults"]:
        assert f["kind"] in KINDS
        assert set(f["root_cause"]) == {"type", "id"}
        assert f["root_cause"]["type"] == ROOT_TYPE[f["kind"]]
        assert ISO_MS.fullmatch(f["start"]) and ISO_MS.fullmatch(f["end"])
        assert labels["window"]["start"] <= f["start"] < f["end"] <= labels["window"]["end"]


def test_entity_ids_follow_design_section_3(ingested):
    _, labels, _, rows = ingested
    flap, storm = labels["faults"]
    a, b = flap["root_cause"]["id"].split("--")
    assert a < b and {a, b} <= rows["ports"]  # the smaller port id first, both as stored
    assert flap["root_cause"]["id"] in rows["links"]  # the cabling (LLDP or clab) has it
    host, ifname = storm["root_cause"]["id"].split(":")
    assert re.fullmatch(r"gpu\d{3}", host) and ifname.startswith("enp")  # hostname:netdev
    assert storm["root_cause"]["id"] in rows["ports"]  # the NIC counters land on the netdev
    assert not any(":" in d for d in rows["devices"])  # no `:port` suffix left on a device


def test_same_seed_same_bytes_and_every_case_listed(tmp_path):
    one = write_bundle(tmp_path / "a", 5, "short_flap", small=True)
    two = write_bundle(tmp_path / "b", 5, "short_flap", small=True)
    assert one == two
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
                         for f in files)
    assert set(KINDS) | set(HARD) | {"healthy"} <= set(CYCLE)
    with pytest.raises(FileExistsError):  # never writes into a directory it did not create
        write_bundle(tmp_path / "a", 5, "short_flap", small=True)


@pytest.mark.parametrize(("case", "seed"), [
    # a pod spine's few crossing flows first hashed 2 and 2 onto its 2 uplinks (1.00 / 1.00)
    ("upper_imbalance", 11012), ("upper_imbalance", 11031),
    # a leaf's (load_imbalance) first hash 1.01 and 1.00 (the benchmark's misses of stops
    # 35-37); hashed again they split 1.98 and 3.05
    ("load_imbalance", 21005), ("load_imbalance", 25024),
])
def test_a_hashing_switch_is_labelled_only_with_an_uneven_split(case, seed):
    """Seeds whose first hash of the labelled switch's crossing flows came out even (no
    imbalance any counter could show) are hashed again until its busiest uplink carries
    UNEVEN times its idlest, leaf or pod spine alike."""
    from benchmarks.writer2.scenario import UNEVEN, _uplink_skew, draw

    sc = draw(seed, case)
    (fault,) = sc.faults
    assert fault["kind"] == "load_imbalance"
    assert fault["hard_case"] == ("" if case == "load_imbalance" else case)
    assert _uplink_skew(sc, fault["root_cause"]["id"]) >= UNEVEN
