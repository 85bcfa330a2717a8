"""containerlab topology files (`*.clab.yml`): the cables a lab declares.

A record is one entry of `topology.links` (one cable: `neighbor(a_dev, a_if, b_dev, b_if)`) or one
entry of `topology.nodes` (rows only when it declares `mgmt-ipv4`/`mgmt-ipv6`:
`address(ip, node)`, so that telemetry naming a node's management address maps to the node).
Links come in the brief form `endpoints: ["leaf1:e1-1", "spine:e1-1"]` and the extended form
`endpoints: [{node: leaf1, interface: e1-1}, ...]`. Links to containerlab's pseudo-nodes (`host`,
`mgmt-net`, `macvlan`) or single-ended typed links are loaded without a neighbor row: they are
not cables between two devices. The YAML is loaded whole (topologies are small: at most
`MAX_DOCUMENT_CHARS`), and refused when its aliases expand beyond `MAX_YAML_NODES` nodes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from collectors.core.source import Sink, SourceFile, is_address

if TYPE_CHECKING:
    import yaml

_PSEUDO_NODES = {"host", "mgmt-net", "macvlan"}


class ClabParser:
    """containerlab `topology:` YAML."""

    name = "containerlab"
    family = "topology"
    priority = 11
    _TOPOLOGY = re.compile(r"^topology:\s*(?:#.*)?$", re.M)
    _SECTION = re.compile(r"^[ \t]+(?:nodes|links):", re.M)

    def sniff(self, head: str, rel: str) -> bool:
        if head.lstrip()[:1] in ("{", "["):
            return False
        return bool(self._TOPOLOGY.search(head) and self._SECTION.search(head))

    def parse(self, src: SourceFile, sink: Sink) -> None:
        import yaml  # here: its import (13-20 ms of CPU) only for a bundle with a clab file

        with src.open_text() as fh:
            text = fh.read()
        loader = None
        try:
            loader = yaml.SafeLoader(text)  # (it reads the first characters already)
            root = loader.get_single_node()
            if root is not None and (size := expanded_nodes(root)) > MAX_YAML_NODES:
                # aliases are shared nodes until something walks the data: an 887-byte
                # "billion laughs" file grew a worker past 5 GB when a value of it was printed
                sink.reject(1, f"YAML aliases expand to {size:,} nodes, more than the "
                            f"{MAX_YAML_NODES:,} a topology may have (an alias bomb?): not read",
                            text[:200])
                return
            data = loader.construct_document(root) if root is not None else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            sink.reject(line, f"invalid YAML at line {line}: {problem}", _line(text, line))
            return
        except (ValueError, TypeError, RecursionError) as exc:  # e.g. a date like 2024-13-01
            sink.reject(1, f"invalid YAML value: {exc}", text[:200])
            return
        finally:
            if loader is not None:
                loader.dispose()
        topo = data.get("topology") if isinstance(data, dict) else None
        if not isinstance(topo, dict):
            sink.reject(1, "not a containerlab topology: no 'topology' mapping", text[:200])
            return
        topo_node = _child(root, "topology")
        nodes = topo.get("nodes") or {}
        self._nodes(nodes, _child(topo_node, "nodes"), text, sink)
        self._links(topo.get("links") or [], _child(topo_node, "links"), nodes, text, sink)

    def _nodes(self, nodes: object, where: yaml.Node | None, text: str, sink: Sink) -> None:
        import yaml
        if not isinstance(nodes, dict):
            sink.reject(_start(where), "'topology.nodes' is not a mapping", _line(text, 1))
            return
        lines = [_start(k) for k, _ in where.value] if isinstance(where, yaml.MappingNode) else []
        for i, (name, spec) in enumerate(nodes.items()):
            line = lines[i] if i < len(lines) else _start(where)
            if not isinstance(name, str) or not (spec is None or isinstance(spec, dict)):
                sink.reject(line, f"node {name!r} is not a name with a mapping", _line(text, line))
                continue
            spec = spec or {}
            ips = [str(spec.get(k) or "").split("/")[0] for k in ("mgmt-ipv4", "mgmt-ipv6")]
            bad = [ip for ip in ips if ip and not is_address(ip)]
            if bad:
                sink.reject(line, f"node {name}: {bad[0]!r} is not an IP address", _line(text, line))
                continue
            sink.current_line = line
            for ip in ips:
                if ip:
                    sink.address(ip, name)
            sink.accept()

    def _links(self, links: object, where: yaml.Node | None, nodes: object, text: str,
               sink: Sink) -> None:
        import yaml

        if not isinstance(links, list):
            sink.reject(_start(where), "'topology.links' is not a list", _line(text, 1))
            return
        lines = [_start(n) for n in where.value] if isinstance(where, yaml.SequenceNode) else []
        known = set(nodes) if isinstance(nodes, dict) else set()
        for i, link in enumerate(links):
            line = lines[i] if i < len(lines) else _start(where)
            ends = link_endpoints(link)
            if isinstance(ends, str):
                sink.reject(line, ends, _line(text, line))
                continue
            if ends and (missing := [d for d, _ in ends if d not in known | _PSEUDO_NODES]):
                sink.reject(line, f"link endpoint node {missing[0]!r} is not in topology.nodes",
                            _line(text, line))
                continue
            sink.current_line = line
            if ends and not any(d in _PSEUDO_NODES for d, _ in ends):
                (a_dev, a_if), (b_dev, b_if) = ends
                sink.neighbor(a_dev, a_if, b_dev, b_if)
            sink.accept()


# The most nodes a topology's YAML may have once its aliases are expanded: a lab of 1,000 nodes
# and 4,000 links is about 40,000
MAX_YAML_NODES = 200_000


def expanded_nodes(root: yaml.Node) -> int:
    """How many nodes the YAML graph under `root` has with every alias expanded, counted
    without expanding them (each shared node's count is computed once; a recursive alias
    counts once)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # iterative: a deeply nested document must not exhaust Python's stack
        node, done = stack.pop()
        if id(node) in sizes and not done:
            continue
        kids = _kids(node)
        if not done:
            sizes[id(node)] = 1  # a node reached again through itself counts once
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
        else:
            sizes[id(node)] = 1 + sum(sizes[id(k)] for k in kids)
    return sizes[id(root)]


def _kids(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def link_endpoints(link: object) -> list[tuple[str, str]] | str:
    """[(node, ifname), (node, ifname)], [] for a single-ended typed link, or a reject reason."""
    if not isinstance(link, dict):
        return "link entry is not a mapping"
    ends = link.get("endpoints")
    if ends is None and isinstance(link.get("endpoint"), dict):
        return []  # host / mgmt-net / macvlan / dummy link: one side only
    if not isinstance(ends, list) or len(ends) != 2:
        return "link needs exactly two endpoints"
    out = []
    for end in ends:
        if isinstance(end, str) and ":" in end:
            node, _, ifname = end.partition(":")
        elif isinstance(end, dict):
            node, ifname = str(end.get("node", "")), str(end.get("interface", ""))
        else:
            return f"endpoint {end!r} is not 'node:interface'"
        if not node or not ifname:
            return f"endpoint {end!r} is not 'node:interface'"
        out.append((node, ifname))
    return out


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
    return None


def _start(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def _line(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


PARSERS = [ClabParser()]
