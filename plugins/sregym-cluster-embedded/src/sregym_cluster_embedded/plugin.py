"""SREGym plugin registration: the ``embedded`` cluster provider and the ``sregym cluster`` commands."""

from __future__ import annotations

import json
import os
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from sregym_core import hookimpl
from sregym_core.errors import ClusterError
from sregym_core.types import ClusterProviderSpec

from . import cluster as clusters
from . import locks

CAPABILITIES = frozenset({"any", "embedded", "node-agent", "snapshot", "ld-preload"}
                         | ({"root"} if os.geteuid() == 0 and os.environ.get("SREGYM_POD_ISOLATION", "1") != "0"
                            else set()))  # root: tmpfs-backed volumes and isolated pods (a per-pod /dev/shm)
#: what a cluster of two nodes or more offers besides (the provider's default cluster has three)
MULTI_NODE = "multi-node"


class EmbeddedCluster:
    """The conductor's handle on one embedded cluster (see ``sregym_core.clusters``).

    ``owned``: a cluster this handle starts stops when this process is gone (and no other command
    uses it); otherwise it runs until ``sregym cluster down``. ``exclusive``: this handle changes the
    apps on the cluster (a run, a deploy), so a second exclusive handle on the same name fails at
    once instead of reverting this one's faults. Between ``up`` and ``down`` (or the end of the
    process) the handle counts as a user, so nobody stops the cluster under it.
    """

    def __init__(self, name: str = clusters.DEFAULT_NAME, nodes: int = clusters.DEFAULT_NODES, *, owned: bool = False,
                 exclusive: bool = False,
                 **options: Any) -> None:
        self.name = name
        self.nodes = nodes
        self.options = options
        self._owned = owned
        self._exclusive = exclusive
        self._use = locks.lock(name, locks.USERS)
        self._apps = locks.lock(name, locks.APPS)

    @property
    def capabilities(self) -> frozenset[str]:
        """The provider's capabilities, and ``multi-node`` when the cluster (running, or as it would
        start) has two nodes or more."""
        running = clusters.status(self.name)
        count = running.nodes if running.running and running.nodes is not None else self.nodes
        return CAPABILITIES | ({MULTI_NODE} if int(count) >= 2 else set())

    def up(self) -> None:
        clusters._check_name(self.name)
        if self._exclusive and not self._apps.acquire(timeout=0):
            raise ClusterError(f"cluster {self.name!r} is in use by another command that changes its apps: "
                               f"{self._apps.holder()}",
                               hints=["clusters run side by side: give this command another --cluster name",
                                      "or wait until that command has finished"])
        try:
            if not self._use.acquire(shared=True, timeout=clusters.LOCK_WAIT_S):
                raise ClusterError(f"cluster {self.name!r} is still stopping (waited {clusters.LOCK_WAIT_S:.0f} s)",
                                   hints=[f"`sregym cluster down --name {self.name}` stops it"])
            clusters.up(self.name, self.nodes, owner_pid=os.getpid() if self._owned else None,
                        **{k: v for k, v in self.options.items() if k in ("node_cpu", "node_memory", "timeout")})
        except BaseException:
            self._release()
            raise

    def down(self) -> None:
        """Stop the cluster, unless another command still uses it (then it keeps running)."""
        self._use.release()
        try:
            clusters.stop_if_unused(self.name)
        finally:
            self._apps.release()

    def _release(self) -> None:
        self._use.release()
        self._apps.release()

    def release(self) -> None:
        """Stop using the cluster without stopping it (``--keep-cluster`` from a process that goes on
        running, such as an RL environment's ``close()``): the next command may take its apps."""
        self._release()

    def kubeconfig(self, agent: bool = False) -> Path:
        return clusters.kubeconfig(self.name, agent=agent)

    def pod_networks(self) -> list[str]:
        """Every range a pod of any embedded cluster on this host may connect from: the clusters'
        pod and service prefixes, 127.<40..239>.0.0/16 (see settings.allocate), so the agent API
        refuses pods of this cluster and of the ones side by side with it."""
        import ipaddress

        from .settings import FIRST_OCTET, MAX_CLUSTERS

        first = ipaddress.IPv4Address(f"127.{FIRST_OCTET}.0.0")
        last = ipaddress.IPv4Address(f"127.{FIRST_OCTET + 2 * MAX_CLUSTERS - 1}.255.255")
        return [str(n) for n in ipaddress.summarize_address_range(first, last)]

    def status(self) -> clusters.ClusterInfo:
        return clusters.status(self.name)

    def new_agent_kubeconfig(self, user: str, groups: tuple[str, ...] = ("sregym:agents",)) -> Path:
        """A kubeconfig with a fresh token for one agent identity (``user`` in ``groups``)."""
        import urllib.parse

        from .apiserver.server import kubeconfig as make_kubeconfig

        body = json.dumps({"user": user, "groups": list(groups)}).encode()
        minted = self._admin("POST", "/sregym/tokens", body)
        admin = yaml.safe_load(self.kubeconfig().read_text())
        cluster = admin["clusters"][0]["cluster"]
        ca = clusters.cluster_dir(self.name) / "pki" / "ca.crt"
        config = make_kubeconfig(self.name, cluster["server"], ca.read_bytes(), user, minted["token"])
        path = clusters.cluster_dir(self.name) / f"agent-{urllib.parse.quote(user, safe='')}.kubeconfig"
        path.touch(mode=0o600)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    # -- fast resets ------------------------------------------------------------------------------
    def _admin(self, method: str, path: str, body: bytes | None = None) -> Any:
        config = yaml.safe_load(self.kubeconfig().read_text())
        server = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ctx = ssl.create_default_context(cafile=str(clusters.cluster_dir(self.name) / "pki" / "ca.crt"))
        req = urllib.request.Request(server + path, method=method, data=(body or b"") if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
            return json.loads(resp.read() or b"null")

    # -- node-level fault hooks (see apiserver/admin_faults.py) ----------------------------------
    def _admin_json(self, method: str, path: str, body: dict | None = None) -> Any:
        """An admin call with a JSON body; API errors raise ``urllib.error.HTTPError`` (a Status body)."""
        config = yaml.safe_load(self.kubeconfig().read_text())
        server = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ctx = ssl.create_default_context(cafile=str(clusters.cluster_dir(self.name) / "pki" / "ca.crt"))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(server + path, method=method, data=data,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=ctx, timeout=120) as resp:
            return json.loads(resp.read() or b"null")

    def stop_node(self, node: str) -> dict:
        """Stop a node's agent (no heartbeats: NotReady, then Unknown and evictions); pods keep running."""
        return self._admin_json("POST", f"/sregym/nodes/{node}/stop")

    def start_node(self, node: str) -> dict:
        return self._admin_json("POST", f"/sregym/nodes/{node}/start")

    def node_agents(self) -> dict:
        """``{node: {"agent": "running" | "stopped"}}``."""
        return self._admin_json("GET", "/sregym/nodes")

    def node_pods(self) -> list[dict]:
        """The node agents' own account of the pods they run (uid, IP, readiness, images): what the
        oracles believe instead of pod status (see ``node/account.py``)."""
        return self._admin_json("GET", "/sregym/nodes/pods")

    def node_fault(self, fault_id: str, **spec: Any) -> dict:
        """Set an LD_PRELOAD fault rule (fields as in ``admin_faults``: calls, errno, rate, mode,
        namespace, labels, pods, pinned, nodes, paths, volumes...); returns what it reaches."""
        return self._admin_json("PUT", f"/sregym/faults/shim/{fault_id}", spec)

    def disk_fill(self, fault_id: str, **spec: Any) -> dict:
        """Fill a claim's volume (namespace, claim, filler, fill_bytes): writes get ENOSPC while full."""
        return self._admin_json("PUT", f"/sregym/faults/diskfull/{fault_id}", spec)

    def network_fault(self, fault_id: str, **spec: Any) -> dict:
        """Delay/lose traffic in the service proxy (namespace, service | labels, delay_ms, jitter_ms, loss_pct)."""
        return self._admin_json("PUT", f"/sregym/faults/network/{fault_id}", spec)

    def fault_status(self, kind: str, fault_id: str) -> dict | None:
        """A fault record with what it reaches now (kind: shim, diskfull, network), or None."""
        import urllib.error

        try:
            return self._admin_json("GET", f"/sregym/faults/{kind}/{fault_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def clear_fault(self, kind: str, fault_id: str) -> bool:
        import urllib.error

        try:
            self._admin_json("DELETE", f"/sregym/faults/{kind}/{fault_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def faults(self) -> dict:
        return self._admin_json("GET", "/sregym/faults")

    def supervise(self, record_id: str, **spec: Any) -> dict:
        """Pods matching ``spec`` (namespace, labels | workload {kind, name}) that start from now on
        run under a seccomp filter naming ``calls`` (see ``admin_faults``)."""
        return self._admin_json("PUT", f"/sregym/faults/supervise/{record_id}", spec)

    def fault_mechanisms(self) -> dict[str, dict]:
        """What this cluster's nodes accept (``sregym_core.mechanisms``): the running cluster's own
        answer, else what a cluster started on this host would offer (probed here, nothing started)."""
        if clusters.status(self.name).running:
            try:
                return dict(self.faults()["mechanisms"])
            except Exception:  # noqa: BLE001 - a cluster that cannot answer: probe the host
                pass
        from .node.mechanisms import host_mechanisms

        return host_mechanisms()

    def snapshot(self, label: str = "baseline") -> None:
        """Save the whole cluster state under ``label`` (kept in the cluster process)."""
        self._admin("POST", f"/sregym/snapshots/{label}")

    def restore(self, label: str = "baseline") -> None:
        """Bring every object back to snapshot ``label``; controllers and nodes reconcile from there."""
        self._admin("POST", f"/sregym/snapshots/{label}/restore")


@hookimpl
def sregym_clusters() -> list[ClusterProviderSpec]:
    return [ClusterProviderSpec(
        name="embedded",
        summary="A Kubernetes-compatible cluster in one local process: pods run as real local processes",
        capabilities=CAPABILITIES | {MULTI_NODE},
        factory=EmbeddedCluster,
        default=True,
    )]


@hookimpl
def sregym_register_commands(cli: Any) -> None:
    from .cli import cluster

    cli.add_command(cluster)


@hookimpl
def sregym_local_images():
    """The ingress-nginx controller image the cluster's ingress addon runs (see ``ingress.addon``)."""
    from .ingress.addon import local_image

    return [local_image()]
