"""The kubelet loop of each virtual node, and the NodeSet the cluster process starts.

Per node: register the Node object (capacity, allocatable, conditions, addresses, nodeInfo),
renew its Lease in ``kube-node-lease`` every 10 s, watch pods bound to it and run them as
:class:`~.pod.PodWorker`\\ s, finish graceful deletions (stop, then delete with grace 0).
``stop_node`` stops the agent but, as on a real node whose kubelet dies, leaves the pods'
processes running; ``start_node`` resumes and reconciles.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import platform
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil

from ..network import current as current_network
from ..network import ipam
from . import isolation, mountns, portrange
from .cgroups import Backend, detect_backend
from .images import ImageCatalog, Recipe, default_catalog, python_executable
from .eviction import EvictionManager
from .pod import PodWorker
from .runtime import NodeRuntime
from .service import KubeletService
from .shim import SHARED_DIR, build_shim, ensure_shared_dir

log = logging.getLogger(__name__)
COMPONENT = "kubelet"
LEASE_NS = "kube-node-lease"
LEASE_PERIOD_S = 10.0
EVICTION_MONITORING_S = 10.0
NODE_STATUS_PERIOD_S = 40.0
MAX_PODS = 110


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _micro_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


class NodeAgent:
    """One virtual node's kubelet."""

    def __init__(self, nodes: NodeSet, name: str, index: int) -> None:
        self.nodes = nodes
        self.name = name
        self.index = index
        self.client = nodes.client
        self.settings = nodes.settings
        self.state_dir: Path = Path(nodes.settings.state_dir)
        self.root = self.state_dir / "nodes" / name
        prefix = nodes.settings.pod_cidr_prefix
        self.host_ip = f"{prefix}.{index}.1"
        self.pod_cidr = f"{prefix}.{index}.0/24"
        self._ip_prefix = f"{prefix}.{index}."
        self._ips: dict[str, str] = {}
        self.workers: dict[str, PodWorker] = {}
        self.fault_env: dict[str, str] = {}
        self.paused = True
        self._tasks: list[asyncio.Task] = []
        self._node_uid = ""
        self._reported_pressure = (False, False, False)
        self.cluster_domain = getattr(nodes.settings, "cluster_domain", "cluster.local")
        self.eviction = EvictionManager(self)
        self.service = KubeletService(self)
        self.allocatable = {"cpu": str(nodes.settings.node_cpu), "memory": str(nodes.settings.node_memory),
                            "pods": str(MAX_PODS), "ephemeral-storage": "100Gi"}

    # ------------------------------------------------------------ shared with pods

    @property
    def catalog(self) -> ImageCatalog:
        return self.nodes.catalog

    @property
    def backend(self) -> Backend:
        return self.nodes.backend

    @property
    def shim(self):
        return self.nodes.shim

    @property
    def service_env_source(self):
        return self.nodes.service_env_source

    def track(self, pid: int) -> None:
        self.nodes.track(pid)

    def untrack(self, pid: int) -> None:
        self.nodes.untrack(pid)

    async def event(self, involved: dict, reason: str, message: str, type: str = "Normal") -> None:
        if self.paused:
            return
        involved = {"kind": involved.get("kind") or "Pod", "apiVersion": involved.get("apiVersion") or "v1",
                    **{k: v for k, v in involved.items() if k not in ("kind", "apiVersion")}}
        with contextlib.suppress(Exception):
            await self.client.create_event(involved, reason, message, type=type, component=COMPONENT, host=self.name)

    def allocate_ip(self, uid: str) -> str | None:
        """The pod's address: the lowest free one of this node's block inside the cluster's IP pools
        (network/ipam.py); None when the pools have none left here."""
        if uid in self._ips:
            return self._ips[uid]
        ip = ipam.allocate(self.pod_cidr, ipam.read_pools(self.client), set(self._ips.values()))
        if ip is not None:
            self._ips[uid] = ip
        return ip

    def sandbox_error(self, uid: str) -> str:
        return ipam.sandbox_error(self.name, ipam.read_pools(self.client), uid)

    def release_ip(self, uid: str) -> None:
        self._ips.pop(uid, None)

    def host_port_conflict(self, worker: PodWorker) -> bool:
        wanted = _host_ports(worker.pod)
        if not wanted:
            return False
        for other in self.workers.values():
            if other is not worker and not other.terminating and other.phase() not in ("Succeeded", "Failed"):
                if wanted & _host_ports(other.pod):
                    return True
        return False

    # ------------------------------------------------------------ agent lifecycle

    async def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self.paused = False
        await self.eviction.ensure_cluster_config()
        await self.eviction.reload(force=True)
        if not self.service.may_start():  # it exits on its configuration; systemd restarts it (service.py)
            self.paused = True
            return
        await self._register()
        await self._renew_lease()
        if self.nodes.isolation_warning:
            node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": self.name, "uid": self.name}}
            with contextlib.suppress(Exception):
                await self.event(node, "PodIsolationUnavailable", self.nodes.isolation_warning, "Warning")
        self._tasks = [asyncio.create_task(self._heartbeat(), name=f"heartbeat-{self.name}"),
                       asyncio.create_task(self._watch_pods(), name=f"podwatch-{self.name}"),
                       asyncio.create_task(self._eviction_loop(), name=f"eviction-{self.name}")]
        for worker in self.workers.values():
            worker.mark_dirty()

    async def stop_agent(self) -> None:
        """Stop talking to the API (heartbeats, watch, status); pods keep running."""
        self.paused = True
        self.service.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def shutdown(self, grace: float) -> None:
        await self.stop_agent()
        workers = list(self.workers.values())
        await asyncio.gather(*(w.terminate(grace) for w in workers), return_exceptions=True)
        await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
        self.workers.clear()

    # ------------------------------------------------------------ Node, Lease

    def _node_object(self) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux",
                           "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                           "beta.kubernetes.io/arch": "amd64"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            },
            "spec": {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]},
        }

    def _node_status(self, existing: dict | None) -> dict:
        now = _now()
        previous = {c.get("type"): c for c in (existing or {}).get("conditions") or []}

        def cond(kind: str, status: str, reason: str, message: str) -> dict:
            old = previous.get(kind)
            changed = not old or old.get("status") != status
            return {"type": kind, "status": status, "lastHeartbeatTime": now,
                    "lastTransitionTime": now if changed or old is None else old.get("lastTransitionTime", now),
                    "reason": reason, "message": message}

        capacity = dict(self.allocatable)
        uname = platform.uname()
        memory, disk, pids = self._reported_pressure = self.pressure()
        return {
            "capacity": capacity,
            "allocatable": dict(self.allocatable),
            "conditions": [
                cond("MemoryPressure", "True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available")
                if memory else
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "True", "KubeletHasDiskPressure", "kubelet has disk pressure") if disk else
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "True", "KubeletHasInsufficientPID", "kubelet has insufficient PID available")
                if pids else
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": self.host_ip}, {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, f"{self.settings.name}.{self.name}").hex,
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.settings.name}/{self.name}")),
                "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{self.settings.name}/{self.name}/{os.getpid()}")),
                "kernelVersion": uname.release,
                "osImage": _os_image(),
                "containerRuntimeVersion": "sregym-process://0.1.0",
                "kubeletVersion": getattr(self.settings, "kubernetes_version", "v1.32.4"),
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [],
        }

    def pressure(self) -> tuple[bool, bool, bool]:
        """(memory, disk, pid) pressure from the eviction manager's hard thresholds (see eviction.py)."""
        return self.eviction.pressure()

    async def _eviction_loop(self) -> None:
        while True:
            await asyncio.sleep(EVICTION_MONITORING_S)
            try:
                await self.eviction.reload()
                await self.eviction.housekeeping()
                pressure = self.pressure()
                if pressure != self._reported_pressure:
                    await self._update_node_status()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the next round may succeed
                log.warning("node %s eviction round failed", self.name, exc_info=True)

    async def _register(self) -> None:
        try:
            node = await self.client.get("nodes", self.name)
        except Exception as exc:  # noqa: BLE001
            if getattr(exc, "code", None) != 404:
                raise
            node = await self.client.create("nodes", self._node_object())
        self._node_uid = node["metadata"].get("uid", "")
        await self._update_node_status()

    async def _update_node_status(self) -> None:
        for _ in range(5):
            node = await self.client.get("nodes", self.name)
            node["status"] = {**(node.get("status") or {}), **self._node_status(node.get("status"))}
            try:
                await self.client.update("nodes", node, subresource="status")
                return
            except Exception as exc:  # noqa: BLE001
                if getattr(exc, "code", None) != 409:
                    raise

    async def _renew_lease(self) -> None:
        spec = {"holderIdentity": self.name, "leaseDurationSeconds": 40, "renewTime": _micro_now()}
        try:
            lease = await self.client.get("leases.coordination.k8s.io", self.name, LEASE_NS)
        except Exception as exc:  # noqa: BLE001
            if getattr(exc, "code", None) != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": LEASE_NS,
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                                      "uid": self._node_uid}] if self._node_uid else []},
                    "spec": spec}
            try:
                await self.client.create("leases.coordination.k8s.io", body, LEASE_NS)
            except Exception as create_exc:  # noqa: BLE001
                if getattr(create_exc, "code", None) == 404:  # namespace missing: create it once
                    with contextlib.suppress(Exception):
                        await self.client.create("namespaces", {"metadata": {"name": LEASE_NS}})
                    await self.client.create("leases.coordination.k8s.io", body, LEASE_NS)
                elif getattr(create_exc, "code", None) != 409:
                    raise
            return
        lease["spec"] = {**(lease.get("spec") or {}), **spec}
        with contextlib.suppress(Exception):
            await self.client.update("leases.coordination.k8s.io", lease)

    async def _heartbeat(self) -> None:
        last_status = time.monotonic()
        last_pressure = self.pressure()
        while True:
            await asyncio.sleep(LEASE_PERIOD_S)
            try:
                await self._renew_lease()
                pressure = self.pressure()
                if pressure != last_pressure or time.monotonic() - last_status >= NODE_STATUS_PERIOD_S:
                    last_pressure = pressure
                    await self._update_node_status()
                    last_status = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep beating; the next round may succeed
                log.warning("node %s heartbeat failed", self.name, exc_info=True)

    # ------------------------------------------------------------ pods

    async def _watch_pods(self) -> None:
        selector = f"spec.nodeName={self.name}"
        while True:
            try:
                current = await self.client.list("pods", None, field_selector=selector)
                alive = {p["metadata"].get("uid") for p in current}
                for uid in [u for u in self.workers if u not in alive]:
                    asyncio.create_task(self._force_remove(uid))
                async for kind, pod in self.client.watch("pods", None, field_selector=selector):
                    await self._on_pod(kind, pod)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001
                log.warning("node %s: pod watch failed; restarting it", self.name, exc_info=True)
            await asyncio.sleep(0.5)

    async def _on_pod(self, kind: str, pod: dict) -> None:
        meta = pod.get("metadata", {})
        uid = meta.get("uid", "")
        worker = self.workers.get(uid)
        if kind == "DELETED":
            if worker is not None:
                asyncio.create_task(self._force_remove(uid))
            return
        if worker is None:
            if meta.get("deletionTimestamp"):
                await self.client.delete("pods", meta.get("name", ""), meta.get("namespace"), grace_period=0)
                return
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return  # finished before this agent started: nothing to run
            worker = PodWorker(self, pod)
            self.workers[uid] = worker
            worker.start()
            return
        worker.pod["metadata"]["labels"] = meta.get("labels") or {}
        worker.pod["metadata"]["annotations"] = meta.get("annotations") or {}
        if not worker.terminating and not meta.get("deletionTimestamp"):
            asyncio.create_task(worker.update_spec(pod))
        if meta.get("deletionTimestamp") and not worker.terminating:
            grace = meta.get("deletionGracePeriodSeconds")
            grace = worker.grace_period if grace is None else float(grace)
            worker.terminating = True
            asyncio.create_task(self._graceful_remove(worker, grace))

    async def _graceful_remove(self, worker: PodWorker, grace: float) -> None:
        try:
            await worker.terminate(grace)
            await self.client.delete("pods", worker.name, worker.namespace, grace_period=0)
        except Exception:  # noqa: BLE001
            log.warning("deleting pod %s/%s failed", worker.namespace, worker.name, exc_info=True)
        finally:
            if self.workers.get(worker.uid) is worker:
                del self.workers[worker.uid]
                await worker.close()

    async def _force_remove(self, uid: str) -> None:
        worker = self.workers.pop(uid, None)
        if worker is None:
            return
        worker.terminating = True
        await worker.terminate(0)
        await worker.close()

    def find(self, namespace: str, name: str) -> PodWorker | None:
        matches = [w for w in self.workers.values() if w.namespace == namespace and w.name == name]
        return matches[-1] if matches else None


def _host_ports(pod: dict) -> set[tuple[str, int, str]]:
    ports = set()
    for container in pod.get("spec", {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ports.add((port.get("hostIP") or "0.0.0.0", int(port["hostPort"]), port.get("protocol") or "TCP"))
    return ports


def _os_image() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return platform.platform()


class NodeSet:
    """All node agents of one cluster plus the shared runtime pieces."""

    def __init__(self, client: Any, settings: Any, *, image_sources: Iterable[Callable[[], Iterable[tuple[str, Recipe]]]] = (),
                 service_env: Callable[[str], Any] | None = None, backend: str | None = None,
                 node_names: list[str] | None = None, pod_env: Callable[[dict], dict] | None = None,
                 resolv_conf: Callable[[dict], str | None] | None = None, mount_ns: bool | None = None,
                 preload_shim: bool = True, token_source: Callable[[dict, dict], Any] | None = None,
                 net_guard: Any = None) -> None:
        self.client = client
        self.settings = settings
        self.catalog = default_catalog(image_sources)
        state_dir = Path(settings.state_dir)
        # one cgroup parent per cluster *instance*: clusters of the same name under different
        # state dirs (tests, other SREGYM_HOMEs) must never clean up each other's groups
        instance = hashlib.sha1(str(state_dir.resolve()).encode()).hexdigest()[:8]
        self.backend = detect_backend(f"{settings.name}-{instance}", backend)
        state_dir.mkdir(parents=True, exist_ok=True)
        # without the compiled shim, Python containers get the sitecustomize fallback
        self.shim = build_shim(state_dir) if preload_shim else None
        self.service_env_source = service_env
        #: (pod, serviceAccountToken projection) -> token (or awaitable): real SA tokens for pods
        self.token_source = token_source
        #: extra env for every container of a pod (e.g. the network's DNS settings); called per start
        self.pod_env = pod_env
        #: the text of a pod's /etc/resolv.conf (cluster DNS), used when pods get a mount namespace
        self.resolv_conf = resolv_conf
        #: the network's NetGuard: processes of pods in ordinary namespaces join its cgroup
        self.net_guard = net_guard
        #: the isolated-pod planner (root), or None and the reason in ``isolation_warning``; probed
        #: in a thread when the nodes start (a probe container must not stall the API server's loop)
        self.isolation: isolation.Planner | None = None
        self.isolation_warning = ""
        self._mount_ns_choice = mount_ns
        self._dns_env: Callable[[dict], dict] | None = None  # the resolver hook, for pods without their own /etc
        self.mount_ns = bool(mount_ns)
        self.essential_paths = mountns.essential_paths(state_dir)
        self.pids: set[int] = set()
        #: called with a pod (its IP assigned, volumes set up) right before its first container
        #: starts: the fault hooks scope their rules to the pod before any of its processes runs
        self.pod_start_hooks: list[Callable[[dict], None]] = []
        #: the fault hooks' rules channel: pod -> a read-only descriptor the container's main process
        #: inherits (see faultshim.py), or None; ``kubectl exec`` processes never get one
        self.fault_channel: Callable[[dict], int | None] | None = None
        #: the seccomp supervisor (node/seccompfault.py) that gets each container's filter listener
        self.syscall_supervisor: Any = None
        #: pods' net.ipv4.ip_local_port_range, by their cgroup ids (node/portrange.py; made on first use)
        self.port_ranges: portrange.PortRanges | None = None
        self._watchdog = _start_watchdog()
        for directory in self.backend.directories():
            self._tell_watchdog(f"cg {directory}")
        if self.net_guard is not None:  # the pods' own cgroups live under it: gone with a crashed cluster too
            self._tell_watchdog(f"cg {self.net_guard.cgroup}")
        count = max(int(getattr(settings, "nodes", 1) or 1), 1)
        names = node_names or [f"node-{i + 1}" for i in range(count)]
        self.agents: dict[str, NodeAgent] = {n: NodeAgent(self, n, i + 1) for i, n in enumerate(names)}
        self.runtime = NodeRuntime(self)
        self._start_task: asyncio.Task | None = None

    def __await__(self):
        async def _self() -> NodeSet:
            await self.started()
            return self
        return _self().__await__()

    async def started(self) -> None:
        """Wait until every node is registered (start_nodes begins this in the background)."""
        if self._start_task is None:
            self._start_task = asyncio.get_running_loop().create_task(self._start_all())
        await asyncio.shield(self._start_task)

    def _probe_isolation(self) -> None:
        _probe(self)

    async def _start_all(self) -> None:
        if self.isolation is None and not self.isolation_warning:
            await asyncio.to_thread(self._probe_isolation)
        await asyncio.gather(*(agent.start() for agent in self.agents.values()))

    def pod_processes(self) -> list[tuple[str, str, list[int]]]:
        """(node, namespace, pids) of every pod's processes: how the service proxy finds which pod
        opened a connection (network/callers.py)."""
        out = []
        for name, agent in self.agents.items():
            for worker in list(agent.workers.values()):
                pids: list[int] = []
                for runner in worker.all_runners():
                    with contextlib.suppress(Exception):
                        if runner.group is not None:
                            pids += runner.group.pids()
                        elif runner.process is not None:
                            pids.append(runner.process.pid)
                if pids:
                    out.append((name, worker.namespace, pids))
        return out

    def track(self, pid: int) -> None:
        self.pids.add(pid)
        self._tell_watchdog(f"pg {pid}")

    def untrack(self, pid: int) -> None:
        self.pids.discard(pid)
        self._tell_watchdog(f"unpg {pid}")

    def _tell_watchdog(self, line: str) -> None:
        if self._watchdog is not None and self._watchdog.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._watchdog.stdin.write(line.encode() + b"\n")
                self._watchdog.stdin.flush()

    async def stop_node(self, name: str) -> None:
        await self.agents[name].stop_agent()

    async def start_node(self, name: str) -> None:
        await self.agents[name].start()

    def pod_cgroup(self, uid: str) -> Path | None:
        """A pod's own cgroup v2 directory (under the network guard's), or None without the guard."""
        if self.net_guard is None or not uid:
            return None
        return self.net_guard.cgroup / f"pod-{uid}"

    def apply_port_range(self, uid: str, low: int, high: int, pod_ip: str) -> str:
        """Give the pod's processes its own local port range; "" when applied, else why not."""
        cgroup = self.pod_cgroup(uid)
        if cgroup is None:
            return "pods have no cgroup v2 directories here (the network guard is off: not root or no cgroup v2)"
        available, reason = portrange.probe()
        if not available:
            return reason
        cgroup_id = portrange.cgroup_id(cgroup)
        if cgroup_id is None:
            return f"the pod's cgroup {cgroup} is missing"
        try:
            if self.port_ranges is None:
                self.port_ranges = portrange.PortRanges()
            self.port_ranges.add(cgroup_id, low, high, pod_ip)
        except OSError as exc:
            return f"the kernel refused the port range program: {exc.strerror or exc}"
        return ""

    def release_port_range(self, uid: str) -> None:
        cgroup = self.pod_cgroup(uid)
        cgroup_id = portrange.cgroup_id(cgroup) if cgroup is not None else None
        if self.port_ranges is not None and cgroup_id is not None:
            self.port_ranges.remove(cgroup_id)

    def set_fault_env(self, node: str, env: dict[str, str]) -> None:
        """Extra env for processes started from now on (e.g. an LD_PRELOAD fault shim)."""
        self.agents[node].fault_env = dict(env)

    def container_stats(self) -> list[dict]:
        """Per-container counters (CPU, memory, CFS throttling) for cAdvisor-style metrics."""
        rows = []
        for agent in self.agents.values():
            for worker in agent.workers.values():
                for runner in worker.all_runners():
                    rows.append({"node": agent.name, "namespace": worker.namespace, "pod": worker.name,
                                 **runner.stats()})
        return rows

    async def stop(self, grace: float = 2.0) -> None:
        """Stop every agent and kill every process the nodes started; verify none survives."""
        await asyncio.gather(*(a.shutdown(grace) for a in self.agents.values()), return_exceptions=True)
        for pid in list(self.pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in self.pids):
            await asyncio.sleep(0.05)
        self.pids = {p for p in self.pids if _alive(p)}
        with contextlib.suppress(Exception):
            self.backend.cleanup()
        if self.port_ranges is not None:
            self.port_ranges.close()
            self.port_ranges = None
        if self.net_guard is not None:  # its cgroup is empty now: remove it (whoever stops first)
            with contextlib.suppress(OSError):
                for cgroup in self.net_guard.cgroup.glob("pod-*"):
                    with contextlib.suppress(OSError):
                        cgroup.rmdir()
            with contextlib.suppress(Exception):
                self.net_guard.close()
        if self._watchdog is not None:
            with contextlib.suppress(OSError, ValueError):
                if self._watchdog.stdin is not None:  # its pipe (stdin=PIPE): closed, the watchdog ends
                    self._watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(self._watchdog.wait, 5)
            self._watchdog = None
        if getattr(getattr(self.client, "core", None), "runtime", None) is self.runtime:
            self.client.core.runtime = None


ISOLATION_UNENFORCED = ("pods are NOT isolated on this node ({reason}): they run as processes of the node agent's "
                        "user, see the host's filesystem and processes, and can reach every pod and service; "
                        "Pod Security admission still refuses privileged, host-namespace and hostPath pods")


def _probe(nodes: NodeSet) -> None:
    state_dir = Path(nodes.settings.state_dir)
    choice = nodes._mount_ns_choice
    nodes.isolation, nodes.isolation_warning = _isolation(state_dir, choice)
    if nodes.isolation is not None:
        choice = True
    nodes.mount_ns = mountns.works(state_dir) if choice is None else choice
    if not nodes.mount_ns and nodes.pod_env is None and nodes._dns_env is not None:
        nodes.pod_env = nodes._dns_env  # no private /etc/resolv.conf: the network's resolver hook
    _write_isolation_state(state_dir, nodes.isolation_warning)
    if nodes.isolation_warning:
        log.warning("%s", nodes.isolation_warning)


def _isolation(state_dir: Path, mount_ns: bool | None) -> tuple[isolation.Planner | None, str]:
    """The planner for isolated pods when this node can enforce it, else the warning saying why not."""
    if mount_ns is False or os.environ.get("SREGYM_POD_ISOLATION", "1") == "0":
        return None, ISOLATION_UNENFORCED.format(reason="turned off")
    if os.geteuid() != 0:
        return None, ISOLATION_UNENFORCED.format(reason="the node agent is not root: no mount or PID namespaces")
    if not isolation.available():
        return None, ISOLATION_UNENFORCED.format(reason="the kernel has no PID namespaces")
    init = isolation.build_init(ensure_shared_dir())
    if init is None:
        return None, ISOLATION_UNENFORCED.format(reason="no C compiler to build podinit")
    planner = isolation.Planner(init, SHARED_DIR / "sandbox")
    if not isolation.works(planner, state_dir):
        return None, ISOLATION_UNENFORCED.format(reason="a probe container could not be isolated")
    return planner, ""


def _write_isolation_state(state_dir: Path, warning: str) -> None:
    """``<state_dir>/isolation.json``: what ``sregym cluster status`` reports."""
    import json
    with contextlib.suppress(OSError):
        (state_dir / "isolation.json").write_text(json.dumps({"pods_isolated": not warning, "warning": warning}))


def _start_watchdog() -> subprocess.Popen | None:
    """The process that cleans up if this one dies without calling ``stop`` (see watchdog.py)."""
    try:
        return subprocess.Popen([python_executable(), str(Path(__file__).with_name("watchdog.py"))],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
    except OSError:
        log.warning("could not start the node watchdog; pods may outlive a crashed cluster")
        return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cluster_network(client: Any) -> Any:
    """The network started for this very cluster (same client), if any."""
    network = current_network()
    return network if network is not None and getattr(network, "client", None) is client else None


def start_nodes(client: Any, settings: Any, **options: Any) -> NodeSet:
    """Create the node agents and start them in the running loop. The result may be awaited to
    wait until every Node is registered; ``options`` go to :class:`NodeSet`."""
    options.setdefault("image_sources", tuple(getattr(settings, "image_sources", ()) or ()))
    network = _cluster_network(client)
    if network is not None:  # the same cluster's network: its DNS and service variables
        options.setdefault("resolv_conf", network.resolv_conf)
        options.setdefault("service_env", network.service_env)
        options.setdefault("net_guard", network.guard)
    nodes = NodeSet(client, settings, **options)
    if network is not None:
        nodes._dns_env = network.dns_env  # used when pods get no private /etc (see _probe)
    core = getattr(client, "core", None)
    if core is not None:
        core.runtime = nodes.runtime
    nodes._start_task = asyncio.get_running_loop().create_task(nodes._start_all())
    return nodes
