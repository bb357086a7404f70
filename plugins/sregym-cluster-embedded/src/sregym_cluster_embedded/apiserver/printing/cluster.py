"""Printers for cluster-plumbing kinds agents occasionally inspect: API services, component
statuses, runtime classes, CSI objects, flow control, service CIDRs and certificate requests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .columns import (
    Column,
    Printer,
    age_column,
    as_dict,
    as_int,
    as_list,
    dig,
    meta_name,
    name_column,
)
from .timefmt import human_duration, since


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(dig(obj, "metadata", "creationTimestamp"), now)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in as_list(dig(obj, "status", "conditions")):
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _api_service_cells(svc: dict[str, Any], now: datetime) -> list[Any]:
    service = dig(svc, "spec", "service")
    target = f"{service.get('namespace', '')}/{service.get('name', '')}" if isinstance(service, dict) else "Local"
    available = "Unknown"
    condition = _condition(svc, "Available")
    if condition is not None:
        status = str(condition.get("status") or "")
        available = status if status == "True" or not condition.get("reason") else f"{status} ({condition['reason']})"
    return [meta_name(svc), target, available, _age(svc, now)]


API_SERVICE_PRINTER = Printer(
    (
        name_column(),
        Column("Service", "string", "The reference to the service that hosts this API endpoint."),
        Column("Available", "string", "Whether this service is available."),
        age_column(),
    ),
    _api_service_cells,
)


def _component_status_cells(cs: dict[str, Any], now: datetime) -> list[Any]:
    status, message, error = "Unknown", "", ""
    for condition in as_list(cs.get("conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message = str(condition.get("message") or "")
            error = str(condition.get("error") or "")
            break
    return [meta_name(cs), status, message, error]


COMPONENT_STATUS_PRINTER = Printer(
    (
        name_column(),
        Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions"),
    ),
    _component_status_cells,
)

RUNTIME_CLASS_PRINTER = Printer(
    (name_column(), Column("Handler", "string", ""), age_column()),
    lambda rc, now: [meta_name(rc), str(rc.get("handler") or ""), _age(rc, now)],
)


def _csi_driver_cells(driver: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(driver.get("spec"))
    token_requests = spec.get("tokenRequests")
    audiences = (
        ",".join(str(t.get("audience", "")) for t in as_list(token_requests) if isinstance(t, dict))
        if token_requests is not None
        else "<unset>"
    )
    modes = ",".join(str(m) for m in as_list(spec.get("volumeLifecycleModes"))) or "<none>"
    return [
        meta_name(driver),
        spec.get("attachRequired", True) is not False,
        bool(spec.get("podInfoOnMount") or False),
        bool(spec.get("storageCapacity") or False),
        audiences,
        bool(spec.get("requiresRepublish") or False),
        modes,
        _age(driver, now),
    ]


CSI_DRIVER_PRINTER = Printer(
    (
        name_column(),
        Column("AttachRequired", "boolean", ("V1CSIDriverSpec", "attach_required")),
        Column("PodInfoOnMount", "boolean", ("V1CSIDriverSpec", "pod_info_on_mount")),
        Column("StorageCapacity", "boolean", ("V1CSIDriverSpec", "storage_capacity")),
        Column("TokenRequests", "string", ("V1CSIDriverSpec", "token_requests")),
        Column("RequiresRepublish", "boolean", ("V1CSIDriverSpec", "requires_republish")),
        Column("Modes", "string", ("V1CSIDriverSpec", "volume_lifecycle_modes")),
        age_column(),
    ),
    _csi_driver_cells,
)

CSI_NODE_PRINTER = Printer(
    (
        name_column(),
        Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
        age_column(),
    ),
    lambda node, now: [meta_name(node), len(as_list(dig(node, "spec", "drivers"))), _age(node, now)],
)

VOLUME_ATTACHMENT_PRINTER = Printer(
    (
        name_column(),
        Column("Attacher", "string", ("V1VolumeAttachmentSpec", "attacher"), format="name"),
        Column("PV", "string", ("V1VolumeAttachmentSource", "persistent_volume_name")),
        Column("Node", "string", ("V1VolumeAttachmentSpec", "node_name")),
        Column("Attached", "boolean", ("V1VolumeAttachmentStatus", "attached")),
        age_column(),
    ),
    lambda va, now: [
        meta_name(va),
        str(dig(va, "spec", "attacher", default="")),
        str(dig(va, "spec", "source", "persistentVolumeName", default="")),
        str(dig(va, "spec", "nodeName", default="")),
        bool(dig(va, "status", "attached", default=False)),
        _age(va, now),
    ],
)

VOLUME_ATTRIBUTES_CLASS_PRINTER = Printer(
    (name_column(), Column("DriverName", "string", ""), age_column()),
    lambda vac, now: [meta_name(vac), str(vac.get("driverName") or ""), _age(vac, now)],
)


def _csr_status(csr: dict[str, Any]) -> str:
    kinds = {c.get("type") for c in as_list(dig(csr, "status", "conditions")) if isinstance(c, dict)}
    status = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        status += ",Failed"
    if dig(csr, "status", "certificate"):
        status += ",Issued"
    return status


def _csr_cells(csr: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(csr.get("spec"))
    seconds = spec.get("expirationSeconds")
    return [
        meta_name(csr),
        _age(csr, now),
        str(spec.get("signerName") or "<none>"),
        str(spec.get("username") or ""),
        human_duration(as_int(seconds)) if seconds is not None else "<none>",
        _csr_status(csr),
    ]


CSR_PRINTER = Printer(
    (
        name_column(),
        age_column(),
        Column("SignerName", "string", ("V1CertificateSigningRequestSpec", "signer_name")),
        Column("Requestor", "string", ("V1CertificateSigningRequestSpec", "request")),
        Column("RequestedDuration", "string", ("V1CertificateSigningRequestSpec", "expiration_seconds")),
        Column("Condition", "string", ("V1CertificateSigningRequestStatus", "conditions")),
    ),
    _csr_cells,
)


def _flow_schema_cells(fs: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(fs.get("spec"))
    method = dig(spec, "distinguisherMethod", "type")
    dangling = _condition(fs, "Dangling")
    return [
        meta_name(fs),
        str(dig(spec, "priorityLevelConfiguration", "name", default="")),
        as_int(spec.get("matchingPrecedence")),
        str(method) if method else "<none>",
        _age(fs, now),
        str(dangling.get("status")) if dangling else "?",
    ]


FLOW_SCHEMA_PRINTER = Printer(
    (
        name_column(),
        Column("PriorityLevel", "string", ""),
        Column("MatchingPrecedence", "string", ""),
        Column("DistinguisherMethod", "string", ""),
        age_column(),
        Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
    ),
    _flow_schema_cells,
)


def _priority_level_cells(pl: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(pl.get("spec"))
    limited = spec.get("limited")
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    queue_limit: Any = "<none>"
    if isinstance(limited, dict):
        shares = as_int(limited.get("nominalConcurrencyShares"))
        queuing = dig(limited, "limitResponse", "queuing")
        if isinstance(queuing, dict):
            queues = as_int(queuing.get("queues"))
            hand = as_int(queuing.get("handSize"))
            queue_limit = as_int(queuing.get("queueLengthLimit"))
    return [meta_name(pl), str(spec.get("type") or ""), shares, queues, hand, queue_limit, _age(pl, now)]


PRIORITY_LEVEL_PRINTER = Printer(
    (
        name_column(),
        Column("Type", "string", ""),
        Column("NominalConcurrencyShares", "string", ""),
        Column("Queues", "string", ""),
        Column("HandSize", "string", ""),
        Column("QueueLengthLimit", "string", ""),
        age_column(),
    ),
    _priority_level_cells,
)

SERVICE_CIDR_PRINTER = Printer(
    (name_column(), Column("CIDRs", "string", ""), age_column()),
    lambda sc, now: [meta_name(sc), ",".join(str(c) for c in as_list(dig(sc, "spec", "cidrs"))), _age(sc, now)],
)


def _ip_address_cells(ip: dict[str, Any], now: datetime) -> list[Any]:
    ref = dig(ip, "spec", "parentRef")
    parent = "<none>"
    if isinstance(ref, dict):
        group_resource = f"{ref.get('resource', '')}.{ref['group']}" if ref.get("group") else str(ref.get("resource", ""))
        parent = group_resource.lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name', '')}"
    return [meta_name(ip), parent, _age(ip, now)]


IP_ADDRESS_PRINTER = Printer(
    (name_column(), Column("ParentRef", "string", "")),
    lambda ip, now: _ip_address_cells(ip, now)[:2],
)


def _param_kind(policy: dict[str, Any]) -> str:
    kind = dig(policy, "spec", "paramKind")
    if isinstance(kind, dict):
        return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"
    return "<unset>"


VALIDATING_POLICY_PRINTER = Printer(
    (
        name_column(),
        Column("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
        Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
        age_column(),
    ),
    lambda p, now: [meta_name(p), len(as_list(dig(p, "spec", "validations"))), _param_kind(p), _age(p, now)],
)


def _param_ref(binding: dict[str, Any]) -> str:
    ref = dig(binding, "spec", "paramRef")
    if not isinstance(ref, dict):
        return "<unset>"
    if ref.get("name"):
        return f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else f"*/{ref['name']}"
    if isinstance(ref.get("selector"), dict):
        from .columns import selector_string

        return selector_string(ref["selector"])
    return "<unset>"


VALIDATING_POLICY_BINDING_PRINTER = Printer(
    (
        name_column(),
        Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
        Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
        age_column(),
    ),
    lambda b, now: [meta_name(b), str(dig(b, "spec", "policyName", default="")), _param_ref(b), _age(b, now)],
)
