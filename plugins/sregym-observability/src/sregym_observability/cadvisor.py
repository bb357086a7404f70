"""cAdvisor-named container metrics from a :class:`ContainerStatsSource`.

On a real cluster Prometheus scrapes the kubelet's cAdvisor endpoint instead; on the embedded
cluster the node agent reports per-container stats as JSON and this module renders them under the
same names and labels (``namespace``, ``pod``, ``container``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import httpx
from sregym_core.quantity import quantity_or_zero

from .promtext import MetricFamilies


@attrs.frozen(kw_only=True)
class ContainerStats:
    """Cumulative and current figures for one container, as the node agent measures them."""

    namespace: str
    pod: str
    container: str
    node: str = ""
    cpu_seconds_total: float = 0.0
    memory_working_set_bytes: float = 0.0
    memory_limit_bytes: float = 0.0  # 0 = unlimited, as cAdvisor reports it
    cfs_periods: int = 0
    cfs_throttled_periods: int = 0
    cfs_throttled_seconds: float = 0.0
    oom_events: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContainerStats:
        """Accept this record's field names, or the embedded node agent's ``container_stats()`` rows
        (``cpu_ns``, ``memory_bytes``, ``nr_periods``, ``nr_throttled``, ``throttled_ns``)."""
        fields = {f.name for f in attrs.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        node_agent = {"cpu_ns": ("cpu_seconds_total", 1e-9), "memory_bytes": ("memory_working_set_bytes", 1),
                      "nr_periods": ("cfs_periods", 1), "nr_throttled": ("cfs_throttled_periods", 1),
                      "throttled_ns": ("cfs_throttled_seconds", 1e-9), "memory_limit": ("memory_limit_bytes", 1)}
        for key, (field, scale) in node_agent.items():
            if key in data and field not in values:
                values[field] = data[key] * scale if scale != 1 else data[key]
        return cls(**values)


class ContainerStatsSource(Protocol):
    """Anything that can list current container stats (the embedded node agent, a fake in tests)."""

    def container_stats(self) -> list[ContainerStats]: ...


@attrs.frozen
class StaticStatsSource:
    stats: tuple[ContainerStats, ...] = ()

    def container_stats(self) -> list[ContainerStats]:
        return list(self.stats)


@attrs.define
class HttpContainerStatsSource:
    """Reads ``GET <url>`` → ``{"containers": [{namespace, pod, container, ...}]}`` (or a bare list)
    from one or more node agents. An unreachable node contributes nothing (its containers' series
    go stale in Prometheus, as they would when a kubelet is down)."""

    urls: Sequence[str]
    timeout_s: float = 2.0
    last_errors: dict[str, str] = attrs.Factory(dict)

    def container_stats(self) -> list[ContainerStats]:
        found: list[ContainerStats] = []
        self.last_errors.clear()
        for url in self.urls:
            try:
                response = httpx.get(url, timeout=self.timeout_s)
                response.raise_for_status()
                payload = response.json()
                items = payload.get("containers", []) if isinstance(payload, dict) else payload
                found.extend(ContainerStats.from_json(item) for item in items)
            except (httpx.HTTPError, ValueError, TypeError, AttributeError) as err:
                self.last_errors[url] = str(err)
        return found


_FAMILIES = (
    ("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds."),
    ("container_memory_working_set_bytes", "gauge", "Current working set in bytes."),
    ("container_memory_usage_bytes", "gauge", "Current memory usage in bytes, including all memory regardless of when it was accessed"),
    ("container_spec_memory_limit_bytes", "gauge", "Memory limit for the container."),
    ("container_cpu_cfs_periods_total", "counter", "Number of elapsed enforcement period intervals."),
    ("container_cpu_cfs_throttled_periods_total", "counter", "Number of throttled period intervals."),
    ("container_cpu_cfs_throttled_seconds_total", "counter", "Total time duration the container has been throttled."),
    ("container_oom_events_total", "counter", "Count of out of memory events observed for the container"),
)


def with_spec_limits(stats: Iterable[ContainerStats], pods: Iterable[Mapping[str, Any]]) -> list[ContainerStats]:
    """Fill ``memory_limit_bytes`` from the pods' specs where the stats source does not know it."""
    limits: dict[tuple[str, str, str], float] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            memory = ((container.get("resources") or {}).get("limits") or {}).get("memory")
            if memory:
                limits[(meta.get("namespace", ""), meta.get("name", ""), container.get("name", ""))] = \
                    quantity_or_zero(memory)
    return [attrs.evolve(s, memory_limit_bytes=limits.get((s.namespace, s.pod, s.container), 0.0))
            if not s.memory_limit_bytes else s for s in stats]


def render_cadvisor(stats: Iterable[ContainerStats]) -> str:
    families = MetricFamilies()
    for name, kind, help_text in _FAMILIES:
        families.declare(name, kind, help_text)
    for s in stats:
        labels = {"namespace": s.namespace, "pod": s.pod, "container": s.container}
        if s.node:
            labels["node"] = s.node
        families.add("container_cpu_usage_seconds_total", {**labels, "cpu": "total"}, s.cpu_seconds_total)
        families.add("container_memory_working_set_bytes", labels, s.memory_working_set_bytes)
        families.add("container_memory_usage_bytes", labels, s.memory_working_set_bytes)
        families.add("container_spec_memory_limit_bytes", labels, s.memory_limit_bytes)
        families.add("container_cpu_cfs_periods_total", labels, s.cfs_periods)
        families.add("container_cpu_cfs_throttled_periods_total", labels, s.cfs_throttled_periods)
        families.add("container_cpu_cfs_throttled_seconds_total", labels, s.cfs_throttled_seconds)
        families.add("container_oom_events_total", labels, s.oom_events)
    return families.render()
