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

    async def astats(self, window_s: float) -> dict[str, Any]:
        return await asyncio.to_thread(self.stats, window_s)

    async def acontrol(self, **settings: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.control, **settings)
