"""lldpctl output: `-f json`, `-f json0` and `-f keyvalue` (lldpd's client writers).

One record is one neighbor entry of one local interface. lldpctl names neighbors only, never the
local device, so the device comes from the file name (`topology/<host>.lldp.json`,
`<host>__lldp.json`, `topology/<host>/lldpctl.json`); without it every neighbor is rejected.

Shapes, as lldpd's `jsonc_writer.c` makes them: `json0` keeps every element in an array
(`lldp[0].interface[].chassis[0].name[0].value`). `json` runs `jsonc_cleanup` on the same tree:
one-element arrays collapse, `{"value": x}` becomes `x`, and an object with a string `name` is
wrapped as `{name: object}`. So one interface gives `lldp.interface = {ifname: {...}}`, several a
list of single-key objects; the chassis is keyed by the neighbor's name, or, when it sends none,
its fields sit directly under `chassis`; a single `mgmt-ip` is a string, several a list.
`{"lldp": {}}` is "no neighbors": zero records, no error. `keyvalue` prints one
`lldp.<ifname>.<path>=<value>` per leaf, with an id's type replacing the `id` component
(`lldp.eth0.port.ifname=swp1`).

Rows: `neighbor(device, local_ifname, peer, peer_ifname, first mgmt ip)`, and `address(ip, peer)`
for every management address, which is how gnmic `source` addresses become host names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple

from collectors.core.source import SAY_HOST, Sink, SourceFile, is_address

NO_HOST = f"cannot tell which device this LLDP output is from: name the file after the host, {SAY_HOST}"

# File stems that name the tool or the content, not a host (`topology/lldpctl.json`).
_GENERIC_STEMS = {"lldp", "lldpctl", "lldpcli", "lldpd", "neighbors", "neighbours", "topology",
                  "output", "json", "json0", "keyvalue"}
_ID_TYPES = {"ifname", "local", "mac", "ip", "ifalias", "unhandled", "agentcid"}
_MAC = re.compile(r"(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}")


class LldpNeighbor(NamedTuple):
    """One neighbor as seen from a local interface (the writers' input, the parsers' output)."""

    local_ifname: str
    peer_device: str  # the chassis name, or the chassis id when it sends no name
    peer_ifname: str
    mgmt_ips: tuple[str, ...] = ()
    chassis_id: str = ""  # a MAC; the writers derive one from the name when empty
    port_id_type: str = "ifname"  # ifname | local | mac: how the peer advertises its port
    peer_named: bool = True  # False: the chassis sent no name and peer_device is its id


# -- shared ------------------------------------------------------------------------------------

def device_hint(src: SourceFile) -> str | None:
    """The local device a file of lldpctl output belongs to, from its name."""
    hint = src.host_hint
    if not hint:
        return None
    low = hint.lower()
    if low in _GENERIC_STEMS or low.startswith(("lldpctl", "lldpcli")):
        return None
    return hint


def _looks_like_ifname(text: str) -> bool:
    return (bool(text) and len(text) <= 64 and not any(c.isspace() for c in text)
            and any(c.isalpha() for c in text) and not _MAC.fullmatch(text))


def peer_port(id_type: str, id_value: str, descr: str) -> str:
    """The peer's interface name: an `ifname` id, a name-like `local` id, else descr, else id.

    Ports are `device:ifname` in fabtwin, so a MAC or numeric port id (`local` "535") loses to a
    descr that looks like an interface name (`ge-0/0/15.0`).
    """
    if id_type == "ifname" and id_value:
        return id_value
    if id_type == "local" and _looks_like_ifname(id_value):
        return id_value
    if _looks_like_ifname(descr):
        return descr
    return id_value or descr


def _build(ifname: str, name: str, chassis_id: str, mgmt: list[str], port_type: str,
           port_value: str, descr: str) -> LldpNeighbor | str:
    """An LldpNeighbor, or the reason the entry cannot be one."""
    if not ifname:
        return "neighbor entry without a local interface name"
    peer = name or chassis_id
    if not peer:
        return f"neighbor on {ifname} sends neither a chassis name nor a chassis id"
    port = peer_port(port_type, port_value, descr)
    if not port:
        return f"neighbor on {ifname} sends no port id"
    ips = tuple(ip for ip in mgmt if ip)
    return LldpNeighbor(ifname, peer, port, ips, chassis_id, port_type, bool(name))


def _emit(sink: Sink, device: str, nb: LldpNeighbor, names: dict[str, str] | None = None) -> None:
    """One neighbor row (and its addresses). A chassis that sends no name is the device the
    bundle maps one of its management addresses to, else the one another entry of the same
    output names with the same chassis id or address (`names`), else its chassis id."""
    peer = sink.device(nb.peer_device) if is_address(nb.peer_device) else nb.peer_device
    if not nb.peer_named:
        known = [sink.addresses.get(k) or (names or {}).get(k) for k in (*nb.mgmt_ips, nb.chassis_id)]
        peer = next((name for name in known if name), peer)
    sink.neighbor(device, nb.local_ifname, peer, nb.peer_ifname,
                  nb.mgmt_ips[0] if nb.mgmt_ips else "")
    if not nb.peer_named:  # an address naming a MAC would not help map gnmic sources to hosts
        return
    for ip in nb.mgmt_ips:
        if is_address(ip):
            sink.address(ip, peer)


# -- JSON (json and json0) --------------------------------------------------------------------

def _obj(x: object) -> dict | None:
    if isinstance(x, list):
        x = x[0] if x else None
    return x if isinstance(x, dict) else None


def _scalar(x: object) -> str:
    """`"a"`, `{"value": "a"}`, `[{"value": "a"}]` -> "a"."""
    for _ in range(4):
        if isinstance(x, list):
            x = x[0] if x else None
        elif isinstance(x, dict):
            x = x.get("value")
        else:
            break
    if x is None or isinstance(x, (dict, list)):
        return ""
    return str(x).strip()


def _scalars(x: object) -> list[str]:
    return [_scalar(e) for e in x] if isinstance(x, list) else [_scalar(x)]


def _split_chassis(chassis: object) -> tuple[str, dict] | None:
    """(name, fields) for a json0 chassis, a named json chassis or a nameless one."""
    c = _obj(chassis)
    if c is None:
        return None
    if "name" in c:  # json0: name is an element like the others
        return _scalar(c["name"]), c
    if len(c) == 1:
        key, value = next(iter(c.items()))
        if isinstance(value, dict) and "type" not in value and "value" not in value:
            return str(key), value
    return "", c


def neighbor_from_json(ifname: str, body: object) -> LldpNeighbor | str:
    """One interface entry of `-f json` or `-f json0` output."""
    if not isinstance(body, dict):
        return f"interface entry {ifname!r} is not a JSON object"
    split = _split_chassis(body.get("chassis"))
    if split is None:
        return f"neighbor on {ifname} has no chassis"
    name, fields = split
    pid = body.get("port")
    port = _obj(pid) or {}
    id_obj = port.get("id")
    id_dict = _obj(id_obj)
    port_type = str(id_dict.get("type", "")) if id_dict else ""
    return _build(ifname, name, _scalar(fields.get("id")), _scalars(fields.get("mgmt-ip")),
                  port_type, _scalar(id_obj), _scalar(port.get("descr")))


def interface_entries(doc: object) -> Iterator[tuple[str, object, bool]]:
    """(ifname, body, is_json0) for every interface entry of either JSON shape."""
    lldp = doc.get("lldp") if isinstance(doc, dict) else None
    if isinstance(lldp, list):  # json0
        for part in lldp:
            items = part.get("interface", []) if isinstance(part, dict) else []
            for item in items if isinstance(items, list) else [items]:
                name = item.get("name", "") if isinstance(item, dict) else ""
                yield str(name), item, True
    elif isinstance(lldp, dict):
        interface = lldp.get("interface")
        if interface is None:
            return
        for item in interface if isinstance(interface, list) else [interface]:
            if not isinstance(item, dict) or not item:
                yield "", item, False
                continue
            for name, body in item.items():
                yield str(name), body, False


class _Locator:
    """Line numbers of interface entries, found by searching forward through the text."""

    def __init__(self, text: str, base: int) -> None:
        self.text = text
        self.cursor = base
        self.base_line = text.count("\n", 0, base) + 1
        # the line at `counted`, advanced with the cursor: counting from the start for every
        # entry made a document of n interfaces O(n^2) (87K entries: minutes)
        self.counted, self.line = base, self.base_line

    def line_of(self, ifname: str, json0: bool) -> int:
        key = re.escape(json.dumps(ifname))
        pattern = rf'"name"\s*:\s*{key}' if json0 else rf"{key}\s*:\s*\{{"
        m = re.compile(pattern).search(self.text, self.cursor)
        if not m:
            return self.base_line
        self.cursor = m.end()
        self.line += self.text.count("\n", self.counted, m.start())
        self.counted = m.start()
        return self.line


class LldpJsonParser:
    """`lldpctl -f json` (both shapes) and `lldpctl -f json0`."""

    name = "lldpctl_json"
    family = "topology"
    priority = 10
    # a file maps peers' management addresses the files before it named: load them in order
    ordered = True
    _HEAD = re.compile(r'\s*\{\s*"lldp"\s*:\s*[\[{]')

    def sniff(self, head: str, rel: str) -> bool:
        return bool(self._HEAD.match(head))

    def parse(self, src: SourceFile, sink: Sink) -> None:
        with src.open_text() as fh:
            text = fh.read()
        device = device_hint(src)
        decoder = json.JSONDecoder()
        pos = _skip_ws(text, 0)
        while pos < len(text):
            try:
                doc, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                sink.reject(exc.lineno, f"invalid JSON at line {exc.lineno} column {exc.colno}: "
                            f"{exc.msg}", text[pos:pos + 200])
                return
            except RecursionError:
                sink.reject(text.count("\n", 0, pos) + 1, "JSON nested too deeply", text[:200])
                return
            self._document(doc, _Locator(text, pos), device, sink)
            pos = _skip_ws(text, end)

    def _document(self, doc: object, where: _Locator, device: str | None, sink: Sink) -> None:
        if not isinstance(doc, dict) or not isinstance(doc.get("lldp"), (dict, list)):
            sink.reject(where.base_line, "not lldpctl JSON output: no top-level 'lldp' object",
                        json.dumps(doc)[:200])
            return
        entries = [(ifname, body, json0, neighbor_from_json(ifname, body))
                   for ifname, body, json0 in interface_entries(doc)]
        names = {k: nb.peer_device for *_, nb in entries if isinstance(nb, LldpNeighbor)
                 and nb.peer_named for k in (*nb.mgmt_ips, nb.chassis_id) if k}
        for ifname, body, json0, nb in entries:
            line = where.line_of(ifname, json0)
            raw = json.dumps({ifname: body})
            if isinstance(nb, str):
                sink.reject(line, nb, raw)
            elif device is None:
                sink.reject(line, NO_HOST, raw)
            else:
                sink.current_line = line
                _emit(sink, device, nb, names)
                sink.accept()


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


# -- keyvalue -----------------------------------------------------------------------------------

_KV_LINE = re.compile(r"lldp\.([^=]+)=(.*)")
_KV_SECOND = {"via", "rid", "age", "chassis", "port", "vlan", "ppvid", "pi", "lldp-med",
              "unknown-tlvs", "unknown-tlv", "ttl"}


def _kv_split(path: str) -> tuple[str, str] | None:
    """`eth0.100.chassis.name` -> (`eth0.100`, `chassis.name`): ifnames may contain dots."""
    parts = path.split(".")
    for k in range(1, len(parts)):
        if parts[k] in _KV_SECOND:
            return ".".join(parts[:k]), ".".join(parts[k:])
    return None


class _KvBlock:
    def __init__(self, ifname: str, line: int) -> None:
        self.ifname, self.line = ifname, line
        self.name = self.chassis_id = self.port_type = self.port_value = self.descr = ""
        self.mgmt: list[str] = []
        self.raw: list[str] = []
        self.seen_via = False

    def add(self, key: str, value: str) -> None:
        self.seen_via = self.seen_via or key == "via"
        head, _, leaf = key.partition(".")
        if head == "chassis":
            if leaf == "name":
                self.name = value
            elif leaf == "mgmt-ip":
                self.mgmt.append(value)
            elif leaf in _ID_TYPES and not self.chassis_id:
                self.chassis_id = value
        elif head == "port":
            if leaf == "descr":
                self.descr = value
            elif leaf in _ID_TYPES and not self.port_type:
                self.port_type, self.port_value = leaf, value

    def neighbor(self) -> LldpNeighbor | str:
        return _build(self.ifname, self.name.strip(), self.chassis_id.strip(), self.mgmt,
                      self.port_type, self.port_value.strip(), self.descr.strip())


class LldpKeyValueParser:
    """`lldpctl -f keyvalue`: `lldp.eth0.chassis.name=leaf01` lines."""

    name = "lldpctl_keyvalue"
    family = "topology"
    priority = 10
    # a file maps peers' management addresses the files before it named: load them in order
    ordered = True
    _HEAD = re.compile(r"\s*lldp\.[^=\s]+\.(?:via|rid|age|chassis|port)[.=]")

    def sniff(self, head: str, rel: str) -> bool:
        return bool(self._HEAD.match(head))

    def parse(self, src: SourceFile, sink: Sink) -> None:
        device = device_hint(src)
        block: _KvBlock | None = None
        for number, line in src.lines():
            m = _KV_LINE.match(line)
            split = _kv_split(m.group(1)) if m else None
            if split is None:
                if block is not None and line.strip():
                    block.raw.append(line)  # continuation of a multi-line value (descr)
                continue
            ifname, key = split
            if block is None or ifname != block.ifname or (key == "via" and block.seen_via):
                self._finish(block, device, sink)
                block = _KvBlock(ifname, number)
            block.raw.append(line)
            block.add(key, m.group(2))
        self._finish(block, device, sink)

    @staticmethod
    def _finish(block: _KvBlock | None, device: str | None, sink: Sink) -> None:
        if block is None:
            return
        nb = block.neighbor()
        raw = "\n".join(block.raw)
        if isinstance(nb, str):
            sink.reject(block.line, nb, raw)
        elif device is None:
            sink.reject(block.line, NO_HOST, raw)
        else:
            sink.current_line = block.line
            _emit(sink, device, nb)
            sink.accept()


# -- writers --------------------------------------------------------------------------------------

def _fake_mac(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))  # locally administered


def json0_tree(neighbors: Iterable[LldpNeighbor | tuple]) -> dict:
    """The tree lldpd builds for `-f json0` (every element an array)."""
    interfaces = []
    rids: dict[str, int] = {}
    for item in neighbors:
        nb = LldpNeighbor(*item)
        if nb.peer_named:
            chassis_id = nb.chassis_id or _fake_mac(nb.peer_device)
        else:
            chassis_id = nb.chassis_id or nb.peer_device
        rid = rids.setdefault(chassis_id, len(rids) + 1)
        chassis: dict = {"id": [{"type": "mac", "value": chassis_id}]}
        if nb.peer_named:
            chassis["name"] = [{"value": nb.peer_device}]
        if nb.mgmt_ips:
            chassis["mgmt-ip"] = [{"value": ip} for ip in nb.mgmt_ips]
        chassis["capability"] = [{"type": "Bridge", "enabled": True},
                                 {"type": "Router", "enabled": True}]
        if nb.port_id_type in ("ifname", "local"):
            port_id = {"type": nb.port_id_type, "value": nb.peer_ifname}
        else:
            port_id = {"type": "mac", "value": _fake_mac(f"{nb.peer_device}:{nb.peer_ifname}")}
        port = {"id": [port_id], "descr": [{"value": nb.peer_ifname}], "ttl": [{"value": "120"}]}
        interfaces.append({"name": nb.local_ifname, "via": "LLDP", "rid": str(rid),
                           "age": "0 day, 00:00:00", "chassis": [chassis], "port": [port]})
    return {"lldp": [{"interface": interfaces}]} if interfaces else {"lldp": [{}]}


def jsonc_cleanup(el: object) -> object:
    """lldpd's `jsonc_cleanup`: what turns the json0 tree into `-f json` output."""
    if isinstance(el, list):
        if len(el) == 1:
            return jsonc_cleanup(el[0])
        return [jsonc_cleanup(e) for e in el]
    if isinstance(el, dict):
        if len(el) == 1 and "value" in el:
            return el["value"]
        new: dict = {}
        name = None
        for key, value in el.items():
            value = jsonc_cleanup(value)
            if key == "name" and isinstance(value, str):
                name = value
            else:
                new[key] = value
        return {name: new} if name is not None else new
    return el


def write_lldp_json0(device_neighbors: Iterable[LldpNeighbor | tuple], fh: IO[str]) -> None:
    """What `lldpctl -f json0` prints on one device."""
    fh.write(json.dumps(json0_tree(device_neighbors), indent=2) + "\n")


def write_lldp_json(device_neighbors: Iterable[LldpNeighbor | tuple], fh: IO[str]) -> None:
    """What `lldpctl -f json` prints on one device (object for one interface, list for several)."""
    fh.write(json.dumps(jsonc_cleanup(json0_tree(device_neighbors)), indent=2) + "\n")


PARSERS = [LldpJsonParser(), LldpKeyValueParser()]
