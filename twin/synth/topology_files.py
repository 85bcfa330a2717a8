"""Topology files: `lldpctl -f json0` per device and `ibdev2netdev` per host, from the cabling."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from collectors.formats.ibdev import write_ibdev2netdev
from collectors.formats.lldp import LldpNeighbor, write_lldp_json0
from twin.synth.files import write_text

if TYPE_CHECKING:
    from twin.synth.writer import BundleWriter


def write_topology(w: BundleWriter) -> None:
    """`topology/<device>/lldpctl.json` for every device, `topology/<host>/ibdev2netdev` per host."""
    f = w.f
    nbrs: dict[str, list[LldpNeighbor]] = {}
    for c in range(f.n_cables):
        a_dev, a_if = w.name_of(f.cable_port_a[c]).split(":", 1)
        b_dev, b_if = w.name_of(f.cable_port_b[c]).split(":", 1)
        nbrs.setdefault(a_dev, []).append(LldpNeighbor(a_if, b_dev, b_if))
        nbrs.setdefault(b_dev, []).append(LldpNeighbor(b_if, a_dev, a_if))
    for dev, rows in nbrs.items():
        if dev in w.silent:
            continue
        fh = io.StringIO()
        write_lldp_json0(rows, fh)
        write_text(w.out / "topology" / dev / "lldpctl.json", fh.getvalue())
    for host in w.hosts:
        if host in w.silent:
            continue
        ports = sorted((n.local_ifname for n in nbrs.get(host, [])), key=lambda s: int(s[3:]))
        fh = io.StringIO()
        write_ibdev2netdev([(f"mlx5_{p.removeprefix('eth')}", 1, p, "Up") for p in ports], fh)
        write_text(w.out / "topology" / host / "ibdev2netdev", fh.getvalue())
