"""``bpf-daemonset``: the cgroup BPF connect/socket fault on a cluster without the embedded node
hooks, loaded by a privileged DaemonSet through the Kubernetes API alone.

Inject puts, in the hidden namespace :data:`NAMESPACE` (labelled hidden: the agent's identity can
neither list nor read it; Pod Security ``privileged``), a ConfigMap holding the loader
(``bpfloader.py``) and the rule (call, errno, rate, port, the UIDs of the target's pods now), and
a DaemonSet whose pod on every node runs the loader in a stock Python image, privileged, with the
host's ``/sys/fs/cgroup`` mounted read-only. The loader links the programs at the host's cgroup v2
root and keeps the target pods' cgroups (found by pod UID) in its map; inject returns once every
loader pod is ready and one of them has armed at least one cgroup. Recover deletes the DaemonSet
and the ConfigMap and waits until the loader pods are gone: their exit closes the links (nothing is
pinned), so nothing stays on any node. A pod that replaces a target pod has another UID and is
healthy (the fix: replace the pods).

What it does not need: host PID or network namespaces, the host's ``/sys/fs/bpf`` (nothing is
pinned), a ServiceAccount token (``automountServiceAccountToken: false``), or anything from
outside the package registries but the Python image (``SREGYM_BPF_LOADER_IMAGE``, default
:data:`DEFAULT_IMAGE`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from sregym_fault_node import hooks

from sregym_core.clusters import HIDDEN_NAMESPACE_LABELS
from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.faultkit import kube

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAME = "bpf-daemonset"
NAMESPACE = "sregym-faults"
DEFAULT_IMAGE = "python:3.12-slim"
IMAGE_ENV = "SREGYM_BPF_LOADER_IMAGE"
LOADER = Path(__file__).with_name("bpfloader.py")
FAULT_LABEL = "sregym.io/bpf-fault"
#: outer bounds against hangs (an image pull on a real cluster included), not service levels
READY_TIMEOUT_S = 180.0
GONE_TIMEOUT_S = 120.0


def namespace_manifest() -> dict:
    labels = {key: "true" for key in HIDDEN_NAMESPACE_LABELS}
    labels.update({f"pod-security.kubernetes.io/{mode}": "privileged" for mode in ("enforce", "warn", "audit")})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": labels}}


def config_map(name: str, rule: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {FAULT_LABEL: name}},
            "data": {"bpfloader.py": LOADER.read_text(), "rule.json": json.dumps(rule)}}


def daemon_set(name: str, image: str | None = None) -> dict:
    labels = {FAULT_LABEL: name}
    container = {
        "name": "loader", "image": image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE,
        "command": ["python3", "-I", "/sregym/bpfloader.py", "/sregym/rule.json", "--cgroup-root", "/host/cgroup"],
        # BPF programs on the host's cgroups: CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN in the
        # host's user namespace (and, where no cgroup2 is mounted in, the right to mount one)
        "securityContext": {"privileged": True, "runAsUser": 0},
        "readinessProbe": {"exec": {"command": ["cat", "/tmp/sregym-bpf-ready"]}, "periodSeconds": 1,
                           "failureThreshold": 1},
        "volumeMounts": [{"name": "loader", "mountPath": "/sregym", "readOnly": True},
                         {"name": "cgroup", "mountPath": "/host/cgroup", "readOnly": True}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    }
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "terminationGracePeriodSeconds": 5, "automountServiceAccountToken": False,
                         "enableServiceLinks": False, "tolerations": [{"operator": "Exists"}],
                         "containers": [container],
                         "volumes": [{"name": "loader", "configMap": {"name": name}},
                                     {"name": "cgroup", "hostPath": {"path": "/sys/fs/cgroup"}}]}}}}


def _loader_pods(ctx: FaultContext, name: str) -> list[dict]:
    out = ctx.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"{FAULT_LABEL}={name}", "-o", "json", check=False)
    try:
        return json.loads(out or "{}").get("items", [])
    except ValueError:
        return []


def _logs(ctx: FaultContext, name: str) -> list[dict]:
    """Every JSON line the loader pods printed."""
    out = ctx.kubectl("logs", "-n", NAMESPACE, "-l", f"{FAULT_LABEL}={name}", "--tail=200", "--prefix=false",
                      check=False)
    lines = []
    for line in (out or "").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines


#: a loader container waiting for one of these will not arm by waiting longer
STUCK = ("CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "ErrImagePull",
         "ImagePullBackOff", "InvalidImageName", "RunContainerError")


def _stuck(ctx: FaultContext, name: str) -> str:
    """Why a loader pod cannot start ("" while none is stuck)."""
    for pod in _loader_pods(ctx, name):
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in STUCK:
                return f"pod {pod['metadata']['name']}: {waiting['reason']} {waiting.get('message', '')}".strip()
    return ""


def _ready(ctx: FaultContext, name: str) -> bool:
    ds = json.loads(ctx.kubectl("get", "daemonset", name, "-n", NAMESPACE, "-o", "json"))
    status = ds.get("status") or {}
    wanted = status.get("desiredNumberScheduled") or 0
    return wanted > 0 and status.get("numberReady", 0) >= wanted


def arm(ctx: FaultContext, target: Target, *, call: str, errno: int, rate: float, port: int) -> dict:
    """Deploy the loader for the target's pods now; returns what recover needs (kept in the state)."""
    uids = [p["metadata"]["uid"] for p in hooks.pods(ctx, target)]
    if not uids:
        raise TemporaryFaultError(f"no pod of {target.component.name} yet", delay=2.0)
    name = f"sregym-bpf-{uuid.uuid4().hex[:10]}"
    rule = {"call": call, "errno": int(errno), "rate": float(rate), "port": int(port or 0), "pods": uids}
    for obj in (namespace_manifest(), config_map(name, rule), daemon_set(name)):
        kube.apply(ctx, obj)  # leaves no last-applied annotation (issue #34)
    record = {"daemonset": name, "namespace": NAMESPACE, "pods": uids}
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        armed = max((line.get("armed", 0) for line in _logs(ctx, name)), default=0)
        if armed > 0 and _ready(ctx, name):
            return {**record, "armed": armed}
        errors = [line["error"] for line in _logs(ctx, name) if "error" in line] or list(filter(None, [_stuck(ctx, name)]))
        if errors or time.monotonic() > deadline:
            disarm(ctx, record)
            why = errors[0] if errors else f"its pods were not ready within {READY_TIMEOUT_S:.0f} s"
            raise PermanentFaultError(f"the {NAME} loader could not arm: {why}", hints=(
                "the loader needs privileged pods (Pod Security 'privileged' in namespace "
                f"{NAMESPACE}), the image {os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE} ({IMAGE_ENV}), a cgroup v2 "
                "node and a kernel with bpf_set_retval (5.18 or later)",))
        time.sleep(0.5)


def disarm(ctx: FaultContext, record: dict) -> None:
    """Delete the loader and wait until its pods are gone (their exit detaches the programs)."""
    name = record["daemonset"]
    for kind in ("daemonset", "configmap"):
        ctx.kubectl("delete", kind, name, "-n", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while _loader_pods(ctx, name):
        if time.monotonic() > deadline:
            raise TemporaryFaultError(f"the {NAME} loader pods of {name} are still there after "
                                      f"{GONE_TIMEOUT_S:.0f} s", delay=2.0)
        time.sleep(0.5)


def present(ctx: FaultContext, record: dict) -> bool:
    """The loader runs and one of the pods it was armed for is still there."""
    if not _loader_pods(ctx, record["daemonset"]):
        return False
    live = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json")).get("items", [])
    return any(p["metadata"].get("uid") in record["pods"] and not p["metadata"].get("deletionTimestamp")
               for p in live)
