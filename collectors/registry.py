"""Every parser fabtwin knows, in the order files are offered to them.

A file goes to the first parser whose `sniff` recognizes its first bytes, so the most specific
formats come first and the most permissive (syslog) last. Bundles are ingested by parser
priority: topology, address and RDMA-device maps before the counters that need them.
"""

from __future__ import annotations

import importlib

from collectors.source import Parser

# module names, each exposing PARSERS: list[Parser]
MODULES = (
    "collectors.normalized",
    "collectors.lldp",
    "collectors.clab",
    "collectors.ibdev",
    "collectors.slurm",
    "collectors.gnmi",
    "collectors.prom",
    "collectors.nic",
    "collectors.syslog",
)


def parsers() -> list[Parser]:
    """All parsers, in sniffing order."""
    out: list[Parser] = []
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a family not built yet
            if exc.name != name:
                raise
            continue
        out.extend(module.PARSERS)
    return out


def recognize(head: str, rel: str) -> Parser | None:
    """The parser for a file whose decompressed text starts with `head`, or None."""
    for parser in parsers():
        if parser.sniff(head, rel):
            return parser
    return None
