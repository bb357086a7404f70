"""The manifests: valid Kubernetes (schema), internally consistent, and in step with the code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest
import yaml
from sregym_app_hotel_reservation import config
from sregym_app_hotel_reservation.manifests import load_documents, render, render_yaml

K8S_VERSION = kubernetes_validate.latest_version()


def pod_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            yield doc, doc["spec"]["template"]["spec"]


@pytest.mark.parametrize("params", [{}, {"replicas": 2, "image_tag": "1.0-buggy", "otlp_endpoint": "http://otel:4318"}])
def test_every_document_passes_strict_schema_validation(params):
    docs = render(params)
    assert len(docs) > 40
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_schema_validation_catches_a_broken_manifest():
    doc = next(d for d in render() if d["kind"] == "Deployment")
    doc["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "not-a-port"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_references_resolve():
    docs = render()
    by_kind: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], {})[(doc["metadata"].get("namespace", ""), doc["metadata"]["name"])] = doc
    for workload, pod in pod_specs(docs):
        ns = workload["metadata"]["namespace"]
        template_labels = workload["spec"]["template"]["metadata"]["labels"]
        assert workload["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                assert (ns, volume["configMap"]["name"]) in by_kind["ConfigMap"]
            if "persistentVolumeClaim" in volume:
                assert (ns, volume["persistentVolumeClaim"]["claimName"]) in by_kind["PersistentVolumeClaim"]
        for container in pod.get("initContainers", []) + pod["containers"]:
            assert container.get("resources", {}).get("limits", {}).get("memory"), container["name"]
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret = by_kind["Secret"][(ns, ref["name"])]
                    assert ref["key"] in secret["stringData"], (ref, workload["metadata"]["name"])
    for (ns, name), svc in by_kind["Service"].items():
        selected = [w for w, _ in pod_specs(docs) if w["metadata"]["namespace"] == ns
                    and svc["spec"]["selector"].items() <= w["spec"]["template"]["metadata"]["labels"].items()]
        assert len(selected) == 1, f"Service {name} selects {len(selected)} workloads"
        ports = {p["containerPort"] for c in selected[0]["spec"]["template"]["spec"]["containers"] for p in c["ports"]}
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= ports, name


def test_config_maps_match_the_code_and_the_services():
    docs = render()
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for doc in docs:
        if doc["kind"] != "ConfigMap" or doc["metadata"]["name"] == "postgres-init":
            continue
        service = doc["metadata"]["name"].removesuffix("-config")
        data = yaml.safe_load(doc["data"]["config.yaml"])
        cfg = config.load(service, data, {"DB_USER": "u", "DB_PASSWORD": "p"})
        assert cfg.host == "0.0.0.0"
        for peer, addr in cfg.peers.items():
            host, port = addr.split(":")
            assert any(p["port"] == int(port) for p in services[host]["spec"]["ports"]), (service, peer)
        if cfg.database:
            assert cfg.database.host in services and cfg.database.port == 5432
        if cfg.cache:
            assert cfg.cache.host in services


def test_probes_target_declared_ports():
    for workload, pod in pod_specs(render()):
        for container in pod["containers"]:
            ports = {p["containerPort"] for p in container["ports"]}
            for probe in ("readinessProbe", "livenessProbe"):
                spec = container[probe]
                port = (spec.get("httpGet") or spec.get("tcpSocket"))["port"]
                assert port in ports, (workload["metadata"]["name"], probe)


def test_render_parameters():
    docs = render({"replicas": {"frontend": 3}, "image_tag": "2.0", "otlp_endpoint": "http://collector:4318",
                   "workload_rate": 25})
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    assert deployments["frontend"]["spec"]["replicas"] == 3
    assert deployments["geo"]["spec"]["replicas"] == 1
    images = {c["image"] for _, pod in pod_specs(docs) for c in pod.get("initContainers", []) + pod["containers"]}
    assert "sregym/hotel-reservation:2.0" in images and "sregym/hotel-reservation:1.0" not in images
    assert {"postgres:15", "memcached:1.6"} <= images
    geo_env = {e["name"]: e.get("value") for e in deployments["geo"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert geo_env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318"
    wl_env = {e["name"]: e.get("value") for e in
              deployments["workload-generator"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert wl_env["WORKLOAD_RATE"] == "25"
    assert load_documents() != docs, "render must not mutate the loaded files"
    with pytest.raises(ValueError, match="unknown manifest parameters"):
        render({"replica": 2})
    assert render_yaml().count("\n---\n") == len(render()) - 1


def test_no_secret_or_manifest_holds_a_superuser_password():
    """Issue #34 (round 5): the admin the app's Secrets name owns its database but is no superuser; the
    superuser's password is random at initdb (read from the kernel, in no Secret) and the init script
    clears it, so no credential an agent can read logs in as a superuser over TCP."""
    docs = render()
    init = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "postgres-init")
    script = init["data"]["10-roles.sql"]
    assert "ALTER ROLE CURRENT_USER PASSWORD NULL" in script
    assert "SUPERUSER" not in script.replace("NOSUPERUSER", "") and "CREATEROLE" not in script.replace("NOCREATEROLE", "")
    secrets = {d["metadata"]["name"]: d["stringData"] for d in docs if d["kind"] == "Secret"}
    databases = [(w, pod) for w, pod in pod_specs(docs) if pod["containers"][0]["image"].startswith("postgres:")]
    assert len(databases) == 6
    for workload, pod in databases:
        container = pod["containers"][0]
        env = {e["name"]: e for e in container["env"]}
        assert "POSTGRES_PASSWORD" not in env, workload["metadata"]["name"]
        assert env["POSTGRES_PASSWORD_FILE"]["value"] == "/proc/sys/kernel/random/uuid"
        superuser = env["POSTGRES_USER"]["value"]
        secret = secrets[env["DB_ADMIN_USER"]["valueFrom"]["secretKeyRef"]["name"]]
        assert superuser not in (secret["admin-username"], secret["username"])
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes[mounts["/docker-entrypoint-initdb.d"]]["configMap"]["name"] == "postgres-init"
    assert not any(s.get("admin-username") == "postgres" for s in secrets.values())
