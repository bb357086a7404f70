"""sregym_appkit.workload against a real local HTTP server, and the deploy helpers' parsing."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from sregym_appkit import deploy, workload
from sregym_appkit.workload import Outcome, RunSpec, Settings, validate_run


class EchoGenerator(workload.Generator):
    """Asks the test server for /ok, /wrong, /fail; a body other than b"right" is a content error."""

    endpoints = ("ok", "wrong", "fail")
    metrics_prefix = "appkit_test_"
    forgotten = 0

    def forget(self) -> None:
        self.forgotten += 1

    def choose(self, rng: random.Random) -> str:
        return workload.choose_weighted((("ok", 0.5), ("wrong", 0.25), ("fail", 0.25)), rng)

    def prepare(self, endpoint: str, rng: random.Random) -> str:
        return "/" + endpoint

    async def send(self, endpoint: str, path: str) -> Outcome:
        assert self.session is not None
        async with self.session.get(self.settings.target + path) as resp:
            body = await resp.read()
        return Outcome(resp.status, wrong="" if body == b"right" or resp.status != 200 else "wrong_body")


async def _server() -> tuple[web.AppRunner, int]:
    async def handle(request: web.Request) -> web.Response:
        name = request.path.strip("/")
        if name == "fail":
            return web.Response(status=503, text="down")
        return web.Response(text="right" if name == "ok" else "stale")

    app = web.Application()
    app.router.add_get("/{name}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def _settings(port: int, **run: Any) -> Settings:
    spec = RunSpec(**{"rate": 200.0, "duration": 5.0, "max_requests": 60, "distribution": "constant", "seed": 7, **run})
    return Settings(target=f"http://127.0.0.1:{port}", host="127.0.0.1", port=0, run=spec, timeout_s=5,
                    max_inflight=64, buffer=1000, autostart=False)


def test_generator_records_successes_content_errors_and_failures_and_serves_stats():
    async def scenario() -> None:
        runner, port = await _server()
        gen = EchoGenerator(_settings(port))
        await gen.open()
        api = web.AppRunner(workload.make_app(gen), access_log=None)
        await api.setup()
        site = web.TCPSite(api, "127.0.0.1", 0)
        await site.start()
        api_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            await gen.start(gen.spec)
            assert gen.task is not None
            await gen.task
            await asyncio.wait(gen.pending, timeout=30) if gen.pending else None  # the bound only catches a hang
            assert gen.sent == 60
            async with aiohttp.ClientSession() as s:
                async with s.get(f"http://127.0.0.1:{api_port}/stats?window=60") as r:
                    stats = await r.json()
                async with s.get(f"http://127.0.0.1:{api_port}/stats?window=-1") as r:
                    assert r.status == 400
                async with s.post(f"http://127.0.0.1:{api_port}/control", json={"rate": 1e9}) as r:
                    assert r.status == 400 and "rate must be within" in (await r.json())["error"]
                async with s.post(f"http://127.0.0.1:{api_port}/control", json={"rate": 0}) as r:
                    assert (await r.json())["rate"] == 0.0
                # "forget": the harness put the app's data back (a reset); a generator with a memory of it forgets
                assert gen.forgotten == 0
                async with s.post(f"http://127.0.0.1:{api_port}/control", json={"rate": 0, "forget": "yes"}) as r:
                    assert r.status == 400 and "forget must be true or false" in (await r.json())["error"]
                async with s.post(f"http://127.0.0.1:{api_port}/control", json={"rate": 0, "forget": False}) as r:
                    assert r.status == 200 and gen.forgotten == 0
                async with s.post(f"http://127.0.0.1:{api_port}/control", json={"rate": 0, "forget": True}) as r:
                    assert r.status == 200 and gen.forgotten == 1
            by = stats["by_endpoint"]
            assert stats["count"] == 60 and stats["endpoints"] == ["ok", "wrong", "fail"]
            assert by["ok"]["success_rate"] == 1.0
            assert by["wrong"]["success"] == 0 and by["wrong"]["content_error_kinds"] == {"wrong_body": by["wrong"]["count"]}
            assert by["fail"]["success"] == 0 and by["fail"]["error_kinds"] == {"503": by["fail"]["count"]}
            assert stats["success"] == by["ok"]["count"] > 0
        finally:
            await gen.close()
            await api.cleanup()
            await runner.cleanup()

    asyncio.run(scenario())


def test_seeded_runs_draw_the_same_requests():
    def draws(seed: int) -> list[str]:
        gen = EchoGenerator(_settings(1))
        rng = random.Random(seed)
        return [gen.prepare(gen.choose(rng), rng) for _ in range(50)]

    assert draws(3) == draws(3) != draws(4)


def test_overload_and_unreachable_target_are_failures_not_delays():
    async def scenario() -> None:
        gen = EchoGenerator(_settings(1, max_requests=5))  # port 1: connection refused
        await gen.open()
        gen.inflight = gen.settings.max_inflight  # every new request finds the client saturated
        await gen.start(gen.spec)
        await gen.task  # type: ignore[misc]
        assert {r.error for r in gen.log.window(60)} == {"client_overloaded"}
        gen.inflight = 0
        await gen._one("ok", "/ok")
        assert gen.log.window(60)[-1].error == "ClientConnectorError" and not gen.log.window(60)[-1].ok
        await gen.close()

    asyncio.run(scenario())


def test_validate_run_explains_bad_bodies():
    base = validate_run({"rate": 5, "duration": 10})
    assert validate_run({"seed": 3}, base=base) == RunSpec(rate=5.0, duration=10.0, max_requests=10_000_000, seed=3)
    for body, message in (({"bogus": 1}, "unknown keys: bogus"), ({"rate": "x"}, "must be numbers"),
                          ({"duration": 0}, "duration must be within"), ({"max_requests": -1}, "max_requests"),
                          ({"distribution": "burst"}, "constant or poisson")):
        with pytest.raises(ValueError, match=message):
            validate_run(body, base=base)


class FakeKubectl:
    """Answers ``json``/``run`` from canned objects (the parsing around kubectl is under test here)."""

    def __init__(self, objects: dict[tuple[str, ...], Any], raw: str = "") -> None:
        self.objects, self.raw = objects, raw

    def json(self, *args: str, timeout: float = 30) -> Any:
        return self.objects.get(args, {})

    def run(self, *args: str, **kw: Any) -> str:
        return self.raw


def test_not_ready_names_each_waiting_workload_and_pod():
    k = FakeKubectl({
        ("get", "deployments,statefulsets", "-n", "app"): {"items": [
            {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}, "status": {"readyReplicas": 1}},
            {"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}]},
        ("get", "pods", "-n", "app"): {"items": [
            {"metadata": {"name": "web-1"}, "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
                                                       "containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}]}},
            {"metadata": {"name": "job-1"}, "status": {"phase": "Succeeded"}}]}})
    assert deploy.not_ready(k, ("app",)) == ["Deployment app/web: 1/2 ready", "pod app/web-1 Pending waiting:ImagePullBackOff"]


def test_workload_stats_never_contacts_a_non_loopback_cluster_ip():
    k = FakeKubectl({("get", "service", "gen", "-n", "wl"): {"spec": {"clusterIP": "10.0.0.5"}}}, raw="not json")
    assert deploy.workload_stats(k, ("wl", "gen", 8089)) is None  # type: ignore[arg-type]
    k = FakeKubectl({}, raw='{"count": 3}')
    assert deploy.workload_stats(k, ("wl", "gen", 8089)) == {"count": 3}  # type: ignore[arg-type]


def test_the_app_authors_guide_documents_the_real_api():
    """docs/workload-generator.md shows /stats with exactly the keys it serves, and every WORKLOAD_* setting."""
    import json
    import re
    from pathlib import Path

    from sregym_appkit.stats import RequestLog

    doc = (Path(__file__).resolve().parents[3] / "docs" / "workload-generator.md").read_text()
    (example,) = re.findall(r"```json\n(.*?)```", doc, flags=re.S)
    assert set(json.loads(example)) == set(RequestLog(100).stats(30)) | {"endpoints"}
    source = Path(workload.__file__).read_text()
    assert set(re.findall(r"WORKLOAD_[A-Z_]+", source)) <= set(re.findall(r"WORKLOAD_[A-Z_]+", doc))
    for route in ("GET /stats", "GET /control", "POST /control", "GET /healthz", "GET /readyz", "GET /metrics"):
        assert route in doc, route
