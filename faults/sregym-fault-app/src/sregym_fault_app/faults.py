"""Application-configuration faults: env knobs services read, and transient triggers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema, template_fault
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sregym_core.faultkit import TruthValues
    from sregym_core.faults import FaultContext, FaultMethod
    from sregym_core.types import FailureMode, Target

SERVICES = TargetSelector(kinds=WORKLOADS, roles=("service:*", "frontend"))


def _env_ops(obj: dict, target: Target, values: dict[str, str]) -> list[dict]:
    """Set env vars (replacing existing entries, appending missing ones) as JSON-patch ops."""
    index = kube.container_index(obj, target.component.container_name)
    env = kube.container(obj, target.component.container_name).get("env") or []
    ops: list[dict[str, Any]] = []
    names = [e["name"] for e in env]
    base = f"/spec/template/spec/containers/{index}/env"
    if not env:
        return [{"op": "add", "path": base, "value": [{"name": k, "value": str(v)} for k, v in values.items()]}]
    appended = len(env)
    for name, value in values.items():
        if name in names:
            ops.append({"op": "add", "path": f"{base}/{names.index(name)}/value", "value": str(value)})
        else:
            ops.append({"op": "add", "path": f"{base}/{appended}", "value": {"name": name, "value": str(value)}})
            appended += 1
    return ops


def _env_fault(name: str, summary: str, values: dict[str, str], *, mechanism: str, symptoms: tuple[str, ...],
               keywords: tuple[str, ...], failure_mode: FailureMode, selector: TargetSelector = SERVICES,
               params_schema: dict[str, Any] | None = None,
               from_params: Callable[[Mapping[str, Any]], dict[str, str]] | None = None) -> FaultSpec:
    def mutate(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
        chosen = from_params(params) if from_params else values
        return _env_ops(obj, target, chosen)

    return template_fault(
        name=name, summary=summary, mutate=mutate, mechanism=mechanism, symptoms=symptoms, keywords=keywords,
        layer="config", selector=selector, failure_mode=failure_mode, resource_kind="Deployment",
        params_schema=params_schema or schema(),
        values=lambda t, p, s: {"env": from_params(p) if from_params else values},
    )


def fd_limit(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    image = kube.container(obj, target.component.container_name)["image"]
    local = next((i for i in target.app.images if i.matches(image)), None)
    container = kube.container(obj, target.component.container_name)
    entrypoint = container.get("command") or (list(local.argv) if local else None)
    if not entrypoint:
        raise PermanentFaultError(f"cannot tell {target.component.name}'s entrypoint to wrap it with ulimit")
    index = kube.container_index(obj, target.component.container_name)
    wrapped = ["sh", "-c", f'ulimit -n {params["nofile"]} && exec "$@"', "--", *entrypoint]
    return [{"op": "add", "path": f"/spec/template/spec/containers/{index}/command", "value": wrapped}]


def ephemeral_ports(ctx: FaultContext, target: Target, params: Mapping[str, Any], obj: dict) -> list[dict]:
    if params["low"] > params["high"]:
        raise PermanentFaultError(f"ephemeral-ports: low {params['low']} is above high {params['high']}")
    context = dict(kube.pod_spec(obj).get("securityContext") or {})
    others = [s for s in context.get("sysctls") or [] if s.get("name") != "net.ipv4.ip_local_port_range"]
    context["sysctls"] = [*others, {"name": "net.ipv4.ip_local_port_range", "value": f"{params['low']} {params['high']}"}]
    return [{"op": "add", "path": "/spec/template/spec/securityContext", "value": context}]


# ------------------------------------------------------------------ triggers (transient)

_BURST = r'''
import os, sys, time, threading, urllib.request
url, seconds, workers = os.environ["TARGET_URL"], float(os.environ["SECONDS"]), int(os.environ["WORKERS"])
deadline = time.time() + seconds
def hammer():
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
        except Exception:
            pass
threads = [threading.Thread(target=hammer) for _ in range(workers)]
[t.start() for t in threads]; [t.join() for t in threads]
'''


def burst_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    service = target.component.service_name or target.component.name
    port = target.component.ports[0] if target.component.ports else 80
    url = f"http://{service}.{ctx.namespace}.svc.cluster.local:{port}{params['path']}"
    ctx.state["job"] = params["job_name"]
    kube.apply(ctx, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": params["job_name"], "namespace": ctx.namespace},
        "spec": {"backoffLimit": 0, "activeDeadlineSeconds": int(params["seconds"]) + 30,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{
                     "name": "burst", "image": "python:3.11", "command": ["python", "-c", _BURST],
                     "env": [{"name": "TARGET_URL", "value": url}, {"name": "SECONDS", "value": str(params["seconds"])},
                             {"name": "WORKERS", "value": str(params["workers"])}]}]}}}})


def burst_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    job = kube.get(ctx, "job", params["job_name"], missing_ok=True)
    return job is not None and not job.get("status", {}).get("completionTime")


def burst_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ctx.kubectl("delete", "job", params["job_name"], "-n", ctx.namespace, "--ignore-not-found",
                "--cascade=foreground", "--wait=false", check=False)


def cpu_pressure_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    selector = kube.pod_selector(kube.workload(ctx, target))
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    node = next((p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")), None)
    spec: dict = {"restartPolicy": "Never", "containers": [{
        "name": "stress", "image": "busybox:1.36",
        "command": ["sh", "-c", f"for i in $(seq {params['workers']}); do (while :; do :; done) & done; sleep {params['seconds']}; kill 0"]}]}
    if node:
        spec["nodeName"] = node  # share the node with the target: a noisy neighbour
    kube.apply(ctx, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": params["pod_name"], "namespace": ctx.namespace},
                     "spec": spec})


def cpu_pressure_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    pod = kube.get(ctx, "pod", params["pod_name"], missing_ok=True)
    return pod is not None and pod.get("status", {}).get("phase") in ("Pending", "Running")


def cpu_pressure_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ctx.kubectl("delete", "pod", params["pod_name"], "-n", ctx.namespace, "--ignore-not-found", "--grace-period=0",
                "--force", check=False)


def capacity_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json"))["items"]
    running = len([p for p in pods if p.get("status", {}).get("phase") in ("Running", "Pending")])
    kube.apply(ctx, {"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": params["name"], "namespace": ctx.namespace},
                     "spec": {"hard": {"pods": str(running)}}})


def capacity_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "resourcequota", params["name"])


def capacity_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "resourcequota", params["name"])


def _f(name: str, summary: str, inject: FaultMethod, recover: FaultMethod, present: FaultMethod, *, mechanism: str,
       resource_kind: str, symptoms: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
       params: Mapping[str, Any] | None = None, values: TruthValues | None = None,
       selector: TargetSelector = SERVICES, failure_mode: FailureMode = "transient",
       fix: FaultMethod | None = None) -> FaultSpec:
    return function_fault(name=name, summary=summary, layer="config", selector=selector, params_schema=params or schema(),
                          inject=inject, recover=recover, is_present=present, reference_fix=fix,
                          resource_kind=resource_kind, mechanism=mechanism, symptoms=symptoms, keywords=keywords,
                          values=values, failure_mode=failure_mode)


FAULTS = [
    _env_fault("retry-storm", "RPC timeout 50 ms with 30 retries and no backoff: a load blip turns into a retry storm",
               {"RPC_TIMEOUT_MS": "50", "RPC_RETRIES": "30", "RPC_BACKOFF_MS": "0", "RPC_BACKOFF_MAX_MS": "0"},
               mechanism="aggressive client retry policy (50 ms timeout, 30 retries, no backoff) amplifies load into a retry storm",
               symptoms=("errors persist after the load spike ends", "DEADLINE_EXCEEDED", "high request volume on backends"),
               keywords=("retry", "retries", "timeout", "backoff", "storm", "metastable"), failure_mode="metastable",
               selector=TargetSelector(kinds=WORKLOADS, roles=("service:*", "frontend"), requires=("knob:retry-policy",))),
    _env_fault("rate-limit-collapse", "a low backend rate limit with a deep queue: bursts never drain",
               {"BACKEND_RATE_LIMIT": "15", "QUEUE_DEPTH": "2000"},
               mechanism="backend rate limit far below demand with a deep admission queue, so queued requests time out and are retried",
               symptoms=("RESOURCE_EXHAUSTED", "timeouts", "queue growth"),
               keywords=("rate limit", "queue", "QUEUE_DEPTH", "BACKEND_RATE_LIMIT", "metastable"), failure_mode="metastable",
               selector=TargetSelector(kinds=WORKLOADS, roles=("service:*",), requires=("knob:rate-limit",))),
    _env_fault("feature-flag-bug", "a runtime feature flag enables a dormant buggy code path",
               {}, mechanism="feature flag turned on a code path with a latent defect",
               symptoms=("5xx on one endpoint",), keywords=("feature flag", "flag", "FEATURE_"), failure_mode="latent",
               selector=TargetSelector(kinds=WORKLOADS, roles=("service:*",), requires=("knob:feature-flags",)),
               params_schema=schema(flag={"type": "string", "default": "FEATURE_RECOMMEND_V2"},
                                    value={"type": "string", "default": "true"}),
               from_params=lambda p: {p.get("flag", "FEATURE_RECOMMEND_V2"): p.get("value", "true")}),
    template_fault(name="fd-limit", summary="the service starts with a tiny open-file limit", mutate=fd_limit,
                   mechanism="open-file descriptor limit (ulimit -n) set far too low for the connection load",
                   symptoms=("too many open files", "EMFILE"), keywords=("file descriptor", "ulimit", "nofile", "too many open files"),
                   layer="config", selector=SERVICES,
                   params_schema=schema(nofile={"type": "integer", "minimum": 8, "default": 24}),
                   values=lambda t, p, s: {"ulimit -n": p.get("nofile")}),
    # Upstream's values (32000-32003: four ports). A real kubelet applies the sysctl in the pod's own
    # network namespace; the embedded node applies it to the pod's processes with a cgroup/connect4
    # program (plugins/sregym-cluster-embedded, node/portrange.py), so it runs on both.
    template_fault(name="ephemeral-ports", summary="a tiny local port range exhausts outbound connections",
                   mutate=ephemeral_ports, mechanism="net.ipv4.ip_local_port_range narrowed to a handful of ports",
                   symptoms=("EADDRNOTAVAIL", "cannot assign requested address"),
                   keywords=("ephemeral", "port range", "ip_local_port_range", "EADDRNOTAVAIL", "sysctl"),
                   layer="config", selector=SERVICES,
                   params_schema=schema(low={"type": "integer", "minimum": 1024, "maximum": 65535, "default": 32000},
                                        high={"type": "integer", "minimum": 1024, "maximum": 65535, "default": 32003}),
                   values=lambda t, p, s: {"ip_local_port_range": f"{p.get('low')} {p.get('high')}"}),
    _f("capacity-constraint", "a pod-count quota pinned at the current pod count: no room to recover or scale",
       capacity_inject, capacity_recover, capacity_present, mechanism="namespace ResourceQuota caps pods at the current count",
       resource_kind="ResourceQuota", symptoms=("FailedCreate: exceeded quota",), keywords=("quota", "pods", "capacity"),
       params=schema(name={"type": "string", "default": "team-capacity"}), failure_mode="metastable",
       values=lambda t, p, s: {"resourcequota": p.get("name")}),
    _f("load-burst", "trigger: a short burst of extra load against the service", burst_inject, burst_recover,
       burst_present, mechanism="a transient load burst", resource_kind="Job", symptoms=("latency spike",),
       keywords=("load", "burst", "spike"),
       params=schema(path={"type": "string", "default": "/hotels?inDate=2015-04-09&outDate=2015-04-10&lat=37.7867&lon=-122.4112"},
                     seconds={"type": "number", "default": 20}, workers={"type": "integer", "default": 24},
                     job_name={"type": "string", "default": "load-burst"}),
       selector=TargetSelector(kinds=WORKLOADS, roles=("frontend",), requires=("knob:load-entrypoint",)),
       values=lambda t, p, s: {"seconds": p.get("seconds"), "workers": p.get("workers")}),
    _f("cpu-pressure", "trigger: a CPU-hungry pod on the target's node for a while", cpu_pressure_inject,
       cpu_pressure_recover, cpu_pressure_present, mechanism="a transient CPU-saturating noisy neighbour on the node",
       resource_kind="Pod", symptoms=("latency spike", "CPU saturation"), keywords=("cpu", "noisy neighbour", "stress"),
       params=schema(seconds={"type": "number", "default": 20}, workers={"type": "integer", "default": 2},
                     pod_name={"type": "string", "default": "cpu-hog"}),
       values=lambda t, p, s: {"pod": p.get("pod_name"), "seconds": p.get("seconds")}),
]
