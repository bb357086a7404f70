"""Faults on a workload's pod template: image, env, command, probes, init containers, sidecars,
resources and scheduling constraints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, injected_value, kube, original_value, schema, template_fault
from sregym_core.faultkit.templates import TemplateFault
from sregym_core.types import TargetSelector

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sregym_core.faultkit.templates import Mutation
    from sregym_core.faults import FaultContext
    from sregym_core.types import FaultSpec, Target

SERVING = TargetSelector(kinds=WORKLOADS, requires=("ports",))
#: components with a dependency address in an env var (``<PEER>_ADDR``, ``DB_ADDR``...)
ADDRESS_ENV = TargetSelector(kinds=WORKLOADS, requires=("env:*_ADDR",))


def _container_op(obj: dict, target: Target, field: str, value: Any) -> dict:
    return {"op": "add", "path": "/spec/template/spec/" + kube.container_path(obj, target, field), "value": value}


def _image(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {"image": {"before": original_value(state, "/image"), "after": injected_value(state, "/image")}}


def _retag(image: str, tag: str) -> str:
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return f"{repo}:{tag}"


def wrong_image(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    image = kube.container(obj, target.component.container_name)["image"]
    return [_container_op(obj, target, "image", _retag(image, params["tag"]))]


def buggy_image(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    image = kube.container(obj, target.component.container_name)["image"]
    return [_container_op(obj, target, "image", _retag(image, params["tag"]))]


def _env_list(obj: dict, target: Target) -> list[dict]:
    return kube.container(obj, target.component.container_name).get("env") or []


def _pick_env(obj: dict, target: Target, wanted: str | None,
              predicate: Callable[[dict], bool] = lambda e: True) -> tuple[int, dict]:
    env = _env_list(obj, target)
    declared = [n for n in target.component.env if n.endswith("_ADDR")] + list(target.component.env)
    if not wanted:
        # declared address variables first, in the order the app lists them
        for name in declared:
            for index, item in enumerate(env):
                if item["name"] == name and predicate(item):
                    return index, item
    for index, item in enumerate(env):
        if wanted and item["name"] == wanted:
            return index, item
    if not wanted:
        for index, item in enumerate(env):
            if predicate(item):
                return index, item
    raise PermanentFaultError(f"container {target.component.container_name} has no suitable env var"
                              + (f" named {wanted!r}" if wanted else ""))


def missing_env(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    index, item = _pick_env(obj, target, params.get("name"))
    ctx.state["env_name"] = item["name"]
    return [{"op": "remove", "path": "/spec/template/spec/" + kube.container_path(obj, target, f"env/{index}")}]


def _missing_env_values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    original = next(iter(state.get("originals", {}).values()), None) or {}
    return {"removed_env": state.get("env_name") or params.get("name"), "original": original}


def _looks_like_address(item: dict) -> bool:
    value = str(item.get("value", ""))
    return ":" in value and value.rsplit(":", 1)[-1].isdigit()


def env_shadowing(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    index, item = _pick_env(obj, target, params.get("name"), _looks_like_address)
    value = params.get("value") or _wrong_port(item.get("value", ""))
    env = _env_list(obj, target)
    ctx.state["env_name"] = item["name"]
    return [{"op": "add", "path": "/spec/template/spec/" + kube.container_path(obj, target, f"env/{len(env)}"),
             "value": {"name": item["name"], "value": value}}]


def _wrong_port(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return address + "-invalid"
    return f"{host}:{int(port) + 1}"


def wrong_port_env(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    index, item = _pick_env(obj, target, params.get("name"), _looks_like_address)
    ctx.state["env_name"] = item["name"]
    value = params.get("value") or _wrong_port(item.get("value", ""))
    return [{"op": "add", "path": "/spec/template/spec/" + kube.container_path(obj, target, f"env/{index}/value"),
             "value": value}]


def _env_values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {"env": state.get("env_name") or params.get("name"), "before": original_value(state, "/value"),
            "after": injected_value(state, "/value") or (injected_value(state, "") or {}).get("value")}


def wrong_command(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    return [_container_op(obj, target, "command", ["sh", "-c", params["command"]])]


def scale_zero(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    return [{"op": "add", "path": "/spec/replicas", "value": 0}]


def _probe(kind: str) -> Mutation:
    def mutate(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
        container = kube.container(obj, target.component.container_name)
        probe = container.get(kind)
        port = target.component.ports[0] if target.component.ports else 80
        if probe and "httpGet" in probe:
            new = {**probe, "httpGet": {**probe["httpGet"], "path": params["path"]}}
        elif probe and "grpc" in probe:
            new = {**probe, "grpc": {**probe["grpc"], "port": probe["grpc"]["port"] + params["port_offset"]}}
        elif probe and "tcpSocket" in probe:
            sock = probe["tcpSocket"]
            new = {**probe, "tcpSocket": {**sock, "port": (sock["port"] if isinstance(sock["port"], int) else port) + params["port_offset"]}}
        else:
            new = {"httpGet": {"path": params["path"], "port": port}, "periodSeconds": 5, "failureThreshold": 3}
        return [_container_op(obj, target, kind, new)]
    return mutate


def liveness_aggressive(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    container = kube.container(obj, target.component.container_name)
    probe = container.get("livenessProbe") or container.get("readinessProbe")
    if not probe:
        port = target.component.ports[0] if target.component.ports else 80
        probe = {"tcpSocket": {"port": port}}
    handler = {k: v for k, v in probe.items() if k in ("httpGet", "tcpSocket", "exec", "grpc")}
    new = {**handler, "initialDelaySeconds": 0, "periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 1}
    return [_container_op(obj, target, "livenessProbe", new)]


def init_hang(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    init = kube.pod_spec(obj).get("initContainers") or []
    hook = {"name": "wait-for-dependency", "image": "busybox:1.36",
            "command": ["sh", "-c", f"until nc -z {params['host']} {params['port']} 2>/dev/null; do "
                                    f"echo waiting for {params['host']}:{params['port']}; sleep 2; done"]}
    if not init:
        return [{"op": "add", "path": "/spec/template/spec/initContainers", "value": [hook]}]
    return [{"op": "add", "path": f"/spec/template/spec/initContainers/{len(init)}", "value": hook}]


def sidecar_port_conflict(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    port = target.component.ports[0]
    sidecar = {"name": "metrics-proxy", "image": "python:3.11",
               "command": ["python", "-m", "http.server", str(port)]}
    # containers start in order: the sidecar first, so it wins the port and the app fails to bind
    return [{"op": "add", "path": "/spec/template/spec/containers/0", "value": sidecar}]


def host_port_conflict(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    container = kube.container(obj, target.component.container_name)
    ports = container.get("ports") or [{"containerPort": target.component.ports[0]}]
    first = {**ports[0], "hostPort": params["host_port"]}
    ctx.state["host_port"] = params["host_port"]
    _ensure_port_holder(ctx, params["host_port"])
    return [_container_op(obj, target, "ports", [first, *ports[1:]])]


def _ensure_port_holder(ctx: FaultContext, host_port: int) -> None:
    """A DaemonSet holding the host port on every node, so the target's hostPort cannot fit."""
    kube.apply(ctx, {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-exporter-legacy", "namespace": ctx.namespace, "labels": {"sregym.io/fault": "host-port"}},
        "spec": {"selector": {"matchLabels": {"app": "node-exporter-legacy"}},
                 "template": {"metadata": {"labels": {"app": "node-exporter-legacy"}},
                              "spec": {"containers": [{"name": "exporter", "image": "busybox:1.36",
                                                       "command": ["sh", "-c", "sleep 3600000"],
                                                       "ports": [{"containerPort": host_port, "hostPort": host_port}]}]}}}})


def _resources(field: str, resource: str) -> Mutation:
    def mutate(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
        container = kube.container(obj, target.component.container_name)
        resources = dict(container.get("resources") or {})
        section = dict(resources.get(field) or {})
        section[resource] = params["value"]
        resources[field] = section
        if field == "limits" and resource in (resources.get("requests") or {}):
            # a request above the new limit would be rejected: lower it with the limit
            resources["requests"] = {**resources["requests"], resource: params["value"]}
        if field == "requests" and resource in (resources.get("limits") or {}):
            # a limit below the new request would be rejected: raise it with the request
            resources["limits"] = {**resources["limits"], resource: params["value"]}
        return [_container_op(obj, target, "resources", resources)]
    return mutate


def node_selector_missing(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    return [{"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {params["label"]: params["value"]}}]


def anti_affinity_deadlock(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    labels = obj["spec"]["selector"].get("matchLabels", {})
    nodes = ctx.kubectl("get", "nodes", "-o", "name").split()
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}}
    return [{"op": "add", "path": "/spec/template/spec/affinity", "value": affinity},
            {"op": "add", "path": "/spec/replicas", "value": len(nodes) + 1}]


def rolling_update_broken(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%", "maxSurge": 0}}
    return [{"op": "add", "path": "/spec/strategy", "value": strategy}, *init_hang(ctx, target, params, obj)]


def wrong_dns_policy(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    # a loopback nameserver nothing listens on: resolution fails and no packet leaves the pod
    return [{"op": "add", "path": "/spec/template/spec/dnsPolicy", "value": "None"},
            {"op": "add", "path": "/spec/template/spec/dnsConfig", "value": {"nameservers": [params["nameserver"]],
                                                                           "searches": ["internal.corp"]}}]


def wrong_service_account(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    # the deprecated serviceAccount field mirrors serviceAccountName; the API server fills one from the
    # other, so both are set (and both put back)
    return [{"op": "add", "path": "/spec/template/spec/serviceAccountName", "value": params["service_account"]},
            {"op": "add", "path": "/spec/template/spec/serviceAccount", "value": params["service_account"]}]


def hpa_no_request(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    container = kube.container(obj, target.component.container_name)
    resources = dict(container.get("resources") or {})
    resources["requests"] = {k: v for k, v in (resources.get("requests") or {}).items() if k != "cpu"}
    resources["limits"] = {k: v for k, v in (resources.get("limits") or {}).items() if k != "cpu"}
    kube.apply(ctx, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                     "metadata": {"name": target.component.name, "namespace": ctx.namespace},
                     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": target.component.kind,
                                                 "name": target.component.name},
                              "minReplicas": 1, "maxReplicas": 3,
                              "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                  "type": "Utilization", "averageUtilization": 60}}}]}})
    return [_container_op(obj, target, "resources", resources)]


class CpuRequestMissing(TemplateFault):
    """hpa-no-request is present while the target container has no CPU request, whatever else changed.

    The template check (the injected resources still live) would call it fixed when only the memory
    values moved, with the HPA still blind; and any CPU request fixes it, not only the original one.
    """

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
        obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
        if obj is None:
            return True  # deleting the workload is not a fix
        container = kube.container(obj, target.component.container_name)
        return not ((container.get("resources") or {}).get("requests") or {}).get("cpu")

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        """Put the CPU request back; the HPA stays, scaling on it again (what the SRE wants)."""
        TemplateFault.recover(self, ctx, target, params)

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        """The harness's cleanup: the request back and the HPA the injection made gone, so no later
        problem on this cluster finds an autoscaler the app never had."""
        super().recover(ctx, target, params)
        ctx.kubectl("delete", "horizontalpodautoscaler", target.component.name, "-n", ctx.namespace,
                    "--ignore-not-found", check=False)


def _cpu_request_missing(spec: FaultSpec) -> FaultSpec:
    impl = spec.impl
    assert isinstance(impl, TemplateFault)  # a template_fault's spec, as FAULTS passes it
    return attrs.evolve(spec, impl=CpuRequestMissing(impl.mutate, truth=impl.truth))


NUMBER = {"type": "integer", "minimum": 1, "maximum": 65535}

FAULTS = [
    template_fault(name="wrong-image", summary="container image set to a tag that does not exist",
                   mutate=wrong_image, mechanism="container image set to a tag that does not exist",
                   symptoms=("ErrImagePull", "ImagePullBackOff"), keywords=("image", "tag", "pull", "ImagePullBackOff"),
                   params_schema=schema(tag={"type": "string", "default": "v9.9.9-missing"}), values=_image,
                   prose="The {component} container image was changed to a tag that does not exist, so new pods stay in ImagePullBackOff."),
    template_fault(name="buggy-image", summary="image rolled to a variant with a real code defect",
                   mutate=buggy_image, mechanism="image rolled to a buggy build with a code defect on one request path",
                   symptoms=("5xx errors on one endpoint",), keywords=("image", "bug", "regression", "roll back"),
                   params_schema=schema(tag={"type": "string", "default": "1.0-buggy"}), values=_image, layer="app",
                   selector=TargetSelector(kinds=WORKLOADS, roles=("service:*", "frontend"),
                                           requires=("knob:buggy-image",))),
    template_fault(name="missing-env", summary="an env var the service needs is removed",
                   mutate=missing_env, mechanism="required environment variable removed from the container",
                   symptoms=("CrashLoopBackOff", "connection failures"), keywords=("environment", "env", "variable", "missing"),
                   params_schema=schema(name={"type": "string"}), values=_missing_env_values,
                   selector=TargetSelector(kinds=WORKLOADS, requires=("env",))),
    template_fault(name="env-shadowing", summary="a duplicate env var later in the list overrides the right value",
                   mutate=env_shadowing, mechanism="duplicate environment variable shadows the correct value",
                   symptoms=("wrong upstream address", "connection refused"), keywords=("duplicate", "env", "shadow", "override"),
                   params_schema=schema(name={"type": "string"}, value={"type": "string"}), values=_env_values,
                   selector=ADDRESS_ENV),
    template_fault(name="wrong-port-env", summary="a dependency address env var points at the wrong port",
                   mutate=wrong_port_env, mechanism="dependency address environment variable points to a wrong port",
                   symptoms=("connection refused in logs",), keywords=("port", "address", "env", "connection refused"),
                   params_schema=schema(name={"type": "string"}, value={"type": "string"}), values=_env_values,
                   selector=ADDRESS_ENV),
    template_fault(name="wrong-command", summary="the container command runs something else",
                   mutate=wrong_command, mechanism="container command overridden to run a different program",
                   symptoms=("pods Running but not Ready", "no endpoints"), keywords=("command", "entrypoint", "args"),
                   params_schema=schema(command={"type": "string", "default": "echo 'maintenance mode'; exec sleep 3600000"}),
                   values=lambda t, p, s: {"command": injected_value(s, "/command") or ["sh", "-c", p.get("command")]},
                   selector=SERVING),
    template_fault(name="scale-zero", summary="replicas set to 0", mutate=scale_zero,
                   mechanism="workload scaled to zero replicas", symptoms=("no endpoints", "503 upstream"),
                   keywords=("replicas", "scale", "zero"), values=lambda t, p, s: {"replicas": {"before": original_value(s, "/replicas"), "after": 0}},
                   selector=TargetSelector(kinds=("Deployment", "StatefulSet"), requires=("ports",))),
    template_fault(name="liveness-misconfig", summary="liveness probe checks a wrong path or port",
                   mutate=_probe("livenessProbe"), mechanism="liveness probe misconfigured (wrong path/port)",
                   symptoms=("restarts", "CrashLoopBackOff", "Liveness probe failed"), keywords=("liveness", "probe"),
                   params_schema=schema(path={"type": "string", "default": "/healthz-v2"},
                                        port_offset={"type": "integer", "default": 1}),
                   values=lambda t, p, s: {"livenessProbe": {"before": original_value(s, "/livenessProbe"), "after": injected_value(s, "/livenessProbe")}},
                   selector=SERVING),
    template_fault(name="liveness-aggressive", summary="liveness probe with no delay, 1 s period and threshold 1",
                   mutate=liveness_aggressive, mechanism="liveness probe too aggressive (no initial delay, period 1 s, failure threshold 1)",
                   symptoms=("restart loop",), keywords=("liveness", "probe", "aggressive", "threshold", "initialDelaySeconds"),
                   values=lambda t, p, s: {"livenessProbe": injected_value(s, "/livenessProbe")}, selector=SERVING),
    template_fault(name="readiness-misconfig", summary="readiness probe checks a wrong path or port",
                   mutate=_probe("readinessProbe"), mechanism="readiness probe misconfigured (wrong path/port)",
                   symptoms=("pods never Ready", "no endpoints", "Readiness probe failed"), keywords=("readiness", "probe"),
                   params_schema=schema(path={"type": "string", "default": "/ready-v2"},
                                        port_offset={"type": "integer", "default": 1}),
                   values=lambda t, p, s: {"readinessProbe": {"before": original_value(s, "/readinessProbe"), "after": injected_value(s, "/readinessProbe")}},
                   selector=SERVING),
    template_fault(name="init-hang", summary="an init container waits forever for a dependency that does not exist",
                   mutate=init_hang, mechanism="init container blocks waiting for a missing dependency",
                   symptoms=("Init:0/1",), keywords=("init container", "initContainers", "waiting", "dependency"),
                   params_schema=schema(host={"type": "string", "default": "config-service"}, port={**NUMBER, "default": 8500}),
                   values=lambda t, p, s: {"initContainer": "wait-for-dependency", "waits_for": f"{p.get('host')}:{p.get('port')}"}),
    template_fault(name="sidecar-port-conflict", summary="a sidecar binds the app's port", mutate=sidecar_port_conflict,
                   mechanism="sidecar container binds the same port as the application container",
                   symptoms=("address already in use", "CrashLoopBackOff"), keywords=("sidecar", "port", "conflict", "address in use"),
                   values=lambda t, p, s: {"sidecar": "metrics-proxy", "port": t.component.ports[0] if t.component.ports else None},
                   selector=SERVING),
    template_fault(name="host-port-conflict", summary="hostPort clashes with another pod on every node",
                   mutate=host_port_conflict, mechanism="hostPort set on the container clashes with another pod's hostPort",
                   symptoms=("Pending", "didn't have free ports for the requested pod ports"), keywords=("hostPort", "port", "conflict"),
                   params_schema=schema(host_port={**NUMBER, "default": 9100}),
                   values=lambda t, p, s: {"hostPort": p.get("host_port")}, selector=SERVING),
    template_fault(name="request-too-large", summary="memory request above any node's capacity",
                   mutate=_resources("requests", "memory"), mechanism="memory request larger than any node can offer",
                   symptoms=("Pending", "FailedScheduling", "Insufficient memory"), keywords=("request", "memory", "Insufficient"),
                   params_schema=schema(value={"type": "string", "default": "512Gi"}),
                   values=lambda t, p, s: {"resources.requests.memory": p.get("value")}),
    template_fault(name="memory-limit-too-small", summary="memory limit far below what the process needs",
                   mutate=_resources("limits", "memory"), mechanism="memory limit far too small, container OOMKilled",
                   symptoms=("OOMKilled", "CrashLoopBackOff"), keywords=("memory", "limit", "OOMKilled", "OOM"),
                   params_schema=schema(value={"type": "string", "default": "12Mi"}),
                   values=lambda t, p, s: {"resources.limits.memory": p.get("value")}),
    template_fault(name="cpu-throttling", summary="a tight CPU limit throttles the service",
                   mutate=_resources("limits", "cpu"), mechanism="CPU limit too tight, container heavily throttled",
                   symptoms=("high latency", "CPU throttling"), keywords=("cpu", "limit", "throttl"),
                   params_schema=schema(value={"type": "string", "default": "10m"}),
                   values=lambda t, p, s: {"resources.limits.cpu": p.get("value")}, selector=SERVING),
    template_fault(name="node-selector-missing", summary="nodeSelector for a node label no node has",
                   mutate=node_selector_missing, mechanism="nodeSelector requires a node label that no node has",
                   symptoms=("Pending", "didn't match Pod's node affinity/selector"), keywords=("nodeSelector", "node", "label"),
                   params_schema=schema(label={"type": "string", "default": "disktype"}, value={"type": "string", "default": "nvme"}),
                   values=lambda t, p, s: {"nodeSelector": {p.get("label"): p.get("value")}}),
    template_fault(name="anti-affinity-deadlock", summary="required anti-affinity with more replicas than nodes",
                   mutate=anti_affinity_deadlock, mechanism="required pod anti-affinity with more replicas than nodes",
                   symptoms=("some pods Pending", "didn't match pod anti-affinity rules"), keywords=("anti-affinity", "affinity", "replicas"),
                   values=lambda t, p, s: {"replicas": injected_value(s, "/replicas")},
                   selector=TargetSelector(kinds=("Deployment",), requires=("ports",))),
    template_fault(name="rolling-update-broken", summary="maxUnavailable 100 % with a hanging init container",
                   mutate=rolling_update_broken, mechanism="unsafe rollout strategy (maxUnavailable 100%, maxSurge 0) with a hanging init container",
                   symptoms=("full outage during rollout", "Init:0/1"), keywords=("rollout", "maxUnavailable", "strategy", "init"),
                   params_schema=schema(host={"type": "string", "default": "feature-store"}, port={**NUMBER, "default": 6000}),
                   values=lambda t, p, s: {"strategy": injected_value(s, "/strategy")},
                   selector=TargetSelector(kinds=("Deployment",), requires=("ports",))),
    template_fault(name="wrong-dns-policy", summary="dnsPolicy None with a nameserver that does not answer",
                   mutate=wrong_dns_policy, mechanism="dnsPolicy set to None with an unreachable nameserver",
                   symptoms=("name resolution failures",), keywords=("dns", "dnsPolicy", "nameserver", "resolution"),
                   params_schema=schema(nameserver={"type": "string", "default": "127.0.0.254"}),
                   values=lambda t, p, s: {"dnsPolicy": "None", "nameservers": [p.get("nameserver")]}),
    template_fault(name="wrong-service-account", summary="pods reference a ServiceAccount that does not exist",
                   mutate=wrong_service_account, mechanism="serviceAccountName points to a ServiceAccount that does not exist",
                   symptoms=("FailedCreate", "serviceaccount not found"), keywords=("serviceaccount", "service account"),
                   params_schema=schema(service_account={"type": "string", "default": "app-runner"}),
                   values=lambda t, p, s: {"serviceAccountName": p.get("service_account")}),
    _cpu_request_missing(template_fault(
        name="hpa-no-request", summary="CPU request removed while an HPA scales on CPU",
        mutate=hpa_no_request, mechanism="CPU request removed, so the CPU-based HPA cannot compute utilization",
        symptoms=("HPA targets <unknown>", "FailedGetResourceMetric"), keywords=("hpa", "autoscal", "request", "cpu"),
        values=lambda t, p, s: {"resources.requests.cpu": "removed"},
        selector=TargetSelector(kinds=("Deployment",), requires=("ports",)))),
]
