"""Every text parser on mutated input: real-looking lines and the real samples with bytes, numbers
and times changed and lines cut, dropped or doubled. Whatever the input, a parser never raises
(bad content is a reject), the accounting holds (each rejected record kept with a line of the
file), and every row it emits is one the store can take under the value policy: a valid time,
a finite value, a counter within 0..2^64, no DCGM blank. (Parquet is binary: not fuzzed here.)"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import pytest
from conftest import REAL_SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.schema import _DCGM_FLOATS, is_counter, is_dcgm
from collectors.core.source import Manifest, Sink, SourceFile
from collectors.core.timeparse import TS_MAX_NS, TS_MIN_NS
from collectors.formats import gnmi, ibdev, lldp, nic, normalized, prom, slurm, syslog

ISO = "2026-11-30T07:12:13,123456789+00:00"
MS = "1796022733123"
PROM = (f"{ISO}\n# TYPE nvswitch_interface_if_in_octets counter\n"
        'nvswitch_interface_if_in_octets{instance="leaf-01:9100",interface="swp1"} 1027\n'
        f'nvswitch_interface_if_out_octets{{host="leaf-01",interface="swp2"}} 5 {MS}\n'
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",Hostname="gpu-node-01"}} 41 {MS}\n'
        "node_network_up 1\n1796022743.5\ntemperature -3.5\n")
GNMI = "\n".join([
    '{"name":"s","timestamp":1796022733123456789,"tags":{"source":"leaf-01:9339",'
    '"interface_name":"swp1"},"values":{"/interfaces/interface/state/counters/in-octets":"17"}}',
    '{"source":"leaf-01:9339","timestamp":1796022733123456789,"time":"2026-11-30T07:12:13Z",'
    '"updates":[{"Path":"interfaces/interface[name=swp2]/state/counters/out-octets",'
    '"values":{"interfaces/interface/state/counters/out-octets":42}},'
    '{"Path":"interfaces/interface[name=swp2]/state/oper-status",'
    '"values":{"interfaces/interface/state/oper-status":"UP"}}]}',
    '{"name":"s","timestamp":1796022734123456789,"tags":{"source":"leaf-01"},"values":'
    '{"/interfaces/interface[name=swp3]/ethernet/phy/state/effective-ber":"1.5E-12"}}']) + "\n"
ETHTOOL = f"{ISO}\nNIC statistics:\n     rx_bytes_phy: 12\n     tx_bytes_phy: 99\n" \
    "1796022734.000000001\nNIC statistics:\n     rx_bytes_phy: 13\n     tx_bytes_phy: 100\n"
RDMA = f"{ISO}\nlink mlx5_2/1 np_cnp_sent 5 rp_cnp_handled 6 \n1796022734.5\n" \
    "link mlx5_2/1 np_cnp_sent 7 rp_cnp_handled 8 \n"
SYSLOG = ("2026-11-30T07:12:13.5+00:00 leaf-01 switchd[1]: swp1: carrier down\n"
          "<187>1 2026-11-30T07:12:14Z leaf-02 orchagent 1 - - :- doLagMemberTask: "
          "Set port Ethernet8 oper state set from up to down\n"
          "Nov 30 07:12:15 leaf-01 kernel: mlx5_core 0000:08:00.0 eth2: Link down\n")
SACCT = ("JobID|Account|Start|End|NodeList\n"
         "101|ml|2026-11-30T07:00:00|2026-11-30T08:00:00|gpu-node-[01-02]\n"
         "102|ml|2026-11-30T07:10:00|Unknown|gpu-node-03\n101.batch|ml|||gpu-node-01\n")
CSV = ("ts,device,ifname,counter,value\n2026-11-30T07:12:13Z,leaf-1,swp1,rx_bytes,10\n"
       "1796022743,leaf-1,swp1,rx_bytes,20\n2026-11-30T07:12:23.5Z,leaf-1,swp1,effective_ber,1e-9\n")
IBDEV = "mlx5_0 port 1 ==> eth0 (Up)\nmlx5_1 port 1 ==> ib0 (Down)\n"

# (parser, the name the file has in the bundle, the seeds)
TARGETS = {
    "prom": (prom.PARSERS[0], "prom/leaf-01.prom", [PROM]),
    "gnmi_event": (gnmi.GnmicEventParser(), "gnmi/leaf-01.json", [GNMI]),
    "gnmi_json": (gnmi.GnmicJsonParser(), "gnmi/leaf-01.json", [GNMI]),
    "nic": (nic.PARSERS[0], "nic/gpu-node-01/eth2.ethtool", [ETHTOOL, RDMA]),
    "syslog": (syslog.PARSERS[0], "syslog/leaf-01.log", [SYSLOG]),
    "sacct": (slurm.PARSERS[0], "jobs/sacct.txt", [SACCT]),
    "slurm_json": (slurm.PARSERS[1], "jobs/sacct.json", []),
    "csv": (normalized.NormalizedCsv(), "export.csv", [CSV]),
    "ibdev": (ibdev.PARSERS[0], "topology/gpu-node-01.ibdev", [IBDEV]),
    "lldp": (lldp.PARSERS[0], "topology/leaf-01.json", []),
}
REAL = {"prom": "prom", "gnmi_event": "gnmi", "gnmi_json": "gnmi", "syslog": "syslog",
        "slurm_json": "slurm/*.json", "lldp": "lldp/*.json", "ibdev": "ethtool/ibdev2netdev*"}


def _seeds(name: str) -> list[str]:
    seeds = list(TARGETS[name][2])
    if REAL_SAMPLES.is_dir() and name in REAL:
        pattern = REAL[name] if "/" in REAL[name] else f"{REAL[name]}/*"
        seeds += [p.read_text(errors="replace")[:20_000] for p in sorted(REAL_SAMPLES.glob(pattern))]
    if name == "nic" and REAL_SAMPLES.is_dir():  # the real outputs, after a timestamp line
        seeds += [f"{ISO}\n" + p.read_text(errors="replace")
                  for p in sorted(REAL_SAMPLES.glob("ethtool/*"))
                  if not p.name.startswith("ibdev2netdev")]
    return seeds


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
NUMBERS = ["-1", "NaN", "+Inf", "-Inf", "1e30", "1e400", str(2**64 + 1), str(2**64 - 1),
           "9999999999999.5", "0", "-0", "9223372036854775794", "2147483632", "140737488355328",
           "99999999999999999999999999", "1.5", "05", "1e-400", "18446744073709551616"]
DATES = ["9999-12-31", "1970-01-01", "2300-01-01", "2026-13-45", "0000-00-00", "2099-12-31",
         "2000-01-01"]
CHARS = list('{}[]",:| \t\n#=-+.0123456789aZé\x00\ufffd')

mutation = st.tuples(st.sampled_from(["byte", "number", "date", "cut_line", "cut", "drop",
                                      "double"]),
                     st.integers(0, 1 << 20), st.integers(0, 1 << 10))


def mutate(text: str, steps: list[tuple[str, int, int]]) -> str:
    for kind, at, pick in steps:
        if not text:
            break
        i = at % len(text)
        if kind == "byte":
            text = text[:i] + CHARS[pick % len(CHARS)] + text[i + 1:]
        elif kind in ("number", "date"):
            pattern, pool = (NUMBER, NUMBERS) if kind == "number" else (DATE, DATES)
            found = list(pattern.finditer(text))
            if found:
                m = found[at % len(found)]
                text = text[:m.start()] + pool[pick % len(pool)] + text[m.end():]
        elif kind == "cut":
            text = text[:i]
        else:
            lines = text.split("\n")
            j = at % len(lines)
            if kind == "cut_line":
                lines[j] = lines[j][:pick % (len(lines[j]) + 1)]
            elif kind == "drop":
                del lines[j]
            else:
                lines.insert(j, lines[j])
            text = "\n".join(lines)
    return text


def check(name: str, text: str) -> None:
    parser, rel, _ = TARGETS[name]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        sink = Sink()
        parser.parse(SourceFile(path, rel, Manifest(timezone="UTC", year=2026)), sink)
    n_lines = text.count("\n") + 1
    assert sink.loaded >= 0 and sink.rejected == len(sink.rejects)
    assert all(1 <= line <= n_lines + 1 for line, _, _ in sink.rejects)
    for table in ("samples", "text_samples", "events", "logs"):
        for row in sink.collected(table):
            assert isinstance(row["ts"], int) and TS_MIN_NS <= row["ts"] < TS_MAX_NS, row
            assert 0 <= row["line"] <= n_lines, row
    for row in sink.collected("samples"):
        v = row["value"]
        assert isinstance(v, float) and math.isfinite(v), row
        if is_counter(parser.family, row["metric"]):
            assert 0 <= v <= 2.0**64, row
        if is_dcgm(row["metric"]):
            assert v not in _DCGM_FLOATS, row
    for row in sink.collected("jobs"):
        for t in (row["start"], row["end"]):
            assert t is None or TS_MIN_NS <= t < TS_MAX_NS, row


@pytest.mark.parametrize("name", list(TARGETS))
def test_seeds_parse_cleanly(name):
    for seed in _seeds(name):
        check(name, seed)


@pytest.mark.parametrize("name", list(TARGETS))
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_input_never_breaks_a_parser(name, data):
    seeds = _seeds(name)
    if not seeds:
        pytest.skip("no seed (real samples absent)")
    seed = data.draw(st.sampled_from(seeds), label="seed")
    steps = data.draw(st.lists(mutation, min_size=1, max_size=6), label="mutations")
    check(name, mutate(seed, steps))
