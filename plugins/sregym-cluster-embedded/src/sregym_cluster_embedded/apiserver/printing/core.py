"""Printers for core/v1 kinds other than Pod, plus StorageClass (storage kinds print together)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sregym_core.quantity import QuantityError
from sregym_core.quantity_canonical import canonical_quantity

from .columns import (
    AGE_DOC,
    NAME_DOC,
    Column,
    Printer,
    age_column,
    as_dict,
    as_int,
    as_list,
    container_cells,
    dig,
    format_labels,
    list_with_more,
    meta_name,
    name_column,
)
from .timefmt import parse_time, rfc3339, since


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(dig(obj, "metadata", "creationTimestamp"), now)


def quantity_text(value: Any) -> str:
    """``Quantity.String()`` of a stored quantity; ``0`` when unset, raw text if malformed."""
    if value is None or value == "":
        return "0"
    try:
        return canonical_quantity(value)
    except QuantityError:
        return str(value)


# ---------------------------------------------------------------------------- Node

NODE_COLUMNS = (
    name_column(),
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    age_column(),
    Column("Version", "string", ("V1NodeSystemInfo", "kubelet_version")),
    Column("Internal-IP", "string", ("V1NodeStatus", "addresses"), priority=1),
    Column("External-IP", "string", ("V1NodeStatus", "addresses"), priority=1),
    Column("OS-Image", "string", ("V1NodeSystemInfo", "os_image"), priority=1),
    Column("Kernel-Version", "string", ("V1NodeSystemInfo", "kernel_version"), priority=1),
    Column("Container-Runtime", "string", ("V1NodeSystemInfo", "container_runtime_version"), priority=1),
)

ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
LEGACY_ROLE_LABEL = "kubernetes.io/role"


def node_roles(node: dict[str, Any]) -> list[str]:
    roles: set[str] = set()
    for key, value in as_dict(dig(node, "metadata", "labels")).items():
        if key.startswith(ROLE_LABEL_PREFIX) and key[len(ROLE_LABEL_PREFIX):]:
            roles.add(key[len(ROLE_LABEL_PREFIX):])
        elif key == LEGACY_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def node_status_text(node: dict[str, Any]) -> str:
    states: list[str] = []
    for condition in as_list(dig(node, "status", "conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if dig(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def _node_address(node: dict[str, Any], kind: str) -> str:
    for address in as_list(dig(node, "status", "addresses")):
        if isinstance(address, dict) and address.get("type") == kind:
            return str(address.get("address") or "")
    return "<none>"


def _node_cells(node: dict[str, Any], now: datetime) -> list[Any]:
    info = as_dict(dig(node, "status", "nodeInfo"))
    return [
        meta_name(node),
        node_status_text(node),
        ",".join(node_roles(node)) or "<none>",
        _age(node, now),
        str(info.get("kubeletVersion") or ""),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        str(info.get("osImage") or "") or "<unknown>",
        str(info.get("kernelVersion") or "") or "<unknown>",
        str(info.get("containerRuntimeVersion") or "") or "<unknown>",
    ]


NODE_PRINTER = Printer(NODE_COLUMNS, _node_cells)

# ---------------------------------------------------------------------------- Namespace

NAMESPACE_PRINTER = Printer(
    (name_column(), Column("Status", "string", "The status of the namespace"), age_column()),
    lambda ns, now: [meta_name(ns), str(dig(ns, "status", "phase", default="")), _age(ns, now)],
)

# ---------------------------------------------------------------------------- Service

SERVICE_COLUMNS = (
    name_column(),
    Column("Type", "string", ("V1ServiceSpec", "type")),
    Column("Cluster-IP", "string", ("V1ServiceSpec", "cluster_ip")),
    Column("External-IP", "string", ("V1ServiceSpec", "external_ips")),
    Column("Port(s)", "string", ("V1ServiceSpec", "ports")),
    age_column(),
    Column("Selector", "string", ("V1ServiceSpec", "selector"), priority=1),
)


def load_balancer_text(status: Any) -> str:
    """IPs (or hostnames) of a load-balancer status, de-duplicated and sorted like a string set."""
    entries = set()
    for ingress in as_list(dig(status, "loadBalancer", "ingress")):
        if not isinstance(ingress, dict):
            continue
        if ingress.get("ip"):
            entries.add(str(ingress["ip"]))
        elif ingress.get("hostname"):
            entries.add(str(ingress["hostname"]))
    return ",".join(sorted(entries))


def service_external_ip(service: dict[str, Any]) -> str:
    spec = as_dict(service.get("spec"))
    kind = spec.get("type") or "ClusterIP"
    external = [str(ip) for ip in as_list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        balancer = load_balancer_text(service.get("status"))
        if external:
            return ",".join(([balancer] if balancer else []) + external)
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def service_ports_text(ports: Any) -> str:
    pieces = []
    for port in as_list(ports):
        if not isinstance(port, dict):
            continue
        protocol = port.get("protocol") or "TCP"
        if as_int(port.get("nodePort")) > 0:
            pieces.append(f"{port.get('port')}:{port.get('nodePort')}/{protocol}")
        else:
            pieces.append(f"{port.get('port')}/{protocol}")
    return ",".join(pieces)


def _service_cells(service: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(service.get("spec"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    cluster_ip = str(cluster_ips[0]) if cluster_ips else str(spec.get("clusterIP") or "") or "<none>"
    return [
        meta_name(service),
        str(spec.get("type") or ""),
        cluster_ip,
        service_external_ip(service),
        service_ports_text(spec.get("ports")) or "<none>",
        _age(service, now),
        format_labels(spec.get("selector")),
    ]


SERVICE_PRINTER = Printer(SERVICE_COLUMNS, _service_cells)

# ---------------------------------------------------------------------------- Endpoints / EndpointSlice


def _join_host_port(host: str, port: Any) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def endpoints_text(endpoints: dict[str, Any], limit: int = 3) -> str:
    subsets = [s for s in as_list(endpoints.get("subsets")) if isinstance(s, dict)]
    if not subsets:
        return "<none>"
    shown: list[str] = []
    total = 0
    for subset in subsets:
        addresses = [str(a.get("ip", "")) for a in as_list(subset.get("addresses")) if isinstance(a, dict)]
        ports = [p for p in as_list(subset.get("ports")) if isinstance(p, dict)]
        if not ports:
            total += len(addresses)
            shown.extend(addresses)
            continue
        for port in ports:
            total += len(addresses)
            shown.extend(_join_host_port(ip, port.get("port")) for ip in addresses)
    return list_with_more(shown, total, limit, "")


ENDPOINTS_PRINTER = Printer(
    (name_column(), Column("Endpoints", "string", ("V1Endpoints", "subsets")), age_column()),
    lambda ep, now: [meta_name(ep), endpoints_text(ep), _age(ep, now)],
)


def _slice_ports(ports: Any) -> str:
    shown = []
    items = [p for p in as_list(ports) if isinstance(p, dict)]
    for port in items:
        if port.get("port") is not None:
            shown.append(str(port["port"]))
        elif port.get("name") is not None:
            shown.append(str(port["name"]))
        else:
            shown.append("*")
    return list_with_more(shown, len(items), 3, "<unset>")


def _slice_endpoints(endpoints: Any) -> str:
    addresses = [
        str(address)
        for endpoint in as_list(endpoints)
        if isinstance(endpoint, dict)
        for address in as_list(endpoint.get("addresses"))
    ]
    return list_with_more(addresses, len(addresses), 3, "<unset>")


ENDPOINT_SLICE_PRINTER = Printer(
    (
        name_column(),
        Column("AddressType", "string", ("V1EndpointSlice", "address_type")),
        Column("Ports", "string", ("V1EndpointSlice", "ports")),
        Column("Endpoints", "string", ("V1EndpointSlice", "endpoints")),
        age_column(),
    ),
    lambda es, now: [
        meta_name(es),
        str(es.get("addressType") or ""),
        _slice_ports(es.get("ports")),
        _slice_endpoints(es.get("endpoints")),
        _age(es, now),
    ],
)

# ---------------------------------------------------------------------------- config and identity

CONFIGMAP_PRINTER = Printer(
    (name_column(), Column("Data", "string", ("V1ConfigMap", "data")), age_column()),
    lambda cm, now: [
        meta_name(cm),
        len(as_dict(cm.get("data"))) + len(as_dict(cm.get("binaryData"))),
        _age(cm, now),
    ],
)

SECRET_PRINTER = Printer(
    (
        name_column(),
        Column("Type", "string", ("V1Secret", "type")),
        Column("Data", "string", ("V1Secret", "data")),
        age_column(),
    ),
    lambda s, now: [meta_name(s), str(s.get("type") or ""), len(as_dict(s.get("data"))), _age(s, now)],
)

SERVICE_ACCOUNT_PRINTER = Printer(
    (name_column(), Column("Secrets", "string", ("V1ServiceAccount", "secrets")), age_column()),
    lambda sa, now: [meta_name(sa), len(as_list(sa.get("secrets"))), _age(sa, now)],
)

# ---------------------------------------------------------------------------- Event

EVENT_COLUMNS = (
    Column("Last Seen", "string", ("CoreV1Event", "last_timestamp")),
    Column("Type", "string", ("CoreV1Event", "type")),
    Column("Reason", "string", ("CoreV1Event", "reason")),
    Column("Object", "string", ("CoreV1Event", "involved_object")),
    Column("Subobject", "string", ("V1ObjectReference", "field_path"), priority=1),
    Column("Source", "string", ("CoreV1Event", "source"), priority=1),
    Column("Message", "string", ("CoreV1Event", "message")),
    Column("First Seen", "string", ("CoreV1Event", "first_timestamp"), priority=1),
    Column("Count", "string", ("CoreV1Event", "count"), priority=1),
    Column("Name", "string", NAME_DOC, priority=1, format="name"),
)


def core_event_view(event: dict[str, Any]) -> dict[str, Any]:
    """Map an ``events.k8s.io/v1`` Event onto the core/v1 field names the printer reads."""
    if "regarding" not in event and "note" not in event and "deprecatedCount" not in event:
        return event
    return {
        "metadata": event.get("metadata"),
        "type": event.get("type"),
        "reason": event.get("reason"),
        "message": event.get("note"),
        "involvedObject": event.get("regarding"),
        "source": event.get("deprecatedSource"),
        "reportingComponent": event.get("reportingController"),
        "reportingInstance": event.get("reportingInstance"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount"),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
    }


def _event_cells(raw: dict[str, Any], now: datetime) -> list[Any]:
    event = core_event_view(raw)
    first_seen = since(event.get("firstTimestamp"), now)
    if parse_time(event.get("firstTimestamp")) is None:
        first_seen = since(event.get("eventTime"), now)
    last_seen = since(event.get("lastTimestamp"), now)
    if parse_time(event.get("lastTimestamp")) is None:
        last_seen = first_seen
    count = as_int(event.get("count"))
    series = event.get("series")
    if isinstance(series, dict):
        last_seen = since(series.get("lastObservedTime"), now)
        count = as_int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the newer API carry no count
    involved = as_dict(event.get("involvedObject"))
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = as_dict(event.get("source"))
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        last_seen,
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        target,
        str(involved.get("fieldPath") or ""),
        f"{component}, {instance}" if instance else str(component),
        str(event.get("message") or "").strip(),
        first_seen,
        count,
        meta_name(event),
    ]


EVENT_PRINTER = Printer(EVENT_COLUMNS, _event_cells)

# ---------------------------------------------------------------------------- storage

_ACCESS_MODE_SHORT = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes_text(modes: Any) -> str:
    present = set(as_list(modes))
    return ",".join(short for mode, short in _ACCESS_MODE_SHORT if mode in present)


PV_COLUMNS = (
    name_column(),
    Column("Capacity", "string", ("V1PersistentVolumeSpec", "capacity")),
    Column("Access Modes", "string", ("V1PersistentVolumeSpec", "access_modes")),
    Column("Reclaim Policy", "string", ("V1PersistentVolumeSpec", "persistent_volume_reclaim_policy")),
    Column("Status", "string", ("V1PersistentVolumeStatus", "phase")),
    Column("Claim", "string", ("V1PersistentVolumeSpec", "claim_ref")),
    Column("StorageClass", "string", "StorageClass of the pv"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    Column("Reason", "string", ("V1PersistentVolumeStatus", "reason")),
    age_column(),
    Column("VolumeMode", "string", ("V1PersistentVolumeSpec", "volume_mode"), priority=1),
)

LEGACY_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def _storage_class_of(obj: dict[str, Any]) -> str:
    annotations = as_dict(dig(obj, "metadata", "annotations"))
    if LEGACY_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[LEGACY_STORAGE_CLASS_ANNOTATION])
    return str(dig(obj, "spec", "storageClassName", default=""))


def _pv_cells(pv: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(pv.get("spec"))
    claim = as_dict(spec.get("claimRef"))
    claim_text = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if spec.get("claimRef") is not None else ""
    phase = str(dig(pv, "status", "phase", default=""))
    if dig(pv, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    return [
        meta_name(pv),
        quantity_text(dig(spec, "capacity", "storage")),
        access_modes_text(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""),
        phase,
        claim_text,
        _storage_class_of(pv),
        str(spec.get("volumeAttributesClassName") or "<unset>"),
        str(dig(pv, "status", "reason", default="")),
        _age(pv, now),
        str(spec.get("volumeMode") or "<unset>"),
    ]


PV_PRINTER = Printer(PV_COLUMNS, _pv_cells)

PVC_COLUMNS = (
    name_column(),
    Column("Status", "string", ("V1PersistentVolumeClaimStatus", "phase")),
    Column("Volume", "string", ("V1PersistentVolumeClaimSpec", "volume_name")),
    Column("Capacity", "string", ("V1PersistentVolumeClaimStatus", "capacity")),
    Column("Access Modes", "string", ("V1PersistentVolumeClaimStatus", "access_modes")),
    Column("StorageClass", "string", "StorageClass of the pvc"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    age_column(),
    Column("VolumeMode", "string", ("V1PersistentVolumeClaimSpec", "volume_mode"), priority=1),
)


def _pvc_cells(pvc: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(pvc.get("spec"))
    status = as_dict(pvc.get("status"))
    phase = str(status.get("phase") or "")
    if dig(pvc, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    capacity = access = ""
    if spec.get("volumeName"):
        access = access_modes_text(status.get("accessModes"))
        capacity = quantity_text(dig(status, "capacity", "storage"))
    attributes_class = spec.get("volumeAttributesClassName")
    return [
        meta_name(pvc),
        phase,
        str(spec.get("volumeName") or ""),
        capacity,
        access,
        _storage_class_of(pvc),
        str(attributes_class or "<unset>"),
        _age(pvc, now),
        str(spec.get("volumeMode") or "<unset>"),
    ]


PVC_PRINTER = Printer(PVC_COLUMNS, _pvc_cells)

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _storage_class_cells(sc: dict[str, Any], now: datetime) -> list[Any]:
    annotations = as_dict(dig(sc, "metadata", "annotations"))
    name = meta_name(sc)
    if any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [
        name,
        str(sc.get("provisioner") or ""),
        str(sc.get("reclaimPolicy") or "Delete"),
        str(sc.get("volumeBindingMode") or "Immediate"),
        bool(sc.get("allowVolumeExpansion") or False),
        _age(sc, now),
    ]


STORAGE_CLASS_PRINTER = Printer(
    (
        name_column(),
        Column("Provisioner", "string", ("V1StorageClass", "provisioner")),
        Column("ReclaimPolicy", "string", ("V1StorageClass", "reclaim_policy")),
        Column("VolumeBindingMode", "string", ("V1StorageClass", "volume_binding_mode")),
        Column("AllowVolumeExpansion", "string", ("V1StorageClass", "allow_volume_expansion")),
        age_column(),
    ),
    _storage_class_cells,
)

# ---------------------------------------------------------------------------- policy objects

_RESOURCE_PREFIX_ORDER = {"requests": 0, "limits": 1}


def _quota_cells(quota: dict[str, Any], now: datetime) -> list[Any]:
    hard = as_dict(dig(quota, "status", "hard"))
    used = as_dict(dig(quota, "status", "used"))
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        text = f"{resource}: {quantity_text(used.get(resource))}/{quantity_text(hard[resource])}"
        pieces = resource.split(".")
        (limits if len(pieces) > 1 and pieces[0] == "limits" else requests).append(text)
    return [meta_name(quota), ", ".join(requests), ", ".join(limits), _age(quota, now)]


QUOTA_PRINTER = Printer(
    (
        name_column(),
        Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
        Column(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use independent of "
            "contention on the node.",
        ),
        age_column(),
    ),
    _quota_cells,
)

# LimitRanges have no dedicated printer: the generic NAME / CREATED AT table.
LIMIT_RANGE_PRINTER = Printer(
    (name_column(), Column("Created At", "date", AGE_DOC)),
    lambda lr, now: [meta_name(lr), rfc3339(dig(lr, "metadata", "creationTimestamp"))],
)

# ---------------------------------------------------------------------------- ReplicationController / PodTemplate

RC_COLUMNS = (
    name_column(),
    Column("Desired", "integer", ("V1ReplicationControllerSpec", "replicas")),
    Column("Current", "integer", ("V1ReplicationControllerStatus", "replicas")),
    Column("Ready", "integer", ("V1ReplicationControllerStatus", "ready_replicas")),
    age_column(),
    Column("Containers", "string", "Names of each container in the template.", priority=1),
    Column("Images", "string", "Images referenced by each container in the template.", priority=1),
    Column("Selector", "string", ("V1ReplicationControllerSpec", "selector"), priority=1),
)


def _rc_cells(rc: dict[str, Any], now: datetime) -> list[Any]:
    names, images = container_cells(dig(rc, "spec", "template", "spec", "containers"))
    return [
        meta_name(rc),
        as_int(dig(rc, "spec", "replicas"), 1),
        as_int(dig(rc, "status", "replicas")),
        as_int(dig(rc, "status", "readyReplicas")),
        _age(rc, now),
        names,
        images,
        format_labels(dig(rc, "spec", "selector")),
    ]


RC_PRINTER = Printer(RC_COLUMNS, _rc_cells)


def _pod_template_cells(template: dict[str, Any], now: datetime) -> list[Any]:
    names, images = container_cells(dig(template, "template", "spec", "containers"))
    return [meta_name(template), names, images, format_labels(dig(template, "template", "metadata", "labels"))]


POD_TEMPLATE_PRINTER = Printer(
    (
        name_column(),
        Column("Containers", "string", "Names of each container in the template."),
        Column("Images", "string", "Images referenced by each container in the template."),
        Column("Pod Labels", "string", "The labels for the pod template."),
    ),
    _pod_template_cells,
)
