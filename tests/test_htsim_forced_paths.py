"""benchmarks/htsim_forced_paths.py: htsim's printed ECMP paths read and replayed on the twin."""

from __future__ import annotations

import numpy as np

from benchmarks.htsim_calibration import SCENARIOS, fabric_state
from benchmarks.htsim_forced_paths import entropies_for, read_htsim_log
from twin.routing import _leaf_rows, route


def test_the_patched_htsims_lines_are_read(tmp_path):
    log = tmp_path / "h.out"
    log.write_text(
        "PATH flow 2 sw Switch_LowerPod_0 choice 1 of 8 via queue lossless output(400000Mb/s,"
        "400000bytes)LS0->US7(0)\n"
        "PATH flow 2 sw Switch_UpperPod_7 choice 0 of 1 via queue lossless output(400000Mb/s,"
        "400000bytes)US7->LS13(0)\n"
        "SINKLAST Roce_1_110 at 101.5\nSINKLAST Roce_1_110 at 103.0\n"
        "Flow Roce_1_110 1847 finished at 105.61 total bytes 500\n")
    spine, finish, sink = read_htsim_log(log)
    assert spine == {2: 7}  # the ToR's choice; the spine's single way down is not a choice
    assert finish == {(1, 110): 105.61}
    assert sink == {(1, 110): 101.5}  # the first time the last packet arrived


def test_entropies_send_each_flow_up_the_uplink_asked_for():
    sc = SCENARIOS["perm128_2MB_2tier"]
    state = fabric_state(sc, "ecmp")
    f = state.fabric
    src = np.arange(0, 128, 8)  # one host per ToR, to a host on the next ToR
    dst = (src + 8) % 128
    index, up = _leaf_rows(f)
    row = np.full(f.n_nodes, -1, dtype=np.int64)
    row[list(index)] = list(index.values())
    s_leaf, d_leaf = row[f.ep_leaf[src]], row[f.ep_leaf[dst]]
    want = np.arange(len(src)) % 8
    entropy = entropies_for(state, s_leaf, d_leaf, want)
    assert (entropy >= 0).all()
    links = route(state, src, dst, entropy).explicit().tocsc()
    for i in range(len(src)):
        used = links.indices[links.indptr[i]:links.indptr[i + 1]]
        assert 2 * up[s_leaf[i], want[i]] in used  # the leaf's uplink j, in its up direction
