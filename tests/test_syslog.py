"""Syslog, kernel and `ip monitor link` parsing: shapes, phrasings, writers, real samples."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import run_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.core.schema import EVENT_KINDS
from collectors.core.source import Manifest, Sink, SourceFile
from collectors.core.timeparse import parse_iso
from collectors.formats.syslog import (
    NO_HOST,
    NO_IP_TIMESTAMP,
    NO_WALL_CLOCK,
    NO_YEAR,
    PARSERS,
    STYLES,
    LogEvent,
    write_syslog,
)

PARSER = PARSERS[0]
UTC_2024 = Manifest(year=2024, timezone="UTC")


def ns(text: str) -> int:
    return parse_iso(text)


def parse(write, text: str, rel: str = "syslog/leaf01/syslog.log",
          manifest: Manifest | None = None) -> Sink:
    """Parse `text` as a file at `rel`, checking it is recognized and the accounting holds."""
    path = write(rel, text)
    parser, sink = run_parser(path, rel=rel, manifest=manifest or UTC_2024)
    assert parser is PARSER
    records = sum(1 for line in text.splitlines() if line.strip())
    assert sink.loaded + sink.rejected == records
    return sink


def events(sink: Sink) -> list[tuple[int, str, str, str]]:
    return [(e["ts"], e["device"], e["ifname"], e["kind"]) for e in sink.collected("events")]


# -- line shapes ------------------------------------------------------------------------------

def test_rfc5424_with_and_without_pri_structured_data_and_bom(write):
    sink = parse(write, (
        '<13>1 2024-03-01T10:00:00.5Z sw1 orchagent 77 ID1 [meta seq="1\\]x"] \ufeffhello\n'
        "1 2024-03-01T10:00:01+02:00 sw2 app - - - plain\n"))
    logs = sink.collected("logs")
    assert [(r["ts"], r["device"], r["program"], r["message"]) for r in logs] == [
        (ns("2024-03-01T10:00:00.5Z"), "sw1", "orchagent", "hello"),
        (ns("2024-03-01T08:00:01Z"), "sw2", "app", "plain")]


def test_rfc5424_nil_hostname_uses_the_file_host(write):
    sink = parse(write, "<13>1 2024-03-01T10:00:00Z - app - - - x\n", rel="syslog/leaf07/a.log")
    assert sink.collected("logs")[0]["device"] == "leaf07"


def test_rfc3164_needs_the_manifest_year_and_zone(write):
    text = ("<165>Feb  6 09:42:36 veos01 Ebra: %LINEPROTO-5-UPDOWN: Line protocol on "
            "Interface Ethernet28, changed state to down\n")
    sink = parse(write, text, manifest=Manifest())
    assert sink.loaded == 0
    assert sink.rejects == [(1, NO_YEAR, text.rstrip("\n"))]
    assert NO_YEAR == ("RFC 3164 timestamp has no year: set 'year' and 'timezone' "
                       "in manifest.json")
    only_year = parse(write, text, manifest=Manifest(year=2024))
    assert only_year.rejects[0][1] == NO_YEAR
    paris = parse(write, text, manifest=Manifest(year=2024, timezone="Europe/Paris"))
    assert events(paris) == [(ns("2024-02-06T08:42:36Z"), "veos01", "Ethernet28", "link_down")]


def test_rfc3164_without_pri_as_var_log_syslog_writes_it(write):
    sink = parse(write, "Feb 14 18:48:25 gpu-node-0003 kernel: [ 5.189354] mlx5_core "
                        "0000:01:00.0 enp1s0np0: Link up\n")
    (log,) = sink.collected("logs")
    assert (log["device"], log["program"]) == ("gpu-node-0003", "kernel")
    assert events(sink) == [(ns("2024-02-14T18:48:25Z"), "gpu-node-0003", "enp1s0np0", "link_up")]


def test_rfc3164_crossing_new_year_steps_the_year(write):
    sink = parse(write, ("Dec 31 23:59:59 h1 a: one\n"
                         "Jan  1 00:00:01 h1 a: two\n"),
                 manifest=Manifest(year=2023, timezone="UTC"))
    assert [r["ts"] for r in sink.collected("logs")] == [
        ns("2023-12-31T23:59:59Z"), ns("2024-01-01T00:00:01Z")]


def test_sonic_native_syslog_with_microseconds_and_severity(write):
    sink = parse(write, (
        "Feb 25 02:02:09.169075 sonic NOTICE swss#orchagent: :- doPortTask: "
        "Set port Ethernet0 admin status to up\n"))
    (log,) = sink.collected("logs")
    assert (log["program"], log["message"]) == (
        "swss#orchagent", ":- doPortTask: Set port Ethernet0 admin status to up")
    assert events(sink) == [(ns("2024-02-25T02:02:09.169075Z"), "sonic", "Ethernet0", "admin_up")]


def test_ios_sequence_prefix_origin_host_and_unsynchronised_clock(write):
    sink = parse(write, (
        "<189>1432: test-switch1: Jun  1 12:50:26.172: %LINK-3-UPDOWN: Interface "
        "FastEthernet0/2, changed state to down\n"
        "<189>521: router1: *Nov 14 08:30:56.699: %LINK-5-CHANGED: Interface "
        "GigabitEthernet2, changed state to administratively down\n"
        "<189>77: .Jun  1 2024 12:50:27.000 UTC: %LINK-3-UPDOWN: Interface Gi0/3, "
        "changed state to up\n"), rel="syslog/core-9/ios.log", manifest=Manifest(year=2024))
    assert sink.rejects[:2] == [
        (1, NO_YEAR, sink.rejects[0][2]), (2, NO_YEAR, sink.rejects[1][2])]
    # a line that prints its year and UTC needs nothing from the manifest; no host -> file's
    assert events(sink) == [(ns("2024-06-01T12:50:27Z"), "core-9", "Gi0/3", "link_up")]
    full = parse(write, "".join(sink.rejects[i][2] + "\n" for i in (0, 1)))
    assert events(full) == [
        (ns("2024-06-01T12:50:26.172Z"), "test-switch1", "FastEthernet0/2", "link_down"),
        (ns("2024-11-14T08:30:56.699Z"), "router1", "GigabitEthernet2", "admin_down")]


def test_iso_prefixed_lines_with_and_without_offset(write):
    sink = parse(write, (
        "2024-01-01T11:21:07.123456-04:00 leaf01 switchd[19517]: nic.c:223 nic_set_carrier: "
        "swp51: setting kernel carrier: down\n"
        "2024-01-01T11:21:09 leaf01 switchd[19517]: netlink.c:291 libnl: swp51, family 0, "
        "ifi 20, oper up\n"), manifest=Manifest(timezone="+01:00"))
    assert events(sink) == [
        (ns("2024-01-01T15:21:07.123456Z"), "leaf01", "swp51", "link_down"),
        (ns("2024-01-01T10:21:09Z"), "leaf01", "swp51", "link_up")]
    assert sink.collected("logs")[0]["program"] == "switchd"


def test_nxos_year_first_defaults_to_utc_and_takes_the_manifest_zone(write):
    text = ("<190>2018 Apr 20 13:15:07 nexus-switch %ETHPORT-5-IF_DOWN_ADMIN_DOWN: Interface "
            "Ethernet1/1 is down (Administratively down)\n"
            "<190>2018 Apr 20 13:15:09 nexus-switch %ETHPORT-5-IF_ADMIN_UP: Interface "
            "Ethernet1/1 is admin up .\n")
    assert events(parse(write, text, manifest=Manifest())) == [
        (ns("2018-04-20T13:15:07Z"), "nexus-switch", "Ethernet1/1", "admin_down"),
        (ns("2018-04-20T13:15:09Z"), "nexus-switch", "Ethernet1/1", "admin_up")]
    tokyo = parse(write, text, manifest=Manifest(timezone="Asia/Tokyo"))
    assert events(tokyo)[0][0] == ns("2018-04-20T04:15:07Z")
    assert sink_programs(tokyo) == ["ETHPORT", "ETHPORT"]


def sink_programs(sink: Sink) -> list[str]:
    return [r["program"] for r in sink.collected("logs")]


def test_dmesg_T_uses_the_file_host_and_plain_dmesg_is_refused(write):
    sink = parse(write, "[Tue Feb 14 18:48:25 2023] mlx5_core 0000:02:00.0 ens2f0np0: Link down\n"
                        "[    5.189354] mlx5_core 0000:01:00.0 enp1s0np0: Link up\n",
                 rel="syslog/gpu-node-0007/dmesg.log", manifest=Manifest())
    assert events(sink) == [(ns("2023-02-14T18:48:25Z"), "gpu-node-0007", "ens2f0np0", "link_down")]
    assert sink.rejects == [(2, NO_WALL_CLOCK, "[    5.189354] mlx5_core 0000:01:00.0 "
                                               "enp1s0np0: Link up")]
    assert "boot_time" in NO_WALL_CLOCK and "uptime -s" in NO_WALL_CLOCK


def test_plain_dmesg_is_placed_by_an_uptime_line_or_the_manifest_boot_time(write):
    text = "[    5.189354] mlx5_core 0000:01:00.0 enp1s0np0: Link down\n"
    boot = ns("2026-03-01T08:00:00Z")
    src_rel = "syslog/gpu-node-0007/dmesg.log"
    sink = parse(write, text, rel=src_rel, manifest=Manifest(boot_time=boot))
    assert events(sink) == [(boot + 5_189_354_000, "gpu-node-0007", "enp1s0np0", "link_down")]
    # `uptime -s; dmesg`: the uptime line (local time: the manifest's zone) is framing
    path = write(src_rel, "2026-03-01 10:00:00\n" + text)
    parser, sink = run_parser(path, rel=src_rel, manifest=Manifest(timezone="+02:00"))
    assert parser is PARSER and (sink.loaded, sink.rejected) == (1, 0)
    assert events(sink) == [(boot + 5_189_354_000, "gpu-node-0007", "enp1s0np0", "link_down")]
    from collectors.core.source import SourceFile
    src = SourceFile(path, src_rel, Manifest(timezone="+02:00"))
    PARSER.parse(src, Sink())
    assert src.time_source == "boot_time"


def test_dmesg_T_without_a_host_in_the_file_name_is_refused(write):
    sink = parse(write, "[Tue Feb 14 18:48:25 2023] nvme nvme0: starting error recovery\n",
                 rel="syslog/1.log")
    assert [r[1] for r in sink.rejects] == [NO_HOST]


def test_ip_monitor_link_states(write):
    sink = parse(write, (
        "3: swp1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP\n"
        "Timestamp: Wed Jul 16 19:00:35 2014 350805 usec\n"
        "3: swp1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UP\n"
        "    link/ether 44:38:39:00:25:d9 brd ff:ff:ff:ff:ff:ff\n"
        "Timestamp: Wed Jul 16 19:00:36 2014 1 usec\n"
        "3: swp1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc pfifo_fast state UP\n"
        "Timestamp: Wed Jul 16 19:00:37 2014 840831 usec\n"
        "3: swp1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9000 state DOWN\n"
        "Deleted 3: swp1: <BROADCAST,MULTICAST> mtu 9000 state DOWN\n"
        "[2014-07-16T19:00:40.000001] 3: swp1: <BROADCAST,MULTICAST> mtu 9000 state DOWN\n"),
        rel="syslog/leaf01/link.log")
    assert sink.rejects[0][:2] == (1, NO_IP_TIMESTAMP)
    assert events(sink) == [
        (ns("2014-07-16T19:00:35.350805Z"), "leaf01", "swp1", "link_up"),
        (ns("2014-07-16T19:00:37.840831Z"), "leaf01", "swp1", "link_down"),
        (ns("2014-07-16T19:00:40.000001Z"), "leaf01", "swp1", "admin_down")]
    assert len(sink.collected("logs")) == 9


def test_not_a_syslog_line_is_rejected_with_a_reason(write):
    sink = parse(write, "Feb  6 09:42:36 h1 a: fine\nsome stray text\n")
    assert sink.loaded == 1
    assert sink.rejects[0][:2] == (
        2, "not a syslog line (RFC 5424, RFC 3164, ISO-8601 or dmesg -T)")


def test_impossible_dates_are_rejects(write):
    sink = parse(write, "<13>1 2024-13-45T10:00:00Z h a - - - x\n"
                        "Feb 30 09:42:36 h1 a: x\n"
                        "<190>0000 Apr 20 13:15:07 nx %ETHPORT-5-IF_UP: Interface E1 is up\n")
    assert sink.loaded == 0 and sink.rejected == 3
    assert all(r[1] for r in sink.rejects)


# -- phrasings -------------------------------------------------------------------------------

ISO = "2024-05-01T10:00:00.000001+00:00 sw1 "


@pytest.mark.parametrize(("line", "ifname", "kind"), [
    ("orchagent: :- updatePortOperStatus: Port Ethernet28 oper state set from up to down",
     "Ethernet28", "link_down"),
    ("orchagent: :- updatePortOperStatus: Port Ethernet28 oper state set from not present to up",
     "Ethernet28", "link_up"),
    ("orchagent: :- setHostIntfsOperStatus: Set operation status DOWN to host interface Ethernet4",
     "Ethernet4", "link_down"),
    ("orchagent: :- doPortTask: Set port Ethernet8 admin status to down", "Ethernet8",
     "admin_down"),
    ("switchd[5692]: nic.c:213 nic_set_carrier: swp17: setting kernel carrier: up", "swp17",
     "link_up"),
    ("switchd[19517]: sync_base.c:596 swp51: ifindex 54, admin down", "swp51", "admin_down"),
    ("switchd[19517]: sync_base.c:604 swp51: ifindex 54, oper down", "swp51", "link_down"),
    ("Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet28 (added description in "
     "EOS 4.19.6M), changed state to up", "Ethernet28", "link_up"),
    ("Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet3/1, changed state to down",
     "Ethernet3/1", "link_down"),
    ("%LINK-3-UPDOWN: Interface GigabitEthernet0/1, changed state to down",
     "GigabitEthernet0/1", "link_down"),
    ("%LINK-5-CHANGED: Interface Gi0/1, changed state to administratively down", "Gi0/1",
     "admin_down"),
    ("%ETHPORT-5-IF_DOWN_LINK_FAILURE: Interface Ethernet1/33 is down (Link failure)",
     "Ethernet1/33", "link_down"),
    ("%ETHPORT-5-IF_UP: Interface Ethernet1/33 is up in mode trunk", "Ethernet1/33", "link_up"),
    ("ifmgr[214]: %PKT_INFRA-LINK-3-UPDOWN : Interface TenGigE0/2/0/4, changed state to Down",
     "TenGigE0/2/0/4", "link_down"),
    ("ifmgr[214]: %PKT_INFRA-LINEPROTO-5-UPDOWN : Line protocol on Interface "
     "HundredGigE0/0/0/1, changed state to Up", "HundredGigE0/0/0/1", "link_up"),
    ("mib2d[2424]: SNMP_TRAP_LINK_DOWN: ifIndex 520, ifAdminStatus up(1), ifOperStatus "
     "down(2), ifName xe-0/0/0", "xe-0/0/0", "link_down"),
    ("mib2d[2424]: SNMP_TRAP_LINK_DOWN: ifIndex 502, ifAdminStatus down(2), ifOperStatus "
     "down(2), ifName xe-0/0/1", "xe-0/0/1", "admin_down"),
    ("kernel: mlx5_core 0000:01:00.0 enp1s0np0: Link down", "enp1s0np0", "link_down"),
    ("kernel: [18865.848172] mlx5_core 0000:01:00.1 enp1s0f1np1: Link up", "enp1s0f1np1",
     "link_up"),
    ("kernel: ixgbe 0000:05:00.0 enp5s0: NIC Link is Up 10 Gbps, Flow Control: RX/TX",
     "enp5s0", "link_up"),
    ("kernel: ice 0000:3b:00.0 ens785f0: NIC Link is Down", "ens785f0", "link_down"),
    ("kernel: e1000e: eth0 NIC Link is Down", "eth0", "link_down"),
])
def test_link_phrasings(write, line, ifname, kind):
    sink = parse(write, ISO + line + "\n")
    assert events(sink) == [(ns("2024-05-01T10:00:00.000001Z"), "sw1", ifname, kind)]
    assert sink.collected("events")[0]["message"] == sink.collected("logs")[0]["message"]


@pytest.mark.parametrize(("msg", "ifname", "kind", "queue"), [
    ("PFC Watchdog detected PFC storm on port Ethernet4, queue index 3, queue id 0x15000000000415"
     " and port id 0x1000000000004.", "Ethernet4", "pfc_storm", 3),
    ("PFC Watchdog detected PFC storm on port Ethernet8, queue index 4, queue id 0x1500000000042a"
     " and port id 0x1000000000006, additional info: ingress.", "Ethernet8", "pfc_storm", 4),
    ("PFC Watchdog storm restored on  port Ethernet4, queue index 3, queue id 0x15000000000415 "
     "and port id 0x1000000000004.", "Ethernet4", "pfc_storm_restored", 3),
    ("PFC Watchdog storm restored on port Ethernet12, queue index 3, queue id 0x1 and port id "
     "0x2.", "Ethernet12", "pfc_storm_restored", 3),
])
def test_sonic_pfc_watchdog_puts_the_queue_in_the_message(write, msg, ifname, kind, queue):
    sink = parse(write, f"<13>1 2024-05-01T10:00:00Z sonic1 orchagent - - - :- x: {msg}\n")
    (event,) = sink.collected("events")
    assert (event["device"], event["ifname"], event["kind"]) == ("sonic1", ifname, kind)
    assert event["message"] == f"queue={queue}: :- x: {msg}"


@pytest.mark.parametrize("msg", [
    "mlx5_core 0000:01:00.0 enp1s0np0: renamed from eth0",
    "mlx5_core 0000:01:00.0: Port module event: module 0, Cable plugged",
    "%ETH_PORT_CHANNEL-5-PORT_INDIVIDUAL_DOWN: individual port Ethernet1/33 is down",
    "PFC Watchdog detected PFC storm on queue 0x15000000000415 port 0x1000000000004",
    "Set port channel PortChannel01 admin status to up",
    "IPv6: ADDRCONF(NETDEV_CHANGE): swp1: link becomes ready",
    "Port Ethernet0 oper state set from down to testing",
])
def test_unrelated_lines_are_kept_as_logs_without_events(write, msg):
    sink = parse(write, f"{ISO}kernel: {msg}\n")
    assert [r["message"] for r in sink.collected("logs")] == [msg]
    assert sink.collected("events") == []


def test_duplicate_reports_of_one_transition_make_one_event(write):
    sink = parse(write, (
        f"{ISO}orchagent: :- updatePortOperStatus: Port Ethernet0 oper state set from up to down\n"
        "2024-05-01T10:00:00.2+00:00 sw1 orchagent: :- setHostIntfsOperStatus: "
        "Set operation status DOWN to host interface Ethernet0\n"
        "2024-05-01T10:00:05+00:00 sw1 orchagent: :- setHostIntfsOperStatus: "
        "Set operation status DOWN to host interface Ethernet0\n"))
    assert [e[3] for e in events(sink)] == ["link_down", "link_down"]
    assert len(sink.collected("logs")) == 3


def test_time_order_is_the_lines_not_the_files(write):
    sink = parse(write, (
        "<13>1 2019-02-22T10:57:30.359427+00:00 ss12 orchagent - - -  :- setHostIntfsOperStatus:"
        " Set operation status DOWN to host interface Ethernet28\n"
        "<13>1 2019-02-21T16:46:14.931186+00:00 ss12 orchagent - - -  :- setHostIntfsOperStatus:"
        " Set operation status UP to host interface Ethernet28\n"))
    assert events(sink) == [
        (ns("2019-02-22T10:57:30.359427Z"), "ss12", "Ethernet28", "link_down"),
        (ns("2019-02-21T16:46:14.931186Z"), "ss12", "Ethernet28", "link_up")]


def test_management_address_as_host_maps_to_the_hostname(write):
    path = write("syslog/remote.log", "<13>1 2024-05-01T10:00:00Z 10.0.0.7 a - - - x\n")
    _, sink = run_parser(path, rel="syslog/remote.log", sink=Sink(addresses={"10.0.0.7": "leaf7"}))
    assert sink.collected("logs")[0]["device"] == "leaf7"


# -- sniffing --------------------------------------------------------------------------------

@pytest.mark.parametrize("head", [
    '{"source": "leaf01:57400", "timestamp": 1}\n',
    '[{"name": "x"}]\n',
    "# HELP node_x x\n# TYPE node_x counter\nnode_x 1\n",
    'nvswitch_interface_if_in_octets{instance="leaf01:9100",interface="swp1"} 1 1700000000000\n',
    "2026-11-30T07:12:13,123456789+00:00\nNIC statistics:\n     tx_bytes_phy: 12\n",
    "1700000000.123456789\nNIC statistics:\n     rx_prio3_pause: 1\n",
    "name: lab\ntopology:\n  nodes:\n    leaf01:\n      kind: cvx\n",
    "ts,device,ifname,metric,qualifier,value\n2024-01-01T00:00:00Z,leaf01,swp1,x,,1\n",
    "JobID|Account|Start|End|NodeList\n1|a|2024-01-01T00:00:00|Unknown|gpu-node-[1-2]\n",
    "mlx5_0 port 1 ==> eth0 (Up)\n",
    "[1.500000]\n",
    "",
    "\n\n",
])
def test_sniff_leaves_other_families_alone(head):
    assert not PARSER.sniff(head, "x.txt")


@pytest.mark.parametrize("head", [
    "<13>1 2019-02-22T10:57:30.359427+00:00 ss12 orchagent - - -  :- x\n",
    "Feb  6 09:42:36 host sshd[1]: hello\nnot syslog\n",
    "2024-01-01T11:21:07.123456-04:00 leaf01 switchd[19517]: x\n",
    "<190>2018 Apr 20 13:15:07 nexus-switch %ETHPORT-5-IF_UP: Interface E1/1 is up\n",
    "[Tue Feb 14 18:48:25 2023] mlx5_core 0000:02:00.0 ens2f0np0: Link down\n",
    "[    5.189354] mlx5_core 0000:01:00.0 enp1s0np0: Link down\n",
    "Timestamp: Wed Jul 16 19:00:35 2014 350805 usec\n3: swp1: <UP> mtu 1\n    link/ether x\n",
    "<189>1432: test-switch1: Jun  1 12:50:26.172: %LINK-3-UPDOWN: x\n",
])
def test_sniff_recognizes_syslog_shapes(head):
    assert PARSER.sniff(head, "x.txt")


def test_sniff_ignores_a_line_cut_at_the_sniff_limit():
    assert PARSER.sniff("Feb  6 09:42:36 host a: x\n{\"cut", "x")
    assert not PARSER.sniff("{}\nFeb  6 09:42:36 host a: x\n", "x")


# -- writers ---------------------------------------------------------------------------------

FLAPS = [
    LogEvent(ns("2024-12-31T23:59:58.250000Z"), "leaf-p0-03", "swp17", "link_down"),
    LogEvent(ns("2025-01-01T00:00:03.500000Z"), "leaf-p0-03", "swp17", "link_up"),
    LogEvent(ns("2025-01-01T00:00:04Z"), "leaf-p0-04", "swp17", "link_down"),
    LogEvent(ns("2025-01-01T00:00:09.000001Z"), "leaf-p0-04", "swp17", "link_up"),
]
ADMIN = [LogEvent(ns("2025-01-01T00:01:00.000100Z"), "leaf-p0-03", "swp1", "admin_down"),
         LogEvent(ns("2025-01-01T00:01:07Z"), "leaf-p0-03", "swp1", "admin_up")]
PFC = [LogEvent(ns("2025-01-01T00:02:00.123456Z"), "sonic-7", "Ethernet4", "pfc_storm", 3),
       LogEvent(ns("2025-01-01T00:02:00.223456Z"), "sonic-7", "Ethernet4", "pfc_storm", 4),
       LogEvent(ns("2025-01-01T00:02:02.5Z"), "sonic-7", "Ethernet4", "pfc_storm_restored", 3)]


def seconds(evs: list[LogEvent]) -> list[LogEvent]:
    return [e._replace(ts=e.ts - e.ts % 1_000_000_000) for e in evs]


@pytest.mark.parametrize(("style", "evs"), [
    ("rfc5424", FLAPS + ADMIN + PFC),
    ("sonic", FLAPS + ADMIN + PFC),
    ("rfc3164", seconds(FLAPS)),
    ("cumulus", FLAPS + ADMIN),
    ("kernel", FLAPS),
])
def test_writer_round_trip(write, style, evs):
    fh = io.StringIO()
    write_syslog(evs, fh, style)
    path = write(f"syslog/{style}.log", fh.getvalue())
    parser, sink = run_parser(path, rel=f"syslog/{style}.log",
                              manifest=Manifest(year=2024, timezone="UTC"))
    assert parser is PARSER and sink.rejected == 0
    assert events(sink) == [(e.ts, e.device, e.ifname, e.kind) for e in evs]
    queues = [e["message"].split(":", 1)[0] for e in sink.collected("events")
              if e["kind"].startswith("pfc")]
    assert queues == [f"queue={e.queue}" for e in evs if e.kind.startswith("pfc")]


def test_writer_prints_what_the_devices_print():
    fh = io.StringIO()
    write_syslog([FLAPS[0]], fh, "rfc3164")
    write_syslog([FLAPS[0]], fh, "cumulus")
    write_syslog([FLAPS[0]], fh, "kernel")
    write_syslog([PFC[0]], fh, "rfc5424")
    lines = fh.getvalue().splitlines()
    assert lines[0] == ("<165>Dec 31 23:59:58 leaf-p0-03 Ebra: %LINEPROTO-5-UPDOWN: Line protocol "
                        "on Interface swp17, changed state to down")
    assert lines[1].startswith("2024-12-31T23:59:58.250000+00:00 leaf-p0-03 switchd[")
    assert lines[1].endswith("]: nic.c:223 nic_set_carrier: swp17: setting kernel carrier: down")
    assert lines[2].startswith(
        "2024-12-31T23:59:58.250000+00:00 leaf-p0-03 kernel: mlx5_core 0000:")
    assert lines[2].endswith(" swp17: Link down")
    assert lines[3].startswith("<13>1 2025-01-01T00:02:00.123456+00:00 sonic-7 orchagent - - -  "
                               ":- report_pfc_storm: PFC Watchdog detected PFC storm on port "
                               "Ethernet4, queue index 3, queue id 0x")


@pytest.mark.parametrize(("style", "kind"), [
    ("rfc3164", "pfc_storm"), ("kernel", "admin_down"), ("cumulus", "pfc_storm"),
    ("rfc5424", "drop"), ("nope", "link_up")])
def test_writer_refuses_what_the_device_never_logs(style, kind):
    with pytest.raises(ValueError, match=kind if style != "nope" else "unknown syslog style"):
        write_syslog([LogEvent(0, "d", "e", kind)], io.StringIO(), style)


def test_writer_styles_and_kinds_are_known():
    assert set(STYLES) == {"rfc5424", "sonic", "rfc3164", "cumulus", "kernel"}
    assert {e.kind for e in FLAPS + ADMIN + PFC} <= set(EVENT_KINDS)


# -- robustness ------------------------------------------------------------------------------

VALID = "".join(line + "\n" for line in [
    "<13>1 2019-02-22T10:57:30.359427+00:00 ss12 orchagent - - -  :- setHostIntfsOperStatus: "
    "Set operation status DOWN to host interface Ethernet28",
    "<165>Feb  6 09:42:36 veos01 Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface "
    "Ethernet28, changed state to down",
    "<190>2018 Apr 20 13:15:07 nexus-switch %ETHPORT-5-IF_UP: Interface Ethernet1/33 is up",
    "[Tue Feb 14 18:48:25 2023] mlx5_core 0000:02:00.0 ens2f0np0: Link down",
    "Timestamp: Wed Jul 16 19:00:35 2014 350805 usec",
    "3: swp1: <BROADCAST,MULTICAST,UP> mtu 1500 state DOWN",
    "    link/ether 44:38:39:00:25:d9 brd ff:ff:ff:ff:ff:ff",
])


def _check_accounting(path: Path, rel: str, manifest: Manifest) -> Sink:
    src = SourceFile(path, rel, manifest)
    sink = Sink()
    PARSER.parse(src, sink)
    records = sum(1 for _, line in src.lines() if line.strip())
    assert sink.loaded + sink.rejected == records
    assert len(sink.collected("logs")) == sink.loaded
    assert {e["kind"] for e in sink.collected("events")} <= set(EVENT_KINDS)
    return sink


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.text(max_size=600), prefix=st.sampled_from(
    ["", "<13>1 ", "<165>Feb  6 09:42:36 ", "2024-01-01T00:00:00Z h ", "[Tue Feb 14 18:48:25 2023",
     "Timestamp: Wed Jul 16 19:00:35 2014 1 usec\n3: ", "<190>2018 Apr 20 13:15:07 "]),
       manifest=st.sampled_from([Manifest(), UTC_2024, Manifest(year=9999, timezone="-23:59")]))
def test_arbitrary_text_never_raises_and_keeps_the_accounting(write, body, prefix, manifest):
    path = write("syslog/leaf01/any.log", prefix + body)
    _check_accounting(path, "syslog/leaf01/any.log", manifest)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(VALID)), gz=st.booleans(), junk=st.binary(max_size=20))
def test_truncated_files_never_raise(write, cut, gz, junk):
    import gzip
    data = VALID.encode()[:cut] + junk
    path = write("syslog/leaf01/cut.log", "")
    path.write_bytes(gzip.compress(data) if gz else data)
    _check_accounting(path, "syslog/leaf01/cut.log", UTC_2024)


def test_gzip_is_transparent(write):
    path = write("syslog/leaf01/syslog.1.gz", VALID, gz=True)
    parser, sink = run_parser(path, rel="syslog/leaf01/syslog.1.gz", manifest=UTC_2024)
    assert parser is PARSER and sink.loaded == 7 and sink.rejected == 0


# -- real samples (SOURCES.md, syslog section) -----------------------------------------------

def real(real_samples: Path, name: str, rel: str | None = None,
         manifest: Manifest = UTC_2024) -> Sink:
    path = real_samples / "syslog" / name
    parser, sink = run_parser(path, rel=rel or f"syslog/{name}", manifest=manifest)
    assert parser is PARSER, f"{name} recognized by {parser and parser.name}"
    with path.open() as fh:
        assert sink.loaded + sink.rejected == sum(1 for line in fh if line.strip())
    return sink


def test_real_eos_lineproto(real_samples):
    sink = real(real_samples, "napalm-logs-eos-lineproto-updown.log")
    assert sink.rejected == 0 and sink.loaded == 3
    assert events(sink) == [
        (ns("2024-02-06T09:42:36Z"), "veos01", "Ethernet28", "link_down"),
        (ns("2024-02-06T08:27:14Z"), "veos01", "Ethernet28", "link_up")]  # line 3 repeats line 2
    assert {r["program"] for r in sink.collected("logs")} == {"Ebra"}
    no_year = real(real_samples, "napalm-logs-eos-lineproto-updown.log", manifest=Manifest())
    assert no_year.loaded == 0 and {r[1] for r in no_year.rejects} == {NO_YEAR}


def test_real_nxos_ethport(real_samples):
    sink = real(real_samples, "napalm-logs-nxos-ethport.log", manifest=Manifest())
    assert sink.rejected == 0 and sink.loaded == 4
    assert events(sink) == [
        (ns("2018-04-20T13:15:07Z"), "nexus-switch", "Ethernet1/33", "link_down"),
        (ns("2018-04-20T13:15:38Z"), "nexus-switch", "Ethernet1/33", "link_up"),
        (ns("2018-10-31T08:12:52Z"), "sw01.test", "Ethernet1/3", "link_down")]
    down, up = events(sink)[:2]
    assert up[0] - down[0] == 31 * 1_000_000_000


def test_real_sonic_rfc5424(real_samples):
    sink = real(real_samples, "napalm-logs-sonic-rfc5424-hostif-oper.log", manifest=Manifest())
    assert sink.rejected == 0
    assert events(sink) == [
        (ns("2019-02-22T10:57:30.359427Z"), "ss12.00.lab", "Ethernet28", "link_down"),
        (ns("2019-02-21T16:46:14.931186Z"), "ss12.00.lab", "Ethernet28", "link_up")]
    assert sink.collected("logs")[0]["program"] == "orchagent"


def test_real_ios_iosxr_junos(real_samples):
    sink = real(real_samples, "napalm-logs-ios-iosxr-junos-link.log")
    assert sink.rejected == 0 and sink.loaded == 7
    assert events(sink) == [
        (ns("2024-06-01T12:50:26.172Z"), "test-switch1", "FastEthernet0/2", "link_down"),
        (ns("2024-06-01T13:35:45.562Z"), "test-switch1", "FastEthernet0/2", "link_up"),
        (ns("2024-11-14T08:30:56.699Z"), "router1", "GigabitEthernet2", "admin_down"),
        (ns("2024-07-07T20:16:14.834Z"), "gw2.acy1", "TenGigE0/2/0/4", "link_down"),
        (ns("2024-07-07T20:16:14.834Z"), "gw1.dev1", "TenGigE0/2/0/4", "link_up"),
        (ns("2024-07-20T21:45:59Z"), "vmx01", "xe-0/0/0", "admin_down"),  # ifAdminStatus down
        (ns("2024-07-20T21:45:59Z"), "vmx01", "xe-0/0/0", "link_up")]
    assert sink_programs(sink)[3:] == ["ifmgr", "ifmgr", "mib2d", "mib2d"]
    no_year = real(real_samples, "napalm-logs-ios-iosxr-junos-link.log", manifest=Manifest())
    assert no_year.loaded == 0 and {r[1] for r in no_year.rejects} == {NO_YEAR}


@pytest.mark.parametrize(("name", "lines"), [
    ("dmesg-mlx5-cx6-boot-link-down-up.log", 11),
    ("dmesg-tail-ixgbe-mlx5-link-down-lkml.log", 10),
])
def test_real_plain_dmesg_is_refused_line_by_line(real_samples, name, lines):
    sink = real(real_samples, name, rel="syslog/gpu-node-0001/dmesg.log")
    assert sink.loaded == 0 and sink.rejected == lines
    assert {r[1] for r in sink.rejects} == {NO_WALL_CLOCK}
    boot = ns("2026-03-01T08:00:00Z")
    sink = real(real_samples, name, rel="syslog/gpu-node-0001/dmesg.log",
                manifest=Manifest(boot_time=boot))
    assert sink.loaded == lines and sink.rejected == 0
    downs = {(e["ifname"], e["ts"] - boot) for e in sink.collected("events")
             if e["kind"] == "link_down"}
    assert downs == ({("enp1s0np0", 5_189_354_000)} if "cx6" in name else
                     {("enp1s0f0np0", 18865_848172_000), ("enp1s0f1np1", 18866_057990_000)})


def test_real_dmesg_T(real_samples):
    sink = real(real_samples, "dmesg-T-mlx5-link-down-nvme-rdma-linux-block.log",
                rel="syslog/gpu-node-0001/dmesg.log", manifest=Manifest())
    assert sink.rejected == 0 and sink.loaded == 2
    assert events(sink) == [(ns("2023-02-14T18:48:25Z"), "gpu-node-0001", "ens2f0np0", "link_down")]
    logs = sink.collected("logs")
    assert logs[1]["message"] == "nvme nvme0: starting error recovery"
    assert logs[1]["ts"] - logs[0]["ts"] == 7 * 1_000_000_000


def test_real_cumulus_linkstate(real_samples):
    sink = real(real_samples, "cumulus-var-log-linkstate-swp51.log", manifest=Manifest())
    assert sink.rejected == 0 and sink.loaded == 9
    assert events(sink) == [
        (ns("2017-05-22T11:21:07.085595-04:00"), "leaf01", "swp51", "admin_down"),
        (ns("2017-05-22T11:21:07.086167-04:00"), "leaf01", "swp51", "link_down"),
        (ns("2017-05-22T11:23:02.968972-04:00"), "leaf01", "swp51", "admin_up"),
        (ns("2017-05-22T11:23:05.152445-04:00"), "leaf01", "swp51", "link_up"),
        (ns("2017-05-22T11:23:06.683631-04:00"), "leaf01", "swp51", "admin_down"),
        (ns("2017-05-22T11:23:06.684531-04:00"), "leaf01", "swp51", "link_down")]
    assert set(sink_programs(sink)) == {"switchd"}


def test_real_ip_timestamp_monitor_link(real_samples):
    sink = real(real_samples, "cumulus-ip-timestamp-monitor-link-swp1.log",
                rel="syslog/leaf01/link.log", manifest=Manifest())
    assert sink.rejected == 0 and sink.loaded == 6
    assert events(sink) == [
        (ns("2014-07-16T19:00:35.350805Z"), "leaf01", "swp1", "admin_down"),  # no UP flag
        (ns("2014-07-16T19:00:37.840831Z"), "leaf01", "swp1", "admin_up"),
        (ns("2014-07-16T19:00:37.840831Z"), "leaf01", "swp1", "link_down")]  # NO-CARRIER


def test_every_real_sample_is_covered(real_samples):
    covered = {
        "napalm-logs-eos-lineproto-updown.log", "napalm-logs-nxos-ethport.log",
        "napalm-logs-sonic-rfc5424-hostif-oper.log", "napalm-logs-ios-iosxr-junos-link.log",
        "dmesg-mlx5-cx6-boot-link-down-up.log", "dmesg-tail-ixgbe-mlx5-link-down-lkml.log",
        "dmesg-T-mlx5-link-down-nvme-rdma-linux-block.log", "cumulus-var-log-linkstate-swp51.log",
        "cumulus-ip-timestamp-monitor-link-swp1.log"}
    assert {p.name for p in (real_samples / "syslog").iterdir()} == covered
