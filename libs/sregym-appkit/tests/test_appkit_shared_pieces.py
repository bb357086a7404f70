"""The pieces the apps stopped copying (issue #39): object builders, shipped manifests, the AppSpec
conventions, the plugin hooks, the HTTP server, the service's life and the flag client."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge
from sregym_appkit import appspec, flagclient, manifests, objects, service, testing
from sregym_appkit.httpserver import HttpAnswer, ThreadedHttpServer
from sregym_appkit.plugin import apps_hook, faults_hook, problems_hook


def test_a_deployment_replaces_its_one_pod_in_place_and_scrapes_the_admin_port():
    kit = objects.AppObjects(part_of="shop", admin_port=9464)
    web = kit.deployment("web", "shop", {"name": "web", "image": "shop:1"}, "frontend")
    assert web["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert web["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9464"
    assert web["metadata"]["labels"] == {"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop",
                                         "tier": "frontend"}
    db = kit.deployment("db", "shop", {"name": "db"}, "datastore", scrape=False, priority=objects.INFRASTRUCTURE_PRIORITY)
    assert "annotations" not in db["spec"]["template"]["metadata"]
    assert db["spec"]["template"]["spec"]["priorityClassName"] == "sregym-infrastructure"
    # every object is fresh: a dict shared between two objects would be dumped as a YAML alias
    assert "&id" not in manifests.dump([web, db, kit.deployment("api", "shop", {"name": "api"}, "frontend")])


def test_the_namespaces_hide_the_workload_and_ship_the_generators_priority_class():
    docs = objects.AppObjects(part_of="shop", admin_port=1).namespaces("shop", "shop-workload")
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("Namespace", "shop"), ("Namespace", "shop-workload"), ("PriorityClass", "sregym-infrastructure")]
    assert docs[1]["metadata"]["labels"]["sregym.dev/hidden"] == "true"


def test_a_service_container_runs_its_name_and_is_probed_on_the_admin_port_with_a_config_map_mounted():
    kit = objects.AppObjects(part_of="shop", admin_port=9464)
    env = [{"name": "A", "value": "1"}]
    c = kit.service_container("cart", "shop:1", [("grpc", 7070), ("admin", 9464)], env, cpu="10m", memory="40Mi",
                              ready_period_s=3, live_delay_s=15)
    assert (c["name"], c["image"], c["args"], c["env"]) == ("cart", "shop:1", ["cart"], env)
    assert c["ports"] == [{"name": "grpc", "containerPort": 7070}, {"name": "admin", "containerPort": 9464}]
    assert c["readinessProbe"] == {"httpGet": {"path": "/readyz", "port": 9464}, "periodSeconds": 3,
                                   "timeoutSeconds": 3, "failureThreshold": 2}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9464}
    assert c["livenessProbe"]["initialDelaySeconds"] == 15
    assert c["resources"]["requests"] == {"cpu": "10m", "memory": "40Mi"}
    volumes = objects.mount_config_map(c, "flagd-config", "/etc/flagd")
    pod = kit.deployment("cart", "shop", c, "service", volumes=volumes)["spec"]["template"]["spec"]
    (mount,) = pod["containers"][0]["volumeMounts"]
    (volume,) = pod["volumes"]
    assert mount == {"name": volume["name"], "mountPath": "/etc/flagd", "readOnly": True}
    assert volume["configMap"] == {"name": "flagd-config"}


def test_the_load_generator_runs_hidden_at_infrastructure_priority_with_its_settings_first():
    kit = objects.AppObjects(part_of="shop", admin_port=9464)
    service, deployment = kit.load_generator("shop-workload", "shop:1", "http://web.shop:80", rate=3, timeout_s=7,
                                             cpu="20m", memory="48Mi", port=8090,
                                             env=[{"name": "FLAGD_HOST", "value": "flagd.shop"}])
    assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"] == "shop-workload"
    assert service["spec"]["ports"] == [{"name": "http", "port": 8090, "targetPort": 8090}]
    assert deployment["metadata"]["labels"]["tier"] == "workload"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == objects.INFRASTRUCTURE_PRIORITY
    (container,) = pod["containers"]
    assert container["args"] == ["load-generator"] and container["image"] == "shop:1"
    assert [(e["name"], e["value"]) for e in container["env"]] == [
        ("WORKLOAD_TARGET", "http://web.shop:80"), ("WORKLOAD_RATE", "3"), ("WORKLOAD_PORT", "8090"),
        ("WORKLOAD_TIMEOUT_S", "7"), ("FLAGD_HOST", "flagd.shop")]
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 8090}
    assert container["resources"] == {"requests": {"cpu": "20m", "memory": "48Mi"}, "limits": {"memory": "256Mi"}}
    # the render step sets the rate on the generator it builds
    manifests.render_images([deployment], "shop", {"image_tag": "2", "otlp_endpoint": "", "workload_rate": 9})
    assert {"name": "WORKLOAD_RATE", "value": "9"} in container["env"]
    quiet = kit.load_generator("w", "shop:1", "http://web", rate=1, timeout_s=5, cpu="20m", memory="48Mi",
                               scrape=False, grace_s=5, strategy=objects.SURGE_FIRST)[1]
    assert "annotations" not in quiet["spec"]["template"]["metadata"]
    assert quiet["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5
    assert quiet["spec"]["strategy"] == objects.SURGE_FIRST


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "kitapp") -> Path:
    pkg = tmp_path / name
    (pkg / "manifests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    return pkg


def test_shipped_manifests_are_written_by_file_in_apply_order_and_rendered(tmp_path, monkeypatch):
    pkg = _package(tmp_path, monkeypatch)
    kit = objects.AppObjects(part_of="kitapp", admin_port=9)
    container = {"name": "web", "image": "kit/app:1.0", "env": [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": ""}]}
    loadgen = {"name": "load-generator", "image": "kit/app:1.0", "env": [{"name": "WORKLOAD_RATE", "value": "5"}]}

    def build():
        return [*kit.namespaces("kitapp", "kitapp-workload"),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf", "namespace": "kitapp"}},
                kit.deployment("web", "kitapp", container, "frontend"),
                manifests.ingress("kitapp", "web", "http", kit.labels("web", "frontend")),
                kit.deployment("load-generator", "kitapp-workload", loadgen, "workload")]

    shipped = manifests.ShippedManifests("kitapp", "kit/app", manifests.default_params("1.0", workload_rate=5),
                                         build=build, workload_namespace="kitapp-workload",
                                         files_of_app=lambda d: "10-config.yaml" if d["kind"] == "ConfigMap" else None)
    shipped.write()
    assert [p.name for p in shipped.files()] == ["00-namespaces.yaml", "10-config.yaml", "50-services.yaml",
                                                 "55-ingress.yaml", "60-load-generator.yaml"]
    assert (pkg / "manifests" / "50-services.yaml").read_text().startswith(
        "# Generated by `python -m kitapp.manifests --write`.")
    testing.assert_shipped_files_are_built(shipped, tmp_path / "fresh")
    (pkg / "manifests" / "10-config.yaml").write_text("# edited by hand\n")
    with pytest.raises(AssertionError, match="10-config.yaml is stale: python -m kitapp.manifests --write"):
        testing.assert_shipped_files_are_built(shipped, tmp_path / "again")
    shipped.write()
    assert shipped.render() == shipped.documents()  # the default parameters are what the files ship
    docs = shipped.render({"image_tag": "2.0", "otlp_endpoint": "http://otel:4318", "workload_rate": 9})
    web = next(d for d in docs if d["metadata"]["name"] == "web")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "kit/app:2.0"
    assert web["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel:4318"}]
    assert "value: '9'" in shipped.render_yaml({"workload_rate": 9})
    known = "known: image_tag, otlp_endpoint, workload_rate"
    with pytest.raises(ValueError, match=f"unknown manifest parameters: replicas; {known}"):
        shipped.render({"replicas": 2})


def test_the_service_level_needs_enough_requests_all_right_and_every_kind_succeeding():
    def stats(count=100, rate=1.0, wrong=0, failing=()):
        return {"count": count, "success_rate": rate, "content_errors": wrong,
                "by_endpoint": {e: {"success": 0 if e in failing else 5} for e in ("home", "cart")}}

    assert testing.every_kind_served(stats(), ("home", "cart"))
    assert not testing.every_kind_served(stats(count=59), ("home", "cart"))
    assert testing.every_kind_served(stats(count=20), ("home", "cart"), min_count=20)
    assert not testing.every_kind_served(stats(rate=0.98), ("home", "cart"))
    assert not testing.every_kind_served(stats(wrong=1), ("home", "cart"))
    assert not testing.every_kind_served(stats(failing=("cart",)), ("home", "cart"))  # seen, never succeeding
    assert not testing.every_kind_served(stats(), ("home", "cart", "checkout"))  # never seen


def test_render_replicated_sets_replicas_images_tracing_and_the_workload():
    docs = [{"kind": "Deployment", "metadata": {"name": "nginx"}, "spec": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "nginx", "image": "nginx:1"},
                               {"name": "gateway", "image": "kit/app:1.0", "env": []}]}}}},
            {"kind": "Deployment", "metadata": {"name": "workload-generator"}, "spec": {"template": {"spec": {
                "containers": [{"name": "workload-generator", "image": "kit/app:1.0", "env": []}]}}}}]
    params = {"replicas": {"nginx": 3}, "image_tag": "1.1", "otlp_endpoint": "http://o:4318", "workload_rate": 7,
              "workload_target": "http://t:1"}
    out = manifests.render_replicated(docs, params, image_repo="kit/app", services=("nginx",),
                                      traced_containers=("gateway",))
    nginx, generator = (d["spec"] for d in out)
    assert nginx["replicas"] == 3
    assert nginx["template"]["spec"]["containers"][0]["image"] == "nginx:1"  # not the app's image: untouched
    assert nginx["template"]["spec"]["containers"][1] == {
        "name": "gateway", "image": "kit/app:1.1", "env": [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://o:4318"}]}
    assert generator["template"]["spec"]["containers"][0]["env"] == [
        {"name": "WORKLOAD_RATE", "value": "7"}, {"name": "WORKLOAD_TARGET", "value": "http://t:1"}]


def test_the_appspec_conventions(tmp_path, monkeypatch):
    pkg = _package(tmp_path, monkeypatch, "kitspec")
    (pkg / "problems").mkdir()
    (pkg / "description.md").write_text("Kit Spec is an app\nthat sells kits.\n")
    (pkg / "app.py").write_text(
        "from sregym_appkit import appspec as kit\n"
        "NAME, NAMESPACE, DISPLAY_NAME = 'kit-spec', 'kit-spec', 'Kit Spec'\n"
        "def components():\n"
        "    return (kit.postgres_component('db'), kit.memcached_component('cache'))\n"
        "def local_images():\n"
        "    return kit.service_images('kit/spec', __package__, 'web', 'Kit Spec services')\n")
    from kitspec import app  # type: ignore[import-not-found]

    spec = appspec.app_record("kitspec.app", summary="kits", params={"image_tag": "1.0"}, deploy=None,
                              deploy_timeout=60.0, workload=appspec.workload_spec("kit-workload", "workload-generator"))
    # what agents are told: description.md's paragraph, its lines joined (the app module repeats none of it)
    assert spec.description == "Kit Spec is an app that sells kits."
    assert spec.hidden_namespaces == ("kit-workload",) and spec.problems_dir == pkg / "problems"
    assert spec.workload.query_path == "/stats" and spec.workload.control_path == "/control"
    assert [i.image for i in spec.images] == ["kit/spec:1.0", "kit/spec:1.0.0", "kit/spec:latest"]
    assert spec.images[0].argv[1:] == ("-m", "kitspec.serve") and spec.images[0].cmd == ("web",)
    # the images' processes search where this one found the package: nowhere special here, but
    # through PYTHONPATH (an app installed with pip --target) the pods need that entry too
    assert spec.images[0].env == {"PYTHONUNBUFFERED": "1"}
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(("/nonexistent", str(tmp_path))))
    assert app.local_images()[0].env == {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tmp_path.resolve())}
    db = spec.components[0]
    assert (db.kind, db.pvcs, db.container_name, db.service_name) == ("StatefulSet", ("db-data",), "postgres", "db")
    assert appspec.knobs(("flagd", True), ("ingress", False), ("load-entrypoint", True)) == ("flagd", "load-entrypoint")


def test_the_plugin_hooks_register_the_app_its_problems_and_its_faults(tmp_path, monkeypatch):
    pkg = _package(tmp_path, monkeypatch, "kithooks")
    (pkg / "problems").mkdir()
    calls = []
    assert apps_hook(lambda: "the spec")() == ["the spec"]
    assert list(problems_hook("kithooks")()) == []
    faults = faults_hook(lambda: calls.append(1) or iter(["a", "b"]))
    assert calls == []  # built when the host asks, not at import
    assert faults() == ["a", "b"]
    for hook in (apps_hook(lambda: None), problems_hook("kithooks"), faults):
        assert hasattr(hook, "sregym_impl"), hook  # pluggy's marker: the host finds it by its name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_threaded_http_server_answers_and_reports_each_answer():
    seen = []
    port = _free_port()
    server = ThreadedHttpServer(
        "kit", port, lambda r: HttpAnswer(201, json.dumps({"path": r.path, "q": r.query, "body": r.body.decode()}).encode(),
                                          "application/json", "route-" + r.path),
        lambda answer, seconds: seen.append((answer.route, answer.status, seconds >= 0)))
    server.start()
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/a?x=1", data=b"hi", method="POST")
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert resp.status == 201 and resp.headers["Content-Type"] == "application/json"
            assert json.loads(resp.read()) == {"path": "/a", "q": {"x": "1"}, "body": "hi"}
    finally:
        server.stop()
    assert seen == [("route-/a", 201, True)]


def test_a_service_that_cannot_listen_exits_1_with_one_log_line(capsys):
    def build():
        raise OSError("address in use")

    assert service.serve_until_stopped(threading.Event(), build, started={}) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(line["event"], line["error"]) for line in lines] == [("listen_failed", "address in use")]


def test_a_service_runs_until_stopped_then_stops_its_servers_in_reverse():
    events: list[str] = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def start(self):
            events.append(f"start {self.name}")

        def stop(self):
            events.append(f"stop {self.name}")

    stop = threading.Event()
    stop.set()
    assert service.serve_until_stopped(stop, lambda: (Fake("server"), Fake("admin")), started={"port": 1},
                                       after_start=lambda: events.append("after")) == 0
    assert events == ["start admin", "start server", "after", "stop server", "stop admin"]


def test_the_flag_client_makes_each_evaluation_visible_and_logs_a_change_once(capsys):
    counter = Counter("kit_flag_evaluations_total", "evaluations", ["service", "flag", "variant"],
                      registry=CollectorRegistry())
    flags = flagclient.FlagClient(counter)
    assert flags.ask("boolean", "adFailure", False) == (False, "default")  # nothing configured: the default
    flags.service = "ad"
    for value, variant in ((False, "off"), (True, "on"), (True, "on")):
        flags.record("adFailure", value, variant, False)
    assert counter.labels("ad", "adFailure", "on")._value.get() == 2
    changes = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "feature_flag_changed" in line]
    assert [(c["value"], c["previous"]) for c in changes] == [(True, False)]



def test_a_service_begins_with_its_tracing_build_info_and_flags_and_stops_on_sigterm():
    import os
    import signal

    calls: list[str] = []
    info = Gauge("kit_service_info", "build", ["service", "version"], registry=CollectorRegistry())
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        stop = service.begin("cart", "1.0", setup_tracing=lambda s: calls.append(f"tracing {s}"), build_info=info,
                             configure_flags=lambda s: calls.append(f"flags {s}"))
        assert calls == ["tracing cart", "flags cart"]
        assert info.labels("cart", "1.0")._value.get() == 1
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_a_child_process_is_stopped_with_sigterm_and_killed_when_it_ignores_it():
    polite = subprocess.Popen(["sleep", "30"])
    service.stop_process(polite)
    assert polite.returncode == -signal.SIGTERM
    service.stop_process(polite)  # already gone: nothing to do
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
        service.stop_process(stubborn, grace_s=0.3)
        assert stubborn.returncode == -signal.SIGKILL
    finally:
        stubborn.kill()
        stubborn.wait()
        stubborn.stdout.close()


def test_an_apps_live_fault_contract_names_its_app_plugin_probes_and_burst(tmp_path, monkeypatch):
    """The contract's fast check runs on the class the kit fills in: the app from its ``app`` module's
    NAME, the faults from the plugin, the probes' request function and frontend, the small burst."""
    package = tmp_path / "kitted_app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text('NAME = "kitted"\n')
    (package / "plugin.py").write_text("from types import SimpleNamespace\n\n"
                                       "def sregym_faults():\n"
                                       "    return [SimpleNamespace(name='flag-on'), SimpleNamespace(name='typo')]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from importlib import import_module

    plugin = import_module("kitted_app.plugin")

    def request_for(kind, rng):
        return "GET", f"/{kind}"

    base = testing.live_fault_contract(plugin, request_for, ("web", 8080))
    assert (base.app_name, base.frontend, base.burst, base.plugin) == ("kitted", ("web", 8080), (20, 4), plugin)
    contract = type("Contract", (base,), {"cases": {"flag-on": object()}, "not_here": {"typo": "covered by a test"}})()
    assert contract._request_for()("home", None) == ("GET", "/home")
    contract.test_every_fault_has_a_live_case()
    missing = type("Missing", (base,), {"cases": {"flag-on": object()}})()
    with pytest.raises(AssertionError, match="typo"):
        missing.test_every_fault_has_a_live_case()


def test_a_lazy_command_imports_its_module_only_when_it_runs(tmp_path, monkeypatch):
    from sregym_appkit.cli import dispatch, lazy

    (tmp_path / "lazily_loaded.py").write_text("def main(rest):\n    return len(rest)\n\n"
                                               "def other(rest):\n    return 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    commands = {"count": lazy("lazily_loaded"), "seven": lazy("lazily_loaded", "other")}
    assert "lazily_loaded" not in sys.modules
    assert dispatch(["count", "a", "b"], usage="u", commands=commands, services=(), run_service=lambda a: 2) == 2
    assert "lazily_loaded" in sys.modules
    assert dispatch(["seven"], usage="u", commands=commands, services=(), run_service=lambda a: 2) == 7
    monkeypatch.delitem(sys.modules, "lazily_loaded")


def test_a_refused_migration_exits_1_with_the_first_line_of_the_databases_error(capsys):
    psycopg = pytest.importorskip("psycopg")
    from sregym_appkit.postgres import run_migration

    ran = []
    assert run_migration(lambda: ran.append(1), peer="users-postgres", addr="users-postgres:5432") == 0 and ran

    def refused():
        raise psycopg.OperationalError('connection failed: FATAL:  role "app" does not exist\nDETAIL: ...')

    def silent():
        raise psycopg.errors.InsufficientPrivilege()

    capsys.readouterr()
    assert run_migration(refused, peer="users-postgres", addr="users-postgres:5432") == 1
    assert run_migration(silent, peer="users-postgres", addr="users-postgres:5432") == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(line["event"], line["peer"], line["addr"], line["error"]) for line in lines] == [
        ("migrate_failed", "users-postgres", "users-postgres:5432", 'connection failed: FATAL:  role "app" does not exist'),
        ("migrate_failed", "users-postgres", "users-postgres:5432", "InsufficientPrivilege")]


def test_a_json_peer_tells_an_answer_a_refusal_and_no_answer_apart():
    import http.server

    from sregym_appkit.httpclient import JsonPeer

    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            seen.append({k.lower(): v for k, v in self.headers.items()})
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, out = (200, body) if self.path == "/echo" else (404, b'{"msg": "' + b"x" * 500 + b'"}')
            self.send_response(status)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    class Refused(Exception):
        pass

    class Peer(JsonPeer):
        detail_chars = 20

        def __init__(self, addr):
            super().__init__("front", "back", addr, 2.0)
            self.calls = []

        def tracer(self):
            from opentelemetry import trace

            return trace.get_tracer("test")

        def headers(self):
            return {**super().headers(), "X-User": "u1"}

        def refused(self, path, status, detail):
            return Refused(f"{status} {detail}")

        def unreachable(self, path, exc):
            return Refused(f"none: {type(exc).__name__}")

        def record(self, path, status, error, seconds):
            self.calls.append((path, status, type(error).__name__ if error else None))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        peer = Peer(f"127.0.0.1:{server.server_address[1]}")
        assert peer.call("POST", "/echo", {"a": [1, 2]}) == {"a": [1, 2]}
        assert seen[0]["content-type"] == "application/json" and seen[0]["x-user"] == "u1"
        with pytest.raises(Refused, match=r'^404 \{"msg": "x{11}$'):
            peer.call("POST", "/missing?q=1", {})
    finally:
        server.shutdown()
        server.server_close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(Refused, match="^none: (ConnectionRefusedError|URLError)$"):
        Peer(f"127.0.0.1:{closed}").call("GET", "/x")
    assert peer.calls == [("/echo", 200, None), ("/missing?q=1", 404, "HTTPError")]


def test_a_json_grpc_server_answers_records_every_call_and_reports_serving():
    grpc = pytest.importorskip("grpc")
    from concurrent import futures

    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from opentelemetry import trace
    from sregym_appkit.jsongrpc import JsonGrpcServer, RpcError, decode, encode

    events: list[tuple] = []

    def lookup(request):
        if request.get("id") != 1:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"no item {request.get('id')}")
        return {"id": 1, "name": "telescope"}

    class Server(JsonGrpcServer):
        def tracer(self):
            return trace.get_tracer("test")

        def enter(self, context):
            events.append(("enter",))
            return "held"

        def leave(self, entered):
            events.append(("leave", entered))

        def admit(self, span):
            events.append(("admit",))

        def record(self, method, code, seconds):
            events.append(("record", method, code))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = Server("shop.Catalog", {"Get": lookup}, f"127.0.0.1:{port}",
                    executor=futures.ThreadPoolExecutor(max_workers=2))
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        get = channel.unary_unary("/shop.Catalog/Get", request_serializer=encode, response_deserializer=decode)
        assert get({"id": 1}, timeout=5) == {"id": 1, "name": "telescope"}
        with pytest.raises(grpc.RpcError) as refused:
            get({"id": 2}, timeout=5)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND and refused.value.details() == "no item 2"
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        channel.close()
        server.server.stop(0)
    assert events == [("enter",), ("admit",), ("leave", "held"), ("record", "Get", "OK"),
                      ("enter",), ("admit",), ("leave", "held"), ("record", "Get", "NOT_FOUND")]
