"""Talking to an app's workload generator: stats over a window (the functional SLO) and control."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..clusters import SupportsServiceUrl, capability
from ..errors import OracleError
from ..types import WorkloadSpec
from .kube import ApiStatusError, Kube


class WorkloadClient:
    """Reaches the generator through the cluster handle's ``service_url`` when it has one (the
    embedded cluster: a ClusterIP on 127/8), else through the API server's service proxy."""

    def __init__(self, spec: WorkloadSpec, kube: Kube, cluster: Any = None) -> None:
        self.spec, self.kube, self.cluster = spec, kube, cluster

    def _direct_url(self, path: str) -> str | None:
        direct = capability(self.cluster, SupportsServiceUrl)
        if direct is not None:
            base = direct.service_url(self.spec.namespace, self.spec.service, self.spec.port)
            return f"{base.rstrip('/')}{path}" if base else None
        # a ClusterIP on the loopback range (the embedded cluster) is reachable from the host as is;
        # anything else goes through the API server's service proxy, never straight to the address
        try:
            service = self.kube.get(f"/api/v1/namespaces/{self.spec.namespace}/services/{self.spec.service}")
        except ApiStatusError:
            return None
        ip = service.get("spec", {}).get("clusterIP") or ""
        if ip.startswith("127."):
            return f"http://{ip}:{self.spec.port}{path}"
        return None

    def _request(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        url = self._direct_url(path)
        if url is not None:
            import httpx

            try:
                response = httpx.request(method, url, json=body, timeout=10.0, trust_env=False)
            except httpx.HTTPError as exc:
                raise OracleError(f"workload generator not reachable at {url}: {exc}") from exc
            if response.status_code >= 400:
                raise OracleError(f"workload generator answered {response.status_code}: {response.text[:200]}")
            return response.json()
        proxy = f"/api/v1/namespaces/{self.spec.namespace}/services/{self.spec.service}:{self.spec.port}/proxy{path}"
        try:
            data = self.kube.request(method, proxy, body=body)
        except ApiStatusError as exc:
            raise OracleError(f"workload generator not reachable through the API proxy: {exc}") from exc
        return data if isinstance(data, dict) else json.loads(data)

    def stats(self, window_s: float) -> dict[str, Any]:
        path = f"{self.spec.query_path}?window={window_s:g}"
        return self._request("GET", path)

    def control(self, **settings: Any) -> dict[str, Any]:
        return self._request("POST", self.spec.control_path, settings)

    def deployed_run(self) -> dict[str, Any] | None:
        """The ``/control`` body that puts the generator back to the run its Deployment starts with
        (rate and duration from its environment, users sent straight to the app): whatever a
        ``/control`` write changed since is undone. None when its Deployment cannot be found."""
        env = self._deployment_env()
        if env is None or "WORKLOAD_RATE" not in env:
            return None
        body: dict[str, Any] = {"rate": float(env["WORKLOAD_RATE"]),
                                "duration": float(env.get("WORKLOAD_DURATION") or 86400), "route": None}
        current = self._request("GET", self.spec.control_path)
        if "max_requests" in current:  # sregym_appkit's generator: its whole run spec
            body["max_requests"] = int(env.get("WORKLOAD_MAX_REQUESTS") or 10_000_000)
            body["distribution"] = env.get("WORKLOAD_DISTRIBUTION") or "poisson"
        return body

    def restart_deployed_run(self, *, forget: bool = False) -> dict[str, Any] | None:
        """Restart the generator's run as deployed (see :meth:`deployed_run`); what it answers, or
        None when there is nothing to restart from. A generator an agent stopped or pointed elsewhere
        (issue #34) must not carry that into the next deploy or attempt. ``forget``: the app's stored data
        was put back as deployed, so the generator forgets what it expected of it (``"forget": true`` in the
        /control body, always sent then; a generator that refuses the key is restarted without it)."""
        body = self.deployed_run()
        if body is None:
            return None
        if forget:
            try:
                return self.control(**body, forget=True)
            except OracleError:
                pass  # a generator without that key refuses the body (Astronomy Shop's: "no other keys"): as before
        current = self._request("GET", self.spec.control_path)
        if all(current.get(key) == value for key, value in body.items()) and current.get("running", True):
            return current  # as deployed and running: a restart would only cut its request history short
        return self.control(**body)

    def _deployment_env(self) -> dict[str, str] | None:
        """The plain environment of the generator's container (the Deployment its Service selects)."""
        ns = self.spec.namespace
        try:
            service = self.kube.get(f"/api/v1/namespaces/{ns}/services/{self.spec.service}")
            deployments = self.kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments").get("items") or []
        except ApiStatusError:
            return None
        selector = service.get("spec", {}).get("selector") or {}
        for deployment in deployments:
            labels = deployment.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                containers = deployment["spec"]["template"].get("spec", {}).get("containers") or []
                for container in containers:
                    env = {e["name"]: e["value"] for e in container.get("env") or () if "value" in e}
                    if "WORKLOAD_RATE" in env:
                        return env
        return None

    async def arestart_deployed_run(self, *, forget: bool = False) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.restart_deployed_run, forget=forget)

    async def astats(self, window_s: float) -> dict[str, Any]:
        return await asyncio.to_thread(self.stats, window_s)

    async def acontrol(self, **settings: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.control, **settings)
