"""The pack's sregym_check_compatibility: missing-secret is refused where the pod template reads no Secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sregym_fault_k8s.plugin
import yaml
from sregym_fault_k8s.compatibility import check_compatibility
from sregym_fault_k8s.objects import _secret_name

from sregym_core import hookimpl
from sregym_core.errors import ConfigError, PermanentFaultError
from sregym_core.problems import compose_adhoc
from sregym_core.types import AppSpec, ComponentSpec, Incompatible

SREGYM = str(Path(sys.executable).parent / "sregym")
NO_SECRET = "web reads no Secret (no secretKeyRef or secretRef in its pod template)"


def _deployment(name: str, env: list[dict], namespace: str = "shop") -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": name, "image": f"{name}:1", "env": env}]}}}}


def _app(tmp_path: Path, *docs: dict, extra: tuple[Path, ...] = ()) -> AppSpec:
    manifest = tmp_path / "50-services.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    return AppSpec(name="shop", namespace="shop", manifests=(manifest, *extra), components=(
        ComponentSpec(name="web", roles=("frontend", "service:http"), ports=(8080,), env=("API_ADDR",)),
        ComponentSpec(name="api", roles=("service:grpc",), ports=(9000,), env=("DB_PASSWORD",)),
        ComponentSpec(name="db", kind="StatefulSet", roles=("db:postgres",), ports=(5432,), env=("POSTGRES_PASSWORD",)),
    ))


def _faults() -> dict:
    return {f.name: f for f in sregym_fault_k8s.plugin.sregym_faults()}


def _shop(tmp_path: Path) -> AppSpec:
    return _app(tmp_path,
                _deployment("web", [{"name": "API_ADDR", "value": "api:9000"}]),
                _deployment("api", [{"name": "DB_PASSWORD",
                                     "valueFrom": {"secretKeyRef": {"name": "api-db", "key": "password"}}}]))


def test_missing_secret_is_refused_where_the_pod_template_reads_no_secret(tmp_path):
    app, fault = _shop(tmp_path), _faults()["missing-secret"]
    web, api = app.component("web"), app.component("api")
    assert fault.selector.matches(web) and fault.selector.matches(api)  # the inventory cannot tell them apart
    refused = sregym_fault_k8s.plugin.sregym_check_compatibility(fault=fault, component=web, app=app)
    assert isinstance(refused, Incompatible) and not refused and refused.reason == NO_SECRET
    assert sregym_fault_k8s.plugin.sregym_check_compatibility(fault=fault, component=api, app=app) is None


def test_an_env_from_secret_ref_counts_as_reading_a_secret(tmp_path):
    web = _deployment("web", [])
    web["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "web-keys"}}]
    app = _app(tmp_path, web)
    assert check_compatibility(_faults()["missing-secret"], app.component("web"), app) is None


def test_it_defers_on_every_pair_it_knows_nothing_about(tmp_path):
    app, faults = _shop(tmp_path), _faults()
    web, db = app.component("web"), app.component("db")
    assert check_compatibility(faults["wrong-image"], web, app) is None  # not missing-secret
    assert check_compatibility(faults["missing-secret"], db, app) is None  # the selector refuses it, and says why

    templated, unread = tmp_path / "templated", tmp_path / "unread"
    templated.mkdir()
    unread.mkdir()
    (templated / "60-web.yaml").write_text("kind: Deployment\nmetadata: {name: {{ name }}\n")
    unknown = _app(templated, _deployment("api", []), extra=(templated / "60-web.yaml", tmp_path / "missing.yaml"))
    # web is in no manifest that parses (a template, a missing file): unknown, so the selector decides
    assert check_compatibility(faults["missing-secret"], unknown.component("web"), unknown) is None
    elsewhere = _app(unread, _deployment("web", [], namespace="shop-workload"))
    assert check_compatibility(faults["missing-secret"], elsewhere.component("web"), elsewhere) is None


def test_manifest_directories_are_read(tmp_path):
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "web.yaml").write_text(yaml.safe_dump(_deployment("web", [])))
    app = AppSpec(name="shop", namespace="shop", manifests=(folder,),
                  components=(ComponentSpec(name="web", roles=("frontend",), ports=(8080,), env=("API_ADDR",)),))
    assert check_compatibility(_faults()["missing-secret"], app.component("web"), app) == Incompatible(NO_SECRET)


def test_injection_applies_the_same_predicate_to_the_live_object(tmp_path):
    class Ctx:
        def __init__(self, obj):
            self.obj, self.namespace = obj, "shop"

        def kubectl(self, *args, **kwargs):
            return json.dumps(self.obj)

    app = _shop(tmp_path)
    target = type("T", (), {"component": app.component("web"), "app": app})()
    with pytest.raises(PermanentFaultError, match="web reads no Secret"):
        _secret_name(Ctx(_deployment("web", [{"name": "API_ADDR", "value": "api:9000"}])), target)


def test_a_problem_naming_a_refused_pair_fails_validation_with_the_reason(plugin_host, register_plugin, tmp_path):
    app = _shop(tmp_path)

    class Apps:
        @hookimpl
        def sregym_apps(self):
            return [app]

    register_plugin(sregym_fault_k8s.plugin, name="fault-k8s")
    register_plugin(Apps())
    with pytest.raises(ConfigError) as info:
        compose_adhoc(plugin_host, app="shop", fault="missing-secret", target="web")
    assert list(info.value.errors) == [("$.faults[0].target", f"fault 'missing-secret' cannot target 'web': {NO_SECRET}")]
    assert compose_adhoc(plugin_host, app="shop", fault="missing-secret", target="api").faults[0].target == "api"


@pytest.mark.skipif(not os.path.exists(SREGYM), reason="the sregym console script is not installed")
def test_list_faults_all_shows_the_refused_pairs_through_the_cli():
    """End to end, as installed: the pack's hook (loaded through its entry point) refuses missing-secret on
    Hotel Reservation's frontend and search, whose pods read no Secret, and says why."""
    pytest.importorskip("sregym_app_hotel_reservation")
    env = {**os.environ, "SREGYM_LOAD_PLUGINS": "fault-k8s,app-hotel-reservation"}
    listed = subprocess.run([SREGYM, "list-faults", "--json", "--all"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    pairs = {(p["app"], p["fault"], p["component"]): p for p in json.loads(listed.stdout)["pairs"]}
    for component in ("frontend", "search"):
        refused = pairs[("hotel-reservation", "missing-secret", component)]
        assert not refused["viable"], refused
        assert refused["reason"] == f"{component} reads no Secret (no secretKeyRef or secretRef in its pod template)"
    assert pairs[("hotel-reservation", "missing-secret", "profile")]["viable"]  # reads the profile-db Secret
    assert pairs[("hotel-reservation", "missing-secret", "postgres-geo")]["reason"].startswith("needs ")

    viable = subprocess.run([SREGYM, "list-faults", "--json"], capture_output=True, text=True, env=env, timeout=120)
    listed_pairs = {(p["fault"], p["component"]) for p in json.loads(viable.stdout)["pairs"]}
    secret_targets = {c for f, c in listed_pairs if f == "missing-secret"}
    assert secret_targets == {"geo", "rate", "profile", "recommendation", "user", "reservation"}
