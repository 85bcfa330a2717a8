"""fabtwin.startup.keep_freed_memory: big arrays freed and allocated again reuse their memory
instead of being faulted in afresh (the system time of the replay's temporary arrays)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# minor page faults of 20 rounds of a 64 MB array allocated, written and freed
PROBE = """
import resource, sys
sys.path.insert(0, {repo!r})
import numpy as np
from fabtwin.startup import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
np.ones(8 << 20)  # the first touch, counted in neither
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = np.ones(8 << 20)
    del a
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(repo=str(REPO)), mode],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_arrays_are_reused_without_page_faults():
    kept, with_keep = _faults("keep")
    _, without = _faults("default")
    assert kept == "True"
    # 20 x 64 MB is 327,680 pages of 4 KB, unmapped and faulted in again each round by
    # default; or, when the kernel finds free huge pages for numpy's madvise (it depends on
    # how fragmented memory is at that moment: a CI run saw 660), at least 20 x 32 of 2 MB.
    # Reused from the heap once kept: none of either
    assert without >= 20 * 32
    assert with_keep < without / 10
