"""Slurm hostlist expressions: `gpu-node-[0001-0016,0020]` <-> a list of host names.

Semantics follow Slurm's `src/common/hostlist.c` (`hostlist_create` then `hostlist_shift`, which is
exactly what `scontrol show hostnames` prints) and the examples of slurm.conf(5):

- names are separated by `,`, space or tab outside brackets; empty names are skipped;
- `prefix[ranges]` where ranges are `N` or `LO-HI` separated by commas, in the order written,
  duplicates kept: `tux[2,1-2]` is tux2, tux1, tux2 (Slurm neither sorts nor dedups here);
- zero padding is the width of the low bound as written: `node[01-02]` -> node01, node02,
  `linux[0000-1023]` keeps 4 digits, `n[1-010]` -> n1 .. n10;
- several bracket groups in one name form a cartesian product, the first group outermost:
  `rack[0-1]_blade[0-1]` -> rack0_blade0, rack0_blade1, rack1_blade0, rack1_blade1;
- the last bracket group must end the name: `unit[0-31]rack` is invalid (slurm.conf(5); hostlist.c
  fails on anything but `,` or end of string after the last `]`);
- a range may hold at most 65536 names (hostlist.c MAX_RANGE), `LO > HI` is invalid.

Stricter than Slurm on malformed input: an unclosed `[` or a stray `]` is an error here, where
hostlist.c would quietly turn it into an odd host name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

MAX_RANGE = 64 * 1024  # hostlist.c: "max host range: anything larger will be assumed to be an error"
MAX_NAMES = 1_000_000  # a cap on a whole expansion, so a typo cannot exhaust memory

_SEPARATORS = ",\t "
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
_NUMERIC_TAIL = re.compile(r"^(.*?)(\d+)$", re.S)


class HostlistError(ValueError):
    """A hostlist expression Slurm would refuse, with the reason."""


def expand(expression: str) -> list[str]:
    """Every host name of a Slurm hostlist expression, in `scontrol show hostnames` order."""
    out: list[str] = []
    for token in _tokens(expression):
        out.extend(_expand_token(token))
        if len(out) > MAX_NAMES:
            raise HostlistError(f"hostlist expands to more than {MAX_NAMES} names")
    return out


def _tokens(expression: str) -> Iterator[str]:
    """Split at separators that are outside brackets."""
    depth = 0
    start = 0
    for i, ch in enumerate(expression):
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' in {expression!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' in {expression!r}")
            depth = 0
        elif ch in _SEPARATORS and not depth:
            if i > start:
                yield expression[start:i]
            start = i + 1
    if depth:
        raise HostlistError(f"unclosed '[' in {expression!r}")
    if start < len(expression):
        yield expression[start:]


def _expand_token(token: str) -> list[str]:
    if "[" not in token:
        return [token]
    if not token.endswith("]"):
        raise HostlistError(
            f"a numeric range must come at the end of the name: {token!r} "
            "(text after the last ']' is not allowed)")
    # pieces alternate literal text and bracket contents: "rack", "0-63", "_blade", "0-41", ""
    pieces = re.split(r"\[([^\]]*)\]", token)
    names = [""]
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            names = [n + piece for n in names]
            continue
        numbers = _parse_ranges(piece, token)
        if len(names) * len(numbers) > MAX_NAMES:
            raise HostlistError(f"{token!r} expands to more than {MAX_NAMES} names")
        names = [n + num for n in names for num in numbers]
    return names


def _parse_ranges(text: str, token: str) -> list[str]:
    """`2,1-2` -> ['2', '1', '2'], formatted with each range's width."""
    out: list[str] = []
    for part in text.split(","):
        m = _RANGE.fullmatch(part)
        if not m:
            raise HostlistError(f"invalid range {part!r} in {token!r}")
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if lo > hi:
            raise HostlistError(f"invalid range {part!r} in {token!r}: low bound above high")
        if hi - lo + 1 > MAX_RANGE:
            raise HostlistError(f"too many hosts in range {part!r} (at most {MAX_RANGE})")
        width = len(lo_text)
        out.extend(f"{n:0{width}d}" for n in range(lo, hi + 1))
    return out


# -- compression ------------------------------------------------------------------------------

def compress(hosts: Iterable[str], sort: bool = False) -> str:
    """A hostlist expression that `expand` turns back into exactly `hosts` (order and duplicates).

    Consecutive names sharing a prefix and a compatible zero padding become one range, and
    neighbouring ranges of one prefix share a bracket: gpu-node-[0001-0016,0020]. With `sort`,
    names are first deduplicated and sorted naturally (gpu-node-2 before gpu-node-10), which is
    the form sacct and squeue print.
    """
    if sort:
        hosts = sorted(set(hosts), key=_natural_key)
    groups: list[tuple[str, list[list]]] = []  # (prefix, [[lo, hi, width, lo_text]]) or singles
    for host in hosts:
        _check_name(host)
        m = _NUMERIC_TAIL.match(host)
        if not m:
            groups.append((host, []))
            continue
        prefix, digits = m.group(1), m.group(2)
        num, width = int(digits), len(digits)
        if groups and groups[-1][1] and groups[-1][0] == prefix:
            ranges = groups[-1][1]
            last = ranges[-1]
            if num == last[1] + 1 and f"{num:0{last[2]}d}" == digits \
                    and last[1] - last[0] + 1 < MAX_RANGE:
                last[1] = num
            else:
                ranges.append([num, num, width])
        else:
            groups.append((prefix, [[num, num, width]]))
    return ",".join(_group_text(prefix, ranges) for prefix, ranges in groups)


def _natural_key(host: str) -> tuple[str, int, str]:
    m = _NUMERIC_TAIL.match(host)
    return (m.group(1), int(m.group(2)), host) if m else (host, -1, host)


def _check_name(host: str) -> None:
    if not host or any(c in host for c in "[]" + _SEPARATORS):
        raise HostlistError(f"cannot put {host!r} in a hostlist (empty, or has , [ ] or blanks)")


def _group_text(prefix: str, ranges: list[list]) -> str:
    if not ranges:
        return prefix
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        lo, _, width = ranges[0]
        return f"{prefix}{lo:0{width}d}"
    parts = []
    for lo, hi, width in ranges:
        text = f"{lo:0{width}d}"
        parts.append(text if lo == hi else f"{text}-{hi:0{width}d}")
    return f"{prefix}[{','.join(parts)}]"
