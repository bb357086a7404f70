"""The log store over real HTTP: Loki push, query_range shapes, labels, 400s, bounded memory."""

from __future__ import annotations

import time

import httpx
import psutil
import pytest
from sregym_observability import tools

pytestmark = pytest.mark.slow


def _push(url: str, streams: list[dict]) -> httpx.Response:
    return httpx.post(url + "/loki/api/v1/push", json={"streams": streams}, timeout=30)


def test_push_then_query_in_loki_shapes(start_component) -> None:
    server = start_component("logs", "--no-collector")
    now = time.time_ns()
    reply = _push(server.url, [
        {"stream": {"namespace": "hotel", "app": "geo", "pod": "geo-1"},
         "values": [[str(now - 3_000_000), "started"], [str(now - 2_000_000), '{"level":"error","event":"rpc_failed","peer":"geo"}']]},
        {"stream": {"namespace": "hotel", "app": "frontend", "pod": "fe-1"},
         "values": [[str(now - 1_000_000), "GET /hotels 200"]]},
    ])
    assert reply.status_code == 204

    body = httpx.get(server.url + "/loki/api/v1/query_range",
                     params={"query": '{namespace="hotel"} |= "error"', "limit": "10"}).json()
    assert body["status"] == "success"
    assert body["data"]["resultType"] == "streams"
    [stream] = body["data"]["result"]
    assert stream["stream"] == {"namespace": "hotel", "app": "geo", "pod": "geo-1"}
    assert stream["values"] == [[str(now - 2_000_000), '{"level":"error","event":"rpc_failed","peer":"geo"}']]

    forward = httpx.get(server.url + "/loki/api/v1/query_range",
                        params={"query": '{app=~"geo|frontend"}', "direction": "forward",
                                "start": str(now - 10**9), "end": str(now)}).json()
    lines = sorted(v for s in forward["data"]["result"] for v in s["values"])
    assert [line for _, line in lines][0] == "started" and len(lines) == 3

    instant = httpx.get(server.url + "/loki/api/v1/query", params={"query": '{app="frontend"}'}).json()
    assert instant["data"]["result"][0]["values"][0][1] == "GET /hotels 200"

    labels = httpx.get(server.url + "/loki/api/v1/labels").json()
    assert labels == {"status": "success", "data": ["app", "namespace", "pod"]}
    values = httpx.get(server.url + "/loki/api/v1/label/app/values").json()
    assert values == {"status": "success", "data": ["frontend", "geo"]}

    # Between problems the store is emptied; it keeps serving and accepting pushes.
    assert httpx.post(server.url + "/admin/clear").json() == {"cleared": True}
    assert httpx.get(server.url + "/loki/api/v1/labels").json()["data"] == []
    assert _push(server.url, [{"stream": {"app": "geo"}, "values": [[str(now), "again"]]}]).status_code == 204
    assert httpx.get(server.url + "/loki/api/v1/label/app/values").json()["data"] == ["geo"]


@pytest.mark.parametrize(
    ("path", "params", "fragment"),
    [
        ("/loki/api/v1/query_range", {}, "query parameter is required"),
        ("/loki/api/v1/query_range", {"query": "{app=}"}, "parse error at line 1, col 6"),
        ("/loki/api/v1/query_range", {"query": "geo"}, "parse error"),
        ("/loki/api/v1/query_range", {"query": '{app="a"}', "limit": "abc"}, "invalid parameter 'limit'"),
        ("/loki/api/v1/query_range", {"query": '{app="a"}', "limit": "999999"}, "max entries limit"),
        ("/loki/api/v1/query_range", {"query": '{app="a"}', "start": "yesterday"}, "invalid parameter 'start'"),
        ("/loki/api/v1/query_range", {"query": '{app="a"}', "start": "200", "end": "100"}, "end timestamp"),
        ("/loki/api/v1/query_range", {"query": '{app="a"}', "direction": "up"}, "direction"),
        ("/loki/api/v1/query", {"query": '{app="a"} |~ "("'}, "error parsing regexp"),
        ("/loki/api/v1/query", {"query": 'rate({app="a"}[nope])'}, "invalid range"),
        ("/loki/api/v1/query_range", {"query": 'rate({app="a"}[1m])', "step": "-1"}, "step"),
        ("/loki/api/v1/query_range", {"query": 'rate({app="a"}[1m])', "step": "0.001", "start": "0",
                                      "end": "100000"}, "11,000 points"),
        ("/loki/api/v1/label/app/values", {"query": 'rate({app="a"}[1m])'}, "metric query is not allowed"),
    ],
)
def test_malformed_queries_get_400_with_loki_text(shared_logs, path, params, fragment) -> None:
    server = shared_logs
    reply = httpx.get(server.url + path, params=params)
    assert reply.status_code == 400
    assert fragment in reply.text


def test_malformed_push_gets_400(shared_logs) -> None:
    server = shared_logs
    bad = httpx.post(server.url + "/loki/api/v1/push", content=b'{"streams": [{"values": [["x"]]}]}',
                     headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and "malformed JSON body" in bad.text
    snappy = httpx.post(server.url + "/loki/api/v1/push", content=b"\x00\x01",
                        headers={"Content-Type": "application/x-protobuf"})
    assert snappy.status_code == 415


@pytest.fixture(scope="module")
def shared_logs(module_server_factory):
    return module_server_factory("logs", "--no-collector")


def test_large_volume_keeps_memory_bounded(start_component) -> None:
    budget = 8 * 1024 * 1024
    server = start_component("logs", "--no-collector", "--max-bytes", str(budget),
                             "--max-stream-bytes", str(2 * 1024 * 1024))
    process = psutil.Process(server.pid)
    baseline = process.memory_info().rss
    line = "z" * 400
    sent = 0
    base_ts = time.time_ns() - 10**9
    for batch in range(45):  # ~45 * 2000 * 400 B ≈ 36 MB through an 8 MiB store
        values = [[str(base_ts + batch * 2000 + j), f"{line} {batch}-{j}"] for j in range(2000)]
        assert _push(server.url, [{"stream": {"app": f"load{batch % 10}"}, "values": values}]).status_code == 204
        sent += 2000 * len(line)
    stats = httpx.get(server.url + "/stats").json()
    grown = process.memory_info().rss - baseline
    assert sent > 4 * budget
    assert stats["bytes"] <= budget
    assert stats["dropped_entries"] > 0
    # The store holds at most its budget; allow for allocator slack and request buffers.
    assert grown < 3 * budget, f"RSS grew by {grown / 2**20:.1f} MiB for a {budget / 2**20:.0f} MiB store"
    # Newest lines are still queryable.
    body = httpx.get(server.url + "/loki/api/v1/query_range",
                     params={"query": '{app="load4"} |= "44-1999"', "start": str(base_ts - 1)}).json()
    assert body["data"]["result"][0]["values"][0][1].endswith("44-1999")


def test_metric_queries_in_loki_shapes(shared_logs) -> None:
    server = shared_logs
    now = time.time_ns()
    values = [[str(now - i * 1_000_000_000), "error: upstream timeout"] for i in range(1, 11)]
    _push(server.url, [{"stream": {"namespace": "m", "app": "geo", "pod": "geo-1"}, "values": values},
                       {"stream": {"namespace": "m", "app": "rate", "pod": "rate-1"}, "values": values[:2]}])
    instant = httpx.get(server.url + "/loki/api/v1/query", params={
        "query": 'sum by (app) (count_over_time({namespace="m"} |= "timeout" [1m]))'}).json()
    assert instant["data"]["resultType"] == "vector"
    assert sorted((r["metric"]["app"], r["value"][1]) for r in instant["data"]["result"]) == [("geo", "10"),
                                                                                               ("rate", "2")]
    assert isinstance(instant["data"]["result"][0]["value"][0], float)
    matrix = httpx.get(server.url + "/loki/api/v1/query_range", params={
        "query": 'sum(count_over_time({namespace="m"}[2s]))', "start": str(now - 12 * 10**9), "end": str(now),
        "step": "2s"}).json()
    assert matrix["data"]["resultType"] == "matrix"
    [series] = matrix["data"]["result"]
    assert series["metric"] == {}
    assert sum(int(v) for _, v in series["values"]) == 12
    endpoints = tools.Endpoints(loki_url=server.url)
    text = tools.get_logs(endpoints, 'sum by (app) (count_over_time({namespace="m"} |= "timeout" [1m]))')
    assert text.splitlines() == ["2 series (largest first):", '{app="geo"} = 10', '{app="rate"} = 2']
