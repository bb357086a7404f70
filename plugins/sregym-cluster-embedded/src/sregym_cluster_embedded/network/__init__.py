"""Cluster network of the embedded cluster: service proxy, NetworkPolicy, cluster DNS, pod DNS config.

The daemon starts it once after the controllers: ``network = await start_network(client, settings)``
(``start_network`` is sync and its result is also awaitable), and ``await network.stop()`` on shutdown.
The node agent asks it how a pod resolves names: ``pod_resolv_conf(pod)`` (the file to bind-mount on
/etc/resolv.conf in the pod's private mount namespace, with root) or ``pod_dns_env(pod)`` (environment
for the no-root fallback: a Python ``sitecustomize`` resolver hook), and ``service_env_vars(ns)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..controllers.util import Obj
from . import bgp, netguard
from .dns import DnsServer
from .proxy import Fault, ServiceProxy
from .view import ClusterView

log = logging.getLogger(__name__)
HOOK_DIR = Path(__file__).parent / "hook"
DNS_SERVICE = "kube-dns"
_current: Network | None = None


def dns_ip(settings: Any) -> str:
    """The cluster DNS address: `<service prefix>.0.10`, as kube-dns is 10.96.0.10 on kubeadm clusters."""
    return f"{getattr(settings, 'service_cidr_prefix', '127.43')}.0.10"


def blackhole_ip(settings: Any) -> str:
    """A loopback address where nothing listens: a nameserver we must not reach is replaced by it."""
    return f"{getattr(settings, 'service_cidr_prefix', '127.43')}.255.254"


def _loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        return False


class Network:
    def __init__(self, client: Any, settings: Any) -> None:
        self.client = client
        self.settings = settings
        self.view = ClusterView(client, settings)
        self.proxy = ServiceProxy(self.view)
        #: pod routes between nodes from Calico's BGP resources (bgp.py): the proxy and the guard honour them
        self.routes = bgp.Routes(self.view)
        self.proxy.routes = self.routes
        self.dns = DnsServer(self.view, dns_ip(settings), int(getattr(settings, "dns_port", 53) or 53))
        self._starting: asyncio.Future | None = None
        #: the kernel-enforced reachability of hidden namespaces and other apps (netguard.py), or None and why not
        self.guard: netguard.NetGuard | None = None
        self.guard_warning = ""
        self._guard_dirty = asyncio.Event()
        self._guard_task: asyncio.Task | None = None

    @property
    def domain(self) -> str:
        return self.view.domain

    async def _start(self) -> Network:
        self.view.start()
        await self.view.wait_synced()
        await self.dns.start()
        self._write_info()
        self.proxy.start()
        self._start_guard()
        await self._ensure_dns_service()
        await self._ensure_corefile()
        await self._ensure_ingress_addon()
        await self._ensure_ipam()
        await self._ensure_bgp()
        await self._ensure_kube_proxy()
        return self

    def _start_guard(self) -> None:
        state_dir = getattr(self.settings, "state_dir", None)
        if not state_dir:
            return
        self.guard, reason = netguard.start(Path(state_dir))
        if self.guard is None:
            self.guard_warning = ("app pods can reach the hidden namespaces' and other apps' pods and services "
                                  f"({reason})")
            log.warning("%s", self.guard_warning)
            return
        for informer in (self.view.pods, self.view.services, self.view.namespaces, self.view.nodes):
            informer.add_handler(lambda *_: self._guard_dirty.set())
        self.routes.listeners.append(self._guard_dirty.set)
        self._guard_dirty.set()
        self._guard_task = asyncio.create_task(self._guard_loop(), name="netguard")

    async def _guard_loop(self) -> None:
        while True:
            await self._guard_dirty.wait()
            self._guard_dirty.clear()
            try:
                guard = self.guard  # set before this loop starts (it runs only with a guard)
                if guard is not None and guard.map_fd >= 0:
                    guard.refresh(self.view, self.settings, self.routes)
            except Exception:
                log.exception("updating the pod reachability table failed")
            await asyncio.sleep(0.02)  # coalesce bursts

    def sync_guard(self) -> None:
        """Bring the reachability table up to date now (a hidden pod just got its IP)."""
        if self.guard is not None and self.guard.map_fd >= 0:
            self.guard.refresh(self.view, self.settings, self.routes)

    def _write_info(self) -> None:
        """`<state_dir>/network.json`: where DNS really listens (port 53 may be taken by another cluster)."""
        state_dir = getattr(self.settings, "state_dir", None)
        if not state_dir:
            return
        with contextlib.suppress(OSError):
            Path(state_dir).mkdir(parents=True, exist_ok=True)
            (Path(state_dir) / "network.json").write_text(json.dumps(
                {"dns_host": self.dns.host, "dns_port": self.dns.port, "domain": self.domain}))

    async def _ensure_dns_service(self) -> None:
        """`kube-dns` in kube-system, so `kubectl get svc -A` and clients' expectations match a real cluster."""
        body = {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": DNS_SERVICE, "namespace": "kube-system",
                             "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                        "kubernetes.io/name": "CoreDNS"}},
                "spec": {"clusterIP": dns_ip(self.settings), "type": "ClusterIP",
                         "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                                   {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]}}
        try:
            await self.client.create("services", body, "kube-system")
        except Exception as exc:  # exists already, or the API refuses the fixed IP: DNS still works
            log.debug("kube-dns service: %s", exc)

    async def _ensure_corefile(self) -> None:
        """`kube-system/coredns` with the stock Corefile, the DNS configuration a real cluster has."""
        from .corefile import DEFAULT_COREFILE, CorefileSource

        text = DEFAULT_COREFILE.replace("cluster.local", self.domain)
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": CorefileSource.NAME, "namespace": CorefileSource.NAMESPACE},
                "data": {CorefileSource.KEY: text}}
        try:
            await self.client.create("configmaps", body, CorefileSource.NAMESPACE)
        except Exception as exc:  # exists already (kept as the user left it)
            log.debug("coredns configmap: %s", exc)

    async def _ensure_ingress_addon(self) -> None:
        """The ingress-nginx controller (``..ingress.addon``), unless ``SREGYM_EMBEDDED_INGRESS=0``;
        what exists already is kept as the user left it."""
        if os.environ.get("SREGYM_EMBEDDED_INGRESS", "1") == "0":
            return
        from ..ingress.addon import objects

        for resource, namespace, body in objects():
            try:
                await self.client.create(resource, body, namespace)
            except Exception as exc:  # exists already
                log.debug("ingress addon %s: %s", resource, exc)
                if resource.startswith("clusterroles."):  # its rights are a security boundary: always ours
                    with contextlib.suppress(Exception):
                        await self.client.patch(resource, body["metadata"]["name"], {"rules": body["rules"]})

    async def _ensure_ipam(self) -> None:
        """Calico's IPPool resource and ``default-ipv4-ippool`` over the pod range (``.ipam``), unless
        ``SREGYM_EMBEDDED_IPAM=0``; a pool that exists is kept as the user left it."""
        from . import ipam

        if not ipam.enabled():
            return
        prefix = getattr(self.settings, "pod_cidr_prefix", "127.42")
        for resource, body in (("customresourcedefinitions.apiextensions.k8s.io", ipam.crd()),
                               (ipam.RESOURCE, ipam.default_pool(prefix))):
            try:
                await self.client.create(resource, body)
            except Exception as exc:  # exists already
                log.debug("ipam %s: %s", resource, exc)

    async def _ensure_bgp(self) -> None:
        """Calico's BGPPeer and BGPConfiguration resources and ``default`` with the node-to-node mesh
        on (``.bgp``), unless ``SREGYM_EMBEDDED_BGP=0``; what exists is kept as the user left it."""
        if not bgp.enabled():
            return
        for resource, body in [*(("customresourcedefinitions.apiextensions.k8s.io", crd) for crd in bgp.crds()),
                               (bgp.CONFIGS, bgp.default_config())]:
            try:
                await self.client.create(resource, body)
            except Exception as exc:  # exists already
                log.debug("bgp %s: %s", resource, exc)

    async def _ensure_kube_proxy(self) -> None:
        """The ``kube-proxy`` DaemonSet in kube-system (``.kubeproxy``), unless
        ``SREGYM_EMBEDDED_KUBE_PROXY=0``; what exists already is kept as the user left it."""
        from . import kubeproxy

        if not kubeproxy.enabled():
            return
        for resource, namespace, body in kubeproxy.objects(getattr(self.settings, "kubernetes_version", "v1.32.4")):
            try:
                await self.client.create(resource, body, namespace)
            except Exception as exc:  # exists already
                log.debug("kube-proxy %s: %s", resource, exc)

    async def stop(self) -> None:
        global _current
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            if self._starting is not None:
                await self._starting
        await self.proxy.stop()
        if self._guard_task is not None:
            self._guard_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._guard_task
        if self.guard is not None:
            self.guard.close()
        await self.dns.stop()
        await self.view.stop()
        if _current is self:
            _current = None

    def __await__(self):
        return self._started().__await__()

    async def _started(self) -> Network:
        if self._starting is not None:
            await self._starting
        return self

    # ------------------------------------------------------------ fault hooks

    def set_delay(self, target: str, ms: float, jitter_ms: float = 0.0) -> None:
        """Delay responses through the proxy for a service (`svc` or `ns/svc`) or a backend pod (`ns/pod`)."""
        fault = self.proxy.faults.setdefault(target, Fault())
        fault.delay_ms, fault.jitter_ms = float(ms), float(jitter_ms)

    def set_loss(self, target: str, pct: float) -> None:
        """Lose `pct` % of response segments (each loss costs a TCP retransmission time-out)."""
        fault = self.proxy.faults.setdefault(target, Fault())
        fault.loss_pct = max(0.0, min(100.0, float(pct)))

    def clear_faults(self, target: str | None = None) -> None:
        if target is None:
            self.proxy.faults.clear()
        else:
            self.proxy.faults.pop(target, None)

    # ------------------------------------------------------------ what pods see

    def resolv_conf(self, pod: Obj) -> str:
        return pod_resolv_conf(pod, settings=self.settings, dns_address=self.dns.host)

    def dns_env(self, pod: Obj) -> dict[str, str]:
        return pod_dns_env(pod, network=self)

    def service_env(self, namespace: str, *, enable_service_links: bool = True) -> dict[str, str]:
        services = []
        for svc in self.view.services.list():
            ns = svc["metadata"].get("namespace")
            if (ns == namespace and enable_service_links) or (ns, svc["metadata"]["name"]) == ("default", "kubernetes"):
                services.append(svc)
        return build_service_env(services)


def start_network(client: Any, settings: Any) -> Network:
    """Start DNS and the service proxy (call inside the running loop; the result is awaitable and waits
    until both are serving)."""
    global _current
    net = Network(client, settings)
    _current = net
    net._starting = asyncio.ensure_future(net._start())
    return net


def current() -> Network | None:
    return _current


# ---------------------------------------------------------------- pure helpers (also used without a Network)


def _dns_settings(pod: Obj, settings: Any, dns_address: str) -> tuple[list[str], list[str], dict[str, str | None]]:
    spec = pod.get("spec", {})
    ns = pod.get("metadata", {}).get("namespace", "default")
    domain = getattr(settings, "cluster_domain", "cluster.local") or "cluster.local"
    policy = spec.get("dnsPolicy", "ClusterFirst")
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"
    nameservers: list[str] = []
    searches: list[str] = []
    options: dict[str, str | None] = {}
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        nameservers = [dns_address]
        searches = [f"{ns}.svc.{domain}", f"svc.{domain}", domain]
        options = {"ndots": "5"}
    elif policy == "Default":
        nameservers = [blackhole_ip(settings)]  # the host's resolvers lead outside the machine: never used
    config = spec.get("dnsConfig") or {}
    for server in config.get("nameservers") or []:
        # a nameserver outside 127.0.0.0/8 would receive real packets: resolution must fail instead
        nameservers.append(server if _loopback(server) else blackhole_ip(settings))
    searches += [s for s in config.get("searches") or [] if s not in searches]
    for opt in config.get("options") or []:
        if opt.get("name"):
            options[opt["name"]] = opt.get("value")
    if not nameservers:
        nameservers = [blackhole_ip(settings)]
    return list(dict.fromkeys(nameservers))[:3], searches[:32], options


def pod_resolv_conf(pod: Obj, *, settings: Any = None, dns_address: str | None = None) -> str:
    """The /etc/resolv.conf a pod sees (dnsPolicy and dnsConfig applied, nameservers only in 127/8)."""
    net = _current
    settings = settings if settings is not None else (net.settings if net else None)
    address = dns_address or (net.dns.host if net else dns_ip(settings))
    nameservers, searches, options = _dns_settings(pod, settings, address)
    lines = [f"nameserver {ip}" for ip in nameservers]
    if searches:
        lines.append("search " + " ".join(searches))
    if options:
        lines.append("options " + " ".join(k if v is None else f"{k}:{v}" for k, v in options.items()))
    return "\n".join(lines) + "\n"


def private_resolv_argv(argv: list[str], resolv_conf: str | Path) -> list[str] | None:
    """Wrap a container command so it runs in a private mount namespace where `resolv_conf` is bind-mounted
    on /etc/resolv.conf (needs root and util-linux `unshare`; None when that is not possible)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    script = 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, str(resolv_conf), *argv]


def pod_dns_env(pod: Obj, *, network: Network | None = None) -> dict[str, str]:
    """Environment for the no-root resolver hook: prepend SREGYM PYTHONPATH entry to the pod's own."""
    net = network or _current
    settings = net.settings if net else None
    address = net.dns.host if net else dns_ip(settings)
    port = net.dns.port if net else 53
    nameservers, searches, options = _dns_settings(pod, settings, address)
    server = nameservers[0]
    return {
        "SREGYM_DNS_SERVER": f"{server}:{port if server == address else 53}",
        "SREGYM_DNS_SEARCH": " ".join(searches),
        "SREGYM_DNS_NDOTS": str(options.get("ndots") or 1),
        "PYTHONPATH": str(HOOK_DIR),
    }


def _env_name(name: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def build_service_env(services: list[Obj]) -> dict[str, str]:
    """The docker-links style variables the kubelet gives every container for the services it can see."""
    env: dict[str, str] = {}
    for svc in sorted(services, key=lambda s: s["metadata"].get("creationTimestamp", "")):
        spec = svc.get("spec", {})
        ip = spec.get("clusterIP")
        if not ip or ip == "None":
            continue
        prefix = _env_name(svc["metadata"]["name"])
        ports = spec.get("ports") or []
        if not ports:
            continue
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{_env_name(port['name'])}"] = str(port["port"])
        first = ports[0]
        env[f"{prefix}_PORT"] = f"{first.get('protocol', 'TCP').lower()}://{ip}:{first['port']}"
        for port in ports:
            proto = port.get("protocol", "TCP")
            base = f"{prefix}_PORT_{port['port']}_{proto}"
            env[base] = f"{proto.lower()}://{ip}:{port['port']}"
            env[f"{base}_PROTO"] = proto.lower()
            env[f"{base}_PORT"] = str(port["port"])
            env[f"{base}_ADDR"] = ip
    return env


def service_env_vars(namespace: str, *, enable_service_links: bool = True) -> dict[str, str]:
    """`<SVC>_SERVICE_HOST` etc. for a pod in `namespace` (empty until the network is started)."""
    net = _current
    return net.service_env(namespace, enable_service_links=enable_service_links) if net else {}


__all__ = ["Network", "start_network", "current", "pod_resolv_conf", "pod_dns_env", "service_env_vars",
           "private_resolv_argv",
           "build_service_env", "dns_ip", "HOOK_DIR"]
