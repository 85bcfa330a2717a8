"""`fabtwin check`: the fabric against its own design, before anyone reads an incident.

What NetQ's `netq check` and UFM's cable validation do, on the telemetry of a bundle:
- cabling against the rail-optimized multiplane design the twin infers (`twin.discover.layout`):
  a host NIC on another rail's leaf (NIC i of every server reaches leaf rail i: every leaf
  stands for one rail, the interface name most of its hosts use) or on another server group's
  leaf; a missing or extra cable between a switch and the tier above, or between a host and a
  plane, against what its peers have; a plane with another shape than the others;
- link ends that disagree on speed (`port_speed_bps` gauges) or MTU (where a format reports it);
- PFC or ECN that looks off on a port: its pause or ECN counters never move while most of its
  peers' do under the same load (`counter_findings`).

Each finding: `{check, severity, entities, evidence, summary}`; `run_checks` returns them,
`store_findings` replaces the store's `check_findings` table (DDL `replay/sql/checks.sql`,
registered with replay's result tables in `replay.results`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import networkx as nx
import orjson

from replay.fabric import CABLING_SQL
from replay.results import CHECK_DDL
from twin.discover import Layout, layout, natural_key
from twin.topology import TopologyError

if TYPE_CHECKING:
    import duckdb

ERROR, WARNING = "error", "warning"


@dataclass
class Finding:
    """One thing the fabric does differently from its design: which check, how bad, the
    entities it names (port, link, device or plane ids), the evidence and one line."""

    check: str
    severity: str
    entities: list[str]
    summary: str
    evidence: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        """The finding as `fabtwin check --json` prints it."""
        return asdict(self)


def _dev(port: str) -> str:
    return port.split(":", 1)[0]


def _ifname(port: str) -> str:
    return port.split(":", 1)[1]


def _link(a: str, b: str) -> str:
    return f"{min(a, b)}--{max(a, b)}"


def _mode(values: list[int]) -> int:
    """The most common value; a tie goes to the larger (a missing cable is likelier than two
    extra ones)."""
    counts = Counter(values)
    return max(counts, key=lambda v: (counts[v], v))


# -- cabling -----------------------------------------------------------------------------------

def cabling_findings(lay: Layout) -> list[Finding]:
    """Rails, host links, uplinks and plane shapes of a cabling against the design."""
    return [*rail_findings(lay), *host_link_findings(lay), *uplink_findings(lay),
            *plane_shape_findings(lay)]


def _host_ports(lay: Layout) -> dict[str, list[tuple[str, str]]]:
    """leaf -> [(host port, leaf port)] of the cables between hosts and leaves."""
    on_leaf: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for a, b in lay.cables:
        if _dev(a) in lay.hosts and _dev(b) in lay.leaves:
            on_leaf[_dev(b)].append((a, b))
        elif _dev(b) in lay.hosts and _dev(a) in lay.leaves:
            on_leaf[_dev(a)].append((b, a))
    return on_leaf


def rail_findings(lay: Layout) -> list[Finding]:
    """Host ports on a leaf of another rail, or of another group of servers.

    A leaf's rail is the interface name most of its host ports have (NIC i is the same name on
    every server: `eth2` of every host reaches the leaves of rail 2), when more than half of
    them have it; a port with another name is on the wrong rail. A leaf's server group is the
    set of other leaves most of its hosts also reach; a host port whose host reaches none (or
    fewer than half) of them otherwise sits in another group's rail."""
    on_leaf = _host_ports(lay)
    rail: dict[str, tuple[str, int]] = {}
    for leaf, ports in on_leaf.items():
        name, n = Counter(_ifname(hp) for hp, _ in ports).most_common(1)[0]
        if n >= 2 and 2 * n > len(ports):
            rail[leaf] = (name, n)
    hosts_of = {leaf: {_dev(hp) for hp, _ in ports} for leaf, ports in on_leaf.items()}
    leaves_of: dict[str, set[str]] = defaultdict(set)
    for leaf, ports in on_leaf.items():
        for hp, _ in ports:
            leaves_of[_dev(hp)].add(leaf)
    found, grouped = [], []
    for leaf in sorted(on_leaf, key=natural_key):
        ports = sorted(on_leaf[leaf], key=lambda p: natural_key(p[0]))
        if leaf in rail:
            name, n = rail[leaf]
            for hp, lp in ports:
                if _ifname(hp) == name:
                    continue
                # the leaf of this port's rail that serves the same servers as this leaf
                same_rail = [x for x in on_leaf if rail.get(x, ("",))[0] == _ifname(hp)]
                expected = max(same_rail, default=None,
                               key=lambda x: (len(hosts_of[x] & hosts_of[leaf]), natural_key(x)))
                where = f"; its rail's leaf for these servers is {expected}" if expected else ""
                found.append(Finding(
                    "rail", ERROR, [hp, leaf, _link(hp, lp)],
                    f"{hp} is cabled to {lp}, a leaf of rail {name} ({n} of its {len(ports)} "
                    f"host ports are {name}){where}",
                    {"port": hp, "leaf_port": lp, "leaf_rail": name, "rail_ports": n,
                     "host_ports": len(ports), "expected_leaf": expected}))
        groups = Counter(frozenset(leaves_of[_dev(hp)] - {leaf}) for hp, _ in ports)
        group, n = groups.most_common(1)[0]
        if not group or n < 2 or 2 * n <= len(ports):
            continue
        for hp, lp in ports:
            others = leaves_of[_dev(hp)] - {leaf}
            if others and 2 * len(others & group) < len(others):
                grouped.append(Finding(
                    "rail", ERROR, [hp, leaf, _link(hp, lp)],
                    f"{hp} is cabled to {lp}, a leaf of other servers: {n} of its "
                    f"{len(ports)} hosts also reach {', '.join(sorted(group, key=natural_key))}, "
                    f"{_dev(hp)} reaches {', '.join(sorted(others, key=natural_key))}",
                    {"port": hp, "leaf_port": lp, "group_leaves": sorted(group, key=natural_key),
                     "host_leaves": sorted(others, key=natural_key)}))
    return found + _moved_ports(grouped, on_leaf)


def _moved_ports(grouped: list[Finding], on_leaf: dict[str, list]) -> list[Finding]:
    """Of a host's ports each named on another group's leaf, the ones on a leaf with more host
    ports than most leaves: a host moved to another group's leaf makes both its ports look
    out of place (each leaf's other hosts reach the other's group), but only the leaf it landed
    on gained a port. Without such a leaf (two hosts swapped) every one stays."""
    norm = _mode([len(ports) for ports in on_leaf.values()])
    by_host: dict[str, list[Finding]] = defaultdict(list)
    for f in grouped:
        by_host[_dev(f.entities[0])].append(f)
    kept = []
    for f in grouped:
        crowded = [g for g in by_host[_dev(f.entities[0])] if len(on_leaf[g.entities[1]]) > norm]
        if not crowded or f in crowded:
            kept.append(f)
    return kept


def host_link_findings(lay: Layout) -> list[Finding]:
    """Hosts with fewer (missing_link) or more (extra_link) ports in a plane than most hosts."""
    plane_of = lay.plane_of
    count: dict[tuple[str, int], int] = Counter()
    for ports in _host_ports(lay).values():
        for hp, lp in ports:
            count[(_dev(hp), plane_of[_dev(lp)])] += 1
    found = []
    for p in range(len(lay.planes)):
        have = {h: count.get((h, p), 0) for h in lay.hosts}
        norm = _mode(list(have.values())) if have else 0
        for h in sorted(have, key=natural_key):
            if have[h] == norm:
                continue
            check = "missing_link" if have[h] < norm else "extra_link"
            found.append(Finding(
                check, ERROR if check == "missing_link" else WARNING, [h, f"plane-{p}"],
                f"{h} has {have[h]} port(s) cabled into plane-{p}, the other hosts {norm}",
                {"device": h, "plane": f"plane-{p}", "ports": have[h], "expected": norm}))
    return found


def uplink_findings(lay: Layout) -> list[Finding]:
    """Missing or extra cables between a switch and the tier above, against its peers: the
    switches of its tier that the same upper switches serve (a 2-tier plane's leaves, a pod's
    leaves, the aggs of a position across pods)."""
    found = []
    for lower, upper in ((lay.leaves, lay.middle), (lay.middle, lay.cores)):
        sub = nx.Graph()
        count: dict[str, Counter] = defaultdict(Counter)
        for a, b in lay.cables:
            da, db = _dev(a), _dev(b)
            if da in upper and db in lower:
                da, db = db, da
            if da in lower and db in upper:
                count[da][db] += 1
                sub.add_edge(da, db)
        for part in sorted(nx.connected_components(sub), key=lambda c: natural_key(min(c, key=natural_key))):
            peers = sorted(part & lower, key=natural_key)
            if len(peers) < 2:
                continue
            for up in sorted(part & upper, key=natural_key):
                norm = _mode([count[n][up] for n in peers])
                for n in peers:
                    have = count[n][up]
                    if have == norm:
                        continue
                    missing = have < norm
                    others = sum(count[m][up] == norm for m in peers)
                    found.append(Finding(
                        "missing_link" if missing else "extra_link", ERROR if missing else WARNING,
                        [n, up],
                        f"{n} has {have} cable(s) to {up} where {others} of its {len(peers) - 1} "
                        f"peers have {norm}: {abs(norm - have)} {'missing' if missing else 'extra'}",
                        {"device": n, "upper": up, "cables": have, "expected": norm,
                         "peers": len(peers) - 1}))
    return found


def plane_shape_findings(lay: Layout) -> list[Finding]:
    """Planes with other numbers of leaves, spines/aggs, cores or hosts than most planes."""
    if len(lay.planes) < 2:
        return []
    plane_of = lay.plane_of
    hosts: dict[int, set[str]] = defaultdict(set)
    for ports in _host_ports(lay).values():
        for hp, lp in ports:
            hosts[plane_of[_dev(lp)]].add(_dev(hp))
    shapes = [{"leaves": len(comp & lay.leaves), "spines": len(comp & lay.middle),
               "cores": len(comp & lay.cores), "hosts": len(hosts[p])}
              for p, comp in enumerate(lay.planes)]
    keyed = [tuple(s.values()) for s in shapes]
    norm = Counter(keyed).most_common(1)[0][0]
    if Counter(keyed)[norm] * 2 <= len(keyed):
        norm = max(set(keyed), key=lambda k: (keyed.count(k), k))
    want = dict(zip(shapes[0], norm, strict=True))
    found = []
    for p, shape in enumerate(shapes):
        if keyed[p] == norm:
            continue
        diff = ", ".join(f"{k} {v} (others {want[k]})" for k, v in shape.items() if v != want[k])
        found.append(Finding("plane_shape", WARNING, [f"plane-{p}"],
                             f"plane-{p} has another shape than the others: {diff}",
                             {"plane": f"plane-{p}", "shape": shape, "expected": want}))
    return found


# -- link ends ---------------------------------------------------------------------------------

SPEED_SQL = """
    SELECT device || ':' || ifname, arg_max(value, ts) FROM port_gauges
    WHERE counter = 'port_speed_bps' AND value > 0 GROUP BY 1"""
# MTU has no canonical counter: the names formats report it under (gNMI's state/mtu, IF-MIB's
# ifMtu, node_exporter's node_network_mtu_bytes), matched on the vendor name as received
MTU_NAME = r"(^|[/_-])mtu($|[/_-]|_bytes$)|^ifmtu$"
MTU_SQL = f"""
    SELECT device || ':' || ifname, arg_max(value, ts) FROM samples
    WHERE regexp_matches(lower(metric), '{MTU_NAME}') AND ifname <> '' AND value > 0
    GROUP BY 1"""


def end_findings(cables: list[tuple[str, str]], values: dict[str, float], check: str,
                 what: str, unit: float, unit_name: str) -> list[Finding]:
    """Cables whose two ends report different `values` (speed, MTU)."""
    found = []
    for a, b in sorted(cables):
        va, vb = values.get(a), values.get(b)
        if va is None or vb is None or va == vb:
            continue
        fa, fb = f"{va / unit:g} {unit_name}", f"{vb / unit:g} {unit_name}"
        found.append(Finding(check, ERROR, [_link(a, b), a, b],
                             f"{_link(a, b)}: {a} reports {what} {fa}, {b} {fb}",
                             {"link": _link(a, b), a: va, b: vb}))
    return found


# -- PFC and ECN -------------------------------------------------------------------------------

# per port over the whole store: samples reporting each counter, its total, the mean load
COUNTER_SQL = """
    SELECT device || ':' || ifname,
        count(rx_pause_per_s) + count(tx_pause_per_s),
        sum((coalesce(rx_pause_per_s, 0) + coalesce(tx_pause_per_s, 0)) * interval_s),
        count(ecn_marked_per_s), sum(ecn_marked_per_s * interval_s),
        avg(tx_bytes_per_s), avg(rx_bytes_per_s)
    FROM port_rates GROUP BY 1"""
PEERS_MOVING = 3  # at least this many peers whose counter moves, and more than half of them
SAME_LOAD = 0.5  # a quiet port carries at least this share of the moving peers' median load


@dataclass
class PortCounters:
    """A port's pause and ECN counters over the store, and its mean load (bytes/s)."""

    pause_samples: int
    pauses: float
    ecn_samples: int
    ecn: float
    tx: float
    rx: float


def _role(lay: Layout, device: str) -> str:
    if device in lay.hosts:
        return "host"
    if device in lay.leaves:
        return "leaf"
    return "spine" if device in lay.middle else "core"


def counter_findings(lay: Layout, ports: dict[str, PortCounters]) -> list[Finding]:
    """pfc_off / ecn_off: a port that reports pause (ECN) counters that never move while more
    than half of its peers' do (at least 3), under a load at least half theirs. Peers: the
    ports of the same plane with the same roles at both ends (a plane's leaf ports facing
    spines, its host NIC ports, ...). Pauses count both directions and the load the larger one;
    ECN marks are egress, the load tx."""
    plane_of = lay.plane_of
    groups: dict[tuple, list[str]] = defaultdict(list)
    for a, b in lay.cables:
        plane = plane_of.get(_dev(a), plane_of.get(_dev(b)))
        for here, there in ((a, b), (b, a)):
            groups[(plane, _role(lay, _dev(here)), _role(lay, _dev(there)))].append(here)
    found = []
    checks = (("pfc_off", "pause frames", lambda c: (c.pause_samples, c.pauses, max(c.tx, c.rx))),
              ("ecn_off", "ECN marks", lambda c: (c.ecn_samples, c.ecn, c.tx)))
    for (plane, role, peer_role), members in sorted(groups.items(), key=str):
        for check, what, read in checks:
            seen = {p: read(ports[p]) for p in members if p in ports and read(ports[p])[0]}
            moving = {p: v for p, v in seen.items() if v[1] > 0}
            if len(moving) < PEERS_MOVING or 2 * len(moving) <= len(seen):
                continue
            loads = sorted(v[2] for v in moving.values())
            median = loads[len(loads) // 2]
            for p in sorted(set(seen) - set(moving), key=natural_key):
                if seen[p][2] < SAME_LOAD * median:
                    continue
                found.append(Finding(
                    check, WARNING, [p],
                    f"{p} counted no {what} in {seen[p][0]} samples while {len(moving)} of its "
                    f"{len(seen) - 1} peers ({role} ports to {peer_role}s, plane-{plane}) did, at "
                    f"{seen[p][2] * 8 / 1e9:.0f} Gb/s against their median "
                    f"{median * 8 / 1e9:.0f}: is it enabled?",
                    {"port": p, "samples": seen[p][0], "peers_moving": len(moving),
                     "peers": len(seen) - 1, "load_gbps": round(seen[p][2] * 8 / 1e9, 1),
                     "peers_median_gbps": round(median * 8 / 1e9, 1)}))
    return found


# -- the store -----------------------------------------------------------------------------------

@dataclass
class Checked:
    """What a check run looked at, and what it found."""

    findings: list[Finding]
    rows: int  # cabling rows (neighbors)
    cables: int
    planes: int
    speeds: int  # ports reporting a speed
    mtus: int  # ports reporting an MTU


def run_checks(con: duckdb.DuckDBPyConnection) -> Checked:
    """Every check on the store's telemetry, findings in check order then entity order."""
    rows = con.execute(CABLING_SQL).fetchall()
    found: list[Finding] = []
    cables: list[tuple[str, str]] = []
    planes = 0
    if rows:
        try:
            lay = layout(rows)
        except TopologyError as exc:
            found.append(Finding("topology", ERROR, [], f"the cabling is not a fabric: {exc}"))
        else:
            cables, planes = list(lay.cables), len(lay.planes)
            found += cabling_findings(lay)
            ports = {r[0]: PortCounters(*(0.0 if v is None else v for v in r[1:]))
                     for r in con.execute(COUNTER_SQL).fetchall()}
            found += counter_findings(lay, ports)
    speeds = dict(con.execute(SPEED_SQL).fetchall())
    found += end_findings(cables, speeds, "link_speed", "speed", 1e9, "Gb/s")
    mtus = dict(con.execute(MTU_SQL).fetchall())
    found += end_findings(cables, mtus, "link_mtu", "MTU", 1, "bytes")
    return Checked(found, len(rows), len(cables), planes, len(speeds), len(mtus))


def store_findings(con: duckdb.DuckDBPyConnection, findings: list[Finding],
                   created: datetime) -> None:
    """Replace the store's `check_findings` with these (seq 1 first)."""
    con.execute(CHECK_DDL)
    con.execute("DELETE FROM check_findings")
    if findings:
        con.executemany("INSERT INTO check_findings VALUES (?, ?, ?, ?, ?, ?, ?)", [
            [seq, f.check, f.severity, orjson.dumps(f.entities).decode(), f.summary,
             orjson.dumps(f.evidence, default=str).decode(), created]
            for seq, f in enumerate(findings, 1)])


def describe(findings: list[Finding]) -> str:
    """One line per finding: `severity check  summary`."""
    return "\n".join(f"{f.severity:<7} {f.check:<12} {f.summary}" for f in findings)

