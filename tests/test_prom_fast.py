"""The vectorized Prometheus path (lines cut by `prom.split`, keys found by `prom.keys`) loads
exactly what the exact line parser loads: the same rows with their line numbers, the same
rejects with their reasons and raw text, the same accounting, whatever the block size."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.lineblocks import LineBlock
from collectors.core.source import Manifest, Sink, SourceFile
from collectors.formats.prom import keys as prom_keys
from collectors.formats.prom import parser as prom
from collectors.formats.prom.keys import UNKNOWN, KeyIndex
from collectors.formats.prom.parser import PromTextParser
from collectors.formats.prom.split import BlockText, split_block

T_LINE = "2026-11-30T07:12:13,123456789+00:00"
SINK = {"addresses": {"10.0.0.9": "leaf-09"}, "ifmaps": {("leaf-1", "mlx5_2", 1): "eth2"}}


def outcome(path: Path, rel: str, parser: PromTextParser) -> tuple:
    """Rows (as a sorted multiset, every column), rejects and accounting of one parse."""
    sink = Sink(**SINK)
    parser.parse(SourceFile(path, rel, Manifest()), sink)
    rows = sorted((r["line"], r["ts"], r["device"], r["ifname"], r["metric"], r["qualifier"],
                   repr(r["value"])) for r in sink.collected("samples"))
    assert sink.loaded == len(rows) and sink.rejected == len(sink.rejects)
    return rows, sorted(sink.rejects), sink.loaded, sink.rejected


def assert_same_as_exact(path: Path, rel: str = "prom/leaf-01.prom") -> tuple:
    fast = outcome(path, rel, PromTextParser())
    exact = outcome(path, rel, PromTextParser(vectorized=False))
    assert fast == exact
    return fast


# -- whole files, awkward lines ---------------------------------------------------------------
SERIES = ['m{host="h1",interface="swp1"}', 'm{host="h1",interface="swp2"}',
          'nvswitch_interface_if_in_octets{instance="leaf-2:9100",interface="swp9"}',
          'node_network_up{device="eth0",instance="10.0.0.9:9100"}',
          'node_infiniband_info{device="mlx5_2",port="1",host="leaf-1"}',
          'm{host="h",q="a\\"b"}', 'm{host="h",q="}"}', 'm{"utf.8",host="h"}', 'm{host="é"}',
          'm{host="h",}', 'm{ host = "h" }', 'm{host="h",host="g"}', 'm{job="nohost"}',
          "bare_metric", "up", "m{}", '{host="h"}', "x{host=h}", "m{host=\"h\"", "é"]
VALUES = ["1", "0", "-2.5e3", "+Inf", "-Inf", "NaN", "nan", "inf", "Infinity", "1.", ".5",
          "1e400", "0x10", "1_0", "x", "", "12345678901234567", "-0", "+1"]
TIMES = [None, "1395066363000", "-3982045", "+5", "1.5", "9223372036855", "-9223372036854775808",
         "9223372036854775807", "0", "x", "1e3", ""]
OTHER = ["# HELP m some help text", "# TYPE m counter", "# EOF", "#", "", "   ", "\t",
         T_LINE, "1796022743.5", "2026-13-45T07:12:23+00:00", "not a sample", "m 1 2 3",
         'm{host="h"} 1 2 # {trace="x"} 1', 'm{host="h"}  1', 'm{host="h"} 1 2 ',
         'm{host="h"}\t1\t2', ' m{host="h"} 1', 'm{host="h"} 1  2', "m{host=\"h\"}1"]


def sample_line(draw_series: str, value: str, ts: str | None) -> str:
    return f"{draw_series} {value}" + ("" if ts is None else f" {ts}")


LINES = st.one_of(
    st.builds(sample_line, st.sampled_from(SERIES), st.sampled_from(VALUES), st.sampled_from(TIMES)),
    st.sampled_from(OTHER))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, max_size=40), block=st.sampled_from([1, 7, 64, 300, 1 << 22]),
       crlf=st.booleans(), openmetrics=st.booleans(), stride=st.sampled_from([1, 2, 32]),
       bulk=st.sampled_from([1, 64]))
def test_fast_path_loads_what_the_exact_parser_loads(tmp_path_factory, lines, block, crlf,
                                                      openmetrics, stride, bulk):
    """Mixed lines at any block size, CRLF or not, OpenMetrics or not, keys guessed in any
    stride or resolved in bulk or one by one: the same rows, rejects and accounting."""
    path = tmp_path_factory.mktemp("f") / "leaf-01.prom"
    text = "\n".join(lines) + ("\n# EOF\n" if openmetrics else "\n")
    path.write_bytes(text.replace("\n", "\r\n" if crlf else "\n").encode())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(prom, "BLOCK_CHARS", block)
        mp.setattr(prom_keys, "STRIDE", stride)
        mp.setattr(prom, "_BULK_MIN", bulk)
        assert_same_as_exact(path)


@pytest.mark.parametrize(("token", "ns"), [
    ("946684800000", 946_684_800_000_000_000),       # 2000-01-01: the first valid ms
    ("946684799999", None),                          # one before: out of range
    ("4102444799999", 4_102_444_799_999_000_000),    # the last valid ms, before 2100
    ("4102444800000", None),
    ("9223372036854", None),                         # fits in ns, but in 2262
    ("-9223372036854", None),
    ("9223372036855", None),
    ("-9223372036854775807", None),
    ("-9223372036854775808", None),                  # the int64 minimum (its abs overflows)
    ("9223372036854775808", None),                   # not an int64 at all
    ("+5", None),                                    # no sign allowed but '-'
    ("01796022700000", 1_796_022_700_000_000_000),   # a leading zero
    ("05", None),                                    # 1970
])
def test_sample_timestamps_at_the_edges(tmp_path, token, ns):
    path = tmp_path / "leaf-01.prom"
    path.write_text(f'm{{host="h"}} 1 {token}\n' * 3)
    rows, rejects, loaded, rejected = assert_same_as_exact(path)
    if ns is None:
        assert rows == [] and rejected == 3 and "time" in rejects[0][1]
    else:
        assert {r[1] for r in rows} == {ns} and loaded == 3


def test_scrapes_in_a_steady_order_and_then_shuffled(tmp_path):
    """Series in the same order scrape after scrape (keys guessed), then in random order
    (guesses fail, keys found by hash), across many small blocks."""
    rng = random.Random(7)
    series = [f'nvswitch_interface_if_in_octets{{instance="leaf-{d}:9100",interface="swp{p}"}}'
              for d in range(6) for p in range(40)]
    lines = ["# TYPE nvswitch_interface_if_in_octets counter"]
    for step in range(12):
        order = series if step < 6 else rng.sample(series, len(series))
        lines += [f"{s} {step * 1000 + i} {1_796_007_600_000 + step * 10_000}"
                  for i, s in enumerate(order)]
        if step == 3:
            lines.append(T_LINE)
            lines += [f"{s} {i}" for i, s in enumerate(series[:50])]  # times from the line
    path = tmp_path / "prom" / "leaf-01.prom"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    for block in (997, 1 << 22):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(prom, "BLOCK_CHARS", block)
            rows, rejects, loaded, rejected = assert_same_as_exact(path)
        assert (loaded, rejected) == (12 * 240 + 50, 0)


def test_one_series_after_another(tmp_path):
    """A dump's shape, each series' samples together (the same key guessed again), a HELP and
    TYPE line before each family."""
    lines = []
    for m in ("nvswitch_interface_if_in_octets", "nvswitch_interface_if_out_octets"):
        lines += [f"# HELP {m} octets", f"# TYPE {m} counter"]
        for p in range(30):
            lines += [f'{m}{{instance="leaf-1",interface="swp{p}"}} {t * 7} {1_796_022_700_000 + t}'
                      for t in range(100)]
    path = tmp_path / "leaf-01.prom"
    path.write_text("\n".join(lines) + "\n")
    for block in (4000, 1 << 22):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(prom, "BLOCK_CHARS", block)
            rows, _, loaded, rejected = assert_same_as_exact(path)
        assert (loaded, rejected) == (6000, 0) and rows[-1][0] == len(lines)


def test_real_expositions_with_a_time_line(real_samples, tmp_path):
    """Every real Prometheus/OpenMetrics sample, given a scrape time: both paths agree."""
    files = sorted(p for p in (real_samples / "prom").rglob("*") if p.is_file())
    assert files
    for src in files:
        path = tmp_path / src.name
        path.write_bytes(T_LINE.encode() + b"\n" + src.read_bytes())
        rows, _, loaded, _ = assert_same_as_exact(path, f"prom/{src.name}")
        assert loaded == len(rows)


# -- the cut ----------------------------------------------------------------------------------
def reference_cut(line: str) -> tuple[str, str, str | None] | None:
    """What split_block should make of one line: key up to the first '}' (or, without '}', the
    first space), then one space, the value, and optionally one space and the timestamp."""
    brace = line.find("}")
    end = brace + 1 if brace >= 0 else line.find(" ")
    if end <= 0 or line[end:end + 1] != " ":
        return None
    parts = line[end + 1:].split(" ")
    if len(parts) > 2:
        return None
    return line[:end], parts[0], parts[1] if len(parts) == 2 else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from('ab{}=" \t#é1.+'), max_size=14), max_size=30))
def test_split_block_cuts_every_line_as_the_reference_does(lines):
    data = "".join(line + "\n" for line in lines).encode()
    cut = split_block(LineBlock(data, 1))
    want = {i: reference_cut(line) for i, line in enumerate(lines)}
    got = {int(i): (k, v, t) for i, k, v, t in zip(cut.rows, cut.key.to_list(),
                                                    cut.value.to_list(), cut.ts.to_list(),
                                                    strict=True)}
    assert got == {i: c for i, c in want.items() if c is not None}
    assert cut.raw(np.arange(len(lines))).to_list() == lines
    assert [bool(p) for p in cut.ts_plus] == [c[2] is not None and c[2].startswith("+")
                                              for c in want.values() if c is not None]


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=60), picks=st.lists(st.tuples(st.integers(0, 60),
                                                             st.integers(0, 60)), max_size=20))
def test_string_views_are_the_bytes_they_point_at(data, picks):
    """Short strings inline, long ones by offset, near the end of the data too."""
    data = data.replace(b"\xff", b"a").decode("latin-1").encode("ascii", "replace") + b"\n"
    spans = [(min(s, len(data)), min(n, len(data) - min(s, len(data)))) for s, n in picks]
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    lens = np.array([n for _, n in spans], dtype=np.int64)
    got = BlockText(data).views(starts, lens, "x").to_list()
    assert got == [data[s:s + n].decode() for s, n in spans]


# -- the key index ----------------------------------------------------------------------------
def test_key_index_finds_keys_by_guess_and_by_hash():
    keys = pl.Series([f"k{{i=\"{i}\"}}" for i in range(500)])
    index = KeyIndex()
    index.add(keys[:300], pl.Series(np.arange(300) * 10))
    steady = pl.concat([keys[:300], keys[:300]])
    assert (index.find(steady) == np.tile(np.arange(300) * 10, 2)).all()
    shuffled = keys.sample(fraction=1.0, shuffle=True, seed=3)
    want = np.array([int(k[5:-2]) * 10 if int(k[5:-2]) < 300 else UNKNOWN
                     for k in shuffled.to_list()])
    assert (index.find(shuffled) == want).all()


def test_key_index_keeps_keys_whose_hashes_collide(monkeypatch):
    """A weak hash (the key's length mod 3): every key shares its hash with others, and each
    is still found with its own id, never another key's."""
    monkeypatch.setattr(prom_keys, "key_hashes",
                        lambda k: (k.str.len_bytes().cast(pl.UInt64) % 3).to_numpy())
    keys = pl.Series([f"key{i}" * (1 + i % 4) for i in range(200)])
    index = KeyIndex()
    index.add(keys[:100], pl.Series(np.arange(100)))
    index.add(keys[100:150], pl.Series(np.arange(100, 150)))
    query = pl.concat([keys, keys[::-1]])
    want = np.concatenate([np.arange(150), np.full(50, UNKNOWN)])
    assert (index.find(query) == np.concatenate([want, want[::-1]])).all()


def test_collisions_do_not_mix_up_series(tmp_path, monkeypatch):
    """The whole parser with a weak key hash: still the exact parser's rows."""
    monkeypatch.setattr(prom_keys, "key_hashes",
                        lambda k: (k.str.len_bytes().cast(pl.UInt64) % 5).to_numpy())
    lines = [f'm{{host="h{d}",interface="swp{p}"}} {d * 100 + p} {1_796_022_700_000 + s}'
             for s in range(3) for d in range(9) for p in range(11)]
    path = tmp_path / "leaf-01.prom"
    path.write_text("\n".join(lines) + "\n")
    rows, _, loaded, _ = assert_same_as_exact(path)
    assert loaded == 297 and len({(r[2], r[3]) for r in rows}) == 99
