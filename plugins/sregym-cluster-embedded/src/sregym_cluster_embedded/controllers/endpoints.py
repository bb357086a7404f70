"""Service → Endpoints and EndpointSlices from pod readiness, with named targetPorts resolved."""

from __future__ import annotations

from typing import Any

from .base import Controller, Key
from .informer import key_of
from .util import Obj, is_deleting, is_pod_ready, match_labels, name_of, owner_ref, random_suffix, rfc3339
from .writes import api_error_code

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_MANAGER = "endpointslice-controller.k8s.io"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
MANAGED_BY_EP = "endpoints.kubernetes.io/managed-by"
EP_MANAGER = "endpoint-controller"


def resolve_target_port(port: Obj, pod: Obj) -> int | None:
    """The pod port a service port targets: a number, or a container port looked up by name."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in pod.get("spec", {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target and cport.get("protocol", "TCP") == port.get("protocol", "TCP"):
                return int(cport.get("containerPort"))
    return None


def selected_pods(service: Obj, pods: list[Obj]) -> list[Obj]:
    selector = service.get("spec", {}).get("selector")
    if not selector:
        return []
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if match_labels(selector, pod.get("metadata", {}).get("labels")):
            out.append(pod)
    return sorted(out, key=name_of)


def endpoint_ports(service: Obj, pod: Obj) -> list[Obj] | None:
    ports = []
    for sport in service.get("spec", {}).get("ports") or []:
        number = resolve_target_port(sport, pod)
        if number is None:
            return None
        entry: Obj = {"port": number, "protocol": sport.get("protocol", "TCP")}
        if sport.get("name"):
            entry["name"] = sport["name"]
        if sport.get("appProtocol"):
            entry["appProtocol"] = sport["appProtocol"]
        ports.append(entry)
    return ports


def _address(pod: Obj, service: Obj) -> Obj:
    addr: Obj = {"ip": pod["status"]["podIP"]}
    spec = pod.get("spec", {})
    if spec.get("hostname") and spec.get("subdomain") == name_of(service):
        addr["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        addr["nodeName"] = spec["nodeName"]
    addr["targetRef"] = {"kind": "Pod", "namespace": pod["metadata"].get("namespace", ""), "name": name_of(pod),
                         "uid": pod["metadata"].get("uid", "")}
    return addr


def build_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    publish = bool(service.get("spec", {}).get("publishNotReadyAddresses"))
    groups: dict[str, Obj] = {}
    for pod in selected_pods(service, pods):
        if is_deleting(pod):
            continue  # terminating pods leave Endpoints at once
        ports = endpoint_ports(service, pod)
        if ports is None:
            continue
        key = repr(sorted((p["port"], p.get("name", ""), p["protocol"]) for p in ports))
        subset = groups.setdefault(key, {"addresses": [], "notReadyAddresses": [], "ports": ports})
        bucket = "addresses" if (publish or is_pod_ready(pod)) else "notReadyAddresses"
        subset[bucket].append(_address(pod, service))
    subsets = []
    for subset in groups.values():
        out = {k: v for k, v in subset.items() if v}
        if out.get("addresses") or out.get("notReadyAddresses"):
            subsets.append(out)
    return subsets


def enqueue_services_of(ctrl: Any, pod: Obj, old: Obj | None) -> None:
    """Queue every service whose selector matches the pod now or matched it before."""
    ns = pod.get("metadata", {}).get("namespace", "")
    labels = [pod.get("metadata", {}).get("labels")] + ([old.get("metadata", {}).get("labels")] if old else [])
    for svc in ctrl.services.list(ns):
        selector = svc.get("spec", {}).get("selector")
        if selector and any(match_labels(selector, lbl) for lbl in labels):
            ctrl.enqueue(key_of(svc))


class EndpointsController(Controller):
    name = "endpoints"
    component = "endpoint-controller"

    def setup(self) -> None:
        self.services = self.watch("services")
        self.pods = self.watch("pods", lambda _e, pod, old: self._pod_changed(pod, old))
        self.endpoints = self.watch("endpoints")

    def _pod_changed(self, pod: Obj, old: Obj | None) -> None:
        enqueue_services_of(self, pod, old)

    async def reconcile(self, key: Key) -> None:
        ns, name = key
        service = self.services.get(ns, name)
        current = self.endpoints.get(ns, name)
        if service is None or is_deleting(service):
            if current is not None and service is None and \
                    (current.get("metadata", {}).get("labels") or {}).get(MANAGED_BY_EP) == EP_MANAGER:
                await self.client.delete("endpoints", name, ns)
                self.endpoints.remove(current)
            return
        if not service.get("spec", {}).get("selector"):
            await self._apiserver_endpoints(service, current)
            return
        subsets = build_subsets(service, self.pods.list(ns))
        labels = dict(service["metadata"].get("labels") or {})
        labels[MANAGED_BY_EP] = EP_MANAGER
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": name, "namespace": ns, "labels": labels,
                                  "annotations": {TRIGGER: rfc3339()}}}
        if subsets:
            body["subsets"] = subsets
        await self._write(current, body)

    async def _write(self, current: Obj | None, body: Obj) -> None:
        meta = body["metadata"]
        if current is None:
            try:
                created = await self.client.create("endpoints", body, meta["namespace"])
                self.endpoints.upsert(created)
            except Exception as exc:
                if api_error_code(exc) != 409:
                    raise
                self.enqueue((meta["namespace"], meta["name"]), 0.2)
            return
        if current.get("subsets") == body.get("subsets") and \
                (current["metadata"].get("labels") or {}) == meta["labels"]:
            return
        new = dict(current, subsets=body.get("subsets"))
        if not body.get("subsets"):
            new.pop("subsets", None)
        new["metadata"] = dict(current["metadata"], labels=meta["labels"],
                               annotations=dict(current["metadata"].get("annotations") or {}, **meta["annotations"]))
        updated = await self.client.update("endpoints", new)
        self.endpoints.upsert(updated)

    async def _apiserver_endpoints(self, service: Obj, current: Obj | None) -> None:
        """The default/kubernetes service points at the API server itself."""
        if (service["metadata"].get("namespace"), name_of(service)) != ("default", "kubernetes") or current:
            return
        settings = self.ctx.settings
        host, port = getattr(settings, "api_host", ""), int(getattr(settings, "api_port", 0) or 0)
        if not host.startswith("127.") or not port:
            return
        body = {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
        try:
            self.endpoints.upsert(await self.client.create("endpoints", body, "default"))
        except Exception as exc:
            if api_error_code(exc) != 409:
                raise


def slice_endpoints(service: Obj, pods: list[Obj]) -> dict[str, tuple[list[Obj], list[Obj]]]:
    """Port-set key -> (ports, endpoints) for discovery.k8s.io/v1 EndpointSlices."""
    publish = bool(service.get("spec", {}).get("publishNotReadyAddresses"))
    out: dict[str, tuple[list[Obj], list[Obj]]] = {}
    for pod in selected_pods(service, pods):
        ports = endpoint_ports(service, pod)
        if ports is None:
            continue
        key = repr(sorted((p["port"], p.get("name", ""), p["protocol"]) for p in ports))
        terminating = is_deleting(pod)
        ready = is_pod_ready(pod) and not terminating
        entry: Obj = {"addresses": [pod["status"]["podIP"]],
                      "conditions": {"ready": ready or (publish and not terminating), "serving": is_pod_ready(pod),
                                     "terminating": terminating},
                      "targetRef": {"kind": "Pod", "namespace": pod["metadata"].get("namespace", ""),
                                    "name": name_of(pod), "uid": pod["metadata"].get("uid", "")}}
        if pod.get("spec", {}).get("nodeName"):
            entry["nodeName"] = pod["spec"]["nodeName"]
        if pod.get("spec", {}).get("hostname") and pod["spec"].get("subdomain") == name_of(service):
            entry["hostname"] = pod["spec"]["hostname"]
        out.setdefault(key, ([{k: v for k, v in p.items()} for p in ports], []))[1].append(entry)
    return out


class EndpointSliceController(Controller):
    name = "endpointslice"
    component = "endpoint-slice-controller"

    def setup(self) -> None:
        self.services = self.watch("services")
        self.pods = self.watch("pods", lambda _e, pod, old: enqueue_services_of(self, pod, old))
        self.slices = self.watch("endpointslices.discovery.k8s.io", lambda _e, s, _o: self._slice_changed(s))

    def _slice_changed(self, sl: Obj) -> None:
        svc = (sl.get("metadata", {}).get("labels") or {}).get(SERVICE_NAME)
        if svc:
            self.enqueue((sl["metadata"].get("namespace", ""), svc))

    def owned(self, ns: str, name: str) -> list[Obj]:
        return [s for s in self.slices.list(ns)
                if (s["metadata"].get("labels") or {}).get(SERVICE_NAME) == name
                and (s["metadata"].get("labels") or {}).get(MANAGED_BY) == SLICE_MANAGER]

    async def reconcile(self, key: Key) -> None:
        ns, name = key
        service = self.services.get(ns, name)
        existing = self.owned(ns, name)
        if service is None or is_deleting(service) or not service.get("spec", {}).get("selector"):
            for sl in existing:
                await self._delete(sl)
            return
        wanted = slice_endpoints(service, self.pods.list(ns))
        if not wanted:
            wanted = {"empty": ([], [])}  # a selector service always has one (placeholder) slice
        free = list(existing)
        for ports, endpoints in wanted.values():
            match = next((s for s in free if _port_key(s.get("ports") or []) == _port_key(ports)), None)
            if match is None and free:
                match = free[0]
            if match is not None:
                free.remove(match)
                await self._update(match, service, ports, endpoints)
            else:
                await self._create(service, ports, endpoints)
        for sl in free:
            await self._delete(sl)

    def _labels(self, service: Obj) -> dict[str, str]:
        labels = dict(service["metadata"].get("labels") or {})
        labels.update({SERVICE_NAME: name_of(service), MANAGED_BY: SLICE_MANAGER})
        return labels

    async def _create(self, service: Obj, ports: list[Obj], endpoints: list[Obj]) -> None:
        ns = service["metadata"].get("namespace", "")
        body: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": f"{name_of(service)}-{random_suffix()}", "namespace": ns,
                             "generateName": f"{name_of(service)}-", "labels": self._labels(service),
                             "annotations": {TRIGGER: rfc3339()},
                             "ownerReferences": [owner_ref(service)]},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
        body["metadata"]["ownerReferences"][0].update(apiVersion="v1", kind="Service")
        self.slices.upsert(await self.client.create("endpointslices.discovery.k8s.io", body, ns))

    async def _update(self, current: Obj, service: Obj, ports: list[Obj], endpoints: list[Obj]) -> None:
        if current.get("endpoints") == endpoints and current.get("ports") == ports and \
                current["metadata"].get("labels") == self._labels(service):
            return
        new: dict[str, Any] = dict(current, endpoints=endpoints, ports=ports)
        new["metadata"] = dict(current["metadata"], labels=self._labels(service))
        self.slices.upsert(await self.client.update("endpointslices.discovery.k8s.io", new))

    async def _delete(self, sl: Obj) -> None:
        try:
            await self.client.delete("endpointslices.discovery.k8s.io", name_of(sl), sl["metadata"].get("namespace"))
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise
        self.slices.remove(sl)


def _port_key(ports: list[Obj]) -> str:
    return repr(sorted((p.get("port") or 0, p.get("name", ""), p.get("protocol", "TCP")) for p in ports))
