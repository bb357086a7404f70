"""The noise sources. Each is transient (it ends by itself or on ``revert``), self-recovering
(controllers put things back) and never a root cause of a problem.

Everything they create looks like ordinary cluster life: a batch pod, kubelet warnings, a service
path that is slow for a while. Names never say what the objects are for, so an agent cannot
filter them out by name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sregym_core.clusters import SupportsNetworkFaults, capability
from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.types import NoiseSpec, TargetSelector

#: components noise can act on: plain services (never the workload generator or a stateful store)
SERVICES = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "frontend"))
CONFIGURED = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "frontend"),
                            requires=("config_map",))
SERVED = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "frontend"),
                        requires=("ports",))


def _pods(ctx: Any, target: Any) -> list[dict]:
    labels = ",".join(f"{k}={v}" for k, v in sorted(target.component.labels.items()))
    if not labels:
        raise PermanentFaultError(f"component {target.component.name} declares no pod labels")
    out = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", labels, "-o", "json"))
    return [p for p in out.get("items", []) if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def _a_ready_pod(ctx: Any, target: Any) -> dict:
    ready = sorted((p for p in _pods(ctx, target) if _ready(p)), key=lambda p: p["metadata"]["name"])
    if not ready:
        raise TemporaryFaultError(f"no ready pod of {target.component.name} yet", delay=1.0)
    return ready[0]


def _suffix() -> str:
    return uuid.uuid4().hex[:5]


def _delete_pod(ctx: Any, name: str | None) -> None:
    if name:
        ctx.kubectl("delete", "pod", name, "-n", ctx.namespace, "--ignore-not-found", "--grace-period=1",
                    "--wait=true", "--timeout=60s", check=False, timeout=90)


def _pod_exists(ctx: Any, name: str | None) -> bool:
    if not name:
        return False
    out = ctx.kubectl("get", "pod", name, "-n", ctx.namespace, "--ignore-not-found", "-o", "json", check=False)
    return bool(out.strip())


# --------------------------------------------------------------------------------------------- pod-kill


class PodKill:
    """Delete one ready pod of the target; its Deployment starts a replacement."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        pod = _a_ready_pod(ctx, target)
        ctx.state.update(pod=pod["metadata"]["name"], uid=pod["metadata"]["uid"])
        grace = int(params.get("grace_period_s", 0))
        how = [f"--grace-period={grace}"] if grace else ["--grace-period=0", "--force"]  # an abrupt kill by default
        ctx.kubectl("delete", "pod", pod["metadata"]["name"], "-n", ctx.namespace, "--wait=false", *how)

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        """Until the killed pod is gone and the component has a ready pod again."""
        if "uid" not in ctx.state:
            return False
        pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json")).get("items", [])
        if any(p["metadata"]["uid"] == ctx.state["uid"] for p in pods):
            return True
        return not any(_ready(p) for p in _pods(ctx, target))

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        """Nothing to undo: the controller recreates the pod (grading waits for it via is_active)."""

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"deleted pod {ctx.state.get('pod', '?')} of {target.component.name}"


# --------------------------------------------------------------------------------------- warning-events

_WARNINGS = (
    ("Unhealthy", "Readiness probe failed: Get \"http://{ip}:{port}/readyz\": context deadline exceeded "
                  "(Client.Timeout exceeded while awaiting headers)"),
    ("BackOff", "Back-off pulling image \"{image}\""),
    ("FailedMount", "MountVolume.SetUp failed for volume \"kube-api-access\" : failed to sync configmap cache: "
                    "timed out waiting for the condition"),
    ("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 503"),
)


class WarningEvents:
    """Post a few kubelet-style Warning events about a pod of the target (a flaky probe, a slow
    mount) that resolve by themselves; the events are removed on revert."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        pod = _a_ready_pod(ctx, target)
        count = int(params.get("count", 3))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        container = (pod["spec"].get("containers") or [{}])[0]
        port = (target.component.ports or (8080,))[-1]
        names = []
        for index in range(count):
            reason, template = _WARNINGS[index % len(_WARNINGS)]
            name = f"{pod['metadata']['name']}.{uuid.uuid4().hex[:16]}"
            event = {
                "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": reason,
                "metadata": {"name": name, "namespace": ctx.namespace},
                "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": ctx.namespace,
                                   "uid": pod["metadata"]["uid"], "apiVersion": "v1",
                                   "fieldPath": f"spec.containers{{{container.get('name', '')}}}"},
                "message": template.format(ip=(pod.get("status") or {}).get("podIP", "10.0.0.1"), port=port,
                                           image=container.get("image", "")),
                "source": {"component": "kubelet", "host": pod["spec"].get("nodeName", "")},
                "firstTimestamp": now, "lastTimestamp": now, "count": 1 + index,
            }
            ctx.kubectl("create", "-f", "-", input=json.dumps(event))
            names.append(name)
        ctx.state["events"] = names

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        names = ctx.state.get("events") or []
        if not names:
            return False
        out = ctx.kubectl("get", "events", "-n", ctx.namespace, *names, "--ignore-not-found", "-o", "name", check=False)
        return bool(out.strip())

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        names = ctx.state.get("events") or []
        if names:
            ctx.kubectl("delete", "events", "-n", ctx.namespace, *names, "--ignore-not-found")

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"{len(ctx.state.get('events') or [])} warning events on a pod of {target.component.name}"


# ------------------------------------------------------------------------------------------ log-burst


def _log_script(component: str, lines: int, interval: float) -> str:
    # realistic, harmless warnings a batch helper prints about a service it talks to
    return (f"i=0; while [ $i -lt {lines} ]; do i=$((i+1)); "
            f"echo \"level=warn ts=$(date -u +%Y-%m-%dT%H:%M:%SZ) caller=client.go:211 msg=\\\"slow upstream response, "
            f"retrying\\\" upstream={component} attempt=$((i % 3 + 1)) latency_ms=$((900 + i * 7 % 400))\"; "
            f"if [ $((i % 5)) -eq 0 ]; then echo \"level=error ts=$(date -u +%Y-%m-%dT%H:%M:%SZ) caller=sync.go:88 "
            f"msg=\\\"sync batch failed, will retry\\\" upstream={component} err=\\\"context deadline exceeded\\\"\"; fi; "
            f"sleep {interval}; done")


class LogBurst:
    """A short-lived batch pod that prints a burst of warning/error lines about the target."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        name = f"cache-warmer-{_suffix()}"
        ctx.state["pod"] = name
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ctx.namespace, "labels": {"app": "cache-warmer"}},
               "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "warmer", "image": "busybox", "command": [
                            "sh", "-c", _log_script(target.component.name, int(params.get("lines", 40)),
                                                    float(params.get("interval_s", 0.5)))]}]}}
        ctx.kubectl("create", "-f", "-", input=json.dumps(pod))

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        return _pod_exists(ctx, ctx.state.get("pod"))

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        _delete_pod(ctx, ctx.state.get("pod"))

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"pod {ctx.state.get('pod', '?')} logging warnings about {target.component.name}"


# ----------------------------------------------------------------------------------------- cpu-stress


class CpuStress:
    """A bounded busy-loop pod on the target's node: it stops by itself after ``seconds``."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        node = _a_ready_pod(ctx, target)["spec"].get("nodeName")
        seconds = int(params.get("seconds", 60))
        name = f"report-builder-{_suffix()}"
        ctx.state.update(pod=name, node=node)
        spec: dict[str, Any] = {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "activeDeadlineSeconds": seconds + 30,
            "containers": [{"name": "builder", "image": "busybox",
                            "command": ["sh", "-c", f"timeout {seconds} sh -c 'while :; do :; done'; true"],
                            "resources": {"requests": {"cpu": "10m"}, "limits": {"cpu": params.get("cpu", "500m")}}}]}
        if node:
            spec["nodeName"] = node
        ctx.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": ctx.namespace, "labels": {"app": "report-builder"}}}))

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        return _pod_exists(ctx, ctx.state.get("pod"))

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        _delete_pod(ctx, ctx.state.get("pod"))

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"busy pod {ctx.state.get('pod', '?')} on node {ctx.state.get('node') or '?'}"


# --------------------------------------------------------------------------------- network delay / loss


class NetworkImpairment:
    """Delay or drop part of the traffic to the target's Service for a while (the embedded
    cluster's service-proxy hook, the same one the network-delay/-loss faults use)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _cluster(self, ctx: Any) -> SupportsNetworkFaults:
        cluster = capability(getattr(ctx, "cluster", None), SupportsNetworkFaults)
        if cluster is None:
            raise PermanentFaultError("this cluster has no service-proxy hook (network_fault)",
                                      hints=("network noise runs on the embedded cluster",))
        return cluster

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        impairment = ({"delay_ms": int(params.get("delay_ms", 500)), "jitter_ms": int(params.get("jitter_ms", 50))}
                      if self.kind == "delay" else {"loss_pct": float(params.get("loss_pct", 50))})
        hook_id = f"path-{uuid.uuid4().hex[:10]}"
        ctx.state.update(hook_id=hook_id, impairment=impairment)
        self._cluster(ctx).network_fault(hook_id, namespace=ctx.namespace,
                                         service=target.component.service_name or target.component.name, **impairment)

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        if "hook_id" not in ctx.state:
            return False
        record = self._cluster(ctx).fault_status("network", ctx.state["hook_id"])
        return bool(record and record.get("active", True))

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        if "hook_id" in ctx.state:
            self._cluster(ctx).clear_fault("network", ctx.state["hook_id"])

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"{self.kind} {ctx.state.get('impairment', {})} on the path to {target.component.name}"


# ------------------------------------------------------------------------------------------ pod-failure

#: the image Chaos Mesh's pod-failure swaps in; it cannot serve the app, so the pod fails until reverted
PAUSE_IMAGE = "gcr.io/google-containers/pause:latest"


class PodFailure:
    """Make one pod of the target fail for a while, as Chaos Mesh's pod-failure does: its containers'
    images are swapped for a pause image (a pod update Kubernetes allows), so the pod stops serving
    and shows pull/back-off errors; revert puts the original images back and the kubelet restarts
    the containers with them. The Deployment is never touched."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        pod = _a_ready_pod(ctx, target)
        images = {c["name"]: c.get("image", "") for c in pod["spec"].get("containers") or []}
        ctx.state.update(pod=pod["metadata"]["name"], uid=pod["metadata"]["uid"], images=images)
        image = str(params.get("image", PAUSE_IMAGE))
        patch = [{"op": "replace", "path": f"/spec/containers/{i}/image", "value": image} for i in range(len(images))]
        ctx.kubectl("patch", "pod", pod["metadata"]["name"], "-n", ctx.namespace, "--type=json", "-p", json.dumps(patch))

    def _pod(self, ctx: Any) -> dict | None:
        name = ctx.state.get("pod")
        if not name:
            return None
        out = ctx.kubectl("get", "pod", name, "-n", ctx.namespace, "--ignore-not-found", "-o", "json", check=False)
        pod = json.loads(out) if out.strip() else None
        return pod if pod and pod["metadata"].get("uid") == ctx.state.get("uid") else None

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        """While the pod runs a swapped image or is not ready again (or, if it was deleted
        meanwhile, until the component has a ready pod)."""
        if "uid" not in ctx.state:
            return False
        pod = self._pod(ctx)
        if pod is None:
            return not any(_ready(p) for p in _pods(ctx, target))
        images = ctx.state.get("images") or {}
        swapped = any(c.get("image") != images.get(c["name"]) for c in pod["spec"].get("containers") or [])
        return swapped or not _ready(pod)

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        pod = self._pod(ctx)
        if pod is None:  # deleted meanwhile: its replacement runs the Deployment's image already
            return
        images = ctx.state.get("images") or {}
        patch = [{"op": "replace", "path": f"/spec/containers/{i}/image", "value": images[c["name"]]}
                 for i, c in enumerate(pod["spec"].get("containers") or []) if c["name"] in images]
        if patch:
            ctx.kubectl("patch", "pod", pod["metadata"]["name"], "-n", ctx.namespace, "--type=json",
                        "-p", json.dumps(patch))

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"pod {ctx.state.get('pod', '?')} of {target.component.name} failing (image swapped)"


# -------------------------------------------------------------------------------------- rollout-restart


def _deployment(ctx: Any, name: str) -> dict | None:
    out = ctx.kubectl("get", "deployment", name, "-n", ctx.namespace, "--ignore-not-found", "-o", "json", check=False)
    return json.loads(out) if out.strip() else None


def _rolled_out(deployment: dict) -> bool:
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    replicas = spec.get("replicas", 1)
    return (status.get("observedGeneration", 0) >= deployment["metadata"].get("generation", 0)
            and status.get("updatedReplicas", 0) == replicas and status.get("replicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas)


class RolloutRestart:
    """``kubectl rollout restart`` of the target's Deployment: every pod replaced one by one, as
    after a routine redeploy. Nothing to undo: the restart is over when the rollout is complete
    (its ``restartedAt`` annotation stays, as after any rollout restart)."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        before = _deployment(ctx, target.component.name)
        if before is None:
            raise PermanentFaultError(f"no Deployment {target.component.name}")
        ctx.state["generation"] = before["metadata"].get("generation", 0)
        ctx.kubectl("rollout", "restart", f"deployment/{target.component.name}", "-n", ctx.namespace)

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        if "generation" not in ctx.state:
            return False
        deployment = _deployment(ctx, target.component.name)
        return deployment is not None and not _rolled_out(deployment)

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        """Nothing to undo: grading waits (is_active) until the rollout has completed."""

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"rollout restart of deployment {target.component.name}"


# ------------------------------------------------------------------------------------- flapping-alert


def _flapping_exporter(up_s: float, down_s: float, port: int) -> str:
    # a metrics endpoint that answers for up_s, then is gone for down_s, and so on: Prometheus sees
    # the target flap (up 1/0), so TargetDown fires and resolves
    return (
        "import http.server, socketserver, time\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = b'# TYPE cache_sync_last_success_timestamp_seconds gauge\\n' + "
        "('cache_sync_last_success_timestamp_seconds %d\\n' % time.time()).encode()\n"
        "        self.send_response(200); self.send_header('Content-Type', 'text/plain; version=0.0.4')\n"
        "        self.end_headers(); self.wfile.write(body)\n"
        "    def log_message(self, *a): pass\n"
        "socketserver.TCPServer.allow_reuse_address = True\n"
        "while True:\n"
        f"    s = socketserver.TCPServer(('0.0.0.0', {port}), H); s.timeout = 0.5; end = time.time() + {up_s}\n"
        "    while time.time() < end: s.handle_request()\n"
        "    s.server_close()\n"
        "    print('level=warn msg=\"upstream sync paused, metrics endpoint closed\"', flush=True)\n"
        f"    time.sleep({down_s})\n"
    )


class FlappingAlert:
    """A metrics exporter beside the target that comes and goes: Prometheus scrapes it (the usual
    ``prometheus.io/*`` annotations), its target flaps down/up, so a TargetDown alert about it goes
    pending, fires and resolves, again and again, until revert deletes the exporter (the alert
    resolves for good)."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        port = int(params.get("port", 9102))
        name = f"{target.component.name}-sync-exporter-{_suffix()}"
        ctx.state["pod"] = name
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ctx.namespace,
                            "labels": {"app": f"{target.component.name}-sync-exporter"},
                            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
                                            "prometheus.io/path": "/metrics"}},
               "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "exporter", "image": "python", "ports": [{"containerPort": port}],
                                        "command": ["python3", "-u", "-c", _flapping_exporter(
                                            float(params.get("up_s", 20)), float(params.get("down_s", 45)), port)],
                                        "resources": {"requests": {"cpu": "10m"}, "limits": {"cpu": "100m"}}}]}}
        ctx.kubectl("create", "-f", "-", input=json.dumps(pod))

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        return _pod_exists(ctx, ctx.state.get("pod"))

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        _delete_pod(ctx, ctx.state.get("pod"))

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"exporter {ctx.state.get('pod', '?')} beside {target.component.name}, flapping"


# -------------------------------------------------------------------------------------- config-reload

RELOAD_ANNOTATION = "config.kubernetes.io/reloaded-at"


class ConfigReload:
    """A configuration reload that changes nothing: the target's ConfigMap is re-written with the
    same data (a reload stamp in its annotations, a new resourceVersion) and a Normal
    ``ConfigReloaded`` event is posted on its Deployment. Revert restores the annotations as they
    were and removes the event."""

    def inject(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        name = target.component.config_map
        out = ctx.kubectl("get", "configmap", name, "-n", ctx.namespace, "-o", "json")
        config_map = json.loads(out)
        ctx.state.update(config_map=name, previous=(config_map["metadata"].get("annotations") or {}).get(RELOAD_ANNOTATION))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ctx.kubectl("annotate", "configmap", name, "-n", ctx.namespace, f"{RELOAD_ANNOTATION}={now}", "--overwrite")
        event_name = f"{target.component.name}.{uuid.uuid4().hex[:16]}"
        ctx.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "ConfigReloaded",
            "metadata": {"name": event_name, "namespace": ctx.namespace},
            "involvedObject": {"kind": "Deployment", "name": target.component.name, "namespace": ctx.namespace,
                               "apiVersion": "apps/v1"},
            "message": f"Reloaded configuration from ConfigMap {name}",
            "source": {"component": "config-reloader"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1}))
        ctx.state["event"] = event_name

    def is_active(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> bool:
        if "config_map" not in ctx.state:
            return False
        out = ctx.kubectl("get", "configmap", ctx.state["config_map"], "-n", ctx.namespace, "--ignore-not-found",
                          "-o", "json", check=False)
        current = (json.loads(out)["metadata"].get("annotations") or {}).get(RELOAD_ANNOTATION) if out.strip() else None
        return current != ctx.state.get("previous")

    def revert(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> None:
        if "config_map" not in ctx.state:
            return
        previous = ctx.state.get("previous")
        stamp = f"{RELOAD_ANNOTATION}={previous}" if previous is not None else f"{RELOAD_ANNOTATION}-"
        ctx.kubectl("annotate", "configmap", ctx.state["config_map"], "-n", ctx.namespace, stamp, "--overwrite",
                    check=False)
        if ctx.state.get("event"):
            ctx.kubectl("delete", "event", ctx.state["event"], "-n", ctx.namespace, "--ignore-not-found", check=False)

    def describe(self, ctx: Any, target: Any, params: Mapping[str, Any]) -> str:
        return f"configuration of {target.component.name} reloaded from ConfigMap {ctx.state.get('config_map', '?')} (unchanged)"


NOISE_SOURCES = (
    NoiseSpec(name="pod-kill", summary="delete one pod of an unrelated service (its Deployment recreates it)",
              selector=SERVICES, impl=PodKill(), default_duration=30.0, default_period=300.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"grace_period_s": {"type": "integer", "minimum": 0}}}),
    NoiseSpec(name="warning-events", summary="kubelet-style Warning events about an unrelated pod",
              selector=SERVICES, impl=WarningEvents(), default_duration=60.0, default_period=300.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"count": {"type": "integer", "minimum": 1, "maximum": 20}}}),
    NoiseSpec(name="log-burst", summary="a short batch pod printing warnings about an unrelated service",
              selector=SERVICES, impl=LogBurst(), default_duration=30.0, default_period=300.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"lines": {"type": "integer", "minimum": 1, "maximum": 500},
                                            "interval_s": {"type": "number", "minimum": 0, "maximum": 5}}}),
    NoiseSpec(name="cpu-stress", summary="a bounded busy-loop pod on an unrelated service's node",
              selector=SERVICES, impl=CpuStress(), default_duration=60.0, default_period=300.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"seconds": {"type": "integer", "minimum": 1, "maximum": 600},
                                            "cpu": {"type": "string"}}}),
    NoiseSpec(name="network-delay", summary="delay on the path to an unrelated service for a while",
              selector=SERVED, impl=NetworkImpairment("delay"), capabilities={"embedded"},
              default_duration=120.0, default_period=420.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"delay_ms": {"type": "integer", "minimum": 1, "maximum": 5000},
                                            "jitter_ms": {"type": "integer", "minimum": 0}}}),
    NoiseSpec(name="network-loss", summary="packet loss on the path to an unrelated service for a while",
              selector=SERVED, impl=NetworkImpairment("loss"), capabilities={"embedded"},
              default_duration=120.0, default_period=420.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"loss_pct": {"type": "number", "exclusiveMinimum": 0, "maximum": 100}}}),
    NoiseSpec(name="pod-failure", summary="one pod of an unrelated service fails for a while (image swapped), then recovers",
              selector=SERVICES, impl=PodFailure(), default_duration=60.0, default_period=300.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"image": {"type": "string", "minLength": 1}}}),
    NoiseSpec(name="rollout-restart", summary="a routine rollout restart of an unrelated deployment",
              selector=SERVICES, impl=RolloutRestart(), default_duration=60.0, default_period=600.0,
              params_schema={"type": "object", "additionalProperties": False, "properties": {}}),
    NoiseSpec(name="flapping-alert", summary="an exporter beside an unrelated service whose target flaps (TargetDown fires, resolves)",
              selector=SERVICES, impl=FlappingAlert(), default_duration=120.0, default_period=600.0,
              params_schema={"type": "object", "additionalProperties": False,
                             "properties": {"port": {"type": "integer", "minimum": 1024, "maximum": 65535},
                                            "up_s": {"type": "number", "minimum": 1, "maximum": 600},
                                            "down_s": {"type": "number", "minimum": 1, "maximum": 600}}}),
    NoiseSpec(name="config-reload", summary="an unrelated service's configuration reloaded with nothing changed",
              selector=CONFIGURED, impl=ConfigReload(), default_duration=30.0, default_period=600.0,
              params_schema={"type": "object", "additionalProperties": False, "properties": {}}),
)
