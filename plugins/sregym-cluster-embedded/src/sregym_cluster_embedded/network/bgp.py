"""Pod routes between nodes as Calico's BGP distributes them: who peers with whom decides which
node knows the way to another node's pods.

Calico programs a route to each node's pod block on every node that learns it over BGP. By default
every node peers with every other (the node-to-node mesh, ``BGPConfiguration`` ``default``,
``spec.nodeToNodeMeshEnabled``); a large cluster turns the mesh off and peers its nodes with route
reflectors instead, chosen by ``BGPPeer`` objects (``crd.projectcalico.org/v1``, cluster-scoped):
``spec.nodeSelector`` (or ``spec.node``; neither: every node) says which nodes open the sessions,
``spec.peerSelector`` which nodes they peer with, both in Calico's selector syntax
(``route-reflector == 'true'``, ``has(node-role.kubernetes.io/control-plane)``, ``all()``).

The embedded cluster serves both resources and seeds ``default`` with the mesh on, so every node
routes to every other, as before. The route computation (``Routes``): two nodes exchange routes
when the mesh is on, or when they are joined by BGP sessions: a session is a node a BGPPeer applies
to and a node its peerSelector selects (the reflector); routes travel along sessions, so nodes
peering with the same reflector (or reflectors peering with each other) reach one another. This
treats every node a peerSelector selects as a reflector (Calico also wants its
``routeReflectorClusterID``; the embedded cluster keeps no Calico Node objects). A node that peers
with nobody has routes to its own pods only: with the mesh off and a selector naming a label no
node carries, pods on different nodes cannot reach each other while same-node traffic works.

Without a route, a pod's connection to a pod on the other node goes nowhere: the service proxy
holds it unanswered (the caller's connect or first read times out, as a SYN sent into a missing
route does), and an open connection stalls until the route is back (proxy.py); as root, a direct
``connect()`` to the other node's pod address is refused by the kernel guard (netguard.py,
EHOSTUNREACH). Host-network pods and the benchmark's hidden namespaces are outside the routing.

``SREGYM_EMBEDDED_BGP=0`` installs neither resource; a cluster without them routes everywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..controllers.util import Obj

GROUP, VERSION = "crd.projectcalico.org", "v1"
PEERS = f"bgppeers.{GROUP}"
CONFIGS = f"bgpconfigurations.{GROUP}"
DEFAULT_CONFIG = "default"
DEFAULT_AS = 64512


def enabled() -> bool:
    return os.environ.get("SREGYM_EMBEDDED_BGP", "1") != "0"


# ---------------------------------------------------------------- Calico's selector syntax

class SelectorError(ValueError):
    """A selector Calico would not parse (the embedded cluster lets it select no node)."""


_TOKEN = re.compile(r"""\s*(?:(?P<str>'[^']*'|"[^"]*")|(?P<op>&&|\|\||==|!=|[(){},!])|"""
                    r"""(?P<word>[A-Za-z0-9_./\-]+))""")

Labels = dict[str, str]
Predicate = Callable[[Labels], bool]


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if not found or found.end() == pos:
            raise SelectorError(f"unexpected {text[pos:pos + 12]!r} in selector {text!r}")
        out.append(found.group(0).strip())
        pos = found.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise SelectorError(f"expected {want or 'more'} in selector {self.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Predicate:
        if not self.toks:
            return lambda _labels: True  # an empty selector selects everything
        pred = self.or_()
        if self.peek() is not None:
            raise SelectorError(f"unexpected {self.peek()!r} in selector {self.text!r}")
        return pred

    def or_(self) -> Predicate:
        parts = [self.and_()]
        while self.peek() == "||":
            self.take()
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else (lambda labels: any(p(labels) for p in parts))

    def and_(self) -> Predicate:
        parts = [self.unary()]
        while self.peek() == "&&":
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else (lambda labels: all(p(labels) for p in parts))

    def unary(self) -> Predicate:
        if self.peek() == "!":
            self.take()
            inner = self.unary()
            return lambda labels: not inner(labels)
        if self.peek() == "(":
            self.take()
            inner = self.or_()
            self.take(")")
            return inner
        return self.term()

    def _string(self) -> str:
        tok = self.take()
        if len(tok) < 2 or tok[0] not in "'\"" or tok[-1] != tok[0]:
            raise SelectorError(f"expected a quoted value, got {tok!r} in selector {self.text!r}")
        return tok[1:-1]

    def _set(self) -> set[str]:
        self.take("{")
        values: set[str] = set()
        while self.peek() != "}":
            values.add(self._string())
            if self.peek() == ",":
                self.take()
        self.take("}")
        return values

    def term(self) -> Predicate:
        word = self.take()
        if word in ("all", "global") and self.peek() == "(":
            self.take("(")
            self.take(")")
            return lambda _labels: True
        if word == "has" and self.peek() == "(":
            self.take("(")
            key = self.take()
            self.take(")")
            return lambda labels: key in labels
        key, op = word, self.peek()
        if op == "==":
            self.take()
            value = self._string()
            return lambda labels: labels.get(key) == value
        if op == "!=":
            self.take()
            value = self._string()
            return lambda labels: labels.get(key) != value
        if op == "in":
            self.take()
            values = self._set()
            return lambda labels: labels.get(key) in values
        if op == "not" and self.peek(1) == "in":
            self.take()
            self.take()
            values = self._set()
            return lambda labels: labels.get(key) not in values
        if op in ("contains", "starts", "ends"):
            self.take()
            if op != "contains":
                self.take("with")
            value = self._string()
            test = {"contains": str.__contains__, "starts": str.startswith, "ends": str.endswith}[op]
            return lambda labels: key in labels and test(labels[key], value)
        raise SelectorError(f"cannot read {word!r} in selector {self.text!r}")


def parse_selector(text: str) -> Predicate:
    """A Calico selector as a predicate over a label set (SelectorError when it does not parse)."""
    return _Parser(str(text or "")).parse()


def selects(text: str | None, labels: Labels) -> bool:
    """Whether a selector selects these labels; one that does not parse selects nothing."""
    try:
        return parse_selector(text or "")(labels or {})
    except SelectorError:
        return False


# ---------------------------------------------------------------- routes

def mesh_enabled(configs: Iterable[Obj]) -> bool:
    """``default``'s ``nodeToNodeMeshEnabled`` (Calico's default when unset or absent: on)."""
    for obj in configs:
        if (obj.get("metadata") or {}).get("name") == DEFAULT_CONFIG:
            value = (obj.get("spec") or {}).get("nodeToNodeMeshEnabled")
            return value is None or bool(value)
    return True


def sessions(nodes: dict[str, Labels], peers: Iterable[Obj]) -> set[frozenset[str]]:
    """The BGP sessions between nodes that the BGPPeers ask for (peers given by ``peerIP`` alone are
    routers outside the cluster: no session between nodes)."""
    out: set[frozenset[str]] = set()
    for peer in peers:
        spec = peer.get("spec") or {}
        if not spec.get("peerSelector"):
            continue
        if spec.get("node"):
            local = [spec["node"]] if spec["node"] in nodes else []
        elif spec.get("nodeSelector"):
            local = [n for n, labels in nodes.items() if selects(spec["nodeSelector"], labels)]
        else:
            local = list(nodes)
        remote = [n for n, labels in nodes.items() if selects(spec["peerSelector"], labels)]
        out |= {frozenset((a, b)) for a in local for b in remote if a != b}
    return out


def islands(nodes: dict[str, Labels], configs: Iterable[Obj], peers: Iterable[Obj]) -> dict[str, int]:
    """Node -> the number of the set of nodes it has routes with (nodes of one number reach each
    other's pods; 1 for every node when all of them do)."""
    names = sorted(nodes)
    if mesh_enabled(configs):
        return {n: 1 for n in names}
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for pair in sessions(nodes, peers):
        a, b = sorted(pair)
        parent[root(b)] = root(a)
    numbers: dict[str, int] = {}
    return {n: numbers.setdefault(root(n), len(numbers) + 1) for n in names}


class Routes:
    """The cluster's pod routes, kept current from the view's Nodes and Calico's BGP resources."""

    def __init__(self, view: Any) -> None:
        from ..controllers.informer import Informer

        self.view = view
        self.peers = Informer(view.client, PEERS)
        self.configs = Informer(view.client, CONFIGS)
        view.informers[PEERS], view.informers[CONFIGS] = self.peers, self.configs
        self._islands: dict[str, int] = {}
        self.listeners: list[Callable[[], None]] = []
        for informer in (self.peers, self.configs, view.nodes):
            informer.add_handler(lambda *_: self._recompute())

    def _recompute(self) -> None:
        nodes = {n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in self.view.nodes.list()}
        found = islands(nodes, self.configs.list(), self.peers.list())
        if found != self._islands:
            self._islands = found
            for listener in self.listeners:
                listener()

    def islands(self) -> dict[str, int]:
        """Node -> island, every node in one island when all routes are there."""
        return dict(self._islands)

    def partitioned(self) -> bool:
        """Whether some node lacks routes to another (callers must then be located)."""
        return len(set(self._islands.values())) > 1

    def routed(self, src_node: str | None, dst_node: str | None) -> bool:
        """Whether ``src_node`` has a route to ``dst_node``'s pods (None: outside the routing, e.g. a
        host-network pod or the benchmark's own, or a node this table does not know yet)."""
        if src_node is None or dst_node is None or src_node == dst_node:
            return True
        a, b = self._islands.get(src_node), self._islands.get(dst_node)
        return a is None or b is None or a == b


# ---------------------------------------------------------------- what the cluster installs

def _crd(plural: str, kind: str, spec_props: dict) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                 "versions": [{"name": VERSION, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                   "metadata": {"type": "object"},
                                   "spec": {"type": "object", "properties": spec_props}}}}}]},
    }


def crds() -> list[dict]:
    """Calico's BGPPeer and BGPConfiguration CustomResourceDefinitions (the fields read here and
    Calico's common others)."""
    string, integer, boolean = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
    peer = {"node": string, "peerIP": string, "asNumber": integer, "nodeSelector": string, "peerSelector": string,
            "keepOriginalNextHop": boolean, "password": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "sourceAddress": string, "maxRestartTime": string, "filters": {"type": "array", "items": string}}
    config = {"nodeToNodeMeshEnabled": boolean, "asNumber": integer, "logSeverityScreen": string,
              "listenPort": integer, "bindMode": string, "nodeMeshMaxRestartTime": string,
              "serviceClusterIPs": {"type": "array", "items": {"type": "object",
                                                                "x-kubernetes-preserve-unknown-fields": True}}}
    return [_crd("bgppeers", "BGPPeer", peer), _crd("bgpconfigurations", "BGPConfiguration", config)]


def default_config() -> dict:
    """``default``: the node-to-node mesh on, Calico's default AS number."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "BGPConfiguration", "metadata": {"name": DEFAULT_CONFIG},
            "spec": {"nodeToNodeMeshEnabled": True, "asNumber": DEFAULT_AS, "logSeverityScreen": "Info"}}


__all__ = ["Routes", "SelectorError", "crds", "default_config", "enabled", "islands", "mesh_enabled",
           "parse_selector", "selects", "sessions", "PEERS", "CONFIGS", "DEFAULT_CONFIG"]
