"""PFC head-of-line blocking in lossless switches (`twin.hol.HolBlocking`): known answers on
a hand-built incidence, and the victims htsim's RoCE shows behind an incast."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks.htsim_calibration import twin_fct_us
from benchmarks.htsim_heldout import REFERENCE, SCENARIOS
from twin.hol import HolBlocking
from twin.maxmin import Incidence, max_min_rates

C = 1.0
# links: 0 B (the bottleneck), 1 U (before B on a's path), 2 D, 3 P, 4 E; positions on a path
POS = np.array([2, 1, 2, 0, 1])
CAP = np.array([C, C, C, 10 * C, 10 * C])
# flows: a, b, c into B; v through P, U, D (shares U with a); w through P, E; z through D alone
PATHS = [[1, 0], [0], [0], [3, 1, 2], [3, 4], [2]]


def _incidence() -> Incidence:
    rows = [link for p in PATHS for link in p]
    cols = [f for f, p in enumerate(PATHS) for _ in p]
    return Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(5, len(PATHS))))


def test_a_paused_link_holds_its_flows_and_the_tree_grows_upstream():
    """Three flows saturate B at C/3. Max-min gives v what U and D leave (C/2, shared with z
    on D) and w the rest of P (9.5 C). Under PFC, a's packets back up into U, so U is paused:
    v, behind a in U's FIFO, goes at a's pace (C/3); v's packets back up into P, which pauses
    too, so w is held at C/3 as well; z, on D after the pause, takes what v leaves (2C/3)."""
    inc = _incidence()
    plain = max_min_rates(inc, CAP)
    assert plain == pytest.approx([C / 3] * 3 + [C / 2, 9.5 * C, C / 2])
    held = max_min_rates(inc, CAP, hol=HolBlocking(inc.explicit(), POS))
    assert held == pytest.approx([C / 3] * 5 + [2 * C / 3])


def test_a_flow_capped_below_its_links_pauses_nothing():
    """A flow held by its own cap (an application's demand) fills no queue: a at 0.1 C pauses
    nothing, b and c share B's rest (0.45 C), v and z share D (0.5 C) and it is v, held at D,
    whose packets back up P: w behind it goes at v's pace, 0.5 C, not a's."""
    inc = _incidence()
    caps = np.array([0.1, np.inf, np.inf, np.inf, np.inf, np.inf])
    rates = max_min_rates(inc, CAP, flow_cap=caps, hol=HolBlocking(inc.explicit(), POS))
    assert rates == pytest.approx([0.1, 0.45, 0.45, 0.5, 0.5, 0.5])


def test_the_incast_holds_back_unrelated_flows_as_htsim_shows():
    """htsim's roce_ecmp on the 2-tier permutation with an 8-to-1 incast (held-out set): the
    119 permutation flows that neither send from a culprit nor go to the receiver have a p99
    of 173.7 us (their median 58.4), held behind the incast by PFC. Without head-of-line
    blocking the twin keeps them near line rate (p99 89.5 us, -48%); with it, within 10%."""
    sc = SCENARIOS["mix_perm128_incast8_1MB_2tier"]
    src, dst = np.loadtxt(REFERENCE / sc.csv_name("roce_ecmp"), delimiter=",", skiprows=1,
                          usecols=(1, 2), unpack=True)
    perm = np.arange(len(src)) < 128
    culprits = src[~perm]
    other = perm & ~np.isin(src, culprits) & (dst != dst[~perm][0])
    assert other.sum() == 119
    htsim_p99 = 173.7
    free = np.percentile(twin_fct_us(sc, "roce_ecmp", REFERENCE, without=("hol",))[other], 99)
    held = np.percentile(twin_fct_us(sc, "roce_ecmp", REFERENCE)[other], 99)
    assert free < 0.6 * htsim_p99
    assert held == pytest.approx(htsim_p99, rel=0.10)


def test_a_split_flow_is_no_victim():
    """A flow split over two paths (adaptive routing, spraying) leaves a paused port for its
    other path per packet: not held. s puts half of its rate on U (paused behind a) and half on
    X, and takes what U leaves: C - C/3 = 0.5 s, s = 4C/3."""
    rows, cols = [1, 0, 0, 0, 1, 2], [0, 0, 1, 2, 3, 3]
    vals = [1, 1, 1, 1, 0.5, 0.5]
    inc = Incidence(sp.csr_matrix((vals, (rows, cols)), shape=(3, 4)))
    rates = max_min_rates(inc, np.full(3, C), hol=HolBlocking(inc.explicit(), np.array([2, 1, 1])))
    assert rates == pytest.approx([C / 3] * 3 + [4 * C / 3])


def test_a_flow_queues_at_its_first_bottleneck_only():
    """Three flows a, b, c share an uplink U1 (C/3 each) and meet again on a downlink D, which
    they saturate at the same C/3 (a shift's collisions on the way down mirror those on the
    way up); between the two, a crosses M with v. They reach D at the pace U1 held them to, so
    D's ingress ports fill with nothing and M is never paused: v takes what a leaves on M,
    2C/3 (max-min's answer). Stepped packet by packet with htsim's lossless queues
    (`benchmarks/htsim_pfc_steps.py`; 1,500 packets each, mean rate over each flow's life):
    a, b, c 31.5 / 31.7 / 31.6 Gb/s and v 70.8 at 100G (131.7 / 131.5 / 131.5 and 261.3 at
    400G). Pausing every link before a's last saturated link held v at C/3 instead."""
    # links: 0 U1, 1 M, 2 M2, 3 M3, 4 D, 5 X, 6 Y; positions on a path
    pos = np.array([1, 2, 2, 2, 3, 1, 3])
    paths = [[0, 1, 4], [0, 2, 4], [0, 3, 4], [5, 1, 6]]
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(7, len(paths))))
    rates = max_min_rates(inc, np.full(7, C), hol=HolBlocking(inc.explicit(), pos))
    assert rates == pytest.approx([C / 3] * 3 + [2 * C / 3])


def test_a_flow_that_queues_later_pauses_the_links_before():
    """The same links, but b and c reach D on links of their own: a is alone on U1, so D is
    where it queues (its first bottleneck), D's ingress from M fills and pauses M, and v behind
    it goes at a's pace, C/3. htsim's queues stepped packet by packet (as above): a 31.2, v 31.3
    Gb/s at 100G (117.2 and 117.2 at 400G)."""
    pos = np.array([1, 2, 2, 2, 3, 1, 3])
    paths = [[0, 1, 4], [2, 4], [3, 4], [5, 1, 6]]
    rows = [link for p in paths for link in p]
    cols = [f for f, p in enumerate(paths) for _ in p]
    inc = Incidence(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(7, len(paths))))
    rates = max_min_rates(inc, np.full(7, C), hol=HolBlocking(inc.explicit(), pos))
    assert rates == pytest.approx([C / 3] * 4)
