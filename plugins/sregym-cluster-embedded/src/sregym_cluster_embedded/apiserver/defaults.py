"""The defaults a real kube-apiserver fills in when an object is created or updated.

``kubectl get -o yaml`` and ``describe`` show these fields, strategic-merge patches rely on
them (``ports[].protocol``), and controllers read them (``strategy.rollingUpdate``), so an
object stored here must look like one stored by a real cluster. Defaulting is idempotent:
running it twice changes nothing, and it never touches metadata bookkeeping (uid,
resourceVersion, creationTimestamp, generation).

Besides ``SetDefaults_*`` behaviour, three always-on admission plugins that shape every
stored pod are mirrored for kind Pod: ServiceAccount (``serviceAccountName: default``),
DefaultTolerationSeconds and Priority. The service-account token volume is separate:
see :func:`sregym_cluster_embedded.apiserver.admission.mount_service_account_token`.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_CEILING
from typing import Any

from sregym_core.quantity import QuantityError
from sregym_core.quantity_canonical import format_quantity, stored_amount, stored_quantity

from .shapes import as_dict

__all__ = ["apply_defaults", "canonical_resources", "default_pod_spec", "image_pull_policy", "pod_qos_class"]

DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_FILE_MODE = 420  # 0644, the mode kubectl shows as defaultMode: 420
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
SYSTEM_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
RBAC_GROUP = "rbac.authorization.k8s.io"

_VOLUME_SOURCE_KEYS_WITH_MODE = ("secret", "configMap", "downwardAPI", "projected")


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``parent[key]`` as a dict, created when absent; None when present but not a dict."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` when it is absent, null or empty-string (Go zero values)."""
    if obj.get(key) in (None, ""):
        obj[key] = value


# ---------------------------------------------------------------------------- containers


def image_pull_policy(image: Any) -> str:
    """``Always`` for ``:latest`` or untagged images (without digest), else ``IfNotPresent``."""
    text = str(image or "")
    name, _, digest = text.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_handler(handler: dict[str, Any]) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        _set(http, "path", "/")
        _set(http, "scheme", "HTTP")


def _default_probe(probe: dict[str, Any]) -> None:
    _default_handler(probe)
    _set(probe, "timeoutSeconds", 1)
    _set(probe, "periodSeconds", 10)
    _set(probe, "successThreshold", 1)
    _set(probe, "failureThreshold", 3)


def _default_ports(ports: Any) -> None:
    for port in _dicts(ports):
        _set(port, "protocol", "TCP")


def _default_container(container: dict[str, Any]) -> None:
    _set(container, "terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
    _set(container, "terminationMessagePolicy", "File")
    _set(container, "imagePullPolicy", image_pull_policy(container.get("image")))
    if container.get("resources") is None:
        container["resources"] = {}
    _default_ports(container.get("ports"))
    resources = container.get("resources")
    if isinstance(resources, dict):
        for field in ("limits", "requests"):
            canonical_resources(resources.get(field))
    for env in _dicts(container.get("env")):
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env.get("valueFrom"), dict) else None
        if isinstance(field_ref, dict):
            _set(field_ref, "apiVersion", "v1")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(key), dict):
            _default_probe(container[key])
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            if isinstance(lifecycle.get(key), dict):
                _default_handler(lifecycle[key])


def _default_volume(volume: dict[str, Any]) -> None:
    if not any(key != "name" and value is not None for key, value in volume.items()):
        volume["emptyDir"] = {}
    for key in _VOLUME_SOURCE_KEYS_WITH_MODE:
        source = volume.get(key)
        if isinstance(source, dict):
            _set(source, "defaultMode", DEFAULT_FILE_MODE)
    for item in _dicts((volume.get("downwardAPI") or {}).get("items") if isinstance(volume.get("downwardAPI"), dict) else None):
        if isinstance(item.get("fieldRef"), dict):
            _set(item["fieldRef"], "apiVersion", "v1")
    if isinstance(volume.get("hostPath"), dict) and volume["hostPath"].get("type") is None:
        volume["hostPath"]["type"] = ""
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for source in _dicts(projected.get("sources")):
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                _set(token, "expirationSeconds", 3600)
            downward = source.get("downwardAPI")
            for item in _dicts(downward.get("items") if isinstance(downward, dict) else None):
                if isinstance(item.get("fieldRef"), dict):
                    _set(item["fieldRef"], "apiVersion", "v1")


def default_pod_spec(spec: dict[str, Any]) -> None:
    """PodSpec defaults, shared by pods and every pod template inside a workload."""
    _set(spec, "restartPolicy", "Always")
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "schedulerName", "default-scheduler")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    # The v1 API carries the deprecated serviceAccount field mirrored from serviceAccountName.
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _dicts(spec.get(key)):
            _default_container(container)
    for volume in _dicts(spec.get("volumes")):
        _default_volume(volume)


def _default_template(owner_spec: dict[str, Any] | None) -> None:
    if owner_spec is None:
        return
    template = _dict(owner_spec, "template")
    if template is None:
        return
    spec = _dict(template, "spec")
    if spec is not None:
        default_pod_spec(spec)


# ---------------------------------------------------------------------------- Pod


def _requests_from_limits(container: dict[str, Any]) -> None:
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict) or not resources["limits"]:
        return
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    if isinstance(requests, dict):
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)


def _default_resize_policy(container: dict[str, Any]) -> None:
    """In-place resize is on by default: containers with cpu/memory requests get NotRequired."""
    resources = container.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    if not isinstance(requests, dict):
        return
    policies = container.get("resizePolicy")
    if policies is None:
        policies = []
    if not isinstance(policies, list):
        return
    named = {p.get("resourceName") for p in _dicts(policies)}
    for name in ("cpu", "memory"):
        if name in requests and name not in named:
            policies.append({"resourceName": name, "restartPolicy": "NotRequired"})
    if policies:
        container["resizePolicy"] = policies


def canonical_resources(resource_list: Any) -> None:
    """Store quantities the way the API server does: rounded up to 1m, in canonical spelling.

    ``cpu: 0.5`` is stored as ``500m``, ``memory: 1024Mi`` as ``1Gi`` and ``cpu: 1`` (a JSON
    number) as the string ``"1"``. Malformed values are left for validation to reject.
    """
    if not isinstance(resource_list, dict):
        return
    for name, value in list(resource_list.items()):
        try:
            amount, fmt = stored_amount(value)
        except QuantityError:
            continue
        milli = amount * 1000
        if milli != milli.to_integral_value():
            amount = milli.to_integral_value(rounding=ROUND_CEILING) / 1000
        resource_list[name] = format_quantity(amount, fmt)


def pod_qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed / Burstable / BestEffort from cpu and memory requests and limits."""
    containers = _dicts(spec.get("containers")) + _dicts(spec.get("initContainers"))
    any_set = False
    guaranteed = True
    for container in containers:
        resources = as_dict(container.get("resources"))
        requests = as_dict(resources.get("requests"))
        limits = as_dict(resources.get("limits"))
        for name in ("cpu", "memory"):
            request, limit = requests.get(name), limits.get(name)
            if request is not None or limit is not None:
                any_set = True
            try:
                if limit is None or request is None or stored_quantity(request) != stored_quantity(limit):
                    guaranteed = False
            except QuantityError:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _tolerates(tolerations: list[dict[str, Any]], key: str) -> bool:
    for toleration in tolerations:
        effect_ok = toleration.get("effect") in (None, "", "NoExecute")
        key_ok = toleration.get("key") == key or (not toleration.get("key") and toleration.get("operator") == "Exists")
        if effect_ok and key_ok:
            return True
    return False


def _default_pod(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    default_pod_spec(spec)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    for key in ("containers", "initContainers"):
        for container in _dicts(spec.get(key)):
            _requests_from_limits(container)
            if spec.get("hostNetwork"):
                for port in _dicts(container.get("ports")):
                    if port.get("hostPort") in (None, 0) and port.get("containerPort") is not None:
                        port["hostPort"] = port["containerPort"]
    for container in _dicts(spec.get("containers")):
        _default_resize_policy(container)
    # Admission plugins that run on every real pod create.
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if isinstance(tolerations, list):
        for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
            if not _tolerates(_dicts(tolerations), key):
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
                )
        spec["tolerations"] = tolerations
    if spec.get("priority") is None:
        class_name = spec.get("priorityClassName")
        if not class_name:
            spec["priority"] = 0
        elif class_name in SYSTEM_PRIORITIES:
            spec["priority"] = SYSTEM_PRIORITIES[class_name]
    _set(spec, "preemptionPolicy", "PreemptLowerPriority")
    status = _dict(obj, "status")
    if status is not None:
        _set(status, "phase", "Pending")
        _set(status, "qosClass", pod_qos_class(spec))


# ---------------------------------------------------------------------------- workloads


def _default_deployment(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "replicas", 1)
    strategy = _dict(spec, "strategy")
    if strategy is not None:
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                _set(rolling, "maxUnavailable", "25%")
                _set(rolling, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _default_template(spec)


def _default_replicaset(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "replicas", 1)
    _default_template(spec)


def _default_pvc_spec_and_status(claim: dict[str, Any]) -> None:
    spec = _dict(claim, "spec")
    if spec is not None:
        _set(spec, "volumeMode", "Filesystem")
        resources = spec.get("resources")
        if isinstance(resources, dict):
            canonical_resources(resources.get("requests"))
            canonical_resources(resources.get("limits"))
    status = _dict(claim, "status")
    if status is not None:
        _set(status, "phase", "Pending")


def _default_statefulset(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "replicas", 1)
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            _set(rolling, "partition", 0)
    _set(spec, "revisionHistoryLimit", 10)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _set(retention, "whenDeleted", "Retain")
        _set(retention, "whenScaled", "Retain")
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        _set(claim, "apiVersion", "v1")
        _set(claim, "kind", "PersistentVolumeClaim")
        _default_pvc_spec_and_status(claim)
    _default_template(spec)


def _default_daemonset(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                _set(rolling, "maxUnavailable", 1)
                _set(rolling, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _default_template(spec)


def _default_job(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _set(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    _set(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    for rule in _dicts((spec.get("podFailurePolicy") or {}).get("rules") if isinstance(spec.get("podFailurePolicy"), dict) else None):
        for pattern in _dicts(rule.get("onPodConditions")):
            _set(pattern, "status", "True")
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    _generate_job_selector(obj, spec)
    template_labels = (spec.get("template") or {}).get("metadata", {}) if isinstance(spec.get("template"), dict) else {}
    labels = template_labels.get("labels") if isinstance(template_labels, dict) else None
    metadata = _dict(obj, "metadata")
    if isinstance(labels, dict) and labels and metadata is not None and not metadata.get("labels"):
        metadata["labels"] = dict(labels)
    _default_template(spec)


def _generate_job_selector(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """The Job registry's generated selector: needs the uid, so only once it has been assigned."""
    metadata = as_dict(obj.get("metadata"))
    uid = metadata.get("uid")
    if spec.get("manualSelector") is True or not uid:
        return
    name = str(metadata.get("name") or "")
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = _dict(spec, "template")
    if template is None:
        return
    template_meta = _dict(template, "metadata")
    if template_meta is None:
        return
    labels = _dict(template_meta, "labels")
    if labels is None:
        return
    for key, value in (
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ):
        labels.setdefault(key, value)


def _default_cronjob(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job_template = _dict(spec, "jobTemplate")
    if job_template is not None:
        _default_template(_dict(job_template, "spec"))


def _default_replication_controller(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "replicas", 1)
    template = as_dict(spec.get("template"))
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template.get("metadata"), dict) else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        metadata = _dict(obj, "metadata")
        if metadata is not None and not metadata.get("labels"):
            metadata["labels"] = dict(labels)
    _default_template(spec)


def _default_pod_template(obj: dict[str, Any], version: str) -> None:
    _default_template(obj)


# ---------------------------------------------------------------------------- services and networking


def _default_service(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "type", "ClusterIP")
    _set(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    if spec["sessionAffinity"] == "ClientIP":
        config = _dict(spec, "sessionAffinityConfig")
        client = _dict(config, "clientIP") if config is not None else None
        if client is not None:
            _set(client, "timeoutSeconds", 10800)
    for port in _dicts(spec.get("ports")):
        _set(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    externally_accessible = kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and spec.get("externalIPs"))
    if externally_accessible:
        _set(spec, "externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if kind != "ExternalName":
        _set(spec, "internalTrafficPolicy", "Cluster")
        if not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
        _set(spec, "ipFamilyPolicy", "SingleStack")


def _default_endpoints(obj: dict[str, Any], version: str) -> None:
    for subset in _dicts(obj.get("subsets")):
        _default_ports(subset.get("ports"))


def _default_endpoint_slice(obj: dict[str, Any], version: str) -> None:
    for port in _dicts(obj.get("ports")):
        if port.get("name") is None:
            port["name"] = ""
        _set(port, "protocol", "TCP")


def _default_network_policy(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    if spec.get("podSelector") is None:
        spec["podSelector"] = {}
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec.get(direction)):
            _default_ports(rule.get("ports"))
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if _dicts(spec.get("egress")) or spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


# ---------------------------------------------------------------------------- storage, config, cluster


def _default_namespace(obj: dict[str, Any], version: str) -> None:
    metadata = _dict(obj, "metadata")
    if metadata is not None and metadata.get("name"):
        labels = _dict(metadata, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = metadata["name"]
    spec = _dict(obj, "spec")
    if spec is not None and spec.get("finalizers") is None:
        spec["finalizers"] = ["kubernetes"]
    status = _dict(obj, "status")
    if status is not None:
        _set(status, "phase", "Active")


def _default_node(obj: dict[str, Any], version: str) -> None:
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    canonical_resources(status.get("capacity"))
    canonical_resources(status.get("allocatable"))
    if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


def _default_secret(obj: dict[str, Any], version: str) -> None:
    _set(obj, "type", "Opaque")


def _default_pv(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is not None:
        canonical_resources(spec.get("capacity"))
        _set(spec, "persistentVolumeReclaimPolicy", "Retain")
        _set(spec, "volumeMode", "Filesystem")
        if isinstance(spec.get("hostPath"), dict) and spec["hostPath"].get("type") is None:
            spec["hostPath"]["type"] = ""
    status = _dict(obj, "status")
    if status is not None:
        _set(status, "phase", "Pending")


def _default_pvc(obj: dict[str, Any], version: str) -> None:
    _default_pvc_spec_and_status(obj)


def _default_storage_class(obj: dict[str, Any], version: str) -> None:
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


def _default_limit_range(obj: dict[str, Any], version: str) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for item in _dicts(spec.get("limits")):
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            canonical_resources(item.get(key))
        if item.get("type") != "Container":
            continue
        default = item.get("default") or {}
        request = item.get("defaultRequest") or {}
        if not isinstance(default, dict) or not isinstance(request, dict):
            continue
        # Default limit falls back to max; default request to the default limit, then to min.
        for name, value in (item.get("max") or {}).items() if isinstance(item.get("max"), dict) else ():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in (item.get("min") or {}).items() if isinstance(item.get("min"), dict) else ():
            request.setdefault(name, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def _default_resource_quota(obj: dict[str, Any], version: str) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        canonical_resources(spec.get("hard"))
    status = obj.get("status")
    if isinstance(status, dict):
        canonical_resources(status.get("hard"))
        canonical_resources(status.get("used"))


def _default_priority_class(obj: dict[str, Any], version: str) -> None:
    _set(obj, "preemptionPolicy", "PreemptLowerPriority")


def _default_binding(obj: dict[str, Any], version: str) -> None:
    for subject in _dicts(obj.get("subjects")):
        if subject.get("apiGroup") is None:
            subject["apiGroup"] = RBAC_GROUP if subject.get("kind") in ("User", "Group") else ""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict):
        _set(role_ref, "apiGroup", RBAC_GROUP)


_SCALE_UP_DEFAULT = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_SCALE_DOWN_DEFAULT = {
    "stabilizationWindowSeconds": 300,
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _default_hpa(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    _set(spec, "minReplicas", 1)
    if version == "v1":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
        ]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key, default in (("scaleUp", _SCALE_UP_DEFAULT), ("scaleDown", _SCALE_DOWN_DEFAULT)):
            rules = behavior.get(key)
            if rules is None:
                behavior[key] = {k: (list(map(dict, v)) if isinstance(v, list) else v) for k, v in default.items()}
            elif isinstance(rules, dict):
                for field, value in default.items():
                    if rules.get(field) is None:
                        rules[field] = list(map(dict, value)) if isinstance(value, list) else value


def _default_webhook_configuration(obj: dict[str, Any], version: str, *, mutating: bool) -> None:
    for hook in _dicts(obj.get("webhooks")):
        _set(hook, "failurePolicy", "Fail")
        _set(hook, "matchPolicy", "Equivalent")
        if hook.get("namespaceSelector") is None:
            hook["namespaceSelector"] = {}
        if hook.get("objectSelector") is None:
            hook["objectSelector"] = {}
        _set(hook, "timeoutSeconds", 10)
        if mutating:
            _set(hook, "reinvocationPolicy", "Never")
        for rule in _dicts(hook.get("rules")):
            _set(rule, "scope", "*")
        service = (hook.get("clientConfig") or {}).get("service") if isinstance(hook.get("clientConfig"), dict) else None
        if isinstance(service, dict):
            _set(service, "port", 443)


def _default_crd(obj: dict[str, Any], version: str) -> None:
    spec = _dict(obj, "spec")
    if spec is None:
        return
    conversion = _dict(spec, "conversion")
    if conversion is not None:
        _set(conversion, "strategy", "None")


Defaulter = Callable[[dict[str, Any], str], None]

_DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("", "Pod"): _default_pod,
    ("", "PodTemplate"): _default_pod_template,
    ("", "ReplicationController"): _default_replication_controller,
    ("", "Service"): _default_service,
    ("", "Endpoints"): _default_endpoints,
    ("", "Namespace"): _default_namespace,
    ("", "Secret"): _default_secret,
    ("", "Node"): _default_node,
    ("", "PersistentVolume"): _default_pv,
    ("", "PersistentVolumeClaim"): _default_pvc,
    ("", "LimitRange"): _default_limit_range,
    ("", "ResourceQuota"): _default_resource_quota,
    ("apps", "Deployment"): _default_deployment,
    ("apps", "ReplicaSet"): _default_replicaset,
    ("apps", "StatefulSet"): _default_statefulset,
    ("apps", "DaemonSet"): _default_daemonset,
    ("batch", "Job"): _default_job,
    ("batch", "CronJob"): _default_cronjob,
    ("autoscaling", "HorizontalPodAutoscaler"): _default_hpa,
    ("discovery.k8s.io", "EndpointSlice"): _default_endpoint_slice,
    ("networking.k8s.io", "NetworkPolicy"): _default_network_policy,
    ("storage.k8s.io", "StorageClass"): _default_storage_class,
    ("scheduling.k8s.io", "PriorityClass"): _default_priority_class,
    ("rbac.authorization.k8s.io", "RoleBinding"): _default_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _default_binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _default_crd,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): lambda o, v: _default_webhook_configuration(
        o, v, mutating=False
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): lambda o, v: _default_webhook_configuration(
        o, v, mutating=True
    ),
}


def apply_defaults(group: str, version: str, kind: str, obj: dict) -> None:
    """Fill in the real API server's defaults for ``group/version, kind`` in place.

    Unknown kinds and malformed objects are left as they are (validation reports those).
    """
    if not isinstance(obj, dict):
        return
    defaulter = _DEFAULTERS.get((group or "", kind))
    if defaulter is not None:
        defaulter(obj, version)
