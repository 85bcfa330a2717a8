"""Switch and host logs: syslog in its common line shapes, kernel logs and `ip monitor link`.

Every understood line becomes one `logs` row; lines that report a link or PFC watchdog
transition also become an `events` row. Line shapes (one record per non-blank line):

- RFC 5424, with or without PRI: `<13>1 2019-02-22T10:57:30.359427+00:00 host app - - - msg`.
- ISO-8601 prefixed (rsyslog RFC 3339 files, Cumulus /var/log/linkstate, journalctl -o
  short-iso): `2017-05-22T11:21:07.085595-04:00 leaf01 switchd[19517]: msg`.
- RFC 3164, with or without PRI, SONiC's microseconds and severity word included:
  `<165>Feb  6 09:42:36 veos01 Ebra: msg`, `Feb 25 02:02:09.169075 sonic NOTICE swss#orchagent:`.
  Year and zone come from the manifest (a file crossing New Year steps the year forward once);
  without them each line is rejected.
- Cisco IOS / IOS-XR with sequence number, origin host and `*`/`.` clock marks:
  `<189>1432: test-switch1: *Jun  1 12:50:26.172: %LINK-...`, same manifest rule.
- Year-first (NX-OS, newer SONiC): `<190>2018 Apr 20 13:15:07 nexus-switch %ETHPORT-...`.
- `dmesg -T`: `[Tue Feb 14 18:48:25 2023] mlx5_core ...`; the device is the file's host.
- `ip -timestamp monitor link`: a `Timestamp: Wed Jul 16 19:00:35 2014 350805 usec` line, then
  the link line and its indented continuation lines (`ip -ts` bracketed stamps too).

Clock times without a zone (year-first, `dmesg -T`, `ip monitor`, ISO without offset) are read in
the manifest's timezone, else in UTC: these tools print local time and most fabric hosts run in
UTC, so this is a documented default rather than a guess per line. Plain `dmesg` (seconds since
boot) is placed when the host's boot time is known: an `uptime -s` line before it in the file
(local time, as above), else an `uptime -s` file in the same folder (`uptime_line`, read by
ingest), else the manifest's `boot_time` (`files.time_source = 'boot_time'`);
without either it is rejected line by line with the ways to place it.

Events: ifname is the interface as the device names it. Several daemons report one transition
(SONiC portsorch and hostif, Cumulus oper state and kernel carrier, IOS LINK and LINEPROTO): a
repeat of the same kind on the same port within DUPLICATE_WINDOW_NS is the same transition and
yields no second event. `ip monitor` lines are state snapshots: an event only when the state of
the port changes. PFC watchdog events carry `queue=N: ` in front of the message.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple, TextIO

from collectors.core.source import SAY_HOST, Sink, SourceFile
from collectors.core.timeparse import NS, TimeError, parse_bsd, parse_iso, tz_from_name

DUPLICATE_WINDOW_NS = 2 * NS

NO_YEAR = "RFC 3164 timestamp has no year: set 'year' and 'timezone' in manifest.json"
NO_WALL_CLOCK = ("kernel timestamp is seconds since boot and the boot time is unknown: set "
                 "'boot_time' for the file in manifest.json, put an `uptime -s` line before it, "
                 "or collect with `dmesg -T` or journalctl -o short-iso")
NO_HOST = f"line names no host and the file name gives none: put it under syslog/<host>/, {SAY_HOST}"
NO_IP_TIMESTAMP = "ip monitor line without a timestamp: collect with `ip -timestamp monitor link`"

# ---------------------------------------------------------------------------------------------
# line shapes

_PRI = r"(?:<(?P<pri>\d{1,3})>)?"
_MON = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DOW = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_CLOCK = r"(?P<clock>\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)"
_ISO_TS = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"

_RFC5424 = re.compile(
    _PRI + r"1 (?P<ts>" + _ISO_TS + r"|-) (?P<host>\S+) (?P<app>\S+) (?P<procid>\S+) "
    r"(?P<msgid>\S+) (?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<msg>.*))?$")
_ISO_LINE = re.compile(_PRI + r"(?P<ts>" + _ISO_TS + r") (?P<host>\S+) (?P<rest>.*)$")
_CISCO = re.compile(
    _PRI + r"(?:(?P<seq>\d+): )?(?:(?P<host>(?!\d+[: ])[A-Za-z0-9][\w.\-]*):? )??"
    r"(?:(?P<node>[A-Z]{2}/[\w/]+):)?[*.]?" + _MON + r" +(?P<day>\d{1,2}) "
    r"(?:(?P<year>\d{4}) )?" + _CLOCK + r"(?: (?P<tz>[A-Z]{3,4}))? ?: (?P<msg>.*)$")
_BSD = re.compile(_PRI + _MON + r" +(?P<day>\d{1,2}) " + _CLOCK + r" (?P<host>\S+) (?P<rest>.*)$")
_YEAR_FIRST = re.compile(
    _PRI + r"(?P<year>\d{4}) " + _MON + r" +(?P<day>\d{1,2}) " + _CLOCK
    + r"(?: (?P<tz>UTC|GMT))? (?P<host>\S+) (?P<rest>.*)$")
_DMESG_T = re.compile(
    r"\[" + _DOW + " " + _MON + r" +(?P<day>\d{1,2}) " + _CLOCK
    + r" (?P<year>\d{4})\] ?(?P<msg>.*)$")
_DMESG = re.compile(r"(?:<\d{1,3}>)?\[\s*(?P<secs>\d+)\.(?P<usec>\d{6})\] (?P<msg>.*)")
# what `uptime -s` prints (local time): the boot time of the dmesg lines after it
_UPTIME_S = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_IP_STAMP = re.compile(
    r"Timestamp: " + _DOW + " " + _MON + r" +(?P<day>\d{1,2}) (?P<clock>\d{2}:\d{2}:\d{2}) "
    r"(?P<year>\d{4}) (?P<usec>\d{1,6}) usec$")
_IP_LINK = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d{2}-\d{2}T[\d:.,]+)\] ?)?(?:\[LINK\])?(?P<deleted>Deleted )?"
    r"(?P<index>\d+): (?P<ifname>[^\s:@]+)(?:@\S+)?: <(?P<flags>[^>]*)>(?P<tail>.*)$")
_INDENTED = re.compile(r"\s+\S")
_ISO_PARTS = re.compile(
    r"(?P<whole>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?$")

# the program tag after the host: `prog[pid]:`, SONiC's `NOTICE swss#orchagent:`
_TAG = re.compile(
    r"(?:(?:EMERG|ALERT|CRIT|ERR|ERROR|WARNING|WARN|NOTICE|INFO|DEBUG) )?"
    r"(?P<prog>[^\s:\[\]%]+)(?:\[(?P<pid>[^\]]*)\])?: ?(?P<msg>.*)$")
_MNEMONIC = re.compile(r"%(?P<fac>[A-Z][A-Z0-9_]*)-(?:[A-Z0-9_]+-)?\d-[A-Z0-9_]+")

_UTC = ("UTC", "GMT")
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


class Reject(ValueError):
    """A line in a known shape that cannot be placed (no year, no wall clock, no host)."""


class Line(NamedTuple):
    ts: int
    host: str | None  # None: the line names no host, use the file's
    program: str
    message: str


def _split_tag(rest: str) -> tuple[str, str]:
    """`Ebra: %LINEPROTO...` -> (Ebra, msg); `%ETHPORT-5-IF_UP: ...` -> (ETHPORT, whole)."""
    m = _MNEMONIC.match(rest)
    if m:
        return m["fac"], rest
    m = _TAG.match(rest)
    if m:
        return m["prog"], m["msg"]
    return "", rest


def _host_or_none(host: str, rest: str) -> tuple[str | None, str]:
    """A 3164 'host' that is really the tag (`prog[1]:`, `%ETHPORT-...:`) means no host field."""
    if host.endswith(":") or "[" in host or host.startswith("%"):
        return None, f"{host} {rest}"
    return host, rest


# ---------------------------------------------------------------------------------------------
# event phrasings: message -> (ifname, kind, queue)

Found = tuple[str, str, int | None]

_IFN = r"(?P<ifname>[A-Za-z][\w./:\-]*?)"
_SONIC_OPER = re.compile(r"Port " + _IFN + r" oper state set from .+? to (?P<st>up|down)$")
_SONIC_HOSTIF = re.compile(
    r"Set operation status (?P<st>UP|DOWN) to host interface (?P<ifname>\S+)")
_SONIC_ADMIN = re.compile(r"Set port " + _IFN + r" admin status to (?P<st>up|down)\b")
_PFC_STORM = re.compile(
    r"PFC Watchdog detected PFC storm on port (?P<ifname>[^\s,]+), queue index (?P<q>\d+)")
_PFC_RESTORED = re.compile(
    r"PFC Watchdog storm restored on\s+port (?P<ifname>[^\s,]+), queue index (?P<q>\d+)")
_CISCO_UPDOWN = re.compile(
    r"%(?:PKT_INFRA-)?(?:LINK|LINEPROTO)-\d-(?:UPDOWN|CHANGED)\s*:\s*(?:Line protocol on )?"
    r"Interface (?P<ifname>[^\s,(]+)(?: \([^)]*\))?, changed state to "
    r"(?P<st>administratively down|up|down)\b", re.IGNORECASE)
_NXOS = re.compile(
    r"%ETHPORT-\d-IF_(?:DOWN|UP|ADMIN_DOWN|ADMIN_UP)\w*: Interface (?P<ifname>\S+) is "
    r"(?P<st>admin down|admin up|down|up)\b(?P<why>.*)")
_CUMULUS_CARRIER = re.compile(
    r"nic_set_carrier: (?P<ifname>\S+): setting kernel carrier: (?P<st>up|down)")
_CUMULUS_STATE = re.compile(
    r"(?:^|\s)(?P<ifname>[A-Za-z][\w.\-]*)[:,]? (?:ifindex \d+|family \d+, ifi \d+), "
    r"(?P<what>admin|oper) (?P<st>up|down)\b")
_JUNOS = re.compile(
    r"SNMP_TRAP_LINK_(?P<trap>DOWN|UP): ifIndex \d+, ifAdminStatus (?P<admin>\w+)\(\d+\), "
    r"ifOperStatus (?P<oper>\w+)\(\d+\), ifName (?P<ifname>\S+)")
_NETDEV = re.compile(  # netdev_info(): `<driver> <bus id> <ifname>: Link down`
    r"(?:^|\s)[\w-]+ [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] (?P<ifname>[^\s:]+): "
    r"(?:NIC )?Link (?:is )?(?P<st>up|down)\b", re.IGNORECASE)
_E1000 = re.compile(r"(?:^|\s)[\w-]+: (?P<ifname>[^\s:]+) NIC Link is (?P<st>Up|Down)\b")
_HINT = re.compile(r"[Ll]ink|state|status|storm|carrier|admin|oper|ETHPORT|SNMP_TRAP")


def _updown(st: str) -> str:
    return "link_up" if st.lower() == "up" else "link_down"


def _cisco(m: re.Match) -> Found:
    st = m["st"].lower()
    return m["ifname"], "admin_down" if st.startswith("admin") else _updown(st), None


def _nxos(m: re.Match) -> Found:
    st = m["st"]
    if st.startswith("admin"):
        return m["ifname"], "admin_" + st.split()[1], None
    if st == "down" and "administratively down" in m["why"].lower():
        return m["ifname"], "admin_down", None
    return m["ifname"], _updown(st), None


def _cumulus_state(m: re.Match) -> Found:
    kind = ("admin_" + m["st"]) if m["what"] == "admin" else _updown(m["st"])
    return m["ifname"], kind, None


def _junos(m: re.Match) -> Found:
    if m["trap"] == "DOWN":
        return m["ifname"], "admin_down" if m["admin"] == "down" else "link_down", None
    return m["ifname"], "link_up" if m["oper"] == "up" else "admin_up", None


_RULES: tuple[tuple[re.Pattern, Callable[[re.Match], Found]], ...] = (
    (_SONIC_OPER, lambda m: (m["ifname"], _updown(m["st"]), None)),
    (_SONIC_HOSTIF, lambda m: (m["ifname"], _updown(m["st"]), None)),
    (_SONIC_ADMIN, lambda m: (m["ifname"], "admin_" + m["st"], None)),
    (_PFC_STORM, lambda m: (m["ifname"], "pfc_storm", int(m["q"]))),
    (_PFC_RESTORED, lambda m: (m["ifname"], "pfc_storm_restored", int(m["q"]))),
    (_CISCO_UPDOWN, _cisco),
    (_NXOS, _nxos),
    (_CUMULUS_CARRIER, lambda m: (m["ifname"], _updown(m["st"]), None)),
    (_CUMULUS_STATE, _cumulus_state),
    (_JUNOS, _junos),
    (_NETDEV, lambda m: (m["ifname"], _updown(m["st"]), None)),
    (_E1000, lambda m: (m["ifname"], _updown(m["st"]), None)),
)


def find_event(message: str) -> Found | None:
    """The (ifname, kind, queue) a log message reports, or None for any other message."""
    if not _HINT.search(message):
        return None
    for pattern, build in _RULES:
        m = pattern.search(message)
        if m:
            return build(m)
    return None


def _ip_link_kinds(flags: str, tail: str) -> list[str]:
    """The states an `ip monitor link` line shows: no UP flag is an admin shut."""
    flagset = set(flags.split(","))
    if "UP" not in flagset:
        return ["admin_down"]
    state = re.search(r"\bstate (\S+)", tail)
    if "NO-CARRIER" in flagset or (state and state.group(1) in ("DOWN", "LOWERLAYERDOWN")):
        return ["admin_up", "link_down"]
    if "LOWER_UP" in flagset or (state and state.group(1) == "UP"):
        return ["admin_up", "link_up"]
    return ["admin_up"]


# ---------------------------------------------------------------------------------------------
# the parser


class _FileState:
    """What one file's lines need from each other: the manifest clock, ip monitor stamps, dedup."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.year = src.manifest.year
        self.tz_error: str | None = None
        try:
            self.tz: tzinfo | None = tz_from_name(src.manifest.timezone)
        except TimeError as exc:
            self.tz, self.tz_error = None, str(exc)
        self.last_month = 0
        self.year_steps = 0
        self.ip_ts: int | None = None
        self.last: dict[tuple, tuple[str, int]] = {}
        self.seconds: dict[tuple[str, str | None], int] = {}  # many lines share one second
        self.hint = src.host_hint
        self.devices: dict[str, str] = {}
        self.boot: int | None = None  # an `uptime -s` line's time, in ns

    def since_boot(self, m: re.Match) -> int:
        """A dmesg `[secs.usec]` stamp placed by the host's boot time (`uptime -s` line in the
        file, else the manifest's `boot_time`)."""
        boot = self.boot
        if boot is None:
            boot = self.src.boot_ts()
            if boot is None:
                raise Reject(NO_WALL_CLOCK)
        self.src.timed_by_boot()
        return boot + int(m["secs"]) * NS + int(m["usec"]) * 1000

    def local_tz(self) -> tzinfo:
        """The zone of clock times printed without one: the manifest's, else UTC."""
        if self.tz_error:
            raise Reject(self.tz_error)
        return self.tz or UTC

    def bsd(self, m: re.Match, year: str | None = None) -> int:
        """A `Mon dd hh:mm:ss` stamp; the year from the line if it has one, else the manifest."""
        tzname = m.groupdict().get("tz")
        if year is not None:
            return self._clock(int(year), m["mon"], m["day"], m["clock"], tzname)
        if self.year is None or (self.src.manifest.timezone is None and tzname not in _UTC):
            raise Reject(NO_YEAR)
        month = _MONTHS[m["mon"]]
        if self.last_month - month >= 6:  # Dec -> Jan: the log crossed New Year
            self.year_steps += 1
        self.last_month = month
        return self._clock(self.year + self.year_steps, m["mon"], m["day"], m["clock"], tzname)

    def _clock(self, year: int, mon: str, day: str, clock: str, tzname: str | None) -> int:
        tz = UTC if tzname in _UTC else self.local_tz()
        try:
            return parse_bsd(mon, day, clock, year, tz)
        except TimeError as exc:
            raise Reject(str(exc)) from exc
        except (ValueError, OverflowError) as exc:
            raise Reject(f"impossible date {year} {mon} {day} {clock}") from exc

    def iso(self, text: str) -> int:
        """An ISO-8601 stamp; one without an offset is in the manifest's zone, else UTC."""
        m = _ISO_PARTS.match(text)
        if m is None:  # let parse_iso say what is wrong
            return self._iso(text)
        key = (m["whole"], m["tz"])
        whole = self.seconds.get(key)
        if whole is None:
            if len(self.seconds) > 4096:
                self.seconds.clear()
            whole = self.seconds[key] = self._iso(m["whole"] + (m["tz"] or ""))
        return whole + int(m["frac"].ljust(9, "0")) if m["frac"] else whole

    def _iso(self, text: str) -> int:
        try:
            return parse_iso(text, None if self.tz_error else (self.tz or UTC))
        except TimeError as exc:
            raise Reject(self.tz_error or str(exc)) from exc
        except (ValueError, OverflowError) as exc:
            raise Reject(f"impossible timestamp {text[:40]!r}") from exc


def uptime_line(head: str) -> str | None:
    """The `uptime -s` line of a text that is only that (a file `uptime -s > uptime.txt` wrote
    beside a dmesg), else None."""
    lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
    return lines[0] if len(lines) == 1 and _UPTIME_S.fullmatch(lines[0]) else None


def boot_ns(line: str, zone: str | None) -> int:
    """An `uptime -s` line (local time: `zone`, else UTC) in ns; TimeError if it is none."""
    return parse_iso(line.replace(" ", "T"), tz_from_name(zone) or UTC)


def _parse_5424(m: re.Match, st: _FileState) -> Line:
    if m["ts"] == "-":
        raise Reject("RFC 5424 line without a timestamp")
    msg = (m["msg"] or "").lstrip().removeprefix("\ufeff")
    host = None if m["host"] == "-" else m["host"]
    return Line(st.iso(m["ts"]), host, "" if m["app"] == "-" else m["app"], msg)


def _parse_iso(m: re.Match, st: _FileState) -> Line:
    host, rest = _host_or_none(m["host"], m["rest"])
    return Line(st.iso(m["ts"]), host, *_split_tag(rest))


def _parse_cisco(m: re.Match, st: _FileState) -> Line:
    program, msg = _split_tag(m["msg"])
    return Line(st.bsd(m, m["year"]), m["host"], program, msg)


def _parse_bsd(m: re.Match, st: _FileState) -> Line:
    host, rest = _host_or_none(m["host"], m["rest"])
    return Line(st.bsd(m), host, *_split_tag(rest))


def _parse_year_first(m: re.Match, st: _FileState) -> Line:
    host, rest = _host_or_none(m["host"], m["rest"])
    return Line(st.bsd(m, m["year"]), host, *_split_tag(rest))


def _parse_dmesg_t(m: re.Match, st: _FileState) -> Line:
    return Line(st.bsd(m, m["year"]), None, "kernel", m["msg"])


def _parse_dmesg(m: re.Match, st: _FileState) -> Line:
    return Line(st.since_boot(m), None, "kernel", m["msg"])


_SHAPES: tuple[tuple[re.Pattern, Callable[[re.Match, _FileState], Line]], ...] = (
    (_RFC5424, _parse_5424),
    (_ISO_LINE, _parse_iso),
    (_CISCO, _parse_cisco),
    (_BSD, _parse_bsd),
    (_YEAR_FIRST, _parse_year_first),
    (_DMESG_T, _parse_dmesg_t),
    (_DMESG, _parse_dmesg),
)


def _ip_monitor(line: str, st: _FileState) -> tuple[Line, list[tuple[str, str]]] | None:
    """An `ip -timestamp monitor link` line: (log line, [(ifname, kind)]), or None."""
    m = _IP_STAMP.match(line)
    if m:
        st.ip_ts = st.bsd(m, m["year"]) + int(m["usec"]) * 1000
        return Line(st.ip_ts, None, "ip-monitor", line), []
    m = _IP_LINK.match(line)
    if m:
        if m["ts"]:
            st.ip_ts = st.iso(m["ts"])
        if st.ip_ts is None:
            raise Reject(NO_IP_TIMESTAMP)
        kinds = [] if m["deleted"] else _ip_link_kinds(m["flags"], m["tail"])
        return Line(st.ip_ts, None, "ip-monitor", line), [(m["ifname"], k) for k in kinds]
    if st.ip_ts is not None and _INDENTED.match(line):
        return Line(st.ip_ts, None, "ip-monitor", line.strip()), []
    return None


def parse_line(line: str, st: _FileState) -> Line | None:
    """The syslog shape of one line, None if it has none; Reject if it cannot be placed."""
    for pattern, build in _SHAPES:
        m = pattern.match(line)
        if m:
            return build(m, st)
    return None


class SyslogParser:
    """Syslog, kernel and `ip monitor link` lines (see the module docstring)."""

    name = "syslog"
    family = "syslog"
    priority = 60

    def sniff(self, head: str, rel: str) -> bool:
        """True when the first lines of `head` are syslog-shaped (most of up to 10 lines)."""
        try:
            return _sniff(head)
        except Exception:  # noqa: BLE001 - sniffing must never raise
            return False

    def parse(self, src: SourceFile, sink: Sink) -> None:
        st = _FileState(src)
        for number, raw in src.lines():
            if not raw.strip():
                continue
            if _UPTIME_S.fullmatch(raw.strip()):  # framing, not a record: as nic's date lines
                try:
                    st.boot = parse_iso(raw.strip().replace(" ", "T"), st.local_tz())
                except (Reject, TimeError) as exc:
                    sink.reject(number, f"bad `uptime -s` line: {exc}", raw)
                continue
            sink.current_line = number
            try:
                line, device, found, snapshot = self._read(raw, st, sink)
            except (Reject, ValueError, OverflowError) as exc:  # bad dates land here too
                sink.reject(number, str(exc), raw)
                continue
            sink.log(line.ts, device, line.program, line.message)
            for event in found:
                self._event(st, sink, line, device, event, snapshot)
            sink.accept()

    def _read(self, raw: str, st: _FileState, sink: Sink) -> tuple[Line, str, list[Found], bool]:
        """One line's log row, device and events, or Reject; appends nothing."""
        ip = _ip_monitor(raw, st)
        if ip is not None:
            line, states = ip
            return line, self._device(line, st, sink), [(i, k, None) for i, k in states], True
        line = parse_line(raw, st)
        if line is None:
            raise Reject("not a syslog line (RFC 5424, RFC 3164, ISO-8601 or dmesg -T)")
        found = find_event(line.message)
        return line, self._device(line, st, sink), [found] if found else [], False

    @staticmethod
    def _device(line: Line, st: _FileState, sink: Sink) -> str:
        hint = st.hint
        if not line.host:
            device = hint
        else:
            device = st.devices.get(line.host)
            if device is None:
                device = st.devices[line.host] = sink.device(line.host, fallback=hint)
        if not device:
            raise Reject(NO_HOST)
        return device

    @staticmethod
    def _event(st: _FileState, sink: Sink, line: Line, device: str, found: Found,
               snapshot: bool) -> None:
        ifname, kind, queue = found
        family = "pfc" if kind.startswith("pfc") else kind.split("_")[0]
        key = (device, ifname, family, queue)
        previous = st.last.get(key)
        st.last[key] = (kind, line.ts)
        if snapshot and previous is None and kind == "admin_up":
            return  # a first snapshot showing the port enabled is no transition
        if previous and previous[0] == kind and (
                snapshot or abs(line.ts - previous[1]) <= DUPLICATE_WINDOW_NS):
            return
        message = line.message if queue is None else f"queue={queue}: {line.message}"
        sink.event(line.ts, device, ifname, kind, message)


def _sniff(head: str) -> bool:
    lines = head.splitlines()
    if len(lines) > 1 and not head.endswith(("\n", "\r")):
        lines = lines[:-1]  # the last line may be cut at SNIFF_BYTES
    sample = [ln for ln in lines if ln.strip()][:10]
    if len(sample) > 1 and _UPTIME_S.fullmatch(sample[0].strip()) and _DMESG.match(sample[1]):
        sample = sample[1:]  # `uptime -s; dmesg`
    if not sample:
        return False
    hits = [_is_shape(ln, i == 0) for i, ln in enumerate(sample)]
    return hits[0] and 2 * sum(hits) >= len(hits)


def _is_shape(line: str, first: bool) -> bool:
    if any(p.match(line) for p, _ in _SHAPES):
        return True
    if _IP_STAMP.match(line) or _IP_LINK.match(line):
        return True
    return not first and bool(_INDENTED.match(line))


PARSERS = [SyslogParser()]


# ---------------------------------------------------------------------------------------------
# writers


class LogEvent(NamedTuple):
    """One event for `write_syslog`: ts in ns UTC, kind from schema.EVENT_KINDS."""

    ts: int
    device: str
    ifname: str
    kind: str
    queue: int | None = None


STYLES = ("rfc5424", "sonic", "rfc3164", "cumulus", "kernel")


def _iso(ts: int) -> str:
    dt = datetime.fromtimestamp(ts // NS, UTC)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{(ts % NS) // 1000:06d}+00:00"


def _bsd(ts: int, micro: bool) -> str:
    dt = datetime.fromtimestamp(ts // NS, UTC)
    stamp = f"{dt:%b} {dt.day:>2} {dt:%H:%M:%S}"
    return f"{stamp}.{(ts % NS) // 1000:06d}" if micro else stamp


def _oid(text: str, base: int) -> str:
    return f"0x{base + zlib.crc32(text.encode()) % 0xFFFF:x}"


def _sonic_messages(ev: LogEvent) -> list[str]:
    """What SONiC's orchagent logs (sonic-swss portsorch.cpp, pfcwdorch.cpp) for one event."""
    ifn, kind = ev.ifname, ev.kind
    if kind in ("link_up", "link_down"):
        new, old = ("up", "down") if kind == "link_up" else ("down", "up")
        return [f":- updatePortOperStatus: Port {ifn} oper state set from {old} to {new}",
                f":- setHostIntfsOperStatus: Set operation status {new.upper()} "
                f"to host interface {ifn}"]
    if kind in ("admin_up", "admin_down"):
        return [f":- doPortTask: Set port {ifn} admin status to {kind.split('_')[1]}"]
    if kind in ("pfc_storm", "pfc_storm_restored"):
        q = ev.queue if ev.queue is not None else 3
        ids = (f"queue id {_oid(f'{ev.device}:{ifn}:{q}', 0x15000000000000)} and port id "
               f"{_oid(f'{ev.device}:{ifn}', 0x1000000000000)}")
        if kind == "pfc_storm":
            return [f":- report_pfc_storm: PFC Watchdog detected PFC storm on port {ifn}, "
                    f"queue index {q}, {ids}"]
        return [f":- report_pfc_restored: PFC Watchdog storm restored on port {ifn}, "
                f"queue index {q}, {ids}."]
    raise ValueError(f"SONiC style cannot write a {kind!r} event")


def _format(ev: LogEvent, style: str) -> list[str]:
    if style == "rfc5424":
        return [f"<13>1 {_iso(ev.ts + i * 50_000)} {ev.device} orchagent - - -  {msg}"
                for i, msg in enumerate(_sonic_messages(ev))]
    if style == "sonic":
        return [f"{_bsd(ev.ts + i * 50_000, True)} {ev.device} NOTICE swss#orchagent: {msg}"
                for i, msg in enumerate(_sonic_messages(ev))]
    if ev.kind not in ("link_up", "link_down") and not (
            style == "cumulus" and ev.kind in ("admin_up", "admin_down")):
        raise ValueError(f"style {style!r} cannot write a {ev.kind!r} event")
    state = ev.kind.split("_")[1]
    if style == "rfc3164":  # Arista EOS; RFC 3164 carries whole seconds only
        return [f"<165>{_bsd(ev.ts, False)} {ev.device} Ebra: %LINEPROTO-5-UPDOWN: "
                f"Line protocol on Interface {ev.ifname}, changed state to {state}"]
    if style == "cumulus":
        pid = 1000 + zlib.crc32(ev.device.encode()) % 30000
        if ev.kind.startswith("admin"):
            index = 3 + zlib.crc32(ev.ifname.encode()) % 200
            msg = f"sync_base.c:596 {ev.ifname}: ifindex {index}, admin {state}"
        else:
            msg = f"nic.c:223 nic_set_carrier: {ev.ifname}: setting kernel carrier: {state}"
        return [f"{_iso(ev.ts)} {ev.device} switchd[{pid}]: {msg}"]
    if style == "kernel":
        bus = 1 + zlib.crc32(ev.ifname.encode()) % 0xF0
        return [f"{_iso(ev.ts)} {ev.device} kernel: mlx5_core 0000:{bus:02x}:00.0 "
                f"{ev.ifname}: Link {state}"]
    raise ValueError(f"unknown syslog style {style!r}; known: {', '.join(STYLES)}")


def write_syslog(lines: Iterable[LogEvent], fh: TextIO, style: str) -> None:
    """Write events as the device's log prints them, one or more lines per event.

    Styles: `rfc5424` and `sonic` (SONiC orchagent: link as portsorch + hostif lines, admin,
    PFC watchdog storm/restored; `sonic` is SONiC's /var/log/syslog and needs a manifest year),
    `rfc3164` (Arista EOS LINEPROTO, link only, whole seconds, needs a manifest year),
    `cumulus` (ISO switchd carrier and admin lines), `kernel` (ISO mlx5_core Link down/up).
    A kind the style's device never logs raises ValueError.
    """
    if style not in STYLES:
        raise ValueError(f"unknown syslog style {style!r}; known: {', '.join(STYLES)}")
    for ev in lines:
        for text in _format(LogEvent(*ev), style):
            fh.write(text + "\n")
