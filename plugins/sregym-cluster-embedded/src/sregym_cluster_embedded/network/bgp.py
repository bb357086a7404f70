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
routes to every other, as before. ``Routes`` computes them (``sregym_core.faultkit.calico``, which
the fault packs share): two nodes exchange routes when the mesh is on, or when they are joined by
BGP sessions: a session is a node a BGPPeer applies to and a node its peerSelector selects (the
reflector); routes travel along sessions, so nodes peering with the same reflector (or reflectors
peering with each other) reach one another. This treats every node a peerSelector selects as a
reflector (Calico also wants its ``routeReflectorClusterID``; the embedded cluster keeps no Calico
Node objects). A node that peers with nobody has routes to its own pods only: with the mesh off and
a selector naming a label no node carries, pods on different nodes cannot reach each other while
same-node traffic works.

Without a route, a pod's connection to a pod on the other node goes nowhere: the service proxy
holds it unanswered (the caller's connect or first read times out, as a SYN sent into a missing
route does), and an open connection stalls until the route is back (proxy.py); as root, a direct
``connect()`` to the other node's pod address is refused by the kernel guard (netguard.py,
EHOSTUNREACH). Host-network pods and the benchmark's hidden namespaces are outside the routing.

``SREGYM_EMBEDDED_BGP=0`` installs neither resource; a cluster without them routes everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from sregym_core.faultkit.calico import (
    CONFIGS,
    DEFAULT_CONFIG,
    GROUP,
    PEERS,
    VERSION,
    SelectorError,
    islands,
    mesh_enabled,
    parse_selector,
    selects,
    sessions,
)

DEFAULT_AS = 64512


def enabled() -> bool:
    return os.environ.get("SREGYM_EMBEDDED_BGP", "1") != "0"


# ---------------------------------------------------------------- routes (computed by faultkit.calico)

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
