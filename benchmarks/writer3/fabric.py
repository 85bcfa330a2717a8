"""writer3's fabric: multiplane, rail-optimized leaf/spine (2 tiers) or leaf/agg/core (3 tiers).

Every host has one NIC port per (rail, plane); NIC (r, p) of every host of a group goes to the
rail-r leaf of that group in plane p. Ports are numbered globally; a link has two directions,
`2*l` (lower end -> upper end: host -> leaf, leaf -> spine/agg, agg -> core) and `2*l + 1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GBPS = 1e9


@dataclass
class Device:
    name: str
    role: str  # host, leaf, spine, agg, core
    plane: int  # -1 for hosts
    vendor: str = "linux"  # cumulus, sonic, eos; linux for hosts
    mgmt_ip: str = ""
    ports: list[int] = field(default_factory=list)


@dataclass
class Fabric:
    planes: int
    tiers: int
    rails: int
    groups: int  # server groups (each has one leaf per rail and plane)
    pods: int  # 3 tiers: groups per pod = groups // pods; 2 tiers: 1
    hosts: list[int]  # device index of each host
    devices: list[Device]
    port_dev: list[int]
    port_if: list[str]
    port_speed: np.ndarray  # b/s, nominal (negotiated speed may be lower: faults)
    link_a: np.ndarray  # lower port of each link
    link_b: np.ndarray  # upper port
    link_tier: list[str]  # host, leaf-spine, leaf-agg, agg-core
    link_plane: np.ndarray
    host_group: np.ndarray  # group of each host
    nic: dict[tuple[int, int, int], int]  # (host i, plane, rail) -> host port
    leaf: dict[tuple[int, int, int], int]  # (plane, group, rail) -> device index
    up: dict[tuple[int, int], int] = field(default_factory=dict)  # (lower dev, upper dev) -> link
    port_link: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    link_load: np.ndarray = field(default_factory=lambda: np.zeros(0))  # healthy mean share of
    # line rate of each link's busier direction: faults pick links and switches that carry traffic

    def port_id(self, p: int) -> str:
        return f"{self.devices[self.port_dev[p]].name}:{self.port_if[p]}"

    def link_id(self, link: int) -> str:
        a, b = self.port_id(int(self.link_a[link])), self.port_id(int(self.link_b[link]))
        return f"{min(a, b)}--{max(a, b)}"

    def peer(self, p: int) -> int:
        link = int(self.port_link[p])
        return int(self.link_b[link] if self.link_a[link] == p else self.link_a[link])

    def tx_dir(self, p: int) -> int:
        """The direction port p transmits on."""
        link = int(self.port_link[p])
        return 2 * link + (0 if self.link_a[link] == p else 1)

    def rx_dir(self, p: int) -> int:
        return self.tx_dir(p) ^ 1


class _Namer:
    """Interface names as each vendor prints them."""

    def __init__(self, vendor: str, speed: float, first_up: int):
        self.vendor, self.n, self.first_up = vendor, 0, first_up
        self.lanes = 8 if speed >= 800 * GBPS else 4

    def name(self, k: int) -> str:
        if self.vendor == "cumulus":
            return f"swp{k + 1}"
        if self.vendor == "sonic":
            return f"Ethernet{k * self.lanes}"
        return f"Ethernet{k + 1}/1"

    def take(self, uplink: bool) -> str:
        k = (self.first_up + self.n) if uplink else self.n
        self.n += 1
        return self.name(k)


def build_fabric(rng: np.random.Generator, small: bool = False) -> Fabric:
    """Draw a fabric of 30-80 devices (fewer with `small`, for tests)."""
    while True:  # oversubscription at most 4:3 at every tier, as AI fabrics are built
        planes = int(rng.choice([1, 2, 2, 3, 4])) if not small else 2
        tiers = int(rng.choice([2, 3])) if not small else 2
        rails = int(rng.choice([1, 2, 2])) if planes > 2 else int(rng.choice([1, 2, 4]))
        host_speed = float(rng.choice([200, 400])) * GBPS
        fab_speed = host_speed * float(rng.choice([1, 2]))
        hosts_per = int(rng.integers(3, 9))
        if tiers == 2:
            groups, pods = int(rng.integers(2, 5)), 1
            spines = int(rng.choice([2, 4]))
            per_plane = groups * rails + spines
            ok = spines * fab_speed >= 0.75 * hosts_per * host_speed
        else:
            pods = 2
            groups = pods * int(rng.integers(1, 3))
            aggs, cores_per = 2, int(rng.choice([1, 2, 4]))
            per_plane = groups * rails + pods * aggs + aggs * cores_per
            ok = (aggs * fab_speed >= 0.75 * hosts_per * host_speed
                  and cores_per >= 0.75 * (groups // pods) * rails)
        total = planes * per_plane + groups * hosts_per
        lo, hi = (12, 40) if small else (30, 80)
        if ok and lo <= total <= hi and (not small or groups * hosts_per <= 8):
            break
    mixes = (["cumulus"], ["sonic"], ["eos"], ["cumulus", "sonic"], ["cumulus", "sonic", "eos"])
    mix = mixes[int(rng.integers(len(mixes)))]
    style = int(rng.integers(3))
    hname = ("gpu-node-{:04d}", "dgx{:03d}", "hgx-b{:03d}")[style]
    devices: list[Device] = []
    port_dev: list[int] = []
    port_if: list[str] = []
    speeds: list[float] = []
    la: list[int] = []
    lb: list[int] = []
    tier: list[str] = []
    lplane: list[int] = []
    namers: dict[int, _Namer] = {}

    def dev(name: str, role: str, plane: int) -> int:
        vendor = "linux" if role == "host" else mix[int(rng.integers(len(mix)))]
        ip = f"10.{20 + max(plane, 0)}.{len(devices) // 200}.{10 + len(devices) % 200}"
        devices.append(Device(name, role, plane, vendor, ip))
        return len(devices) - 1

    def port(d: int, ifname: str, speed: float) -> int:
        port_dev.append(d)
        port_if.append(ifname)
        speeds.append(speed)
        devices[d].ports.append(len(port_dev) - 1)
        return len(port_dev) - 1

    def sw_port(d: int, uplink: bool, speed: float) -> int:
        if d not in namers:
            namers[d] = _Namer(devices[d].vendor, speed, first_up=int(rng.choice([32, 48])))
        return port(d, namers[d].take(uplink), speed)

    def cable(lower: int, upper: int, speed: float, kind: str, plane: int) -> None:
        # a host's port exists already (lower is its port); a switch's is taken here
        la.append(lower if kind == "host" else sw_port(lower, True, speed))
        lb.append(sw_port(upper, False, speed))
        tier.append(kind)
        lplane.append(plane)

    hosts = [dev(hname.format(i + 1), "host", -1) for i in range(groups * hosts_per)]
    host_group = np.repeat(np.arange(groups), hosts_per)
    nic_style = int(rng.integers(3))
    leaf: dict[tuple[int, int, int], int] = {}
    sw = ("leaf-p{p}-{k:02d}", "spine-p{p}-{k:02d}", "agg-p{p}-{k:02d}", "core-p{p}-{k:02d}")
    for p in range(planes):
        for g in range(groups):
            for r in range(rails):
                leaf[p, g, r] = dev(sw[0].format(p=p, k=g * rails + r + 1), "leaf", p)
    if tiers == 2:
        uppers = {p: [dev(sw[1].format(p=p, k=s + 1), "spine", p) for s in range(spines)]
                  for p in range(planes)}
    else:
        aggs_of = {(p, q): [dev(sw[2].format(p=p, k=q * aggs + a + 1), "agg", p) for a in range(aggs)]
                   for p in range(planes) for q in range(pods)}
        cores = {p: [dev(sw[3].format(p=p, k=c + 1), "core", p) for c in range(aggs * cores_per)]
                 for p in range(planes)}
    nic: dict[tuple[int, int, int], int] = {}
    for i, h in enumerate(hosts):
        for r in range(rails):
            for p in range(planes):
                k = r * planes + p
                ifname = (f"eth{k}", f"ens{k + 1}np0", f"enp{24 + 16 * k}s0np0")[nic_style]
                hp = port(h, ifname, host_speed)
                nic[i, p, r] = hp
                cable(hp, leaf[p, int(host_group[i]), r], host_speed, "host", p)
    gpp = groups // pods
    for p in range(planes):
        for (pp, g, _r), lf in sorted(leaf.items()):
            if pp != p:
                continue
            if tiers == 2:
                for s in uppers[p]:
                    cable(lf, s, fab_speed, "leaf-spine", p)
            else:
                for a in aggs_of[p, g // gpp]:
                    cable(lf, a, fab_speed, "leaf-agg", p)
        if tiers == 3:
            for q in range(pods):
                for a, ag in enumerate(aggs_of[p, q]):
                    for c in range(cores_per):
                        cable(ag, cores[p][a * cores_per + c], fab_speed, "agg-core", p)
    fab = Fabric(planes, tiers, rails, groups, pods, hosts, devices, port_dev, port_if,
                 np.array(speeds), np.array(la), np.array(lb), tier, np.array(lplane),
                 host_group, nic, leaf)
    fab.port_link = np.zeros(len(port_dev), int)
    fab.port_link[fab.link_a] = np.arange(len(la))
    fab.port_link[fab.link_b] = np.arange(len(la))
    for link, (a, b) in enumerate(zip(la, lb, strict=True)):
        fab.up[port_dev[a], port_dev[b]] = link
    return fab


def paths(fab: Fabric) -> tuple[list[tuple[int, int, int, int]], list[list[int]], list[int]]:
    """Leaf-to-leaf routes: pairs (plane, rail, src group, dst group), and for each path its
    directions and the index of its pair. Paths of 3 tiers cross an agg of the source pod, then
    (between pods) a core of that agg and the same-index agg of the destination pod."""
    pairs: list[tuple[int, int, int, int]] = []
    plist: list[list[int]] = []
    pair_of: list[int] = []
    dev = fab.devices
    gpp = fab.groups // fab.pods
    for p in range(fab.planes):
        for r in range(fab.rails):
            for a in range(fab.groups):
                for b in range(fab.groups):
                    if a == b:
                        continue
                    la, lb = fab.leaf[p, a, r], fab.leaf[p, b, r]
                    pairs.append((p, r, a, b))
                    k = len(pairs) - 1
                    ups = [(u, link) for (lo, u), link in fab.up.items() if lo == la]
                    for u, l1 in sorted(ups):
                        if fab.tiers == 2 or a // gpp == b // gpp:
                            plist.append([2 * l1, 2 * fab.up[lb, u] + 1])
                            pair_of.append(k)
                            continue
                        # the same-index agg of the destination pod, reached through a core
                        idx = sorted(x for (lo, x) in fab.up if lo == la).index(u)
                        u2 = sorted(x for (lo, x) in fab.up if lo == lb)[idx]
                        for (lo, c), l2 in sorted(fab.up.items()):
                            if lo == u and dev[c].role == "core":
                                plist.append([2 * l1, 2 * l2, 2 * fab.up[u2, c] + 1,
                                              2 * fab.up[lb, u2] + 1])
                                pair_of.append(k)
    return pairs, plist, pair_of
