"""writer2: an independent bundle writer for the accuracy benchmark (issue 17).

It shares no code with twin/, replay/, collectors/ or fabtwin/ (stdlib, numpy and pyyaml only;
tests/test_writer2.py checks its imports): its own fabric and traffic model (`model`), its own
scenarios with the hard cases (`scenario`), and the files as the real tools print them
(`formats`), from the tools' documented formats and real captures.

    python -m benchmarks.writer2 --out DIR --count N --seed S
"""

from __future__ import annotations

from pathlib import Path

from .formats import Writer
from .scenario import HARD, KINDS, draw

# one suite cycle: every kind, every hard case, two concurrent faults, healthy bundles
CYCLE = (list(KINDS) + list(HARD) + ["healthy"] * 3 +
         ["two:link_flap,pfc_storm", "two:congestion,link_down", "two:link_degraded,load_imbalance"])


def write_bundle(out: str | Path, seed: int, case: str, small: bool = False) -> dict:
    """Write one bundle for `case` (a kind, a hard case, `healthy` or `two:k1,k2`) into the
    new directory `out`; returns its labels. Same seed and case, same bytes."""
    return Writer(draw(seed, case, small), Path(out)).write()


def suite_cases(count: int) -> list[str]:
    """The cases of a suite of `count` bundles, cycling through CYCLE."""
    return [CYCLE[i % len(CYCLE)] for i in range(count)]


__all__ = ["CYCLE", "HARD", "KINDS", "suite_cases", "write_bundle"]
