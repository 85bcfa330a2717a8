"""`ibdev2netdev` output: which netdev each RDMA device of a host drives (design section 3).

Three printed forms (Mellanox mlnx-tools `ibdev2netdev`), one record per line:

- plain:    `mlx5_2 port 1 ==> eth2 (Up)`
- verbose:  `ibdev2netdev -v` prints `<pci> <ibdev> (<devid> - <psid>) <description> fw <ver>
  port <n> (<ib state>) ==> <netdev> (<link state>)`; the description is padded with long runs
  of spaces and may be empty (`(MT4120 - NA)  fw 16.27.1016 ...`), the PCI address may be empty.
- old style (drivers without `dev_id`): `mlx5_0 port 1 <===> eth2`, no state.

Device names are not always `mlx5_N` (`mlx5_an0`, `mlx5_ib3`, `rocep1s0f0`, `roceP2p1s0f1`).
The output never names the host, so the file name must: `<host>.ibdev2netdev`,
`<host>__ibdev2netdev.txt` or `topology/<host>/ibdev2netdev` (`SourceFile.host_hint`).
Each line becomes `sink.ifmap(host, ibdev, port, netdev, state)`; the counters parsers (family
"nic") then call `sink.netdev(host, ibdev)`, which is why this parser has a low priority.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TextIO

from collectors.core.source import SAY_HOST, Sink, SourceFile

NO_HOST = (
    "cannot tell which host this ibdev2netdev output is from: name the file "
    f"<host>.ibdev2netdev, put it under topology/<host>/, {SAY_HOST}"
)
NOT_A_LINE = "not an ibdev2netdev line (expected 'mlx5_2 port 1 ==> eth2 (Up)')"

_PLAIN = re.compile(
    r"(?P<ibdev>\S+)\s+port\s+(?P<port>\d+)\s+==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)")
_VERBOSE = re.compile(
    r"(?:(?P<pci>\S+)\s+)?(?P<ibdev>\S+)\s+\((?P<devid>[^)]*)\)\s*(?P<desc>.*?)\s*"
    r"\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>\d+)\s+\((?P<ibstate>[^)]*)\)\s+"
    r"==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)")
_OLD = re.compile(r"(?P<ibdev>\S+)\s+port\s+(?P<port>\d+)\s+<===>\s+(?P<netdev>\S+)")
_FORMS = (_PLAIN, _VERBOSE, _OLD)


def match_line(text: str) -> re.Match[str] | None:
    """The match of an ibdev2netdev line in any of its forms (groups ibdev, port, netdev)."""
    t = text.strip()
    for form in _FORMS:
        m = form.fullmatch(t)
        if m:
            return m
    return None


def host_of(src: SourceFile) -> str | None:
    """The host an ibdev2netdev file belongs to, from its name; None when the name does not say.

    A stem that is the tool's own name (`ibdev2netdev.txt`, `ibdev2netdev-v-cx6.txt`) is not a
    host, although it looks like one.
    """
    hint = src.host_hint
    if not hint or "ibdev2netdev" in hint.lower():
        return None
    return hint


class Ibdev2NetdevParser:
    """`ibdev2netdev` and `ibdev2netdev -v` output, one ifmap row per line."""

    name = "ibdev2netdev"
    family = "topology"
    priority = 12

    def sniff(self, head: str, rel: str) -> bool:
        """The first non-blank line is an ibdev2netdev line."""
        try:
            for line in head.splitlines():
                if line.strip():
                    return match_line(line) is not None
        except Exception:  # noqa: BLE001 - sniff must never raise
            return False
        return False

    def parse(self, src: SourceFile, sink: Sink) -> None:
        """One record per non-blank line; every line is rejected if the host is unknown."""
        hint = host_of(src)
        host = sink.device(hint, fallback=hint) if hint else None
        for number, line in src.lines():
            if not line.strip():
                continue
            sink.current_line = number
            m = match_line(line)
            if m is None:
                sink.reject(number, NOT_A_LINE, line)
            elif host is None:
                sink.reject(number, NO_HOST, line)
            else:
                state = (m.groupdict().get("state") or "").strip()
                sink.ifmap(host, m["ibdev"], int(m["port"]), m["netdev"], state)
                sink.accept()


def write_ibdev2netdev(rows: Iterable[tuple[str, int, str, str]], fh: TextIO) -> None:
    """Write `(ibdev, port, netdev, state)` rows as plain `ibdev2netdev` prints them."""
    for ibdev, port, netdev, state in rows:
        fh.write(f"{ibdev} port {port} ==> {netdev} ({state})\n")


PARSERS = [Ibdev2NetdevParser()]
