"""Every parser fabtwin knows, in the order files are offered to them.

A file goes to the first parser whose `sniff` recognizes its first bytes, so the most specific
formats come first and the most permissive (syslog) last. Bundles are ingested by parser
priority: topology, address and RDMA-device maps before the counters that need them.

Each family is one folder of `collectors/formats/` exposing `PARSERS`; adding a format is that
folder and one line below. The imports are at module level on purpose: a family that fails to
import fails every ingest loudly instead of being skipped.
"""

from __future__ import annotations

from collectors.core.source import Parser
from collectors.formats import clab, gnmi, ibdev, lldp, nic, normalized, prom, slurm, syslog

# (family folder, its parsers), in sniffing order
FAMILIES: tuple[tuple[str, list[Parser]], ...] = (
    ("normalized", normalized.PARSERS),
    ("lldp", lldp.PARSERS),
    ("clab", clab.PARSERS),
    ("ibdev", ibdev.PARSERS),
    ("slurm", slurm.PARSERS),
    ("gnmi", gnmi.PARSERS),
    ("prom", prom.PARSERS),
    ("nic", nic.PARSERS),
    ("syslog", syslog.PARSERS),
)
_PARSERS: list[Parser] = [p for _, family in FAMILIES for p in family]


def parsers() -> list[Parser]:
    """All parsers, in sniffing order."""
    return list(_PARSERS)


def describe_unrecognized(head: str) -> str:
    """Why no parser reads a file whose text starts with `head`: what it is when it is a known
    format fabtwin does not support (or nothing at all), else that it was not recognized."""
    from collectors.formats.slurm.tables import describe

    if syslog.uptime_line(head):
        return ("`uptime -s` output: the boot time of the plain dmesg files beside it (no rows "
                "of its own)")
    if not head.strip():
        return "empty file (nothing but blank space): nothing to load"
    if (head.lstrip().startswith("# ") and "\n|" in head) or head.startswith("---\n"):
        return "Markdown text (documentation, not telemetry): not supported"
    return describe(head) or "format not recognized by any parser"


def recognize(head: str, rel: str) -> Parser | None:
    """The parser for a file whose decompressed text starts with `head`, or None."""
    for parser in _PARSERS:
        if parser.sniff(head, rel):
            return parser
    return None
