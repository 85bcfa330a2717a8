"""`fabtwin ingest FILE --host H --interface I --time T`: a bare `ethtool -S` pasted into a
ticket names neither its host, its NIC nor its time; the command line gives all three (before,
only a manifest could give the interface and every record was rejected)."""

from __future__ import annotations

import duckdb
import pytest
from click.testing import CliRunner
from conftest import REAL_SAMPLES

from fabtwin.cli import main

BARE = REAL_SAMPLES / "ethtool" / "mlx5-ethtool-S-nonzero-kernel5.15-bpf-list.txt"


@pytest.mark.skipif(not BARE.is_file(), reason="real-samples corpus not present")
def test_a_bare_ethtool_s_loads_with_host_interface_and_time(tmp_path):
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(main, ["ingest", str(BARE), "--db", str(db), "-q", "--host", "xdp-host",
                                    "--interface", "ens1f0np0", "--time", "2026-03-01T10:00:00Z"])
    assert out.exit_code == 0, out.output
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT DISTINCT device, ifname, ts::VARCHAR FROM samples").fetchall()
        assert rows == [("xdp-host", "ens1f0np0", "2026-03-01 10:00:00")]
        assert con.execute("SELECT time_source FROM files").fetchall() == [("cli",)]
        assert con.execute("SELECT count(*) FROM rejects").fetchone()[0] == 0
    empty = CliRunner().invoke(main, ["ingest", str(BARE), "--db", str(tmp_path / "e.duckdb"),
                                      "--interface", " "])
    assert empty.exit_code == 2 and "--interface" in empty.output
    assert not (tmp_path / "e.duckdb").exists()
