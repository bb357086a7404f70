"""A thin JSON view of the Kubernetes API over the official client (raw dicts, no models).

Used by the conductor for snapshots, reconciliation and oracles; works the same against the
embedded cluster and any real cluster.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ..errors import ClusterError

#: Workload kinds the baseline tracks, as (list path template, kind).
WORKLOAD_KINDS: tuple[tuple[str, str], ...] = (
    ("/apis/apps/v1/namespaces/{ns}/deployments", "Deployment"),
    ("/apis/apps/v1/namespaces/{ns}/statefulsets", "StatefulSet"),
    ("/apis/apps/v1/namespaces/{ns}/daemonsets", "DaemonSet"),
    ("/api/v1/namespaces/{ns}/services", "Service"),
    ("/api/v1/namespaces/{ns}/endpoints", "Endpoints"),  # whether a Service serves (oracles)
    ("/api/v1/namespaces/{ns}/configmaps", "ConfigMap"),
    ("/api/v1/namespaces/{ns}/secrets", "Secret"),
    ("/api/v1/namespaces/{ns}/persistentvolumeclaims", "PersistentVolumeClaim"),
    ("/api/v1/namespaces/{ns}/pods", "Pod"),
)


class ApiStatusError(ClusterError):
    """The API server answered with an error Status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"API server answered {code}: {message}")
        self.code = code


class Kube:
    """Raw-JSON access to one cluster as one identity (a kubeconfig)."""

    def __init__(self, kubeconfig: Path, kubectl: str = "kubectl") -> None:
        from kubernetes import config

        self.kubeconfig = Path(kubeconfig)
        self.kubectl_path = kubectl
        try:
            self.api = config.new_client_from_config(config_file=str(self.kubeconfig))
        except Exception as exc:  # malformed kubeconfig: a user error, not a crash
            raise ClusterError(f"cannot use kubeconfig {self.kubeconfig}: {exc}") from exc

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                query: dict[str, Any] | None = None) -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            _method, url, headers, body, post = self.api.param_serialize(
                method=method, resource_path=path, query_params=list((query or {}).items()) or None,
                header_params=headers, body=body, auth_settings=["BearerToken"])
            response = self.api.call_api(method, url, header_params=headers, body=body, post_params=post,
                                         _request_timeout=60)
            response.read()
        except Exception as exc:
            raise ClusterError(f"cannot reach the API server: {exc}") from exc
        data = response.data
        if response.status >= 400:
            message = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
            try:
                message = json.loads(message).get("message", message)
            except (ValueError, AttributeError):
                pass
            raise ApiStatusError(int(response.status), str(message))
        return json.loads(data) if data else None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query or None)

    def find(self, path: str) -> Any:
        """The object at ``path``, or None where there is none (404); any other error is raised."""
        try:
            return self.get(path)
        except ApiStatusError as exc:
            if exc.code == 404:
                return None
            raise

    def exists(self, path: str) -> bool:
        return self.find(path) is not None

    def delete(self, path: str) -> bool:
        """Delete the object at ``path``; False where it was gone already (404), any other error raised."""
        try:
            self.request("DELETE", path)
            return True
        except ApiStatusError as exc:
            if exc.code == 404:
                return False
            raise

    def list_items(self, path: str, kind: str, **query: Any) -> list[dict[str, Any]]:
        data = self.get(path, **query)
        items = data.get("items") or []
        api_version = data.get("apiVersion", "v1").removesuffix("List") if isinstance(data, dict) else "v1"
        for item in items:  # list items omit kind/apiVersion
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
        return items

    def workloads(self, namespaces: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for ns in namespaces:
            for template, kind in WORKLOAD_KINDS:
                try:
                    out += self.list_items(template.format(ns=ns), kind)
                except ApiStatusError as exc:
                    if exc.code != 404:
                        raise
        return out

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120.0) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        proc = subprocess.run([self.kubectl_path, *args], input=input, capture_output=True, text=True, errors="replace", env=env,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()[:2000]}")
        return proc.stdout

    async def akubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120.0) -> str:
        return await asyncio.to_thread(self.kubectl, *args, input=input, check=check, timeout=timeout)

    async def aget(self, path: str, **query: Any) -> Any:
        return await asyncio.to_thread(self.get, path, **query)

    async def aworkloads(self, namespaces: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.workloads, namespaces)

    def server_and_ca(self) -> tuple[str, str | None, bool]:
        """The API server URL, the CA data (base64) and insecure flag from the kubeconfig."""
        import yaml

        config = yaml.safe_load(self.kubeconfig.read_text())
        context_name = config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        return cluster["server"], cluster.get("certificate-authority-data"), bool(cluster.get("insecure-skip-tls-verify"))


def default_kubectl() -> str:
    """The pinned kubectl from the venv when present, else the one on PATH."""
    import shutil
    import sys

    candidate = Path(sys.executable).parent / "kubectl"
    if candidate.exists():
        return str(candidate)
    return shutil.which("kubectl") or "kubectl"
