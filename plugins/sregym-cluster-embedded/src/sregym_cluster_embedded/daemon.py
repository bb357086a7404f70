"""The per-cluster process: API server, controllers, network and node agents in one event loop.

State lives in ``$SREGYM_HOME/clusters/<name>/``: ``pid``, ``port``, ``info.json``, ``pki/``,
``kubeconfig`` (admin), ``agent-kubeconfig`` (restricted identity), ``tokens.json``, ``cluster.log``.
Started by :func:`sregym_cluster_embedded.cluster.up`; stops on SIGTERM/SIGINT, or when the owner
process (``--owner-pid``) is gone and no other command uses the cluster (see :mod:`.locks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psutil

from sregym_core.errors import ClusterError

from . import locks
from .apiserver.admin_faults import FaultHooks
from .apiserver.app import ApiServer
from .apiserver.server import RunningApiServer
from .client import LocalClient
from .cluster import KEEP, SERVING_FILES, STOPPING, _daemon_pid
from .controllers import start_controllers
from .network import pod_dns_env, pod_resolv_conf, start_network
from .node import start_nodes
from .plugin_images import plugin_image_source
from .settings import ClusterSettings, allocate, cluster_dir, node_monitor_grace_period

log = logging.getLogger("sregym_cluster_embedded.daemon")


class Part(Protocol):
    """What the cluster process starts besides the API server, and stops in reverse order."""

    async def stop(self) -> None: ...


class StartingPart(Part, Protocol):
    """A part as its start function returns it: awaiting it waits until it runs, and gives it back."""

    def __await__(self) -> Generator[Any, None, Any]: ...


PartT = TypeVar("PartT", bound=StartingPart)


def make_settings(name: str, nodes: int, *, host: str = "127.0.0.1", port: int = 0,
                  node_cpu: str = "4", node_memory: str = "8Gi") -> ClusterSettings:
    pod_prefix, service_prefix = allocate(name)
    return ClusterSettings(name=name, state_dir=cluster_dir(name), nodes=nodes, node_cpu=node_cpu,
                           node_memory=node_memory, pod_cidr_prefix=pod_prefix, service_cidr_prefix=service_prefix,
                           api_host=host, api_port=port, node_monitor_grace_period=node_monitor_grace_period())


class ClusterProcess:
    """Everything one cluster runs: the API server, then controllers, network, nodes and the node
    fault hooks, in that order. A part that fails to start fails the whole cluster (no cluster
    without its controllers); ``stop`` stops what did start, in reverse."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self.server = RunningApiServer(settings)
        self.client = LocalClient(self.server.core)
        self.parts: list[tuple[str, Part]] = []
        #: the plugin host of this process (the cluster runs in a process of its own), built when the
        #: node agent first asks for the images plugins declare
        self._host: Any = None

    async def start(self) -> None:
        await self.start_api()
        await self.start_parts()

    async def start_api(self) -> None:
        await self.server.start()
        self.settings = self.server.settings

    async def start_parts(self) -> None:
        """Controllers, network and nodes; they list-then-watch, so starting them after the API
        already answers loses nothing."""
        controllers = await self._started("controllers", start_controllers(self.client, self.settings))
        network = await self._started("network", start_network(self.client, self.settings))
        # images that installed apps and plugins declare (the node's own catalog has the standard
        # ones); pods resolve cluster names through the network's DNS: a resolv.conf in their mount
        # namespace (root) or the resolver hook the env points Python processes at (no root)
        nodes = await self._started("node", start_nodes(
            self.client, self.settings, image_sources=[self._plugin_images], pod_env=pod_dns_env,
            resolv_conf=pod_resolv_conf, token_source=self._service_account_token))
        # which pod opened a connection, for the rules of its node's kube-proxy (network/callers.py)
        network.proxy.pod_processes = nodes.pod_processes
        # the admin fault endpoints (/sregym/faults, /sregym/nodes): shim rules, node stop, proxy faults
        hooks = FaultHooks(self.client, self.settings, nodes, network)
        hooks.install()
        self._api().fault_hooks = hooks
        self.parts.append(("fault-hooks", hooks))
        self.server.core.runtime = nodes.runtime
        controllers.set_metrics(nodes.runtime.pod_usage)

    def _api(self) -> ApiServer:
        """The API server's handlers' state (``start_api`` made it)."""
        if self.server.api is None:
            raise ClusterError(f"cluster {self.settings.name}: the API server has not started",
                               hints=("start_api() runs before the other parts",))
        return self.server.api

    def _plugin_images(self) -> Any:
        """The images installed apps and plugins declare, from this process's plugin host."""
        if self._host is None:
            from sregym_core.plugins import new_plugin_host

            self._host = new_plugin_host()
        return plugin_image_source(self._host)

    async def _started(self, name: str, part: PartT) -> PartT:
        """Register ``part`` (so ``stop`` stops it even if it fails half way), then wait until it runs."""
        self.parts.append((name, part))
        try:
            await part
        except Exception:
            log.exception("starting %s failed", name)
            raise
        return part

    def _service_account_token(self, pod: dict, projection: dict) -> str:
        """A real, verifiable token for a pod's projected service-account volume."""
        namespace = pod["metadata"].get("namespace", "default")
        account = pod.get("spec", {}).get("serviceAccountName") or "default"
        sa = self.server.core.store.get("serviceaccounts", namespace, account)
        if sa is None:
            raise LookupError(f"serviceaccount {namespace}/{account} not found")
        authn = self._api().authn
        token, _expiry = authn.issue_sa_token(namespace, sa, int(projection.get("expirationSeconds") or 3607),
                                              projection.get("audience") and [projection["audience"]])
        return token

    async def stop(self) -> None:
        for name, part in reversed(self.parts):
            try:
                await asyncio.wait_for(part.stop(), timeout=15)
            except Exception:
                log.exception("stopping %s failed", name)
        self.parts.clear()
        await self.server.stop()


def _running_daemon(name: str) -> int | None:
    """Another live daemon serving ``name`` (two would clobber one state directory)."""
    pid = _daemon_pid(name)
    return pid if pid is not None and pid != os.getpid() else None


def _write_state(state_dir: Path, settings: ClusterSettings, started: float) -> None:
    info = {
        "name": settings.name, "pid": os.getpid(), "api_host": settings.api_host, "api_port": settings.api_port,
        "url": f"https://{settings.api_host}:{settings.api_port}", "nodes": settings.nodes,
        "pod_cidr_prefix": settings.pod_cidr_prefix, "service_cidr_prefix": settings.service_cidr_prefix,
        "kubeconfig": str(state_dir / "kubeconfig"), "agent_kubeconfig": str(state_dir / "agent-kubeconfig"),
        "started_at": time.time(), "startup_seconds": round(time.monotonic() - started, 3),
    }
    tmp = state_dir / "info.json.tmp"
    tmp.write_text(json.dumps(info, indent=2))
    tmp.replace(state_dir / "info.json")
    (state_dir / "port").write_text(str(settings.api_port))


async def serve(name: str, nodes: int, *, owner_pid: int | None = None, host: str = "127.0.0.1", port: int = 0,
                node_cpu: str = "4", node_memory: str = "8Gi", ready_fd: int | None = None) -> None:
    started = time.monotonic()
    other = _running_daemon(name)
    if other is not None:
        raise SystemExit(f"cluster {name!r} is already served by pid {other}")
    settings = make_settings(name, nodes, host=host, port=port, node_cpu=node_cpu, node_memory=node_memory)
    state_dir = Path(settings.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    for stale in (*SERVING_FILES, STOPPING, KEEP):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / stale).unlink()
    (state_dir / "pid").write_text(str(os.getpid()))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    proc = ClusterProcess(settings)
    try:
        await proc.start_api()
        _write_state(state_dir, proc.server.settings, started)
        log.info("cluster %s API ready at %s in %.3fs", name, proc.server.url, time.monotonic() - started)
        await proc.start_parts()
        log.info("cluster %s running (%s) after %.3fs", name, ", ".join(m for m, _ in proc.parts),
                 time.monotonic() - started)
        if ready_fd is not None:  # only a whole cluster is ready: `up` reports a part that failed
            with contextlib.suppress(OSError):
                os.write(ready_fd, b"ready\n")
                os.close(ready_fd)
        users = locks.lock(name, locks.USERS)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            if owner_pid and not psutil.pid_exists(owner_pid):
                if (state_dir / KEEP).exists():
                    log.info("owner process %s is gone, but a later command asked to keep the cluster", owner_pid)
                    owner_pid = None
                elif users.acquire(timeout=0):  # held until this process exits: newcomers wait for that
                    log.info("owner process %s is gone and no other command uses the cluster: stopping", owner_pid)
                    break
    finally:
        log.info("cluster %s stopping", name)
        # from here on the cluster is not running: no command may pick up its address any more
        (state_dir / STOPPING).touch()
        for stale in SERVING_FILES:
            with contextlib.suppress(FileNotFoundError):
                (state_dir / stale).unlink()
        await proc.stop()
        for stale in ("pid", STOPPING):
            with contextlib.suppress(FileNotFoundError):
                (state_dir / stale).unlink()


def run(name: str, nodes: int, **kwargs: Any) -> None:
    state_dir = cluster_dir(name)
    state_dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=str(state_dir / "cluster.log"), level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    asyncio.run(serve(name, nodes, **kwargs))
