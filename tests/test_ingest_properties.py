"""Arbitrary or truncated input never crashes ingest: it only adds counted rejects."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.store.ingest import ingest_bundle
from collectors.store.writer import Store

# Openings that steer random bodies into every parser's sniffing
PREFIXES = [
    "", "{", "[", "# TYPE x counter\n", "NIC statistics:\n", "<13>1 ", "<165>Feb  6 09:42:36 ",
    "ts,device,ifname,counter,value\n", "topology:\n  nodes:\n", '{"lldp": ', '{"jobs": [',
    "JobID|Account|Start|End|NodeList\n", "mlx5_0 port 1 ==> ", "link mlx5_0/1 ",
    '{"name":"sub","timestamp":1,"tags":{"source":"a"},"values":{"/x":', "2026-11-30T07:12:13,1+00:00\n",
]

texts = st.tuples(st.sampled_from(PREFIXES), st.text(max_size=400)).map("".join)


def _check_accounting(store: Store) -> None:
    bad = store.con.execute(
        "SELECT path FROM files WHERE status = 'loaded' AND records_read <> loaded + rejected").fetchall()
    assert bad == []
    per_file = store.con.execute(
        "SELECT f.rejected, (SELECT count(*) FROM rejects r WHERE r.file_id = f.file_id) "
        "FROM files f WHERE status = 'loaded'").fetchall()
    assert all(a == b for a, b in per_file)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(texts, min_size=1, max_size=4), gz=st.booleans(), cut=st.integers(0, 50))
def test_arbitrary_files_never_crash_ingest(bodies, gz, cut):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bundle"
        (root / "nic" / "gpu-node-0001").mkdir(parents=True)
        for i, body in enumerate(bodies):
            data = body.encode("utf-8", "surrogatepass")
            if gz:
                data = gzip.compress(data)
                data = data[: max(len(data) - cut, 1)]  # truncated gzip streams too
            name = ["x.txt", "nic/gpu-node-0001/eth0.ethtool", "leaf-1.log", "t.json"][i % 4]
            (root / name).write_bytes(data)
        with Store.open(":memory:") as store:
            summary = ingest_bundle(store, root)
            assert len(summary.files) == len(bodies)
            assert {f.status for f in summary.files} <= {"loaded", "skipped", "unchanged", "failed"}
            _check_accounting(store)
