"""The text the real tools print (gnmic, Prometheus exposition, ethtool -S, rdma, lldpctl,
containerlab, ibdev2netdev, sacct/squeue, vendor syslog), written from their documentation and
the captures in shared/real-samples. Every function returns lines (str, no newline)."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime, timedelta
from functools import cache

import numpy as np

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc(t: float) -> datetime:
    return EPOCH + timedelta(seconds=t)


def rfc3339_nano(ns: int) -> str:
    """Go's RFC3339Nano: trailing zeros of the fraction trimmed."""
    base = utc(ns // 1_000_000_000).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{ns % 1_000_000_000:09d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


def go_float(v: float) -> str:
    """Prometheus' value text (Go strconv 'g', shortest): 961500, 1.260062e+06."""
    if v == 0:
        return "0"
    exp = int(np.floor(np.log10(abs(v))))
    if exp < -4 or exp >= 6:  # Go's shortest 'g' switches to %e from exponent 6
        return np.format_float_scientific(v, unique=True, trim="-", exp_digits=2)
    return np.format_float_positional(v, unique=True, trim="-")


def date_line(t: float, style: str) -> str:
    """What `date -Ins`, `date -Iseconds` or `date +%s.%N` print (UTC host clock)."""
    d = utc(t)
    if style == "ins":
        return d.strftime("%Y-%m-%dT%H:%M:%S") + f",{int(round((t % 1) * 1e9)) % 1_000_000_000:09d}+00:00"
    if style == "iseconds":
        return d.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return f"{int(t)}.{int(round((t % 1) * 1e9)) % 1_000_000_000:09d}"


# --- gNMI (gnmic) ---------------------------------------------------------------------------

IF_PATHS = {  # canonical -> path under interfaces/interface[name=X]
    "in_octets": "state/counters/in-octets", "out_octets": "state/counters/out-octets",
    "in_pkts": "state/counters/in-pkts", "out_pkts": "state/counters/out-pkts",
    "in_discards": "state/counters/in-discards", "out_discards": "state/counters/out-discards",
    "in_errors": "state/counters/in-errors", "out_errors": "state/counters/out-errors",
    "carrier": "state/counters/carrier-transitions",
    "in_fcs": "ethernet/state/counters/in-fcs-errors",
    "symbol": "ethernet/phy/state/symbol-errors", "corrected": "ethernet/phy/state/corrected-bits",
}
SPEED_ENUM = {1e9: "SPEED_1GB", 10e9: "SPEED_10GB", 25e9: "SPEED_25GB", 50e9: "SPEED_50GB",
              100e9: "SPEED_100GB", 200e9: "SPEED_200GB", 400e9: "SPEED_400GB", 800e9: "SPEED_800GB"}


@cache
def _strip_keys(path: str) -> str:
    out, depth = [], 0
    for ch in path:
        depth += ch == "["
        if not depth:
            out.append(ch)
        depth -= ch == "]"
    return "".join(out)


def _qos_paths(new_spelling: bool) -> dict[str, str]:
    sp = ("state/switch-priority[priority=3]/counters/" if new_spelling
          else "switch-priority[priority=3]/state/counters/")
    return {"ecn": "output/queues/queue[name=3]/state/ecn-marked-pkts",
            "q_octets": "output/queues/queue[name=3]/state/transmit-octets",
            "rx_pause": sp + "in-pause-pkts", "tx_pause": sp + "out-pause-pkts"}


def _val(v, as_string: bool):
    return str(v) if as_string else v


def gnmic_json(src: str, target: str | None, sub: str, ns: int, ifname: str, vals: dict,
               oper: str, speed: float, cfg: dict) -> list[dict]:
    """Notifications of one interface at one sample, in gnmic's default `json` format."""
    head = {"source": src, "subscription-name": sub, "timestamp": ns, "time": rfc3339_nano(ns)}
    s = cfg["strings"]
    ups = [{"Path": path, "values": {path: _val(int(vals[k]), s)}}
           for k, path in IF_PATHS.items() if k in vals]
    ups.append({"Path": "state/oper-status", "values": {"state/oper-status": oper}})
    sp = "ethernet/state/port-speed"
    ups.append({"Path": sp, "values": {sp: SPEED_ENUM.get(speed, "SPEED_UNKNOWN")}})
    one = dict(head, prefix=f"interfaces/interface[name={ifname}]")
    if target:
        one["target"] = target
    one["updates"] = ups
    qos = [{"Path": path, "values": {_strip_keys(path): _val(int(vals[k]), s)}}
           for k, path in _qos_paths(cfg["new_qos"]).items() if k in vals]
    two = dict(head, prefix=f"qos/interfaces/interface[interface-id={ifname}]")
    if target:
        two["target"] = target
    two["updates"] = qos
    return [one, two]


def gnmic_event(src: str, sub: str, ns: int, ifname: str, vals: dict, oper: str, speed: float,
                cfg: dict) -> list[dict]:
    """The same sample in gnmic's `event` format: keys become tags, one event per key set."""
    s = cfg["strings"]
    base = {"source": src, "subscription-name": sub}
    v1 = {"/interfaces/interface/" + path: _val(int(vals[k]), s)
          for k, path in IF_PATHS.items() if k in vals}
    v1["/interfaces/interface/state/oper-status"] = oper
    v1["/interfaces/interface/ethernet/state/port-speed"] = SPEED_ENUM.get(speed, "SPEED_UNKNOWN")
    out = [{"name": sub, "timestamp": ns, "tags": dict(base, interface_name=ifname), "values": v1}]
    q = _qos_paths(cfg["new_qos"])
    queue = {"/qos/interfaces/interface/" + _strip_keys(q[k]): _val(int(vals[k]), s)
             for k in ("ecn", "q_octets") if k in vals}
    out.append({"name": sub, "timestamp": ns, "values": queue,
                "tags": dict(base, **{"interface_interface-id": ifname, "queue_name": "3"})})
    prio = {"/qos/interfaces/interface/" + _strip_keys(q[k]): _val(int(vals[k]), s)
            for k in ("rx_pause", "tx_pause") if k in vals}
    out.append({"name": sub, "timestamp": ns, "values": prio,
                "tags": dict(base, **{"interface_interface-id": ifname,
                                      "switch-priority_priority": "3"})})
    for e in out:  # gnmic prints tags before values
        e["tags"] = e.pop("tags")
        e["values"] = e.pop("values")
    return out


def dump_json(objs: list[dict], pretty: bool) -> list[str]:
    if pretty:
        return [line for o in objs for line in json.dumps(o, indent=2).split("\n")]
    return [json.dumps(o, separators=(",", ":")) for o in objs]


# --- Prometheus -----------------------------------------------------------------------------

PROM = {  # canonical -> (nvswitch name, type, extra labels)
    "in_octets": ("if_in_octets", "counter", ""), "out_octets": ("if_out_octets", "counter", ""),
    "in_pkts": ("if_in_ucast_pkts", "counter", ""), "out_pkts": ("if_out_ucast_pkts", "counter", ""),
    "in_discards": ("if_in_discards", "counter", ""), "out_discards": ("if_out_discards", "counter", ""),
    "in_errors": ("if_in_errors", "counter", ""), "out_errors": ("if_out_errors", "counter", ""),
    "carrier": ("carrier_changes_total", "counter", ""),
    "carrier_down": ("carrier_down_changes_total", "counter", ""),
    "in_fcs": ("dot3_stats_fcs_errors", "counter", ""),
    "ecn": ("tc_tx_ecn_marked_tc", "counter", ',tc="3"'),
    "rx_pause": ("sp_rx_pause", "counter", ',priority="3"'),
    "tx_pause": ("sp_tx_pause", "counter", ',priority="3"'),
    "symbol": ("phy_stats_phy_symbol_errors", "counter", ""),
    "corrected": ("phy_stats_phy_corrected_bits", "counter", ""),
    "oper": ("oper_state", "gauge", ""), "speed": ("oper_aggregate_speed", "gauge", ""),
}


def prom_family_lines(prefix: str, key: str, rows: list[tuple[str, str, float, int | None]]
                      ) -> list[str]:
    """One metric family: HELP, TYPE, then `name{labels} value [ms]` rows."""
    name, typ, extra = PROM[key]
    full = f"{prefix}nvswitch_interface_{name}"
    out = [f"# HELP {full} {name.replace('_', ' ')}", f"# TYPE {full} {typ}"]
    for labels, _ifname, v, ms in rows:
        tail = f" {ms}" if ms is not None else ""
        out.append(f"{full}{{{labels}{extra}}} {go_float(float(v))}{tail}")
    return out


# --- host NIC ------------------------------------------------------------------------------

ETHTOOL = ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_csum_unnecessary",
           "rx_vport_rdma_unicast_packets", "rx_vport_rdma_unicast_bytes",
           "tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
           "tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy",
           "rx_bytes_phy", "rx_in_range_len_errors_phy", "rx_symbol_err_phy",
           "rx_discards_phy", "tx_discards_phy", "tx_errors_phy", "rx_out_of_buffer",
           "rx_prio3_bytes", "rx_prio3_packets", "tx_prio3_bytes", "tx_prio3_packets",
           "rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause",
           "tx_prio3_pause_duration", "rx_prio3_pause_transition", "module_unplug",
           "module_bus_stuck", "tx_pause_storm_warning_events", "tx_pause_storm_error_events",
           "link_down_events_phy", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy"]
RDMA = ["rx_write_requests", "rx_read_requests", "rx_atomic_requests", "out_of_buffer",
        "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
        "implied_nak_seq_err", "local_ack_timeout_err", "rx_dct_connect",
        "resp_local_length_error", "resp_cqe_error", "req_cqe_error",
        "req_remote_invalid_request", "req_remote_access_errors", "resp_remote_access_errors",
        "resp_cqe_flush_error", "req_cqe_flush_error", "roce_adp_retrans", "roce_adp_retrans_to",
        "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans",
        "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent",
        "rx_icrc_encapsulated"]


def ethtool_block(vals: dict[str, int]) -> list[str]:
    return ["NIC statistics:"] + [f"     {k}: {int(vals.get(k, 0))}" for k in ETHTOOL]


def rdma_block(ibdev: str, vals: dict[str, int], style: str) -> list[str]:
    if style == "sysfs":
        return [f"/sys/class/infiniband/{ibdev}/ports/1/hw_counters/{k}:{int(vals.get(k, 0))}"
                for k in sorted(RDMA)]
    return [f"link {ibdev}/1 " + " ".join(f"{k} {int(vals.get(k, 0))}" for k in RDMA)]


def ibdev2netdev(rows: list[tuple[str, str, bool]], verbose: bool) -> list[str]:
    out = []
    for k, (ibdev, netdev, up) in enumerate(rows):
        state = "Up" if up else "Down"
        if verbose:
            phys = "ACTIVE" if up else "DOWN  "
            out.append(f"0000:{0x17 + 0x10 * k:02x}:00.0 {ibdev} (MT4129 - MCX75310AAS-NEAT) "
                       f"NVIDIA ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode), "
                       f"Single-port OSFP, PCIe 5.0 x16 fw 28.39.1002 port 1 ({phys}) ==> "
                       f"{netdev} ({state})")
        else:
            out.append(f"{ibdev} port 1 ==> {netdev} ({state})")
    return out


# --- topology -------------------------------------------------------------------------------

def _caps(switch: bool) -> list[dict]:
    return [{"type": "Bridge", "enabled": switch}, {"type": "Router", "enabled": switch},
            {"type": "Wlan", "enabled": False}, {"type": "Station", "enabled": not switch}]


def lldp_json0(neighbors: list[dict]) -> str:
    """`lldpctl -f json0`: every level a list, as the real gpu-host capture shows."""
    ifs = []
    for n in neighbors:
        port = {"id": [{"type": n["port_type"], "value": n["port_id"]}],
                "descr": [{"value": n["port_descr"]}], "ttl": [{"value": "120"}]}
        chassis = {"id": [{"type": "mac", "value": n["mac"]}], "name": [{"value": n["name"]}],
                   "descr": [{"value": n["descr"]}], "mgmt-ip": [{"value": n["ip"]}],
                   "capability": _caps(n["switch"])}
        ifs.append({"name": n["local"], "via": "LLDP", "rid": str(n["rid"]),
                    "age": n["age"], "chassis": [chassis], "port": [port]})
    return json.dumps({"lldp": [{"interface": ifs}]}, indent=2) + "\n"


def lldp_json(neighbors: list[dict]) -> str:
    """`lldpctl -f json`: one neighbor is an object keyed by interface, many a list of them."""
    items = []
    for n in neighbors:
        chassis = {n["name"]: {"id": {"type": "mac", "value": n["mac"]}, "descr": n["descr"],
                               "mgmt-ip": n["ip"], "capability": _caps(n["switch"])}}
        port = {"id": {"type": n["port_type"], "value": n["port_id"]}, "descr": n["port_descr"],
                "ttl": "120"}
        items.append({n["local"]: {"via": "LLDP", "rid": str(n["rid"]), "age": n["age"],
                                   "chassis": chassis, "port": port}})
    body = items[0] if len(items) == 1 else items
    return json.dumps({"lldp": {"interface": body}}, indent=2) + "\n"


CLAB_KIND = {"cumulus": "cumulus_cvx", "sonic": "sonic-vs", "eos": "ceos", "linux": "linux"}
CLAB_IMAGE = {"cumulus": "networkop/cx:5.3.0", "sonic": "docker-sonic-vs:202305",
              "eos": "ceos:4.32.0F", "linux": "ubuntu:22.04"}


def clab_yaml(name: str, nodes: list[tuple[str, str]], links: list[tuple[str, str]]) -> str:
    """A containerlab topology: nodes with their kind and image, links as endpoint pairs."""
    out = [f"name: {name}", "", "topology:", "  nodes:"]
    for dev, vendor in nodes:
        out += [f"    {dev}:", f"      kind: {CLAB_KIND[vendor]}", f"      image: {CLAB_IMAGE[vendor]}"]
    out += ["", "  links:"]
    for a, b in links:
        out.append(f'    - endpoints: ["{a}", "{b}"]')
    return "\n".join(out) + "\n"


# --- jobs -----------------------------------------------------------------------------------

def hostlist(names: list[str]) -> str:
    """Slurm's compressed hostlist: gpu-node-[0001-0004,0007]."""
    groups: dict[str, list[str]] = {}
    plain = []
    for n in sorted(names):
        k = len(n) - len(n.rstrip("0123456789"))
        if k == 0:
            plain.append(n)
        else:
            groups.setdefault(n[:-k], []).append(n[-k:])
    parts = list(plain)
    for prefix, nums in groups.items():
        ranges, run = [], [nums[0]]
        for x in nums[1:]:
            if int(x) == int(run[-1]) + 1 and len(x) == len(run[-1]):
                run.append(x)
            else:
                ranges.append(run)
                run = [x]
        ranges.append(run)
        txt = ",".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in ranges)
        parts.append(f"{prefix}[{txt}]" if len(nums) > 1 else prefix + nums[0])
    return ",".join(parts)


def sacct(rows: list[tuple[str, str, float, float | None, list[str]]]) -> list[str]:
    out = ["JobID|Account|Start|End|NodeList"]
    for job, acct, start, end, hosts in rows:
        e = "Unknown" if end is None else utc(end).strftime("%Y-%m-%dT%H:%M:%S")
        out.append(f"{job}|{acct}|{utc(start).strftime('%Y-%m-%dT%H:%M:%S')}|{e}|{hostlist(hosts)}")
    return out


def squeue(rows: list[tuple[str, str, float, list[str]]], now: float) -> list[str]:
    out = ["             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"]
    for job, user, start, hosts in rows:
        s = int(now - start)
        d, rem = divmod(s, 86400)
        hms = f"{rem // 3600}:{rem % 3600 // 60:02d}:{rem % 60:02d}"
        tm = f"{d}-{hms}" if d else hms
        out.append(f"{job:>18} {'gpu':>9} {'train':>8} {user:>8}  R {tm:>10} {len(hosts):>6} "
                   f"{hostlist(hosts)}")
    return out


# --- syslog ---------------------------------------------------------------------------------

def _bsd(t: float) -> str:
    d = utc(t)
    return d.strftime("%b ") + f"{d.day:>2}" + d.strftime(" %H:%M:%S")


def link_syslog(vendor: str, style: int, dev: str, ifname: str, t: float, up: bool,
                boot: float) -> list[str]:
    """A port going down or up, as the device's OS logs it."""
    st = "up" if up else "down"
    iso = utc(t).strftime("%Y-%m-%dT%H:%M:%S") + f".{int((t % 1) * 1e6):06d}+00:00"
    usec = f".{int((t % 1) * 1e6):06d}"
    if vendor == "cumulus":
        idx = 3 + zlib.crc32(ifname.encode()) % 60
        return [f"{iso} {dev} switchd[2817]: sync_base.c:604 {ifname}: ifindex {idx}, oper {st}",
                f"{iso} {dev} switchd[2817]: nic.c:223 nic_set_carrier: {ifname}: "
                f"setting kernel carrier: {st}"]
    if vendor == "sonic":
        if style == 0:
            frm, to = ("down", "up") if up else ("up", "down")
            return [f"{_bsd(t)}{usec} {dev} NOTICE swss#orchagent: :- updatePortOperStatus: "
                    f"Port {ifname} oper state set from {frm} to {to}"]
        return [f"<13>1 {iso} {dev} orchagent - - -  :- setHostIntfsOperStatus: Set operation "
                f"status {st.upper()} to host interface {ifname}"]
    if vendor == "eos":
        return [f"<165>{_bsd(t)} {dev} Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface "
                f"{ifname}, changed state to {st}"]
    pci = f"0000:{0x17 + 0x10 * (zlib.crc32(ifname.encode()) % 8):02x}:00.0"
    msg = f"mlx5_core {pci} {ifname}: Link {st}"
    if style == 0:
        return [f"{_bsd(t)} {dev} kernel: [{t - boot:12.6f}] {msg}"]
    return [f"<6>1 {iso} {dev} kernel - - - {msg}"]


def pfcwd_syslog(dev: str, ifname: str, t: float, detected: bool, qid: int) -> str:
    """SONiC's PFC watchdog, from the format strings of sonic-swss."""
    usec = f".{int((t % 1) * 1e6):06d}"
    what = "detected PFC storm" if detected else "storm restored"
    return (f"{_bsd(t)}{usec} {dev} NOTICE swss#orchagent: :- "
            f"{'startWdActionOnQueue' if detected else 'handleWdNotification'}: PFC Watchdog "
            f"{what} on port {ifname}, queue index 3, queue id 0x{0x15000000000000 + qid:x} "
            f"and port id 0x{0x1000000000000 + qid // 8:x}.")


CHATTER = {
    "cumulus": ["{d} systemd[1]: Started Session 4711 of user cumulus.",
                "{d} bgpd[3120]: %ADJCHANGE: neighbor swp51 in vrf default Up"],
    "sonic": ["{d} INFO systemd[1]: Started Daily apt download activities.",
              "{d} NOTICE bgp#bgpcfgd: Peer 'default|10.0.0.57' has been added"],
    "eos": ["{d} Sysdb: %SYS-5-CONFIG_I: Configured from console by admin on vty3 (10.0.0.5)"],
    "linux": ["{d} systemd[1]: Starting Cleanup of Temporary Directories...",
              "{d} CRON[20211]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"],
}
