"""sregym_appkit's service runtime: logs, stats, admin port, tracing propagation, manifest helpers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from sregym_appkit import logs, manifests, tracing
from sregym_appkit.admin import AdminServer
from sregym_appkit.stats import Record, RequestLog, summarize


def _lines(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


def test_logs_write_one_json_object_per_line_with_level_filter(capsys):
    logs.configure("svc-a", "warning")
    logs.info("dropped_below_level", x=1)
    logs.error("peer_unreachable", peer="db", addr="127.0.0.1:5432", error="refused")
    logs.warning("odd", value=object())  # not JSON-serialisable: written with str(), never raises
    lines = _lines(capsys)
    assert [line["event"] for line in lines] == ["peer_unreachable", "odd"]
    assert lines[0]["service"] == "svc-a" and lines[0]["level"] == "error" and lines[0]["peer"] == "db"
    assert lines[0]["ts"].endswith("Z") and "trace_id" not in lines[0]
    logs.configure("svc-a", "info")


def test_logs_inside_a_span_carry_its_trace_and_span_ids(capsys):
    logs.configure("svc-b")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("op") as span:
        logs.info("inside")
    logs.info("outside")
    inside, outside = _lines(capsys)
    ctx = span.get_span_context()
    assert inside["trace_id"] == format(ctx.trace_id, "032x") and inside["span_id"] == format(ctx.span_id, "016x")
    assert "trace_id" not in outside


def test_trace_context_round_trips_through_any_carrier():
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("client") as span:
        carried = tracing.carrier()
    assert carried["traceparent"].split("-")[1] == format(span.get_span_context().trace_id, "032x")
    from opentelemetry import trace

    for headers in (carried, {k.title(): v for k, v in carried.items()}, list(carried.items())):
        parent = trace.get_current_span(tracing.extract(headers)).get_span_context()
        assert parent.trace_id == span.get_span_context().trace_id
    assert not trace.get_current_span(tracing.extract(None)).get_span_context().is_valid


def test_tracing_stays_off_without_an_endpoint(monkeypatch, capsys):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert tracing.setup_tracing("svc", namespace="ns") is False
    assert _lines(capsys)[-1]["event"] == "tracing_disabled"


def test_request_log_windows_and_summaries():
    log = RequestLog(capacity=3)
    for i, (status, ok, wrong) in enumerate([(200, True, ""), (503, False, ""), (200, False, "stale"),
                                             (0, False, "")]):
        log.add(Record(t=100.0 + i, endpoint="a" if i % 2 else "b", status=status, latency_ms=10.0 * (i + 1), ok=ok,
                       error="timeout" if status == 0 else "", content_error=wrong))
    assert log.total == 4 and len(log.window(10, now=104.0)) == 3  # the ring keeps the last 3
    assert [r.status for r in log.window(1.5, now=103.0)] == [200, 0]
    s = summarize(log.window(10, now=104.0))
    assert s["count"] == 3 and s["success"] == 0 and s["success_rate"] == 0.0
    assert s["error_kinds"] == {"503": 1, "timeout": 1} and s["content_error_kinds"] == {"stale": 1}
    assert s["p50_ms"] == 30.0 and summarize([])["success_rate"] is None


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_admin_server_serves_health_readiness_and_metrics():
    state = {"ready": False}
    admin = AdminServer("127.0.0.1", 0, lambda: {"ready": state["ready"], "db": "down"})
    admin.start()
    try:
        base = f"http://127.0.0.1:{admin.port}"
        assert _get(base + "/healthz") == (200, b'{"status": "ok"}')
        code, body = _get(base + "/readyz")
        assert code == 503 and json.loads(body) == {"ready": False, "db": "down"}
        state["ready"] = True
        assert _get(base + "/readyz")[0] == 200
        code, body = _get(base + "/metrics")
        assert code == 200 and b"# TYPE python_info gauge" in body
        assert _get(base + "/nope")[0] == 404
    finally:
        admin.stop()


def test_manifest_helpers(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown manifest parameters: bogus; known: a, b"):
        manifests.merge_params({"bogus": 1}, {"a": 1, "b": 2})
    assert manifests.merge_params({"a": 5}, {"a": 1, "b": 2}) == {"a": 5, "b": 2}
    assert manifests.replicas_per_service(2, ("x", "y")) == {"x": 2, "y": 2}
    assert manifests.replicas_per_service({"x": "3"}, ("x", "y")) == {"x": 3}
    with pytest.raises(ValueError, match="replicas must be >= 0"):
        manifests.replicas_per_service(-1, ("x",))
    doc = {"kind": "Deployment", "spec": {"template": {"spec": {
        "initContainers": [{"name": "init"}],
        "containers": [{"name": "app", "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}]}}}}
    assert [c["name"] for c in manifests.containers(doc)] == ["init", "app"]
    app = doc["spec"]["template"]["spec"]["containers"][0]
    manifests.set_env(app, "K", "v")
    manifests.set_env(app, "NEW", "1")
    assert app["env"] == [{"name": "K", "value": "v"}, {"name": "NEW", "value": "1"}]
    (tmp_path / "b.yaml").write_text("kind: B\n---\n")
    (tmp_path / "a.yaml").write_text("kind: A\n")
    assert [d["kind"] for d in manifests.load_documents(tuple(sorted(tmp_path.glob("*.yaml"))))] == ["A", "B"]
    assert manifests.dump([{"kind": "A"}]) == "kind: A\n"


def test_cli_dispatch_routes_commands_and_services(capsys):
    from sregym_appkit.cli import dispatch

    calls: list[tuple[str, list[str]]] = []

    def run(argv: list[str] | None) -> int:
        return dispatch(argv, usage="usage: serve <service>", services=("web", "db"),
                        commands={"workload": lambda rest: calls.append(("workload", rest)) or 0},
                        run_service=lambda args: calls.append(("service", args)) or 0)

    assert run(["workload", "--rate", "3"]) == 0 and run(["web", "-x"]) == 0
    assert calls == [("workload", ["--rate", "3"]), ("service", ["web", "-x"])]
    assert run(["--help"]) == 0 and run([]) == 2
    assert run(["nosuch"]) == 2 and "unknown service 'nosuch'" in capsys.readouterr().err


def test_grouped_manifests_round_trip_and_common_params_apply(tmp_path):
    workload = {"kind": "Deployment", "metadata": {"name": "load-generator", "namespace": "w"},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "load-generator", "image": "sregym/shop:1.0", "env": [{"name": "WORKLOAD_RATE", "value": "5"}]}]}}}}
    service = {"kind": "Deployment", "metadata": {"name": "cart", "namespace": "shop"},
               "spec": {"template": {"spec": {"containers": [
                   {"name": "cart", "image": "sregym/shop:1.0",
                    "env": [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://old:4318"}]},
                   {"name": "cache", "image": "redis:7.0"}]}}}}
    namespace = {"kind": "Namespace", "metadata": {"name": "shop"}}
    docs = [namespace, service, workload]
    manifests.write_grouped(docs, tmp_path, lambda d: "00-ns.yaml" if d["kind"] == "Namespace" else "50-apps.yaml",
                            "shop.manifests")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["00-ns.yaml", "50-apps.yaml"]
    assert (tmp_path / "50-apps.yaml").read_text().startswith("# Generated by `python -m shop.manifests --write`.\n")
    loaded = manifests.load_documents(tuple(sorted(tmp_path.iterdir())))
    assert loaded == docs
    params = manifests.merge_params({"image_tag": "2.0", "workload_rate": 9},
                                    {"image_tag": "1.0", "otlp_endpoint": "http://otel:4318", "workload_rate": 5})
    out = manifests.render_images(loaded, "sregym/shop", params)
    cart, cache = out[1]["spec"]["template"]["spec"]["containers"]
    assert cart["image"] == "sregym/shop:2.0" and cache["image"] == "redis:7.0"  # other images untouched
    assert cart["env"] == [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel:4318"}]
    generator = out[2]["spec"]["template"]["spec"]["containers"][0]
    assert generator["image"] == "sregym/shop:2.0" and generator["env"] == [{"name": "WORKLOAD_RATE", "value": "9"}]
