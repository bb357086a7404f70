"""Pod IP address management as Calico's IPAM does it: addresses come from IPPool objects.

A real cluster's CNI hands a new pod's sandbox an address from its pools (Calico: the cluster-scoped
``IPPool`` custom resources in ``crd.projectcalico.org/v1``, read with ``kubectl get ippools``).
The embedded cluster serves the same resource and its node agents allocate from it: a pod on a
node gets the lowest free address that lies both in the node's block (its ``podCIDR``, affine to
the node as with Calico's ``strictAffinity``: no node borrows another's addresses) and in an
enabled pool. When there is none, the sandbox fails as Calico's plugin fails it: the pod stays
ContainerCreating with a ``FailedCreatePodSandBox`` event saying no IP addresses are available, and
the kubelet retries.

The default pool ``default-ipv4-ippool`` covers the cluster's whole pod range (``<prefix>.0.0/16``),
so every node allocates exactly as before pools existed. ``SREGYM_EMBEDDED_IPAM=0`` installs no
pool resource; a cluster without the resource type allocates from the node's block alone.
"""

from __future__ import annotations

import ipaddress
import os
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

GROUP, VERSION, PLURAL, KIND = "crd.projectcalico.org", "v1", "ippools", "IPPool"
RESOURCE = f"{PLURAL}.{GROUP}"
DEFAULT_POOL = "default-ipv4-ippool"
#: the first addresses of a node's /24 are the network and the node itself; .255 its broadcast
FIRST_HOST, LAST_HOST = 2, 254


def enabled() -> bool:
    return os.environ.get("SREGYM_EMBEDDED_IPAM", "1") != "0"


@dataclass(frozen=True)
class Pool:
    name: str
    cidr: ipaddress.IPv4Network
    disabled: bool = False


def pools_from(objects: Iterable[dict]) -> list[Pool]:
    """The usable IPv4 pools among IPPool objects (a pool with a CIDR that does not parse is skipped,
    as Calico's IPAM skips an invalid pool)."""
    out = []
    for obj in objects:
        spec = obj.get("spec") or {}
        try:
            cidr = ipaddress.ip_network(str(spec.get("cidr", "")), strict=False)
        except ValueError:
            continue
        if isinstance(cidr, ipaddress.IPv4Network):
            out.append(Pool(obj.get("metadata", {}).get("name", ""), cidr, bool(spec.get("disabled"))))
    return out


def node_candidates(node_block: str) -> list[str]:
    """The addresses a node's pods may get from its block, lowest first."""
    net = ipaddress.ip_network(node_block, strict=False)
    base = int(net.network_address)
    return [str(ipaddress.ip_address(base + host)) for host in range(FIRST_HOST, LAST_HOST + 1)
            if base + host <= int(net.broadcast_address)]


def allocate(node_block: str, pools: list[Pool] | None, used: set[str]) -> str | None:
    """The lowest free address of ``node_block`` inside an enabled pool (``pools`` None: no pool
    resource on this cluster, the whole block is usable); None when there is none."""
    for ip in node_candidates(node_block):
        if ip in used:
            continue
        if pools is None or any(not p.disabled and ipaddress.ip_address(ip) in p.cidr for p in pools):
            return ip
    return None


def free_count(node_block: str, pools: list[Pool] | None, used: set[str]) -> int:
    """How many more pods the node can give an address (what ``is_present`` checks count)."""
    return sum(1 for ip in node_candidates(node_block) if ip not in used and (
        pools is None or any(not p.disabled and ipaddress.ip_address(ip) in p.cidr for p in pools)))


def sandbox_error(node: str, pools: list[Pool] | None, pod_uid: str) -> str:
    """The kubelet's FailedCreatePodSandBox message for an exhausted pool, in Calico's words (the
    sandbox id is the pod's own, so repeated failures count up one event)."""
    names = ",".join(p.name for p in pools or [] if not p.disabled) or "none"
    sandbox = hashlib.sha256(pod_uid.encode()).hexdigest()
    return (f'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox '
            f'"{sandbox}": plugin type="calico" failed (add): failed to request 1 IPv4 addresses. IPAM allocated '
            f"only 0: no IP addresses available in the IP pools [{names}] for host {node} (strict affinity: "
            f"no more free affine blocks)")


def read_pools(client: Any) -> list[Pool] | None:
    """The cluster's pools, or None when the cluster serves no IPPool resource."""
    try:
        items = client.list_nocopy(RESOURCE)
    except Exception:  # noqa: BLE001 - no such resource type: allocate from the node's block alone
        return None
    return pools_from(items)


# ---------------------------------------------------------------- what the cluster installs


def crd() -> dict:
    """Calico's IPPool CustomResourceDefinition (the fields this IPAM reads, and Calico's others)."""
    spec_props = {"cidr": {"type": "string"}, "blockSize": {"type": "integer"},
                  "ipipMode": {"type": "string"}, "vxlanMode": {"type": "string"},
                  "natOutgoing": {"type": "boolean"}, "disabled": {"type": "boolean"},
                  "disableBGPExport": {"type": "boolean"}, "nodeSelector": {"type": "string"},
                  "allowedUses": {"type": "array", "items": {"type": "string"}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": RESOURCE},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"plural": PLURAL, "singular": "ippool", "kind": KIND, "listKind": "IPPoolList"},
                 "versions": [{"name": VERSION, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                   "metadata": {"type": "object"},
                                   "spec": {"type": "object", "required": ["cidr"], "properties": spec_props}}}}}]},
    }


def default_pool(pod_prefix: str) -> dict:
    """``default-ipv4-ippool`` over the cluster's whole pod range, with Calico's defaults except the
    block size: each embedded node owns one /24 of the range."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": DEFAULT_POOL},
            "spec": {"cidr": f"{pod_prefix}.0.0/16", "blockSize": 24, "ipipMode": "Never", "vxlanMode": "Never",
                     "natOutgoing": True, "nodeSelector": "all()", "allowedUses": ["Workload", "Tunnel"]}}


__all__ = ["Pool", "allocate", "free_count", "pools_from", "read_pools", "sandbox_error", "crd", "default_pool",
           "enabled", "DEFAULT_POOL", "RESOURCE"]
