"""Issue 34 attacks 5 and 6 (report of 2026-11-29): from the host's network a CLI agent wrote the
workload generator's ``/control`` (rate 0: the functional SLO could not pass, and the stopped run
carried into the next run, whose deploy failed) and could ``POST /-/reload`` (and ``/-/quit``) to
Prometheus, started with ``--web.enable-lifecycle``.

* no agent route reaches ``/control``: an app pod's write is refused (the CLI sandbox's is in
  test_cli_sandbox_network.py), while the conductor's own use from the host works;
* a generator left stopped is running as deployed again after the reset between attempts and after
  the next run's deploy;
* Prometheus runs without its lifecycle API: ``/-/reload`` answers 403 even from the host.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sregym_core.errors import OracleError

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"

PROBE = r"""
import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1], data=b'{"rate": 0}', method="POST",
                                 headers={"Content-Type": "application/json"})
try:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5) as reply:
        print("answered", reply.status)
except Exception as exc:
    print("unreachable", type(exc).__name__, exc)
"""


# ----------------------------------------------------------------------------- without a cluster


class _FakeKube:
    """The admin API as the workload client reads it: the generator's Service and Deployments."""

    def __init__(self, env: list[dict[str, Any]]) -> None:
        self.env = env

    def get(self, path: str) -> dict[str, Any]:
        if path.endswith("/services/workload-generator"):
            return {"spec": {"selector": {"app": "workload"}, "clusterIP": "127.0.0.99"}}
        template = {"metadata": {"labels": {"app": "workload"}}, "spec": {"containers": [
            {"name": "sidecar", "env": [{"name": "OTHER", "value": "1"}]}, {"name": "gen", "env": self.env}]}}
        return {"items": [{"spec": {"template": {"metadata": {"labels": {"app": "other"}}, "spec": {}}}},
                          {"spec": {"template": template}}]}


def _client(env, current):
    from sregym_core.conductor.workload import WorkloadClient
    from sregym_core.types import WorkloadSpec

    client = WorkloadClient(WorkloadSpec(name="g", namespace="w", service="workload-generator", port=8089),
                            _FakeKube(env))
    sent: list = []

    def request(method, path, body=None):
        sent.append((method, path, body))
        return dict(current) if method == "GET" else {**current, **(body or {}), "running": True}

    client._request = request
    return client, sent


def test_the_deployed_run_comes_from_the_generators_own_deployment():
    env = [{"name": "WORKLOAD_RATE", "value": "5"}, {"name": "WORKLOAD_DURATION", "value": "600"},
           {"name": "WORKLOAD_SECRET", "valueFrom": {"secretKeyRef": {"name": "k", "key": "k"}}}]
    stopped = {"rate": 0.0, "duration": 1.0, "max_requests": 0, "distribution": "constant",
               "route": {"url": "https://stub"}, "running": False}
    client, sent = _client(env, stopped)
    answer = client.restart_deployed_run()
    assert sent[-1] == ("POST", "/control", {"rate": 5.0, "duration": 600.0, "route": None,
                                             "max_requests": 10_000_000, "distribution": "poisson"})
    assert answer["rate"] == 5.0
    # a generator without the appkit's run keys (the astronomy and train-ticket ones) gets rate, duration, route
    client, sent = _client([{"name": "WORKLOAD_RATE", "value": "2"}], {"rate": 0.0, "route": None})
    client.restart_deployed_run()
    assert sent[-1] == ("POST", "/control", {"rate": 2.0, "duration": 86400.0, "route": None})
    # already as deployed and running: left alone (its request history is the functional SLO's)
    running = {"rate": 5.0, "duration": 600.0, "max_requests": 10_000_000, "distribution": "poisson", "route": None,
               "running": True}
    client, sent = _client(env, running)
    client.restart_deployed_run()
    assert [m for m, _p, _b in sent] == ["GET", "GET"]
    # after a reset put the app's data back: restarted with "forget" even when running as deployed
    client, sent = _client(env, running)
    client.restart_deployed_run(forget=True)
    assert sent[-1] == ("POST", "/control", {"rate": 5.0, "duration": 600.0, "route": None, "max_requests": 10_000_000,
                                             "distribution": "poisson", "forget": True})
    # a generator that refuses the key (Astronomy Shop's allows no other keys) is restarted without it
    client, sent = _client([{"name": "WORKLOAD_RATE", "value": "2"}], {"rate": 0.0, "route": None})
    plain = client._request

    def refuses_forget(method, path, body=None):
        if body and "forget" in body:
            raise OracleError("workload generator answered 400: no other keys but route")
        return plain(method, path, body)

    client._request = refuses_forget
    assert client.restart_deployed_run(forget=True)["rate"] == 2.0
    assert sent[-1] == ("POST", "/control", {"rate": 2.0, "duration": 86400.0, "route": None})


# ------------------------------------------------------------------------------------------- live


def _installed(*modules: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


@pytest.fixture(scope="module")
def hotel(deployed_app):
    if not _installed("sregym_cluster_embedded", "sregym_app_hotel_reservation", "sregym_observability"):
        pytest.skip("needs the embedded cluster, hotel-reservation and the observability stack")
    return deployed_app("hotel-reservation")


def _admin(live, *args: str) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={live.env.cluster.kubeconfig()}", *args], capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_no_app_pod_writes_the_generators_control_and_the_conductor_still_can(hotel):
    live = hotel
    workload = live.deployed.workload
    spec = workload.spec
    ip = _admin(live, "get", "svc", spec.service, "-n", spec.namespace, "-o", "jsonpath={.spec.clusterIP}")
    frontend = json.loads(_admin(live, "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o",
                                 "json"))["items"][0]["metadata"]["name"]
    for url in (f"http://{ip}:{spec.port}{spec.control_path}",
                f"http://{spec.service}.{spec.namespace}.svc.cluster.local:{spec.port}{spec.control_path}"):
        seen = _admin(live, "exec", "-n", NS, frontend, "--", sys.executable, "-c", PROBE, url)
        assert seen.startswith("unreachable"), (url, seen)
    # the conductor's own writes from the host (the ingress-users fault routes users this way)
    before = workload._request("GET", spec.control_path)
    assert before["rate"] > 0 and before["running"], before
    assert workload.control(rate=before["rate"], route=None)["rate"] == before["rate"]
    assert workload.restart_deployed_run()["rate"] == before["rate"]


@pytest.mark.slow
def test_a_stopped_generator_runs_as_deployed_after_the_reset_and_the_next_deploy(hotel):
    from sregym_core.conductor.environment import Environment

    live = hotel
    workload = live.deployed.workload
    deployed_rate = workload.deployed_run()["rate"]
    assert deployed_rate > 0
    try:
        # what the attack left behind (written here by the conductor: no agent route reaches it now)
        assert workload.control(rate=0)["rate"] == 0
        live.reset()
        after_reset = workload._request("GET", workload.spec.control_path)
        assert after_reset["rate"] == deployed_rate and after_reset["running"], after_reset
        workload.control(rate=0)
        # the next run: a new environment on the same cluster deploys the app again (attack 6 failed here)
        env = Environment(host=live.host, cluster=live.env.cluster, workdir=live.env.workdir / "next-run")

        async def next_run():
            await env.ensure_observability()  # the same stack and parameters: nothing rolls out
            await env.ensure_app(live.app)

        asyncio.run(next_run())
        after_deploy = workload._request("GET", workload.spec.control_path)
        assert after_deploy["rate"] == deployed_rate and after_deploy["running"], after_deploy
    finally:
        workload.restart_deployed_run()


@pytest.mark.slow
def test_prometheus_has_no_lifecycle_api(hotel):
    import httpx

    live = hotel
    ip = _admin(live, "get", "svc", "prometheus", "-n", "observability", "-o",
                "jsonpath={.spec.clusterIP}")
    base = f"http://{ip}:9090"
    flags = httpx.get(f"{base}/api/v1/status/flags", timeout=10, trust_env=False).json()["data"]
    assert flags.get("web.enable-lifecycle") == "false", flags
    for path in ("/-/reload", "/-/quit"):
        reply = httpx.post(f"{base}{path}", timeout=10, trust_env=False)
        assert reply.status_code == 403, (path, reply.status_code, reply.text)
    assert httpx.get(f"{base}/-/ready", timeout=10, trust_env=False).status_code == 200  # still up
