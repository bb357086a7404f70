"""Builders of the Kubernetes objects an app's ``manifests.build()`` writes, in one copy.

Apps that generate their YAML (Astronomy Shop, TrainTicket, FleetCast) build the same few shapes:
the app's namespace and its hidden workload namespace, the PriorityClass that keeps the workload
generator scheduled, and per process a Service and a one-container Deployment labelled with the
app's ``part-of`` and a ``tier``. :class:`AppObjects` builds them with the app's labels; the key
order of every object is fixed here, so the shipped files stay byte-identical when regenerated.

Why the defaults are what they are:

- a Deployment rolls one pod at a time with ``maxSurge: 0`` (:data:`REPLACE_IN_PLACE`): with one
  replica, a rollout to a broken image stops the only pod first, so an image fault shows as a
  failing service instead of hiding behind the old pod that a surge would keep serving;
- the workload generator runs at :data:`INFRASTRUCTURE_PRIORITY`, so a fault that fills a node
  evicts the app's pods, never the generator that measures them;
- pods carry Prometheus scrape annotations for the admin port unless told not to (datastores and
  the workload generator have no ``/metrics`` of the app's).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

#: the PriorityClass of the benchmark's own pods (workload generator, observability)
INFRASTRUCTURE_PRIORITY = "sregym-infrastructure"
#: one pod at a time, the old one gone first: image faults on a one-replica Deployment show
REPLACE_IN_PLACE: dict[str, Any] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
#: a new pod Ready before the old one goes (an app that must never drop to zero pods)
SURGE_FIRST: dict[str, Any] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def priority_class() -> dict[str, Any]:
    """The cluster-wide PriorityClass every app's workload generator runs at."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": INFRASTRUCTURE_PRIORITY},
            "value": 100000000, "globalDefault": False,
            "description": "SREGym benchmark infrastructure (workload generator, observability)"}


@dataclasses.dataclass(frozen=True)
class AppObjects:
    """The objects of one app: ``part_of`` is its ``app.kubernetes.io/part-of`` label, ``admin_port``
    the port its pods' ``/metrics`` are scraped on."""

    part_of: str
    admin_port: int

    @property
    def part_of_labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/part-of": self.part_of}

    def labels(self, name: str, tier: str) -> dict[str, str]:
        return {"app.kubernetes.io/name": name, **self.part_of_labels, "tier": tier}

    def meta(self, name: str, namespace: str, tier: str) -> dict[str, Any]:
        return {"name": name, "namespace": namespace, "labels": self.labels(name, tier)}

    def namespaces(self, namespace: str, workload_namespace: str) -> list[dict[str, Any]]:
        """The app's namespace, the workload generator's hidden one (agents do not see it), and the
        generator's PriorityClass: what every app applies first."""
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": self.part_of_labels}},
                {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": workload_namespace, "labels": {**self.part_of_labels, "sregym.dev/hidden": "true"}}},
                priority_class()]

    def service(self, name: str, namespace: str, ports: list[tuple[str, int]], tier: str) -> dict[str, Any]:
        """A ClusterIP Service selecting the pods named ``name``; ``ports`` are (name, port) pairs."""
        return {"apiVersion": "v1", "kind": "Service", "metadata": self.meta(name, namespace, tier),
                "spec": {"selector": {"app.kubernetes.io/name": name},
                         "ports": [{"name": pn, "port": p, "targetPort": p} for pn, p in ports]}}

    def deployment(self, name: str, namespace: str, container: dict[str, Any], tier: str, *,
                   volumes: list[dict[str, Any]] | None = None, account: str | None = None,
                   priority: str | None = None, scrape: bool = True, grace_s: int = 10,
                   strategy: dict[str, Any] | None = None) -> dict[str, Any]:
        """A one-replica Deployment of ``container`` (see the module's notes on the defaults)."""
        pod: dict[str, Any] = {"terminationGracePeriodSeconds": grace_s, "containers": [container]}
        if volumes:
            pod["volumes"] = volumes
        if account:
            pod["serviceAccountName"] = account
        if priority:
            pod["priorityClassName"] = priority
        template_meta: dict[str, Any] = {"labels": self.labels(name, tier)}
        if scrape:
            template_meta["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": str(self.admin_port),
                                            "prometheus.io/path": "/metrics"}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": self.meta(name, namespace, tier),
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                         "strategy": copy.deepcopy(strategy or REPLACE_IN_PLACE),
                         "template": {"metadata": template_meta, "spec": pod}}}

    def service_container(self, name: str, image: str, ports: Sequence[tuple[str, int]], env: list[dict[str, Any]], *,
                          cpu: str, memory: str, ready_period_s: int = 2, live_delay_s: int = 10) -> dict[str, Any]:
        """The container of one of the app's processes: ``image`` run with the argument ``name``,
        ``ports`` its (name, port) pairs, ready while the admin port's ``/readyz`` answers (every
        ``ready_period_s``, 2 failures) and restarted when ``/healthz`` stops answering (from
        ``live_delay_s`` on, every 10 s, 3 failures; 3 s timeouts); ``cpu`` and ``memory`` are its
        requests, its memory limit 256Mi."""
        return {
            "name": name, "image": image, "args": [name],
            "ports": [{"name": pn, "containerPort": p} for pn, p in ports], "env": env,
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": self.admin_port}, "periodSeconds": ready_period_s,
                               "timeoutSeconds": 3, "failureThreshold": 2},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": self.admin_port}, "initialDelaySeconds": live_delay_s,
                              "periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3},
            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": "256Mi"}},
        }

    def load_generator(self, namespace: str, image: str, target: str, *, rate: int, timeout_s: int,
                       cpu: str, memory: str, name: str = "load-generator", port: int = 8089,
                       env: Sequence[Mapping[str, str]] = (), scrape: bool = True, grace_s: int = 10,
                       strategy: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The workload generator (``serve load-generator`` of the app's ``image``) in its hidden
        ``namespace``: a Service and a Deployment at :data:`INFRASTRUCTURE_PRIORITY`. It sends ``rate``
        user tasks a second to ``target`` (a URL), gives each ``timeout_s`` seconds, serves its stats
        on ``port``; ``env`` comes after its own variables, ``cpu`` and ``memory`` are its requests
        (its memory limit is 256Mi); ``scrape``, ``grace_s`` and ``strategy`` are :meth:`deployment`'s."""
        container: dict[str, Any] = {
            "name": name, "image": image, "args": ["load-generator"], "ports": [{"name": "http", "containerPort": port}],
            "env": [{"name": "WORKLOAD_TARGET", "value": target}, {"name": "WORKLOAD_RATE", "value": str(rate)},
                    {"name": "WORKLOAD_PORT", "value": str(port)}, {"name": "WORKLOAD_TIMEOUT_S", "value": str(timeout_s)},
                    *(dict(e) for e in env)],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 2},
            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": "256Mi"}}}
        return [self.service(name, namespace, [("http", port)], "workload"),
                self.deployment(name, namespace, container, "workload", priority=INFRASTRUCTURE_PRIORITY, scrape=scrape,
                                grace_s=grace_s, strategy=strategy)]


def mount_config_map(container: dict[str, Any], config_map: str, path: str) -> list[dict[str, Any]]:
    """Mount the ConfigMap ``config_map`` read-only at ``path`` in ``container`` (as its volume
    ``config``); return the pod's volumes for :meth:`AppObjects.deployment`."""
    container["volumeMounts"] = [{"name": "config", "mountPath": path, "readOnly": True}]
    return [{"name": "config", "configMap": {"name": config_map}}]
