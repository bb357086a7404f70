"""Every Kubernetes primitive, live on Hotel Reservation (slow; the session's embedded cluster).

Per fault: inject it into the deployed app, see its symptom as an SRE would (pod states and events
through kubectl, failed requests through the frontend, logs, metrics, cgroup stats), check
``is_present``, apply the reference fix, check that it is gone and the workload recovers.
"""

from __future__ import annotations

import pytest

import sregym_fault_k8s.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for, rollout
from sregym_core.testing.probes import (
    any_of,
    cpu_throttled,
    crashing,
    event,
    fails,
    foreign_endpoints,
    healthy_burst_ms,
    init_stuck,
    log_line,
    no_endpoints,
    not_ready,
    slower_under_burst,
    unschedulable,
    waiting,
    workload_errors,
)

BURST = (60, 10)  # requests, concurrency of the burst that shows CPU starvation


class TestK8sFaultsLive(LiveFaultContract):
    plugin = sregym_fault_k8s.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    burst = BURST
    cases = {
        # --- pod template: image, command, env
        "wrong-image": Case("geo", waiting("geo", "ErrImagePull", "ImagePullBackOff")),
        # the defect hits stays that cross a month end: some searches, never the short reservations
        "buggy-image": Case("reservation", workload_errors("search")),
        "wrong-command": Case("rate", not_ready("rate")),
        "missing-env": Case("user", any_of(crashing("user"), log_line("user", "DB_PASSWORD")), {"name": "DB_PASSWORD"},
                            endpoint="login"),
        "env-shadowing": Case("search", fails("search")),
        "wrong-port-env": Case("frontend", fails("search")),
        # --- probes, init containers, sidecars
        "liveness-misconfig": Case("profile", event("Unhealthy", "liveness probe failed", "profile"),
                                   endpoint="recommend"),
        "liveness-aggressive": Case("recommendation", any_of(event("Killing", "liveness", "recommendation"),
                                                              event("Unhealthy", "liveness", "recommendation")),
                                    endpoint="recommend"),
        "readiness-misconfig": Case("search", any_of(event("Unhealthy", "readiness probe failed", "search"),
                                                     not_ready("search"))),
        "init-hang": Case("user", init_stuck("user"), endpoint="login"),
        "rolling-update-broken": Case("reservation", init_stuck("reservation"), endpoint="reserve"),
        "sidecar-port-conflict": Case("geo", any_of(crashing("geo"), log_line("geo", "address already in use"))),
        # --- resources and scheduling
        "request-too-large": Case("rate", unschedulable("rate", "insufficient memory")),
        "memory-limit-too-small": Case("geo", waiting("geo", "OOMKilled")),
        "cpu-throttling": Case("search", any_of(cpu_throttled("search"),
                                                slower_under_burst("search", *BURST, 3.0, healthy_burst_ms))),
        "node-selector-missing": Case("profile", unschedulable("profile", "node affinity/selector"),
                                      endpoint="recommend"),
        "anti-affinity-deadlock": Case("frontend", unschedulable("frontend", "anti-affinity")),
        "host-port-conflict": Case("frontend", unschedulable("frontend", "free ports")),
        "taint-no-toleration": Case("recommendation", any_of(unschedulable("recommendation", "untolerated taint"),
                                                             event("FailedScheduling", "untolerated taint")),
                                    endpoint="recommend", provoke=rollout("recommendation")),
        "priority-preemption": Case("recommendation", any_of(event("Preempted"), unschedulable("recommendation", "")),
                                    endpoint="recommend"),
        "wrong-dns-policy": Case("search", fails("search")),
        "wrong-service-account": Case("user", event("FailedCreate", "serviceaccount"), endpoint="login"),
        # what the real HPA controller reports, on the HPA (named after geo) an agent may describe
        "hpa-no-request": Case("geo", event("FailedGetResourceMetric", "missing request for cpu", "geo")),
        "scale-zero": Case("rate", no_endpoints("rate")),
        # --- namespace objects: Services, ConfigMaps, Secrets, policies, quotas
        "selector-mismatch": Case("profile", no_endpoints("profile"), endpoint="recommend"),
        "selector-pollution": Case("search", foreign_endpoints("search", "search")),
        "wrong-target-port": Case("user", fails("login"), endpoint="login"),
        "service-port-mismatch": Case("reservation", fails("reserve"), endpoint="reserve"),
        "missing-service": Case("geo", fails("search")),
        "missing-configmap": Case("rate", any_of(waiting("rate", "CreateContainerConfigError", "ContainerCreating"),
                                                 event("FailedMount"))),
        "configmap-drift": Case("search", any_of(log_line("search", "config"), crashing("search"))),
        "missing-secret": Case("profile", waiting("profile", "CreateContainerConfigError"), endpoint="recommend"),
        "network-policy-block": Case("geo", fails("search")),
        "quota-admission": Case("user", event("FailedCreate", "must specify limits"), endpoint="login"),
        "limitrange-too-small": Case("user", event("FailedCreate", "maximum memory"), endpoint="login"),
        "pvc-claim-mismatch": Case("postgres-rate", unschedulable("postgres-rate", "persistentvolumeclaim")),
    }


@pytest.fixture(autouse=True)
def _needs_hotel(request):
    if "case_name" in request.fixturenames or request.node.name.startswith("test_not_runnable"):
        pytest.importorskip("sregym_app_hotel_reservation", reason="the live cases run on Hotel Reservation")
