"""Service proxy: a TCP listener per ClusterIP:port forwarding to ready endpoints.

A listener exists only while its port has ready endpoints, so a service without endpoints refuses
connections (as kube-proxy's REJECT rule does). Balancing is round-robin, or sticky per client IP
with `sessionAffinity: ClientIP`. NetworkPolicy is checked per connection (source IP → pod); a denied
connection is silently held, like a dropped SYN-ACK path. Fault hooks add delay/jitter and loss,
looked up per segment: like netem on an interface, a fault set now also impairs the connections
already open (a gRPC client's one long-lived HTTP/2 connection among them), and clearing it heals them.
Each connection holds an entry in the caller's and the backend's node conntrack table (conntrack.py):
a node whose table is full drops new connections. The kube-proxy build that programmed the caller's
node (kubeproxy.py) may drop a share of its new connections (a buggy build). A caller whose node has
no route to the backend's node (Calico's BGP sessions, bgp.py) gets no answer: a new connection, as
an open one, stalls until the route is back (DENIED_HOLD_SECONDS at most).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import ipaddress
import logging
import random
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from sregym_core.clusters import is_hidden_namespace

from ..controllers.util import Obj
from . import callers
from .bgp import Routes
from .conntrack import ConntrackTable
from .kubeproxy import NodeRules
from .policy import allowed
from .view import ClusterView

log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 5.0
DENIED_HOLD_SECONDS = 120.0  # a dropped connection is held this long at most, then closed
CHUNK = 65536


@dataclass
class Fault:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0


@dataclass
class _Route:
    """One connection's ends for the routes between nodes: the caller (its pod when its address
    names it, else located from its socket once needed) and the backend's node."""
    src_pod: Obj | None
    writer: asyncio.StreamWriter
    dst_node: str | None
    src_node: str | None = None
    located: bool = False


@dataclass(frozen=True)
class PortKey:
    namespace: str
    service: str
    port_name: str
    ip: str
    port: int


def is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        return False


class ServiceProxy:
    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.listeners: dict[PortKey, asyncio.base_events.Server] = {}
        self.faults: dict[str, Fault] = {}
        self._rr: dict[PortKey, int] = {}
        self._affinity: dict[tuple[PortKey, str], tuple[str, float]] = {}
        self._dirty = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._conns_task: asyncio.Task | None = None
        self._conns: set[asyncio.Task] = set()
        self._unbindable: set[PortKey] = set()  # ports already reported as impossible to listen on
        self.connections = 0
        self.conntrack = ConntrackTable(view)
        self.rules = NodeRules(view)  # which kube-proxy build programmed each node (kubeproxy.py)
        #: the node agents' pods and their processes, to find which pod opened a connection (callers.py)
        self.pod_processes: callers.PodProcesses | None = None
        #: the pod routes between nodes (bgp.py; the network sets it), None: every node reaches every other
        self.routes: Routes | None = None
        view.services.add_handler(lambda *_: self._dirty.set())
        view.endpoints.add_handler(lambda *_: self._dirty.set())
        view.nodes.add_handler(lambda *_: self._dirty.set())
        # an endpoint is forwarded only once its pod is seen (forwardable): Endpoints may arrive first
        view.pods.add_handler(lambda *_: self._dirty.set())

    def start(self) -> None:
        self._dirty.set()
        self._task = asyncio.create_task(self._loop(), name="service-proxy")

    async def stop(self) -> None:
        if self._conns_task:
            self._conns_task.cancel()
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for server in self.listeners.values():
            server.close()
        for task in list(self._conns):
            task.cancel()
        for server in self.listeners.values():
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self.listeners.clear()

    async def _loop(self) -> None:
        await self.view.wait_synced()
        self._conns_task = asyncio.create_task(self.conntrack.run(), name="conntrack-config")
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self.sync()
            except Exception:
                log.exception("service proxy sync failed")
            await asyncio.sleep(0.02)  # coalesce bursts of endpoint updates

    # ------------------------------------------------------------ listeners

    def wanted(self) -> set[PortKey]:
        out = set()
        for svc in self.view.services.list():
            spec = svc.get("spec", {})
            ip = spec.get("clusterIP")
            if not ip or ip == "None" or not is_loopback(ip) or spec.get("type") == "ExternalName":
                continue
            if (svc["metadata"].get("labels") or {}).get("k8s-app") == "kube-dns":
                continue  # the DNS server itself answers on this address
            ns, name = svc["metadata"].get("namespace", ""), svc["metadata"]["name"]
            for port in spec.get("ports") or []:
                if port.get("protocol", "TCP") != "TCP":
                    continue
                key = PortKey(ns, name, port.get("name") or "", ip, int(port["port"]))
                if not self.backends(key):
                    continue
                out.add(key)
                for ingress in (svc.get("status") or {}).get("loadBalancer", {}).get("ingress") or []:
                    if spec.get("type") == "LoadBalancer" and is_loopback(ingress.get("ip", "")):
                        out.add(PortKey(ns, name, port.get("name") or "", ingress["ip"], int(port["port"])))
                if spec.get("type") in ("NodePort", "LoadBalancer") and port.get("nodePort"):
                    # the same backends on every node's InternalIP:nodePort (externalTrafficPolicy Cluster)
                    for node_ip in self.view.node_ips():
                        if is_loopback(node_ip):
                            out.add(PortKey(ns, name, port.get("name") or "", node_ip, int(port["nodePort"])))
        return out

    async def assign_load_balancers(self) -> None:
        """Like k3s' service load balancer: a LoadBalancer service gets the first node's IP as its ingress."""
        node_ips = [ip for ip in self.view.node_ips() if is_loopback(ip)]
        if not node_ips:
            return
        for svc in self.view.services.list():
            if svc.get("spec", {}).get("type") != "LoadBalancer":
                continue
            if ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
                continue
            try:
                updated = await self.view.client.patch(
                    "services", svc["metadata"]["name"], {"status": {"loadBalancer": {"ingress": [{"ip": node_ips[0], "ipMode": "VIP"}]}}},
                    svc["metadata"].get("namespace"), subresource="status")
                self.view.services.upsert(updated)
            except Exception as exc:  # the service may be gone already
                log.debug("load balancer status for %s: %s", svc["metadata"]["name"], exc)

    async def sync(self) -> None:
        await self.assign_load_balancers()
        wanted = self.wanted()
        for key in [k for k in self.listeners if k not in wanted]:
            self.listeners.pop(key).close()  # no endpoints left: connections are refused from now on
        for key in wanted - set(self.listeners):
            try:
                server = await asyncio.start_server(functools.partial(self._accept, key), key.ip, key.port,
                                                    reuse_address=True)
            except OSError as exc:
                # every sync retries (the address may free up); say it once per port, not per sync
                (log.debug if key in self._unbindable else log.warning)(
                    "service proxy: cannot listen on %s:%s for %s/%s: %s", key.ip, key.port, key.namespace,
                    key.service, exc)
                self._unbindable.add(key)
                continue
            self._unbindable.discard(key)
            self.listeners[key] = server

    def backends(self, key: PortKey) -> list[tuple[str, int, str | None]]:
        """(ip, port, pod name) of the ready endpoints for one service port."""
        out = []
        for addr in self.view.ready_addresses(key.namespace, key.service):
            ports = addr.get("ports") or []
            match = next((p for p in ports if (p.get("name") or "") == key.port_name), None)
            if match is None and len(ports) == 1 and not key.port_name:
                match = ports[0]
            if match is not None and is_loopback(addr["ip"]) and self.forwardable(key, addr):
                out.append((addr["ip"], int(match["port"]), (addr.get("targetRef") or {}).get("name")))
        return out

    def forwardable(self, key: PortKey, addr: Obj) -> bool:
        """Whether an endpoint address may receive this Service's traffic: a pod of the Service's own
        namespace (what the endpoints controller writes). Endpoints written by hand could otherwise
        turn an app Service into a door to a hidden namespace's pod, the API server, a node's or the
        host's listeners (agent API, workload generator, Prometheus) or another cluster on the
        machine, none of which an app pod may dial itself (netguard.py). Trusted: the hidden
        namespaces (only the benchmark writes there) and ``default/kubernetes`` (the API server)."""
        if key.namespace == "default" and key.service == "kubernetes":
            return True
        if is_hidden_namespace(self.view.namespace_labels(key.namespace)):
            return True
        ip, ref = addr.get("ip"), addr.get("targetRef") or {}
        if ref.get("kind") == "Pod" and ref.get("name"):
            pod = self.view.pods.get(ref.get("namespace") or key.namespace, ref["name"])
        else:
            pod = self.view.pod_by_ip(ip) if isinstance(ip, str) else None
        if pod is None or pod["metadata"].get("namespace") != key.namespace:
            return False
        status = pod.get("status") or {}
        return ip == status.get("podIP") or any(p.get("ip") == ip for p in status.get("podIPs") or [])

    async def _caller_node(self, src_pod: Obj | None, writer: asyncio.StreamWriter) -> str | None:
        """The node of the pod that opened this connection; None for the benchmark's own pods
        (hidden namespaces stand outside the cluster, as for conntrack) and the host's processes."""
        if src_pod is not None:
            return next(iter(self.conntrack.nodes_for(src_pod)), None)
        if self.pod_processes is None:
            return None
        peer, local = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
        if not peer or not local:
            return None
        found = await asyncio.to_thread(callers.locate, tuple(peer[:2]), tuple(local[:2]), self.pod_processes())
        if found is None:
            return None
        node, namespace = found
        labels = self.view.namespace_labels(namespace)
        return None if is_hidden_namespace(labels) else node

    async def _hold_dropped(self, reader: asyncio.StreamReader) -> None:
        """A dropped connection: its bytes are read and nothing ever answers, until the caller gives up
        or DENIED_HOLD_SECONDS pass (a policy deny, a buggy kube-proxy's rules, a full conntrack table)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._discard(reader), DENIED_HOLD_SECONDS)

    def routing_node(self, pod: Obj | None) -> str | None:
        """The node whose routes a pod's traffic takes; None outside the routing: not a pod, a
        host-network pod, the benchmark's own pods (hidden namespaces)."""
        if pod is None or (pod.get("spec") or {}).get("hostNetwork"):
            return None
        return next(iter(self.conntrack.nodes_for(pod)), None)

    async def _routed(self, route: _Route) -> bool:
        """Whether the connection's caller has a route to its backend's node now (the caller is
        located the first time the routes are partitioned while it is open)."""
        if self.routes is None or not self.routes.partitioned() or route.dst_node is None:
            return True
        if not route.located:
            route.located = True
            if route.src_pod is not None:
                route.src_node = self.routing_node(route.src_pod)
            else:
                route.src_node = await self._caller_node(None, route.writer)
        return self.routes.routed(route.src_node, route.dst_node)

    async def _wait_route(self, route: _Route) -> None:
        """Hold a segment while the route is gone, as TCP retransmits into a withdrawn route: the
        next retry after the route is back gets through; after DENIED_HOLD_SECONDS the connection
        is given up."""
        rto, waited = 0.2, 0.0
        while not await self._routed(route):
            if waited >= DENIED_HOLD_SECONDS:
                raise ConnectionResetError("no route to the backend's node")
            await asyncio.sleep(rto)
            waited += rto
            rto = min(rto * 2, 5.0)

    def _node_of(self, ip: str) -> str | None:
        pod = self.view.pod_by_ip(ip)
        return ((pod or {}).get("spec") or {}).get("nodeName")

    def pick(self, key: PortKey, client_ip: str) -> tuple[str, int, str | None] | None:
        backends = self.backends(key)
        svc = self.view.services.get(key.namespace, key.service) or {}
        spec = svc.get("spec", {})
        if backends and spec.get("internalTrafficPolicy") == "Local":
            # only endpoints on the calling pod's node; none there and the connection is dropped,
            # as kube-proxy drops it (no fallback to other nodes)
            node = self._node_of(client_ip)
            backends = [b for b in backends if node is not None and self._node_of(b[0]) == node]
        if not backends:
            return None
        if spec.get("sessionAffinity") == "ClientIP":
            timeout = float(((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds", 10800))
            sticky = self._affinity.get((key, client_ip))
            now = time.monotonic()
            if sticky and now - sticky[1] < timeout:
                for backend in backends:
                    if backend[0] == sticky[0]:
                        self._affinity[(key, client_ip)] = (backend[0], now)
                        return backend
            choice = backends[self._next(key, len(backends))]
            self._affinity[(key, client_ip)] = (choice[0], now)
            return choice
        return backends[self._next(key, len(backends))]

    def _next(self, key: PortKey, count: int) -> int:
        value = self._rr.get(key, -1) + 1
        self._rr[key] = value
        return value % count

    def fault_for(self, key: PortKey, pod: str | None) -> Fault | None:
        for target in (f"{key.namespace}/{key.service}", key.service, f"{key.namespace}/{pod}", pod):
            if target and target in self.faults:
                return self.faults[target]
        return None

    # ------------------------------------------------------------ connections

    async def _accept(self, key: PortKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            await self._handle(key, reader, writer)
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            if task is not None:
                self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, key: PortKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client_ip = (writer.get_extra_info("peername") or ("", 0))[0]
        backend = self.pick(key, client_ip)
        if backend is None:
            return
        ip, port, pod_name = backend
        dst_pod = self.view.pod_by_ip(ip)
        src_pod = self.view.pod_by_ip(client_ip)
        if not allowed(self.view.policies.list(), src_ip=client_ip, src_pod=src_pod, dst_ip=ip, dst_pod=dst_pod,
                       port=port, protocol="TCP", ns_labels=self.view.namespace_labels):
            await self._hold_dropped(reader)
            return
        route = _Route(src_pod, writer, self.routing_node(dst_pod))
        if not await self._routed(route):  # no route from the caller's node to the backend's: nothing
            try:  # answers until it is back (the caller's retransmissions then get through) or we give up
                await self._wait_route(route)
            except ConnectionResetError:
                return
        if self.rules.any_defect():
            caller = route.src_node if route.located and src_pod is None else await self._caller_node(src_pod, writer)
            share = self.rules.drop_share(caller)
            if share and random.random() < share:  # the caller's node's rules (a buggy kube-proxy) drop it
                await self._hold_dropped(reader)
                return
        tracked = self.conntrack.nodes_for(src_pod, dst_pod)
        full = self.conntrack.admit(tracked)
        if full is not None:  # nf_conntrack table full on that node: the packets are dropped
            asyncio.create_task(self.conntrack.dropped(full))
            await self._hold_dropped(reader)
            return
        try:
            await self._forward(key, reader, writer, ip, port, pod_name, client_ip, route)
        finally:
            self.conntrack.release(tracked)

    async def _forward(self, key: PortKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       ip: str, port: int, pod_name: str | None, client_ip: str,
                       route: _Route | None = None) -> None:
        def current() -> Fault | None:
            return self.fault_for(key, pod_name)

        await self._impair(current)
        try:
            # keep the client's address as the source, as kube-proxy's DNAT does: the backend sees the
            # calling pod, not 127.0.0.1 (which e.g. PostgreSQL's pg_hba trusts without a password)
            source = (client_ip, 0) if is_loopback(client_ip) and client_ip != "127.0.0.1" else None
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(ip, port, local_addr=source),
                                                              CONNECT_TIMEOUT)
            except OSError as exc:
                if source is None or exc.errno not in (errno.EADDRNOTAVAIL, errno.EADDRINUSE):
                    raise
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(ip, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError):
            sock = writer.get_extra_info("socket")
            if sock is not None:  # reset, as a REJECT by the backend would look
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        self.connections += 1
        try:
            await asyncio.gather(self._pipe(reader, up_writer, None, route), self._pipe(up_reader, writer, current, route))
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()

    @staticmethod
    async def _discard(reader: asyncio.StreamReader) -> None:
        while await reader.read(CHUNK):
            pass

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    fault: Callable[[], Fault | None] | None, route: _Route | None = None) -> None:
        """Copy one direction; ``fault`` gives the fault in force *now* for each segment (None: never
        impaired), so a fault set or cleared while the connection is open takes effect on it; so do
        the routes between the caller's and the backend's nodes (``route``)."""
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                if route is not None and self.routes is not None and self.routes.partitioned():
                    await self._wait_route(route)
                if fault is not None:
                    await self._impair(fault)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                if writer.can_write_eof():
                    writer.write_eof()

    async def _impair(self, current: Callable[[], Fault | None]) -> None:
        """Delay (± jitter) a response chunk; a lost one costs TCP retransmission time-outs.

        Each retransmission meets the fault in force *when it is sent* (``current()``): once the
        fault is cleared the next retransmission gets through, as after removing a netem qdisc, so
        a stalled segment waits out at most the back-off already running, not a fault that is gone
        (a connection left stalled for minutes wedged every call its client made on it)."""
        fault = current()
        if fault is None:
            return
        if fault.delay_ms or fault.jitter_ms:
            delay = max(0.0, fault.delay_ms + random.uniform(-fault.jitter_ms, fault.jitter_ms))
            await asyncio.sleep(delay / 1000)
        rto = 0.2
        while (fault := current()) is not None and fault.loss_pct > 0 and random.uniform(0, 100) < fault.loss_pct:
            await asyncio.sleep(rto)
            rto = min(rto * 2, 60.0)


__all__ = ["Fault", "PortKey", "ServiceProxy", "Obj"]
