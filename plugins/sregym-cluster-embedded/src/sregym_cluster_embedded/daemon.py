"""The per-cluster process: API server, controllers, network and node agents in one event loop.

State lives in ``$SREGYM_HOME/clusters/<name>/``: ``pid``, ``port``, ``info.json``, ``pki/``,
``kubeconfig`` (admin), ``agent-kubeconfig`` (restricted identity), ``tokens.json``, ``cluster.log``.
Started by :func:`sregym_cluster_embedded.cluster.up`; stops on SIGTERM/SIGINT or when the owner
process (``--owner-pid``) dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil

from .apiserver.server import RunningApiServer
from .client import LocalClient
from .settings import ClusterSettings, allocate, cluster_dir

log = logging.getLogger("sregym_cluster_embedded.daemon")


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _entry_point(module: str, name: str) -> Any:
    """``module.name`` when that part of the cluster is installed, else None (built in parallel)."""
    try:
        mod = importlib.import_module(f"sregym_cluster_embedded.{module}")
    except ImportError as exc:
        log.warning("%s not available: %s", module, exc)
        return None
    return getattr(mod, name, None)


def make_settings(name: str, nodes: int, *, host: str = "127.0.0.1", port: int = 0,
                  node_cpu: str = "4", node_memory: str = "8Gi") -> ClusterSettings:
    pod_prefix, service_prefix = allocate(name)
    return ClusterSettings(name=name, state_dir=cluster_dir(name), nodes=nodes, node_cpu=node_cpu,
                           node_memory=node_memory, pod_cidr_prefix=pod_prefix, service_cidr_prefix=service_prefix,
                           api_host=host, api_port=port)


class ClusterProcess:
    """Everything one cluster runs, started and stopped in order."""

    def __init__(self, settings: ClusterSettings, *, with_controllers: bool = True, with_nodes: bool = True,
                 with_network: bool = True) -> None:
        self.settings = settings
        self.server = RunningApiServer(settings)
        self.client = LocalClient(self.server.core)
        self.parts: list[tuple[str, Any]] = []
        self.with_controllers, self.with_nodes, self.with_network = with_controllers, with_nodes, with_network

    async def start(self) -> None:
        await self.start_api()
        await self.start_parts()

    async def start_api(self) -> None:
        await self.server.start()
        self.settings = self.server.settings

    async def start_parts(self) -> None:
        """Controllers, network and nodes; they list-then-watch, so starting them after the API
        already answers loses nothing."""
        if self.with_controllers:
            await self._start_part("controllers", "start_controllers")
        if self.with_network:
            await self._start_part("network", "start_network")
        if self.with_nodes:
            from .plugin_images import plugin_image_source

            # images that installed apps and plugins declare (the node's own catalog has the standard ones)
            node_options: dict[str, Any] = {"image_sources": [plugin_image_source]}
            if dict(self.parts).get("network") is not None:
                # pods resolve cluster names through the network's DNS: a resolv.conf in their mount
                # namespace (root) or the resolver hook the env points Python processes at (no root)
                from . import network as cluster_network

                node_options.update(pod_env=cluster_network.pod_dns_env, resolv_conf=cluster_network.pod_resolv_conf)
            node_options["token_source"] = self._service_account_token
            nodes = await self._start_part("node", "start_nodes", **node_options)
            if nodes is not None:  # nodefaults: admin fault hooks (shim rules, node stop, proxy faults)
                await self._start_fault_hooks(nodes)
            runtime = getattr(nodes, "runtime", None)
            if runtime is not None:
                self.server.core.runtime = runtime
                controllers = dict(self.parts).get("controllers")
                if controllers is not None and hasattr(controllers, "set_metrics") and hasattr(runtime, "pod_usage"):
                    controllers.set_metrics(runtime.pod_usage)

    async def _start_fault_hooks(self, nodes: Any) -> None:
        """nodefaults: hand the NodeSet and Network to the admin fault endpoints (/sregym/faults)."""
        try:
            from .apiserver.admin_faults import FaultHooks

            hooks = FaultHooks(self.client, self.settings, nodes, dict(self.parts).get("network"))
            hooks.install()
        except Exception:
            log.exception("starting the node fault hooks failed")
            return
        self.server.api.fault_hooks = hooks
        self.parts.append(("fault-hooks", hooks))

    def _service_account_token(self, pod: dict, projection: dict) -> str:
        """A real, verifiable token for a pod's projected service-account volume."""
        namespace = pod["metadata"].get("namespace", "default")
        account = pod.get("spec", {}).get("serviceAccountName") or "default"
        sa = self.server.core.store.get("serviceaccounts", namespace, account)
        if sa is None:
            raise LookupError(f"serviceaccount {namespace}/{account} not found")
        authn = self.server.api.authn
        token, _expiry = authn.issue_sa_token(namespace, sa, int(projection.get("expirationSeconds") or 3607),
                                              projection.get("audience") and [projection["audience"]])
        return token

    async def _start_part(self, module: str, fn_name: str, **options: Any) -> Any:
        fn = _entry_point(module, fn_name)
        if fn is None:
            return None
        try:
            part = await _maybe_await(fn(self.client, self.settings, **options))
        except Exception:
            log.exception("starting %s failed", module)
            return None
        self.parts.append((module, part))
        return part

    async def stop(self) -> None:
        for module, part in reversed(self.parts):
            stop = getattr(part, "stop", None)
            if stop is None:
                continue
            try:
                await asyncio.wait_for(_maybe_await(stop()), timeout=15)
            except Exception:
                log.exception("stopping %s failed", module)
        self.parts.clear()
        await self.server.stop()


def _running_daemon(name: str) -> int | None:
    """Another live daemon serving ``name`` (two would clobber one state directory)."""
    from .cluster import _daemon_pid

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
    for stale in ("port", "info.json"):
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
        if ready_fd is not None:
            with contextlib.suppress(OSError):
                os.write(ready_fd, b"ready\n")
                os.close(ready_fd)
        await proc.start_parts()
        log.info("cluster %s running (%s) after %.3fs", name, ", ".join(m for m, _ in proc.parts) or "API only",
                 time.monotonic() - started)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            if owner_pid and not psutil.pid_exists(owner_pid):
                log.info("owner process %s is gone: stopping", owner_pid)
                break
    finally:
        log.info("cluster %s stopping", name)
        await proc.stop()
        for stale in ("port", "info.json", "pid"):
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
