"""writer3's non-counter files: LLDP or containerlab cabling, Slurm jobs, syslog."""

from __future__ import annotations

import numpy as np

from . import formats as fm
from .bundle import Ctx
from .physics import Job

DESCR = {
    "cumulus": "Cumulus Linux version 5.9.1 running on Nvidia SN5600",
    "sonic": "SONiC Software Version: SONiC.202311.1-nv - HwSku: Mellanox-SN5600-V256 - "
             "Distribution: Debian 12.5 - Kernel: 6.1.0-11-2-amd64",
    "eos": "Arista Networks EOS version 4.32.0F running on an Arista Networks DCS-7060X6-64PE",
    "linux": "Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic #115-Ubuntu SMP x86_64",
}


def _mac(k: int) -> str:
    return "b8:3f:d2:" + ":".join(f"{(k >> s) & 0xFF:02x}" for s in (16, 8, 0))


def _neighbors(ctx: Ctx, d: int, host_mac_ids: bool) -> list[dict]:
    fab = ctx.fab
    out = []
    for p in fab.devices[d].ports:
        q = fab.peer(p)
        peer = fab.devices[fab.port_dev[q]]
        if peer.role == "host" and host_mac_ids:  # lldpd's default on Linux: the MAC as port id
            ptype, pid = "mac", _mac(0x100000 + q)
        else:
            ptype, pid = ("local" if peer.vendor == "sonic" else "ifname"), fab.port_if[q]
        out.append({"local": fab.port_if[p], "name": peer.name, "mac": _mac(fab.port_dev[q]),
                    "descr": DESCR[peer.vendor], "ip": peer.mgmt_ip, "port_type": ptype,
                    "port_id": pid, "port_descr": fab.port_if[q], "switch": peer.role != "host",
                    "rid": len(out) + 1,
                    "age": f"{int(ctx.rng.integers(0, 90))} day, {int(ctx.rng.integers(0, 24)):02d}:"
                           f"{int(ctx.rng.integers(0, 60)):02d}:{int(ctx.rng.integers(0, 60)):02d}"})
    return out


def topology(ctx: Ctx) -> None:
    """lldpctl of every device that exports (json0 on hosts, json or json0 on switches), or one
    containerlab file for the whole fabric; ibdev2netdev comes with the hosts' NIC files."""
    fab, rng = ctx.fab, ctx.rng
    if rng.random() < 0.2:
        nodes = [(dv.name, dv.vendor) for dv in fab.devices]
        links = [(fab.port_id(int(a)), fab.port_id(int(b))) for a, b in zip(fab.link_a, fab.link_b, strict=True)]
        ctx.files["topology/fabric.clab.yml"] = fm.clab_yaml(f"ai-fabric-{int(rng.integers(1, 99))}",
                                                             nodes, links)
        return
    mac_ids = bool(rng.random() < 0.4)
    for d, dv in enumerate(fab.devices):
        if dv.name in ctx.silent:
            continue
        nb = _neighbors(ctx, d, mac_ids)
        shape = fm.lldp_json0 if dv.role == "host" or rng.random() < 0.5 else fm.lldp_json
        ctx.files[f"topology/{dv.name}/lldpctl.json"] = shape(nb)


def jobs_file(ctx: Ctx, jobs: list[Job]) -> dict:
    """sacct -P (most bundles) or squeue's table at the end of the bundle; manifest context."""
    names = [d.name for d in ctx.fab.devices]
    hosts = [[names[ctx.fab.hosts[i]] for i in j.hosts] for j in jobs]
    if ctx.rng.random() < 0.7:
        rows = [(j.job_id, "ml-" + ("llm", "vision", "rl")[k % 3], ctx.start + j.start,
                 None if j.end is None else ctx.start + j.end, h) for k, (j, h) in enumerate(zip(jobs, hosts, strict=True))]
        ctx.files["jobs/sacct.txt"] = fm.sacct(rows)
        return {}
    now = ctx.start + ctx.seconds
    rows = [(j.job_id, "svc-ml", ctx.start + j.start, h) for j, h in zip(jobs, hosts, strict=True) if j.end is None]
    ctx.files["jobs/squeue.txt"] = fm.squeue(rows, now)
    return {"jobs/squeue.txt": {"collected_at": fm.utc(now).strftime("%Y-%m-%dT%H:%M:%SZ")}}


def syslog(ctx: Ctx, faults: list[dict]) -> None:
    """Link transitions at both ends (when the fault is logged), SONiC's PFC watchdog at the leaf
    port facing a storming NIC, and everyday chatter; each device's own clock."""
    fab, rng = ctx.fab, ctx.rng
    logs: dict[int, list[tuple[float, str]]] = {}
    style = {d: int(rng.integers(2)) for d in range(len(fab.devices))}
    boot = {d: float(rng.uniform(1e5, 3e6)) for d in range(len(fab.devices))}
    for f in faults:
        for link, trans in (f["trans"].items() if f["logged"] else []):
            for t, kind in trans:
                for p in (int(fab.link_a[link]), int(fab.link_b[link])):
                    d = fab.port_dev[p]
                    dv = fab.devices[d]
                    tt = ctx.start + t + float(rng.uniform(0.0, 0.05)) + ctx.skew[dv.name]
                    for line in fm.link_syslog(dv.vendor, style[d], dv.name, fab.port_if[p], tt,
                                               kind == "up", ctx.start - boot[d]):
                        logs.setdefault(d, []).append((tt, line))
        if f.get("storm"):
            nic, t0, t1 = f["storm"]
            q = fab.peer(nic)
            d = fab.port_dev[q]
            dv = fab.devices[d]
            if dv.vendor == "sonic":
                for t, det in ((t0 + float(rng.uniform(0.2, 1.0)), True), (t1 + float(rng.uniform(0.2, 2)), False)):
                    tt = ctx.start + t + ctx.skew[dv.name]
                    logs.setdefault(d, []).append((tt, fm.pfcwd_syslog(dv.name, fab.port_if[q], tt, det, q)))
    for d, dv in enumerate(fab.devices):
        if dv.name in ctx.silent:
            continue
        for _ in range(int(rng.integers(1, 4))):
            tt = ctx.start + float(rng.uniform(0, ctx.seconds)) + ctx.skew[dv.name]
            tmpl = fm.CHATTER[dv.vendor][int(rng.integers(len(fm.CHATTER[dv.vendor])))]
            head = _chatter_head(dv.vendor, tt, dv.name)
            logs.setdefault(d, []).append((tt, tmpl.format(d=head)))
    for d, lines in sorted(logs.items()):
        name = fab.devices[d].name
        if name in ctx.silent or not lines:
            continue
        ctx.files[f"syslog/{name}.log"] = [x for _, x in sorted(lines)]


def _chatter_head(vendor: str, t: float, dev: str) -> str:
    iso = fm.utc(t).strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1e6):06d}+00:00"
    if vendor == "cumulus":
        return f"{iso} {dev}"
    if vendor == "sonic":
        return f"{fm._bsd(t)}.{int((t % 1) * 1e6):06d} {dev}"
    if vendor == "eos":
        return f"<189>{fm._bsd(t)} {dev}"
    return f"{fm._bsd(t)} {dev}"


def skews(ctx: Ctx) -> None:
    for dv in ctx.fab.devices:
        ctx.skew[dv.name] = float(np.round(ctx.rng.uniform(-2.0, 2.0), 3))
