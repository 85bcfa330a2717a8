"""The value policy (README "Value policy"): one out-of-range time or impossible value is one
counted reject naming it, and the rest of the bundle loads. Each user-reported defect is a case,
run through the store (`ingest_bundle`), so that NOT NULL failures and int64 wraps would show."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from collectors.core.schema import DCGM_BLANK, U64_MAX, screen, suspects, value_problem
from collectors.core.timeparse import TS_MAX_NS, TS_MIN_NS, TimeError, parse_any, parse_epoch
from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

RANGE = "is outside 2000-01-01..2100-01-01 UTC"
TS = 1_796_022_733_123_456_789  # 2026-11-30T07:12:13.123456789Z
ISO = "2026-11-30T07:12:13,123456789+00:00"  # date -Ins


def ingest(tmp_path: Path, files: dict[str, str]) -> tuple[Store, list[tuple]]:
    """A bundle of `files` ingested into a new store; (store, rejects as (path, line, reason))."""
    root = tmp_path / "bundle"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    store = Store.open(tmp_path / "t.duckdb")
    ingest_bundle(store, root, workers=1)
    con = store.con
    # exact accounting, file by file
    for read, loaded, rejected, path in con.execute(
            "SELECT records_read, loaded, rejected, path FROM files WHERE status = 'loaded'"
    ).fetchall():
        n = con.execute("SELECT count(*) FROM rejects r JOIN files f USING (file_id) "
                        "WHERE f.path = ?", [path]).fetchone()[0]
        assert read == loaded + rejected and rejected == n, path
    rejects = con.execute("SELECT regexp_replace(path, '.*/bundle/', ''), line, reason "
                          "FROM rejects ORDER BY path, line").fetchall()
    return store, rejects


def count(store: Store, table: str = "samples") -> int:
    return store.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def ts_range(store: Store) -> tuple:
    return store.con.execute("SELECT min(ts), max(ts) FROM samples").fetchone()


def gnmic_event(ts: object, value: object = "5") -> str:
    return json.dumps({"name": "s", "timestamp": ts,
                       "tags": {"source": "leaf-01:9339", "interface_name": "swp1"},
                       "values": {"/interfaces/interface/state/counters/in-octets": value}})


# -- defect 1: an out-of-range time aborted the whole ingest (NOT NULL) ------------------------
def test_gnmic_timestamp_1e30_is_one_reject(tmp_path):
    text = "\n".join([gnmic_event(TS), gnmic_event(1e30), gnmic_event(TS + 10**9)]) + "\n"
    store, rejects = ingest(tmp_path, {"gnmi/leaf-01.json": text,
                                       "prom/leaf-02.prom": f'm{{host="leaf-02"}} 1 {TS // 10**6}\n'})
    assert rejects == [("gnmi/leaf-01.json", 2, f"time '1e+30' {RANGE}")]
    assert count(store) == 3  # the other two records and the other file


ONE_BAD_TIME = [  # (file, text, the reason of its line 3, table, rows loaded)
    ("s.csv", "ts,device,ifname,counter,value\n2026-11-30T07:12:13Z,leaf-1,swp1,rx_bytes,10\n"
     "9999-12-31T00:00:00Z,leaf-1,swp1,rx_bytes,20\n2026-11-30T07:12:23Z,leaf-1,swp1,rx_bytes,30\n",
     f"bad samples row: time '9999-12-31T00:00:00Z' {RANGE}", "samples", 2),
    ("syslog/leaf-01.log", "2026-11-30T07:12:12.5+00:00 leaf-01 switchd[1]: swp1: carrier up\n"
     "2026-11-30T07:12:13.5+00:00 leaf-01 switchd[1]: swp1: carrier down\n"
     "2300-01-01T00:00:00+00:00 leaf-01 switchd[1]: swp1: carrier up\n"
     "2026-11-30T07:12:15+00:00 leaf-01 switchd[1]: swp1: carrier up\n",
     f"time '2300-01-01T00:00:00+00:00' {RANGE}", "logs", 3),
    # an sacct Start in 9999 was a NULL start without a word
    ("jobs/sacct.txt", "JobID|Account|Start|End|NodeList\n"
     "101|ml|2026-11-30T07:00:00|2026-11-30T08:00:00|gpu-node-[01-02]\n"
     "102|ml|9999-12-31T00:00:00|Unknown|gpu-node-03\n",
     f"Start: time '9999-12-31T00:00:00' {RANGE}", "jobs", 1),
]


@pytest.mark.parametrize(("rel", "text", "reason", "table", "rows"), ONE_BAD_TIME,
                         ids=[r[0] for r in ONE_BAD_TIME])
def test_one_bad_time_is_one_reject(tmp_path, rel, text, reason, table, rows):
    store, rejects = ingest(tmp_path, {rel: text})
    assert rejects == [(rel, 3, reason)]
    assert count(store, table) == rows


def test_parquet_time_in_year_9999_is_one_reject(tmp_path):
    """A Parquet timestamp column in us: year 9999 does not fit in int64 ns."""
    root = tmp_path / "bundle"
    root.mkdir()
    ts = pa.array([1_796_022_733_000_000, 253_402_214_400_000_000], pa.timestamp("us"))
    pq.write_table(pa.table({"ts": ts, "device": ["leaf-1"] * 2, "ifname": ["swp1"] * 2,
                             "counter": ["rx_bytes"] * 2, "value": [1.0, 2.0]}), root / "s.parquet")
    store, rejects = ingest(tmp_path, {})
    assert rejects == [("s.parquet", 2,
                        f"bad samples row: time '9999-12-31T00:00:00.000000Z' {RANGE}")]
    assert count(store) == 1


@pytest.mark.parametrize(("rel", "body"), [
    ("nic/gpu-node-01/mlx5_2.rdma", "link mlx5_2/1 np_cnp_sent 5 rp_cnp_handled 6\n"),
    ("nic/gpu-node-01/eth2.ethtool", "NIC statistics:\n     tx_bytes_phy: 7\n"),
])
@pytest.mark.parametrize("stamp", ["9999999999999.5", "9999-12-31T00:00:00,000000000+00:00",
                                   "1970-01-01T00:00:01,000000000+00:00"])
def test_nic_snapshot_time_out_of_range_rejects_its_block(tmp_path, rel, body, stamp):
    """The vectorized reader (formats/nic/fast.py) would take these files: a year-9999 block must not wrap
    (it was stored as 1816-03-30), the epoch 9999999999999.5 must not overflow."""
    good = "1796022733.123456789\n" + body
    store, rejects = ingest(tmp_path, {rel: good + stamp + "\n" + body + good})
    lines = body.count("\n")
    assert [r[1:] for r in rejects] == [
        (3 + lines + i, f"bad timestamp line {stamp!r}: time {stamp!r} {RANGE}")
        for i in range(lines) if body.split("\n")[i] != "NIC statistics:"]
    assert count(store) == 2 * (2 if "rdma" in rel else 1)
    assert ts_range(store)[0].year == 2026


def test_sacct_json_start_out_of_range(tmp_path):
    jobs = {"jobs": [{"job_id": 1, "account": "a", "nodes": "n1",
                      "time": {"start": 1796022733, "end": 1796026333}},
                     {"job_id": 2, "account": "a", "nodes": "n2",
                      "time": {"start": 253402214400, "end": 0}}]}
    store, rejects = ingest(tmp_path, {"jobs/sacct.json": json.dumps(jobs, indent=1)})
    assert [r[2] for r in rejects] == [f"start: time '253402214400' {RANGE}"]
    assert count(store, "jobs") == 1


# -- defect 2: silent wrong values --------------------------------------------------------------
DCGM_SENTINELS = [0x7FFFFFF0 + k for k in range(4)] + [0x7FFFFFFFFFFFFFF0 + k for k in range(4)] \
    + [140737488355328.0 + k for k in range(4)]


@pytest.mark.parametrize("sentinel", DCGM_SENTINELS, ids=str)
def test_dcgm_blank_sentinels_are_rejects(tmp_path, sentinel):
    text = (f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",Hostname="gpu-node-01"}} 41 {TS // 10**6}\n'
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",Hostname="gpu-node-01"}} {sentinel} {TS // 10**6}\n'
            f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",Hostname="gpu-node-01"}} 2147483631 {TS // 10**6}\n')
    store, rejects = ingest(tmp_path, {"prom/dcgm.prom": text})
    assert rejects == [("prom/dcgm.prom", 2, DCGM_BLANK)]
    assert sorted(v for (v,) in store.con.execute("SELECT value FROM samples").fetchall()) == [
        41.0, 2147483631.0]  # one below the blank: a value


def test_a_counter_at_a_dcgm_blank_outside_dcgm_is_a_value():
    assert value_problem(2147483632.0, True, "rx_bytes", "2147483632") is None


PROM_BAD = [
    ("nvswitch_interface_if_in_octets", "-5", "value '-5' of nvswitch_interface_if_in_octets is "
     "negative: a counter cannot be"),
    ("node_network_receive_bytes_total", "-1", "value '-1' of node_network_receive_bytes_total is "
     "negative: a counter cannot be"),
    ("nvswitch_interface_if_in_octets", "NaN", "value 'NaN' of nvswitch_interface_if_in_octets is "
     "not a finite number"),
    ("temperature", "+Inf", "value '+Inf' of temperature is not a finite number"),
    ("temperature", "-Inf", "value '-Inf' of temperature is not a finite number"),
    ("nvswitch_interface_if_in_octets", str(2**64 + 1), f"value '{2**64 + 1}' of "
     "nvswitch_interface_if_in_octets is out of range (beyond 2^64 - 1)"),
    ("nvswitch_interface_if_in_octets", "1.8446744073709552e19", "value '1.8446744073709552e19' "
     "of nvswitch_interface_if_in_octets is out of range (beyond 2^64 - 1)"),
]


@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "exact"])
@pytest.mark.parametrize(("metric", "value", "reason"), PROM_BAD, ids=[v for _, v, _ in PROM_BAD])
def test_prometheus_values_the_policy_rejects(tmp_path, monkeypatch, metric, value, reason,
                                              vectorized):
    from collectors.formats.prom import parser as prom
    monkeypatch.setattr(prom.PromTextParser, "__init__",
                        lambda self, vectorized=vectorized: setattr(self, "vectorized", vectorized))
    ms = TS // 10**6
    text = "".join(f'{metric}{{host="leaf-01",interface="swp{i}"}} {v} {ms}\n'
                   for i, v in enumerate(["1", value, "2"] * 40))
    store, rejects = ingest(tmp_path, {"prom/x.prom": text})
    assert {r[2] for r in rejects} == {reason} and len(rejects) == 40
    assert count(store) == 80


def test_counter_bounds_are_exact(tmp_path):
    """2^64 - 1 is a counter's value (stored as the nearest double); 2^64 + 1 is not, though
    both are the same double."""
    ms = TS // 10**6
    text = (f'nvswitch_interface_if_in_octets{{host="l",interface="swp1"}} {U64_MAX} {ms}\n'
            f'nvswitch_interface_if_in_octets{{host="l",interface="swp2"}} {2**64} {ms}\n'
            f'temperature{{host="l"}} -40.5 {ms}\n'  # a gauge may be negative
            f'temperature{{host="l"}} 1e300 {ms}\n')
    csv_text = (f"ts,device,ifname,counter,value\n{ISO[:19]}Z,l,swp1,rx_bytes,{U64_MAX}\n"
                f"{ISO[:19]}Z,l,swp1,rx_bytes,{2**64 + 1}\n")
    ethtool = f"{ISO}\nNIC statistics:\n     rx_bytes_phy: {U64_MAX}\n     tx_bytes_phy: {2**64}\n"
    store, rejects = ingest(tmp_path, {"prom/l.prom": text, "n.csv": csv_text,
                                       "nic/h1/eth2.ethtool": ethtool})
    assert [r[:2] for r in rejects] == [("n.csv", 3), ("nic/h1/eth2.ethtool", 4), ("prom/l.prom", 2)]
    assert all("out of range (beyond 2^64 - 1)" in r[2] for r in rejects)
    values = sorted(v for (v,) in store.con.execute("SELECT value FROM samples").fetchall())
    assert values == [-40.5, float(U64_MAX), float(U64_MAX), float(U64_MAX), 1e300]


def test_ethtool_and_prometheus_agree_on_negative_counters(tmp_path):
    ethtool = f"{ISO}\nNIC statistics:\n     rx_bytes_phy: -3\n"
    prom_text = f'node_ethtool_rx_bytes_phy{{device="eth2",host="h1"}} -3 {TS // 10**6}\n'
    _, rejects = ingest(tmp_path, {"nic/h1/eth2.ethtool": ethtool, "prom/h1.prom": prom_text})
    assert [r[2] for r in rejects] == [
        "value '-3' of rx_bytes_phy is negative: a counter cannot be",
        "value '-3' of node_ethtool_rx_bytes_phy is negative: a counter cannot be"]


@pytest.mark.parametrize("value", ["-7", -7.5, "1e400", "-Infinity", 2**64 + 1])
def test_gnmi_fast_and_slow_paths_reject_alike(tmp_path, value):
    """The event's other values go with it: a record is rejected whole. (A JSON string that
    does not start like a number, "NaN" say, is text, kept in text_samples.)"""
    text = "\n".join([gnmic_event(TS), gnmic_event(TS + 1, value), gnmic_event(TS + 2)]) + "\n"
    store, rejects = ingest(tmp_path, {"gnmi/leaf-01.json": text})
    assert [r[1] for r in rejects] == [2] and "in-octets" in rejects[0][2]
    assert count(store) == 2 and count(store, "text_samples") == 0


@pytest.mark.parametrize(("text", "ok"), [
    ("1999-12-31T23:59:59Z", False), ("2000-01-01T00:00:00Z", True),
    ("2099-12-31T23:59:59.999999999Z", True), ("2100-01-01T00:00:00Z", False),
    ("1970-01-01T00:00:00Z", False), ("946684800", True), ("946684799.999999999", False),
    ("4102444800000", False), ("4102444799999", True),
])
def test_the_time_range_edges(text, ok):
    if ok:
        assert TS_MIN_NS <= parse_any(text) < TS_MAX_NS
    else:
        with pytest.raises(TimeError, match="outside 2000-01-01..2100-01-01"):
            parse_any(text)


def test_epoch_that_overflows_int64_is_a_time_error():
    with pytest.raises(TimeError, match="'9999999999999.5' is outside"):
        parse_epoch("9999999999999.5")


def test_the_vectorized_prefilter_misses_nothing_the_scalar_rule_rejects():
    """`suspects` flags a superset of what `value_problem` rejects, for counters and gauges."""
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, -1.0, 1.0, math.nan, math.inf, -math.inf, 2.0**64, 2.0**63, 2.0**53,
               float(U64_MAX), 2147483632.0, 140737488355328.0, 140737488355331.0, 5e-324,
               -1e300, 1e300]
    values = np.concatenate([np.array(special), rng.normal(0, 1e19, 2000),
                             rng.integers(0, 2**62, 2000).astype(np.float64)])
    flagged = suspects(values)
    for metric, counter in (("rx_bytes", True), ("DCGM_FI_DEV_GPU_TEMP", False)):
        for v, f in zip(values.tolist(), flagged.tolist(), strict=True):
            if value_problem(v, counter, metric) is not None:
                assert f, (metric, v)
    got = screen(values, "gnmi", lambda rows: ["in-octets"] * len(rows))
    assert all(values[i] < 0 or not math.isfinite(values[i]) or values[i] >= 2.0**64
               for i in got)


@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "exact"])
def test_prometheus_scrape_line_out_of_range(tmp_path, monkeypatch, vectorized):
    """A scrape framed by a `date -Ins` line in 9999: that line is the reject naming the time;
    the samples of its scrape have no time (rejected), the next scrape loads."""
    from collectors.formats.prom import parser as prom
    monkeypatch.setattr(prom.PromTextParser, "__init__",
                        lambda self, vectorized=vectorized: setattr(self, "vectorized", vectorized))
    scrape = 'nvswitch_interface_if_in_octets{host="l",interface="swp1"} 5\n'
    text = f"{ISO}\n{scrape}9999-12-31T00:00:00,000000000+00:00\n{scrape}{ISO}\n{scrape}"
    store, rejects = ingest(tmp_path, {"prom/l.prom": text})
    assert [r[1:] for r in rejects] == [
        (3, f"timestamp line '9999-12-31T00:00:00,000000000+00:00': "
            f"time '9999-12-31T00:00:00,000000000+00:00' {RANGE}"),
        (4, prom.NO_TIMESTAMP)]
    assert count(store) == 2
