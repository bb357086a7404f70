"""The probes that observe a problem's declared symptoms on the live system: the cluster through the
conductor's admin ``Kube``, the workload generator's stats API and Prometheus' alerts API. What each
probe concludes from what it reads is in :mod:`sregym_core.symptoms` (the contract); reading the
cluster is the engine's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..symptoms import Probe, alert_firing, error_lines, log_sources, pods_not_ready, slo_dropped


def live_probes(*, kube: Any, namespaces: Sequence[str], faulty: Sequence[Mapping[str, Any]],
                baseline: Sequence[Mapping[str, Any]], workload: Any = None, prometheus_url: str | None = None,
                injected_at: float | None = None, declared: Sequence[str] = ()) -> dict[str, Probe]:
    """Probes over a live cluster (the conductor's admin ``Kube``), the workload generator's stats
    API and Prometheus' alerts API."""
    injected_at = time.monotonic() if injected_at is None else injected_at

    async def slo() -> str | None:
        if workload is None:
            raise RuntimeError("the app has no workload generator")
        # only traffic since the injection counts: wait until the window holds some
        since = time.monotonic() - injected_at
        if since < 2.0:
            return None
        return slo_dropped(await workload.astats(min(5.0, since)))

    async def not_ready() -> str | None:
        objects = await kube.aworkloads(tuple(namespaces))
        return pods_not_ready(faulty, objects, baseline)

    async def logs() -> str | None:
        since = max(1, int(time.monotonic() - injected_at) + 1)
        found: list[str] = []
        objects = await kube.aworkloads(tuple(dict.fromkeys(t["namespace"] for t in faulty)))
        for namespace, pod in log_sources(faulty, objects):
            path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
            try:
                text = await asyncio.to_thread(_read_log, kube, path, since)
            except Exception:  # noqa: BLE001 - a container that never started has no log
                continue
            found += [f"{pod}: {line}" for line in error_lines(text)]
        return f"{len(found)} error line(s), e.g. {found[0]}" if found else None

    def alert(name: str) -> Probe:
        async def probe() -> str | None:
            if not prometheus_url:
                raise RuntimeError("no Prometheus to ask (run with observability)")
            import httpx

            async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
                reply = await client.get(f"{prometheus_url}/api/v1/alerts")
            return alert_firing(reply.json().get("data", {}).get("alerts", []), name)

        return probe

    probes: dict[str, Probe] = {"slo-drop": slo, "pods-not-ready": not_ready, "error-logs": logs}
    for symptom in declared:
        if symptom.startswith("alert-firing "):
            probes[symptom] = alert(symptom.split(" ", 1)[1])
    return probes


def _read_log(kube: Any, path: str, since: int) -> str:
    """A pod's log (text) through the API server, last ``since`` seconds."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(kube.api)
    namespace, name = path.split("/")[4], path.split("/")[6]
    return core.read_namespaced_pod_log(name, namespace, since_seconds=since, tail_lines=500)
