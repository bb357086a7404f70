"""Every Kubernetes, datastore and application-configuration primitive, live on Hotel Reservation.

For each primitive: inject it into the deployed app; see its symptom the way an SRE would (pod
states and events through kubectl, failed or slow requests through the frontend, the service's logs
or metrics, the datastore's own protocol); check ``is_present``; apply the reference fix; check that
``is_present`` turns false and the workload recovers (the generator's success rate and real requests
of the affected kind). Then ``recover`` and reconcile to the baseline for the next primitive.

One embedded cluster and one deployment for the module, driven through the conductor's own
``Environment`` (the code path ``sregym run`` uses). The node, syscall and bad-block primitives have
their own live tests in their packs. A primitive registered by these packs without a case here fails
``test_every_primitive_has_a_live_case``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import subprocess
import time
from typing import Any

import attrs
import pytest

pytestmark = pytest.mark.slow

if not all(importlib.util.find_spec(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation",
                                                  "sregym_fault_k8s", "sregym_fault_datastore", "sregym_fault_app")):
    pytest.skip("needs the embedded cluster, hotel-reservation and the k8s/datastore/app fault packs",
                allow_module_level=True)

from primitive_probes import (  # noqa: E402  (after the skip: needs the app package)
    Live,
    any_of,
    cpu_throttled,
    crashing,
    event,
    fails,
    foreign_endpoints,
    init_stuck,
    log_line,
    memcached_stat,
    metric_above,
    no_endpoints,
    not_ready,
    slower,
    slower_under_burst,
    under_burst,
    unschedulable,
    waiting,
    workload_errors,
)

from sregym_core.clusters import get_cluster  # noqa: E402
from sregym_core.conductor.environment import Environment  # noqa: E402
from sregym_core.faults import FaultContext, call_fault  # noqa: E402
from sregym_core.plugins import new_plugin_host  # noqa: E402
from sregym_core.types import ComponentSpec, Target  # noqa: E402
from sregym_core.validation import validate  # noqa: E402

APP = "hotel-reservation"
PACKS = ("sregym_fault_k8s", "sregym_fault_datastore", "sregym_fault_app")
HEALTHY_MS: list[float] = []
HEALTHY_BURST_MS: list[float] = []
BURST = (60, 10)  # requests, concurrency of the burst that shows CPU starvation


def healthy_ms() -> float:
    return statistics.median(HEALTHY_MS) if HEALTHY_MS else 50.0


def healthy_burst_ms() -> float:
    return statistics.median(HEALTHY_BURST_MS) if HEALTHY_BURST_MS else 200.0


@attrs.frozen
class Case:
    target: str
    symptom: Any
    params: dict = attrs.field(factory=dict)
    #: the request kind whose success shows recovery (the one the fault breaks)
    endpoint: str = "search"
    symptom_timeout: float = 90.0
    #: run by the test right after injection (a rollout that a latent fault then blocks)
    provoke: Any = None


def _rollout(component: str):
    def provoke(live: Live) -> None:
        live.kubectl("rollout", "restart", f"deployment/{component}", "-n", live.namespace)
    return provoke


CASES: dict[str, Case] = {
    # --- pod template: image, command, env
    "wrong-image": Case("geo", waiting("geo", "ErrImagePull", "ImagePullBackOff")),
    # the defect hits stays that cross a month end: some searches, never the short reservations
    "buggy-image": Case("reservation", workload_errors("search")),
    "wrong-command": Case("rate", not_ready("rate")),
    "missing-env": Case("user", any_of(crashing("user"), log_line("user", "DB_PASSWORD")), {"name": "DB_PASSWORD"},
                        endpoint="login"),
    "env-shadowing": Case("search", fails("search")),
    "wrong-port-env": Case("frontend", fails("search")),
    # 24 descriptors hold for a trickle of requests; a burst of concurrent connections exhausts them
    "fd-limit": Case("frontend", any_of(crashing("frontend"), log_line("frontend", "too many open files"),
                                        under_burst("search", 60, 30))),
    # --- probes, init containers, sidecars
    "liveness-misconfig": Case("profile", event("Unhealthy", "liveness probe failed", "profile"), endpoint="recommend"),
    "liveness-aggressive": Case("recommendation", any_of(event("Killing", "liveness", "recommendation"),
                                                                   event("Unhealthy", "liveness", "recommendation")),
                                endpoint="recommend"),
    "readiness-misconfig": Case("search", any_of(event("Unhealthy", "readiness probe failed", "search"), not_ready("search"))),
    "init-hang": Case("user", init_stuck("user"), endpoint="login"),
    "rolling-update-broken": Case("reservation", init_stuck("reservation"), endpoint="reserve"),
    "sidecar-port-conflict": Case("geo", any_of(crashing("geo"), log_line("geo", "address already in use"))),
    # --- resources and scheduling
    "request-too-large": Case("rate", unschedulable("rate", "insufficient memory")),
    "memory-limit-too-small": Case("geo", waiting("geo", "OOMKilled")),
    "cpu-throttling": Case("search", any_of(cpu_throttled("search"),
                                            slower_under_burst("search", *BURST, 3.0, healthy_burst_ms))),
    "node-selector-missing": Case("profile", unschedulable("profile", "node affinity/selector"), endpoint="recommend"),
    "anti-affinity-deadlock": Case("frontend", unschedulable("frontend", "anti-affinity")),
    "host-port-conflict": Case("frontend", unschedulable("frontend", "free ports")),
    "taint-no-toleration": Case("recommendation", any_of(unschedulable("recommendation", "untolerated taint"),
                                                         event("FailedScheduling", "untolerated taint")),
                                endpoint="recommend", provoke=_rollout("recommendation")),
    "priority-preemption": Case("recommendation", any_of(event("Preempted"), unschedulable("recommendation", "")),
                                endpoint="recommend"),
    "wrong-dns-policy": Case("search", fails("search")),
    "wrong-service-account": Case("user", event("FailedCreate", "serviceaccount"), endpoint="login"),
    "hpa-no-request": Case("geo", event("FailedGetResourceMetric")),
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
    "capacity-constraint": Case("search", event("FailedCreate", "exceeded quota"), provoke=_rollout("search")),
    # --- datastores, through their own protocols
    "db-revoke": Case("postgres-geo", any_of(log_line("geo", "permission denied"), fails("search"))),
    "db-drop-user": Case("postgres-user", any_of(log_line("user", "does not exist", "authentication failed"),
                                                 fails("login")), endpoint="login"),
    "db-password-rotated": Case("postgres-profile", any_of(log_line("profile", "password authentication failed"),
                                                           event("Unhealthy", "readiness probe failed", "profile"),
                                                           fails("recommend")), endpoint="recommend"),
    "db-lock-contention": Case("postgres-reservation", any_of(fails("reserve"), log_line("reservation", "timeout")),
                               endpoint="reserve"),
    "db-max-connections": Case("postgres-rate", any_of(log_line("rate", "too many clients", "connection slots"),
                                                       under_burst("search", 40, 10))),
    "cache-tiny": Case("memcached-profile", memcached_stat("memcached-profile", "limit_maxbytes", lambda v: v <= 2 << 20),
                       endpoint="recommend"),
    "cache-flood": Case("memcached-rate", memcached_stat("memcached-rate", "evictions", lambda v: v > 0)),
    # --- application configuration and transient triggers
    "feature-flag-bug": Case("recommendation", fails("recommend"), endpoint="recommend"),
    "retry-storm": Case("search", any_of(metric_above("search", "hotel_rpc_client_retries_total", 0),
                                         under_burst("search", 60, 20))),
    "rate-limit-collapse": Case("geo", under_burst("search", 80, 20)),
    "load-burst": Case("frontend", slower("search", 2.0, healthy_ms), {"seconds": 20, "workers": 8}),
    "cpu-pressure": Case("search", slower("search", 2.0, healthy_ms), {"seconds": 30, "workers": 2}),
}

#: primitives that cannot run on the embedded cluster or on Hotel Reservation, and why
NOT_HERE = {
    "ephemeral-ports": "narrows net.ipv4.ip_local_port_range through a pod sysctl: real clusters only",
}

#: Redis is not part of Hotel Reservation; cache-auth runs against a standalone Redis in the namespace
REDIS = ComponentSpec(name="sessions-redis", kind="Deployment", roles=("cache:redis",), ports=(6379,),
                      container="redis", service="sessions-redis", labels={"app": "sessions-redis"})
REDIS_MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: sessions-redis, namespace: hotel-reservation}
spec:
  replicas: 1
  selector: {matchLabels: {app: sessions-redis}}
  template:
    metadata: {labels: {app: sessions-redis}}
    spec:
      containers:
      - name: redis
        image: redis:7
        ports: [{containerPort: 6379}]
        readinessProbe: {tcpSocket: {port: 6379}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: sessions-redis, namespace: hotel-reservation}
spec:
  selector: {app: sessions-redis}
  ports: [{port: 6379, targetPort: 6379}]
"""


class Hotel:
    def __init__(self, host: Any, env: Environment, deployed: Any) -> None:
        self.host, self.env, self.deployed = host, env, deployed
        self.app = deployed.app

    def run(self, coro: Any) -> Any:
        return asyncio.run(coro)

    def live(self, since: float, extra: dict | None = None) -> Live:
        components = {c.name: c for c in self.app.components} | (extra or {})
        return Live(self.env.cluster.kubeconfig(), self.env.kubectl, self.app.namespace, components,
                    self.deployed.workload, since)

    def context(self) -> FaultContext:
        return FaultContext(kubeconfig=self.env.cluster.kubeconfig(), namespace=self.app.namespace, app=self.app,
                            cluster=self.env.cluster, kubectl_path=self.env.kubectl)


@pytest.fixture(scope="module")
def hotel(shared_cluster, monkeypatch_module):
    monkeypatch_module.setenv("SREGYM_HOME", str(shared_cluster.home))
    host = new_plugin_host()
    cluster = get_cluster(host, provider="embedded", name=shared_cluster.name)
    # the same stack and app parameters as the CLI's deploys on this shared cluster, so deploying
    # again changes nothing (no rollout) before or after this module
    env = Environment(host=host, cluster=cluster, workdir=shared_cluster.workdir / "primitives")

    async def deploy():
        await env.ensure_observability()
        return await env.ensure_app(host.get_apps()[APP])

    deployed = asyncio.run(deploy())
    hotel = Hotel(host, env, deployed)
    probe = hotel.live(time.time())
    for _ in range(10):
        status, seconds = probe.call("search")
        if status == 200:
            HEALTHY_MS.append(seconds * 1000)
    HEALTHY_BURST_MS.extend(seconds * 1000 for status, seconds in probe.burst("search", *BURST) if status == 200)
    return hotel


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _pack_primitives() -> dict[str, Any]:
    import inspect

    host = new_plugin_host()
    return {name: spec for name, spec in host.get_faults().items()
            if inspect.getmodule(spec.inject).__name__.split(".")[0] in PACKS}


def test_every_primitive_has_a_live_case():
    primitives = set(_pack_primitives())
    assert len(primitives) >= 50
    missing = primitives - set(CASES) - set(NOT_HERE) - {"cache-auth"}
    assert not missing, f"primitives without a live case: {sorted(missing)}"
    assert not (set(CASES) - primitives), "cases for primitives that no pack registers"


def _wait(predicate, timeout: float, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    return last


def _recovered(live: Live, endpoint: str) -> str | None:
    """The workload succeeds over the last 5 s and real requests of the broken kind succeed."""
    stats = live.stats(5)
    if (stats.get("count") or 0) < 5 or (stats.get("success_rate") or 0) < 0.95:
        return None
    outcomes = [live.call(endpoint) for _ in range(3)]
    if any(not 200 <= s < 300 for s, _ in outcomes):
        return None
    return f"workload {stats['success_rate']:.2f} over {stats['count']} requests; {endpoint} ok"


def _exercise(hotel: Hotel, name: str, case: Case, target: Target) -> None:
    spec = hotel.host.get_faults()[name]
    params = validate(dict(case.params), dict(spec.params_schema), what=f"params of {name}", fill_defaults=True)
    ctx = hotel.context()
    live = hotel.live(time.time(), {target.component.name: target.component})
    fixed = False
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def phase(label: str) -> None:
        nonlocal mark
        now = time.monotonic()
        phases[label] = round(now - mark, 1)
        mark = now

    try:
        hotel.run(call_fault(spec.inject, ctx, target, params))
        if case.provoke:
            case.provoke(live)
        phase("inject")
        evidence = _wait(lambda: case.symptom(live), case.symptom_timeout)
        phase("symptom")
        assert evidence, f"{name}: no symptom visible within {case.symptom_timeout:.0f} s"
        assert hotel.run(call_fault(spec.is_present, ctx, target, params)) is True
        hotel.run(call_fault(spec.reference_fix, ctx, target, params))
        phase("fix")
        gone = _wait(lambda: not hotel.run(call_fault(spec.is_present, ctx, target, params)), 60, 1.0)
        assert gone, f"{name}: still present after the reference fix"
        fixed = True
        healthy = _wait(lambda: _recovered(live, case.endpoint), 150, 1.0)
        phase("recovery")
        assert healthy, f"{name}: the workload did not recover after the fix (evidence was: {evidence})"
    finally:
        try:
            hotel.run(call_fault(spec.recover, ctx, target, params))
        except Exception:
            if fixed:
                raise  # after a fix, recover must still be safe to call
        hotel.run(hotel.env.reset_app(APP))
        phase("reset")
        print(f"{name}: {phases}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_primitive_live(hotel, name):
    case = CASES[name]
    target = Target(app=hotel.app, component=hotel.app.component(case.target), namespace=hotel.app.namespace)
    _exercise(hotel, name, case, target)


@pytest.mark.parametrize("name", sorted(NOT_HERE))
def test_primitive_not_runnable_here_is_excluded_by_capabilities(hotel, name):
    spec = _pack_primitives()[name]
    assert spec.needs(hotel.env.capabilities), f"{name} should need a capability the embedded cluster lacks"


def test_cache_auth_live_on_a_standalone_redis(hotel):
    """cache-auth needs Redis, which Hotel Reservation does not use: a Redis beside it stands in."""
    live = hotel.live(time.time(), {REDIS.name: REDIS})
    subprocess.run([hotel.env.kubectl, "--kubeconfig", str(hotel.env.cluster.kubeconfig()), "apply", "-f", "-"],
                   input=REDIS_MANIFEST, text=True, check=True, capture_output=True, timeout=60)
    try:
        assert _wait(lambda: any(p.get("status", {}).get("podIP") and all(
            c.get("ready") for c in p["status"].get("containerStatuses") or [{}]) for p in live.pods(REDIS.name)), 60)
        pod = live.pods(REDIS.name)[0]

        def ping() -> str:
            return live.kubectl("exec", pod["metadata"]["name"], "-n", live.namespace, "--", "sh", "-c",
                                'redis-cli -h "${POD_IP:-127.0.0.1}" PING')

        assert "PONG" in ping()
        spec = hotel.host.get_faults()["cache-auth"]
        app = attrs.evolve(hotel.app, components=(*hotel.app.components, REDIS))
        target = Target(app=app, component=REDIS, namespace=hotel.app.namespace)
        params = validate({}, dict(spec.params_schema), what="params", fill_defaults=True)
        ctx = hotel.context()
        hotel.run(call_fault(spec.inject, ctx, target, params))
        assert "NOAUTH" in ping()  # what every client now sees
        assert hotel.run(call_fault(spec.is_present, ctx, target, params)) is True
        hotel.run(call_fault(spec.reference_fix, ctx, target, params))
        assert hotel.run(call_fault(spec.is_present, ctx, target, params)) is False
        assert "PONG" in ping()
    finally:
        hotel.run(hotel.env.reset_app(APP))
    assert not live.pods(REDIS.name), "reconciling to the baseline removes the stand-in Redis"
