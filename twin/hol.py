"""PFC's head-of-line blocking in lossless switches: which links a saturated port pauses.

htsim's lossless switch (queue_lossless_input.cpp) counts, per ingress port, the bytes that
came in on it and have not yet left by their egress FIFO (queue_lossless_output.cpp); past the
XOFF threshold it pauses the upstream port, which stops every flow it carries, below XON it
resumes it. An ingress fills only where the packets it brings arrive faster than their egress
lets them out: at the first link of a flow's path that cannot carry what the flow sends (its
first bottleneck). Behind that link the flow arrives at the pace it was held to, so a later
link that saturates at the same level (a shift's collisions on the way down mirror those on
the way up) builds no queue of it and pauses nothing for it.

So a flow that the max-min filling freezes at saturated links pauses the links before the
first of them on its path, up to its NIC; every other flow through such a paused link goes at
the held flow's pace (the paused link's FIFO serves them alike: a victim), and backs its own
links up in turn, to a fixed point (a PFC tree). htsim's queue logic stepped packet by packet
(`benchmarks/htsim_pfc_steps.py`) on the twin's own paths of htsim_heldout3's shift64_512KB
(1,024 flows, 3 tiers) gives a median of 103.7 us; the twin 96.9 with this rule (its median
flows are no victims; 81 flows are, at the start), 138.5 when every link before a held flow's
last saturated link paused, 96.9 without any blocking; htsim on its own paths 112.2. The
stepping holds a flow behind a paused link at the held flow's pace (greedy senders): the
blocking is all or nothing per paused link. Inputs: none; the thresholds decide how much a
paused port loses (`twin.pfc_loop`), not which ports pause.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from twin.maxmin import _gather


@dataclass
class HolBlocking:
    """PFC's head-of-line blocking over an incidence's single paths, for
    `twin.maxmin.max_min_rates` (its `hol`). `explicit` is the incidence as links x flows,
    `link_pos` the order of links along a path. Only single-path flows take part: split flows
    (adaptive routing, spraying) leave a paused port for another path per packet."""

    explicit: sp.csr_matrix
    link_pos: np.ndarray

    def __post_init__(self) -> None:
        a = sp.csc_matrix(self.explicit, copy=True)
        a.sum_duplicates()
        cols = np.repeat(np.arange(a.shape[1]), np.diff(a.indptr))
        split = np.bincount(cols, weights=np.abs(a.data - 1.0) > 1e-9, minlength=a.shape[1]) > 0
        a.data[split[cols]] = 0.0
        a.eliminate_zeros()
        self._csc, self._csr = a, a.tocsr()

    def victims(self, held: np.ndarray, saturated: np.ndarray, live: np.ndarray) -> np.ndarray:
        """Live flows (not in `held`) blocked behind the flows `held` at links `saturated`."""
        n_links = self._csr.shape[0]
        is_sat = np.zeros(n_links, bool)
        is_sat[saturated] = True
        idx, _, lens = _gather(self._csc, held)
        col = np.repeat(np.arange(len(held)), lens)
        # each held flow queues at its first saturated link: the links before it back up
        top = int(self.link_pos.max(initial=0)) + 1
        cut = np.full(len(held), top)
        np.minimum.at(cut, col[is_sat[idx]], self.link_pos[idx[is_sat[idx]]])
        cut[cut == top] = -1  # held by its own cap or a split link: it fills no queue
        paused = np.zeros(n_links, bool)
        taken = np.zeros(len(live), bool)
        taken[held] = True
        front_links = idx[self.link_pos[idx] < cut[col]]
        out = []
        while front_links.size:
            front_links = np.unique(front_links[~paused[front_links]])
            if not front_links.size:
                break
            paused[front_links] = True
            f_idx, _, f_len = _gather(self._csr, front_links)
            where = np.repeat(front_links, f_len)
            new = live[f_idx] & ~taken[f_idx]
            if not new.any():
                break
            flows, where = f_idx[new], where[new]
            # a victim's packets back up behind the paused link it crosses last
            v_cut = np.full(len(live), -1)
            np.maximum.at(v_cut, flows, self.link_pos[where])
            flows = np.unique(flows)
            taken[flows] = True
            out.append(flows)
            v_idx, _, v_len = _gather(self._csc, flows)
            v_col = np.repeat(flows, v_len)
            front_links = v_idx[self.link_pos[v_idx] < v_cut[v_col]]
        return np.concatenate(out) if out else np.empty(0, np.int64)
