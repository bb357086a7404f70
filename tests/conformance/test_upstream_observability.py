"""Conformance: the observability tools on upstream's MCP mounts answer in upstream's shapes
(upstream-parity.md §2.3, one test per row), against real backends.

Real Prometheus (/usr/bin/prometheus) scrapes a local exporter whose gauge the test sets and
evaluates two alert rules on it; the project's own Loki-API log store and Jaeger-API trace store
run as servers and receive pushed lines and OTLP spans. The agent server is the real one with the
observability plugin's tools, driven by the official MCP SDK's SSE client as upstream's drivers do.
Upstream answers ``str()`` of the decoded backend JSON: each test checks the text round-trips
through ``ast.literal_eval`` to itself (a Python repr, not JSON) and holds what the backend holds.
"""

from __future__ import annotations

import ast
import asyncio
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fake_conductor import serving
from mcp import ClientSession
from mcp.client.sse import sse_client

from sregym_core.types import ObservabilityEndpoints

PROMETHEUS = "/usr/bin/prometheus"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not shutil.which(PROMETHEUS), reason="prometheus is not installed")]

RULES = """groups:
- name: probes
  interval: 1s
  rules:
  - alert: ProbeFiring
    expr: probe_value{service="geo"} > 0
    labels: {severity: warning}
    annotations: {summary: probe above zero}
  - alert: ProbeStillPending
    expr: probe_value{service="geo"} > 0
    for: 1h
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"{what} not reached within {timeout}s")


def start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as handle:
        return subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT)


def observability_server(component: str, log_dir: Path, started: list) -> str:
    port = free_port()
    started.append(start([sys.executable, "-m", "sregym_observability.serve", component, "--host", "127.0.0.1",
                          "--port", str(port), *(["--no-collector"] if component == "logs" else [])],
                         log_dir / f"{component}.log"))
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: httpx.get(url + "/ready", timeout=1).status_code == 200, what=f"{component} server")
    return url


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    from prometheus_client import CollectorRegistry, Gauge, start_http_server

    work = tmp_path_factory.mktemp("observability")
    started: list[subprocess.Popen] = []
    registry = CollectorRegistry()
    gauge = Gauge("probe_value", "a value the test sets", ["service"], registry=registry)
    gauge.labels(service="geo").set(0)
    exporter_port = free_port()
    exporter, exporter_thread = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    (work / "rules.yml").write_text(RULES)
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [rules.yml]\n"
        f"scrape_configs:\n- job_name: probe\n  static_configs:\n  - targets: ['127.0.0.1:{exporter_port}']\n")
    prom_port = free_port()
    started.append(start([PROMETHEUS, f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{prom_port}"], work / "prometheus.log"))
    prometheus = f"http://127.0.0.1:{prom_port}"
    try:
        logs = observability_server("logs", work, started)
        traces = observability_server("traces", work, started)
        wait_until(lambda: httpx.get(prometheus + "/-/ready", timeout=1).status_code == 200, what="prometheus")
        wait_until(lambda: httpx.get(prometheus + "/api/v1/query", params={"query": "probe_value"}).json()["data"]["result"],
                   what="the first scrape")
        pushed_at_ns = push_logs(logs)
        push_traces(traces)
        yield {"gauge": gauge, "pushed_at_ns": pushed_at_ns, "prometheus": prometheus, "logs": logs, "traces": traces,
               "endpoints": ObservabilityEndpoints(prometheus_url=prometheus, loki_url=logs, jaeger_url=traces)}
    finally:
        for process in started:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        exporter.shutdown()
        exporter_thread.join(timeout=5)


GEO_LINES = 130  # more than upstream's page of 100
OLD_LINE = "an entry from twenty minutes ago"


def push_logs(url: str) -> int:
    """Push the lines stamped relative to now (not to import time: in the full suite this module is
    imported half an hour before it runs, which once put every line outside the 15-minute window)."""
    now_ns = time.time_ns()
    geo = {"stream": {"namespace": "hotel", "app": "geo", "pod": "geo-5d8-abc"},
           "values": [[str(now_ns - (GEO_LINES - i) * 1_000_000_000), f"served request {i}"] for i in range(GEO_LINES)]}
    old = {"stream": {"namespace": "hotel", "app": "rate", "pod": "rate-77-xyz"},
           "values": [[str(now_ns - 20 * 60 * 1_000_000_000), OLD_LINE]]}
    response = httpx.post(url + "/loki/api/v1/push", json={"streams": [geo, old]})
    assert response.status_code == 204, response.text
    return now_ns


def push_traces(url: str) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import SpanKind

    providers, tracers = [], {}
    for service in ("frontend", "geo"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
        providers.append(provider)
        tracers[service] = provider.get_tracer("conformance")
    for _ in range(25):  # more than upstream's page of 20
        with tracers["frontend"].start_as_current_span("GET /hotels", kind=SpanKind.SERVER):
            with tracers["geo"].start_as_current_span("geo.Nearby", kind=SpanKind.SERVER):
                pass
    for provider in providers:
        provider.shutdown()


async def call(url: str, tool: str, arguments: dict):
    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool(tool, arguments)


def mcp(backends, mount: str, tool: str, **arguments) -> str:
    async def scenario():
        async with serving(endpoints=backends["endpoints"], tools=plugin_tools()) as server:
            result = await call(f"{server.mcp_base_url}/{mount}/sse", tool, arguments)
            assert not result.is_error, result
            return result.content[0].text

    return asyncio.run(scenario())


def plugin_tools():
    from sregym_observability.plugin import sregym_agent_tools

    return {spec.name: spec for spec in sregym_agent_tools()}


def python_repr(text: str):
    """The value ``text`` is the Python ``str()`` of (upstream's shape), or fail."""
    value = ast.literal_eval(text)
    assert str(value) == text, "not the str() of a Python value"
    return value


def test_get_metrics_is_the_str_of_the_query_data(backends):
    backends["gauge"].labels(service="geo").set(42)
    wait_until(lambda: httpx.get(backends["prometheus"] + "/api/v1/query", params={"query": "probe_value"})
               .json()["data"]["result"][0]["value"][1] == "42", what="the scrape of 42")
    data = python_repr(mcp(backends, "prometheus", "get_metrics", query='probe_value{service="geo"}'))
    assert set(data) == {"resultType", "result"} and data["resultType"] == "vector"
    [series] = data["result"]
    assert series["metric"]["service"] == "geo" and series["metric"]["__name__"] == "probe_value"
    assert series["value"][1] == "42"
    scalar = python_repr(mcp(backends, "prometheus", "get_metrics", query="1 + 1"))
    assert scalar["resultType"] == "scalar" and scalar["result"][1] == "2"
    empty = python_repr(mcp(backends, "prometheus", "get_metrics", query="no_such_metric"))
    assert empty == {"resultType": "vector", "result": []}


def test_get_alerts_lists_only_firing_alerts_or_says_none(backends):
    backends["gauge"].labels(service="geo").set(0)
    wait_until(lambda: not httpx.get(backends["prometheus"] + "/api/v1/alerts").json()["data"]["alerts"],
               what="no alerts")
    assert mcp(backends, "prometheus", "get_alerts") == "No firing alerts"
    backends["gauge"].labels(service="geo").set(7)
    wait_until(lambda: {a["state"] for a in httpx.get(backends["prometheus"] + "/api/v1/alerts").json()["data"]["alerts"]}
               == {"firing", "pending"}, what="one firing and one pending alert")
    alerts = python_repr(mcp(backends, "prometheus", "get_alerts"))
    assert isinstance(alerts, list) and [a["labels"]["alertname"] for a in alerts] == ["ProbeFiring"]
    assert alerts[0]["state"] == "firing" and alerts[0]["annotations"] == {"summary": "probe above zero"}


LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] \[([^\]]*)\] (.*)$")


def test_get_logs_prints_upstreams_lines_a_page_of_100_over_15_minutes_by_default(backends):
    text = mcp(backends, "loki", "get_logs", query='{app="geo"}')
    lines = text.splitlines()
    assert len(lines) == 100  # upstream's limit, though 130 lines match
    now_ns = backends["pushed_at_ns"]
    pushed = {f"served request {i}": now_ns - (GEO_LINES - i) * 1_000_000_000 for i in range(GEO_LINES)}
    for line in lines:
        stamp, labels, message = LOG_LINE.match(line).groups()
        assert dict(pair.split("=", 1) for pair in labels.split(", ")) == {
            "namespace": "hotel", "app": "geo", "pod": "geo-5d8-abc"}
        expected = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(pushed[message] // 1_000_000_000))
        assert stamp == expected
    # the default window is 15 minutes: a 20-minute-old line shows only with a wider one
    assert OLD_LINE not in mcp(backends, "loki", "get_logs", query='{app="rate"}')
    wide = mcp(backends, "loki", "get_logs", query='{app="rate"}', last_n_minutes=30)
    assert LOG_LINE.match(wide).group(3) == OLD_LINE


def test_get_services_is_the_str_of_the_service_list(backends):
    services = python_repr(mcp(backends, "jaeger", "get_services"))
    assert sorted(services) == ["frontend", "geo"]
    assert services == httpx.get(backends["traces"] + "/api/services").json()["data"]


def test_get_operations_is_the_str_of_api_operations(backends):
    operations = python_repr(mcp(backends, "jaeger", "get_operations", service="geo"))
    assert operations == httpx.get(backends["traces"] + "/api/operations", params={"service": "geo"}).json()["data"]
    assert [op["name"] for op in operations] == ["geo.Nearby"] and set(operations[0]) == {"name", "spanKind"}


def test_get_traces_is_the_str_of_a_page_of_20_raw_traces(backends):
    traces = python_repr(mcp(backends, "jaeger", "get_traces", service="frontend", last_n_minutes=10))
    assert len(traces) == 20  # upstream's limit, though 25 traces match
    for trace in traces:  # raw Jaeger traces: ids, spans, processes
        assert {"traceID", "spans", "processes"} <= set(trace)
        assert {span["operationName"] for span in trace["spans"]} == {"GET /hotels", "geo.Nearby"}
    async def missing_minutes():
        async with serving(endpoints=backends["endpoints"], tools=plugin_tools()) as server:
            return await call(f"{server.mcp_base_url}/jaeger/sse", "get_traces", {"service": "frontend"})

    assert asyncio.run(missing_minutes()).is_error  # last_n_minutes is required upstream


def test_get_dependency_graph_is_the_str_of_the_whole_response(backends):
    body = python_repr(mcp(backends, "jaeger", "get_dependency_graph"))
    direct = httpx.get(backends["traces"] + "/api/dependencies",
                       params={"endTs": str(int(time.time() * 1000)), "lookback": str(30 * 60 * 1000)}).json()
    assert body == direct and "data" in body
    assert [(e["parent"], e["child"], e["callCount"]) for e in body["data"]] == [("frontend", "geo", 25)]


def test_the_projects_own_endpoints_keep_their_summaries(backends):
    async def scenario():
        async with serving(endpoints=backends["endpoints"], tools=plugin_tools()) as server:
            return (await call(server.sse_url, "get_services", {})).content[0].text

    assert asyncio.run(scenario()) == "2 services with traces: frontend, geo"
