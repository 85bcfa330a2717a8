"""The vectorized reader of common NIC snapshot shapes equals the line parser, or declines."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.source import Manifest, Sink, SourceFile
from collectors.core.timeparse import NS
from collectors.formats import nic
from collectors.formats.nic import PARSERS, date_ins, write_ethtool_snapshots, write_rdma_statistic
from collectors.formats.nic.fast import parse_common_shapes

T0 = 1_796_007_600 * NS + 123_456_789
HOST = "gpu-node-0007"


def ethtool_text(blocks: int = 3) -> str:
    out = []
    for b in range(blocks):
        out.append(date_ins(T0 + b * 10 * NS))
        out.append("NIC statistics:")
        out += [f"     rx_bytes_phy: {1000 + b}", f"     tx_prio3_pause: {7 * b}",
                f"     rx0_packets: {b}", "     rx_crc_errors_phy: 0"]
    return "\n".join(out) + "\n"


def rdma_text(blocks: int = 3) -> str:
    out = []
    for b in range(blocks):
        out.append(date_ins(T0 + b * 10 * NS))
        out.append(f"link mlx5_0/1 np_cnp_sent {b} out_of_sequence {2 * b} ")
        out.append(f"link mlx5_1/1 np_cnp_sent {3 * b} out_of_sequence 0 ")
    return "\n".join(out) + "\n"


def both_paths(path: Path, rel: str, ifmaps: dict | None = None, manifest: Manifest | None = None):
    """(fast path taken?, the parser's sink, the line parser's sink)."""
    manifest = manifest or Manifest()
    def sink() -> Sink:
        return Sink(ifmaps=dict(ifmaps or {}))

    src, fast_sink = SourceFile(path, rel, manifest), sink()
    line = nic._FileParse(src, fast_sink)
    taken = parse_common_shapes(src, fast_sink, line.host, line._ifname, nic.qualifier)
    if not taken:
        assert fast_sink.loaded == fast_sink.rejected == 0 and not fast_sink.collected("samples")
        fast_sink = sink()
        PARSERS[0].parse(SourceFile(path, rel, manifest), fast_sink)
    slow_sink = sink()
    nic._FileParse(SourceFile(path, rel, manifest), slow_sink).run()
    return taken, fast_sink, slow_sink


def assert_same(a: Sink, b: Sink) -> None:
    assert a.collected("samples") == b.collected("samples")
    assert a.collected("text_samples") == b.collected("text_samples")
    assert (a.loaded, a.rejected, a.rejects) == (b.loaded, b.rejected, b.rejects)


def write(tmp_path: Path, name: str, text: str, gz: bool = False) -> tuple[Path, str]:
    rel = f"nic/{HOST}/{name}"
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path, rel


@pytest.mark.parametrize("gz", [False, True])
def test_ethtool_loops_read_vectorized_equal_the_line_parser(tmp_path, gz):
    path, rel = write(tmp_path, "eth2.ethtool" + (".gz" if gz else ""), ethtool_text(), gz)
    taken, fast, slow = both_paths(path, rel)
    assert taken
    assert_same(fast, slow)
    rows = fast.collected("samples")
    assert len(rows) == fast.loaded == 12
    assert rows[1] == {"ts": T0, "device": HOST, "ifname": "eth2", "metric": "tx_prio3_pause",
                       "qualifier": "priority=3", "value": 0.0, "line": 4}
    assert rows[2]["qualifier"] == "queue=0"


def test_rdma_lines_read_vectorized_with_ibdev2netdev_names(tmp_path):
    path, rel = write(tmp_path, "mlx5_0.rdma", rdma_text())
    taken, fast, slow = both_paths(path, rel, ifmaps={(HOST, "mlx5_0", 1): "eth0"})
    assert taken
    assert_same(fast, slow)
    assert fast.loaded == 6  # one record per line, two samples each
    assert {r["ifname"] for r in fast.collected("samples")} == {"eth0", "mlx5_1"}


def test_writers_round_trip_through_the_fast_path(tmp_path):
    import io

    eth, rdma = io.StringIO(), io.StringIO()
    write_ethtool_snapshots([(T0 + i * NS, {"rx_bytes": i * 10.0, "tx_bytes": 5.0})
                             for i in range(5)], eth)
    write_rdma_statistic([(T0 + i * NS, {("mlx5_2", 1): {"np_cnp_sent": float(i)}})
                          for i in range(5)], rdma)
    for name, text in (("eth2.ethtool", eth.getvalue()), ("mlx5_2.rdma", rdma.getvalue())):
        taken, fast, slow = both_paths(*write(tmp_path, name, text))
        assert taken, name
        assert_same(fast, slow)


EPOCH = f"{T0 // NS}.{T0 % NS:09d}"
DECLINED = {
    "record before any timestamp": "     rx_bytes: 1\n" + ethtool_text(),
    "ethtool twice after one timestamp": ethtool_text(1) + "NIC statistics:\n     rx_bytes: 5\n",
    "no zone on the timestamp": "2026-11-30T03:00:00,000000000\nNIC statistics:\n rx_bytes: 1\n",
    "negative value": ethtool_text().replace("rx_bytes_phy: 1001", "rx_bytes_phy: -1001"),
    "decimal value": ethtool_text().replace("rx_bytes_phy: 1001", "rx_bytes_phy: 1001.5"),
    "20-digit value": ethtool_text().replace("rx_bytes_phy: 1001",
                                             "rx_bytes_phy: 99999999999999999999"),
    "impossible date": ethtool_text().replace("2026-11-30", "2026-13-30", 1),
    "not ASCII": ethtool_text().replace("rx_bytes_phy", "rx_bytés_phy"),
    "per-QP line": rdma_text() + f"{EPOCH}\nlink mlx5_0/1 cntn 4 qp-type RC\n",
    "port twice after one timestamp": rdma_text(1) + "link mlx5_0/1 np_cnp_sent 9 \n",
    "odd pairs": rdma_text().replace(" out_of_sequence 0 ", " out_of_sequence "),
    "ethtool and rdma mixed": ethtool_text() + rdma_text(),
    "pretty rdma header": f"{EPOCH}\nlink mlx5_0/1\n\tnp_cnp_sent 4\n",
}


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_other_shapes_go_to_the_line_parser_unchanged(tmp_path, case):
    path, rel = write(tmp_path, "eth2.ethtool", DECLINED[case])
    taken, fast, slow = both_paths(path, rel, manifest=Manifest(timezone=None))
    assert not taken
    assert_same(fast, slow)


def test_crlf_files_stay_fast(tmp_path):
    # text mode reads \r\n (and a lone \r) as the line parser's line breaks
    text = ethtool_text().replace("\n", "\r\n")
    taken, fast, slow = both_paths(*write(tmp_path, "eth2.ethtool", text))
    assert taken
    assert_same(fast, slow)


def test_epoch_stamps_and_blank_lines_stay_fast(tmp_path):
    text = (f"{EPOCH}\n\nNIC statistics:\n  rx_bytes: 7\n\n"
            f"{EPOCH[:-1]}9\nNIC statistics:\n rx_bytes: 9\n")
    taken, fast, slow = both_paths(*write(tmp_path, "eth1.ethtool", text))
    assert taken
    assert_same(fast, slow)
    assert [r["line"] for r in fast.collected("samples")] == [4, 8]


def test_truncated_gzip_goes_to_the_line_parser(tmp_path):
    data = gzip.compress(ethtool_text(5000).encode())
    path, rel = write(tmp_path, "eth2.ethtool.gz", "")
    path.write_bytes(data[: len(data) // 2])
    taken, fast, slow = both_paths(path, rel)
    assert not taken
    assert_same(fast, slow)
    assert fast.loaded > 0  # the records before the damage


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([
    date_ins(T0), date_ins(T0 + 5 * NS), EPOCH, "NIC statistics:", "  rx_bytes: 12",
    "tx_prio2_pause: 3", "  link_down_events: 0", "link mlx5_0/1 np_cnp_sent 4 ",
    "link mlx5_0/2 out_of_sequence 1", "", "  junk line", "rx_bytes: -3", "rx_bytes: 1e5"]),
    max_size=30))
def test_any_mix_of_lines_parses_the_same_either_way(tmp_path, lines):
    path, rel = write(tmp_path, "mlx5_0.ethtool", "\n".join(lines) + "\n")
    _, fast, slow = both_paths(path, rel)
    assert_same(fast, slow)


# -- many files at once (a parse pool's chunk: NicSnapshotParser.parse_common) ---------------------
def together_and_alone(paths: list[tuple[Path, str]], ifmaps: dict | None = None):
    """Per file: (taken by the pass over all of them, its sink then (the parser's own parse when
    not taken), the line parser's sink)."""
    def sink() -> Sink:
        return Sink(ifmaps=dict(ifmaps or {}))

    sinks = [sink() for _ in paths]
    taken = PARSERS[0].parse_common([(SourceFile(p, rel), s)
                                     for (p, rel), s in zip(paths, sinks, strict=True)])
    out = []
    for (path, rel), got, took in zip(paths, sinks, taken, strict=True):
        if not took:
            assert got.loaded == got.rejected == 0 and not got.collected("samples")
            got = sink()
            PARSERS[0].parse(SourceFile(path, rel), got)
        line = sink()
        nic._FileParse(SourceFile(path, rel), line).run()
        out.append((took, got, line))
    return out


def test_files_read_together_equal_each_read_alone(tmp_path):
    texts = {**{f"declined {k}": v for k, v in DECLINED.items()},
             "ethtool": ethtool_text(), "rdma": rdma_text(4), "crlf": ethtool_text(2).replace(
                 "\n", "\r\n"), "stamps only": f"{date_ins(T0)}\nNIC statistics:\n",
             "empty": "", "epoch": f"{EPOCH}\nNIC statistics:\n rx_bytes: 9\n"}
    paths = []
    for k, (_, text) in enumerate(sorted(texts.items())):
        kind = "rdma" if "link " in text else "ethtool"
        rel = f"nic/gpu-node-{k:04d}/mlx5_0.{kind}"  # a host per file, each its own names
        path = tmp_path / rel
        path.parent.mkdir(parents=True)
        path.write_text(text)
        paths.append((path, rel))
    cut = gzip.compress(ethtool_text(3000).encode())
    gz = tmp_path / "nic/gpu-node-0100/eth1.ethtool.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(cut[: len(cut) // 2])
    paths.append((gz, "nic/gpu-node-0100/eth1.ethtool.gz"))
    ifmaps = {(f"gpu-node-{k:04d}", "mlx5_0", 1): f"eth{k}" for k in range(len(texts))}
    results = together_and_alone(paths, ifmaps)
    for (path, _), (_, got, line) in zip(paths, results, strict=True):
        assert (got.collected("samples"), got.loaded, got.rejected, got.rejects) == (
            line.collected("samples"), line.loaded, line.rejected, line.rejects), path
    names = [n for n, _ in sorted(texts.items())] + ["gz cut"]
    assert {n for n, (took, _, _) in zip(names, results, strict=True) if took} == {
        "ethtool", "rdma", "crlf", "epoch"}
    rdma = next(got for n, (_, got, _) in zip(names, results, strict=True) if n == "rdma")
    k = sorted(texts).index("rdma")
    assert {r["ifname"] for r in rdma.collected("samples")} == {f"eth{k}", "mlx5_1"}
    assert {r["device"] for r in rdma.collected("samples")} == {f"gpu-node-{k:04d}"}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from([
    date_ins(T0), date_ins(T0 + 5 * NS), EPOCH, "NIC statistics:", "  rx_bytes: 12",
    "tx_prio2_pause: 3", "link mlx5_0/1 np_cnp_sent 4 ", "link mlx5_0/2 out_of_sequence 1", "",
    "  junk line"]), max_size=12), min_size=1, max_size=6))
def test_any_files_read_together_parse_as_each_alone(tmp_path, files):
    base = Path(tempfile.mkdtemp(dir=tmp_path))  # hypothesis runs many examples in one tmp_path
    paths = []
    for k, lines in enumerate(files):
        rel = f"nic/gpu-node-{k:04d}/mlx5_0.ethtool"
        path = base / rel
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(lines) + "\n")
        paths.append((path, rel))
    for _, got, line in together_and_alone(paths):
        assert_same(got, line)
