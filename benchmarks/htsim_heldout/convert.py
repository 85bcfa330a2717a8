"""htsim's standard output to the reference CSV (`id,src,dst,size_bytes,start_us,finish_us`).

    python -m benchmarks.htsim_heldout.convert RUN.cm HTSIM_STDOUT OUT.fct.csv

One row per flow line of the .cm, in its order. htsim prints one line per finished flow:
    htsim_roce: Flow Roce_<src>_<dst> <object id> finished at <us> total bytes ...
    htsim_uec:  Flow Uec_<src>_<dst> flowId <cm id> uecSrc <src> finished at <us> ...
htsim_roce's number is an internal object id, not the .cm's, so a line is matched to its flow
by the (src, dst) in its name: the generator keeps pairs unique within a file. A flow without
a line had not finished when the run stopped (`-end`): its finish_us is empty.
"""

from __future__ import annotations

import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_FLOW = re.compile(r"^(\d+)->(\d+)\s+id\s+(\d+)\s+start\s+(\d+)\s+size\s+(\d+)\s*$")
_FINISHED = re.compile(r"^Flow (?:Roce|Uec)_(\d+)_(\d+) .*?finished at (\S+)")
HEADER = ("id", "src", "dst", "size_bytes", "start_us", "finish_us")


class ConvertError(ValueError):
    """A malformed .cm or htsim output line, with the file and line it came from."""


@dataclass(frozen=True)
class CmFlow:
    """One flow line of a connection matrix."""

    id: int
    src: int
    dst: int
    start_us: int
    size: int


def read_cm(path: Path) -> list[CmFlow]:
    """The flow lines of a .cm in file order; the `Nodes`/`Connections` header is checked."""
    flows: list[CmFlow] = []
    declared = None
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("Nodes "):
            continue
        if line.startswith("Connections "):
            declared = int(line.split()[1])
            continue
        m = _FLOW.match(line)
        if not m:
            raise ConvertError(f"{path}:{n}: not a flow line: {line!r}")
        s, d, i, t, size = map(int, m.groups())
        flows.append(CmFlow(i, s, d, t, size))
    if declared is not None and declared != len(flows):
        raise ConvertError(f"{path}: declares {declared} connections, has {len(flows)}")
    if len({(f.src, f.dst) for f in flows}) != len(flows):
        raise ConvertError(f"{path}: a (src, dst) pair occurs twice; output lines would be ambiguous")
    return flows


def finish_times(path: Path) -> dict[tuple[int, int], float]:
    """`finished at` time (us; htsim prints 6 significant digits) per (src, dst); a second line
    for the same flow is an error (it would mean the pairs are not unique or the output is mixed)."""
    done: dict[tuple[int, int], float] = {}
    with open(path, errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            m = _FINISHED.match(line)
            if not m:
                continue
            key = (int(m.group(1)), int(m.group(2)))
            if key in done:
                raise ConvertError(f"{path}:{n}: flow {key[0]}->{key[1]} finished twice")
            try:
                done[key] = float(m.group(3))
            except ValueError:
                raise ConvertError(f"{path}:{n}: finish time {m.group(3)!r} is not a number") from None
    return done


def convert(cm: Path, out: Path, csv_path: Path) -> tuple[int, int]:
    """Write the CSV; returns (finished, total). Every finished line must match a .cm flow."""
    flows = read_cm(cm)
    done = finish_times(out)
    unknown = set(done) - {(f.src, f.dst) for f in flows}
    if unknown:
        s, d = sorted(unknown)[0]
        raise ConvertError(f"{out}: {len(unknown)} finished flows not in {cm}, e.g. {s}->{d}")
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)  # csv's \r\n line ends, as the shared reference CSVs have
        w.writerow(HEADER)
        for f in flows:
            w.writerow((f.id, f.src, f.dst, f.size, f.start_us, done.get((f.src, f.dst), "")))
    return len(done), len(flows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    try:
        fin, total = convert(Path(args[0]), Path(args[1]), Path(args[2]))
    except (ConvertError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{args[2]}: {fin}/{total} finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
