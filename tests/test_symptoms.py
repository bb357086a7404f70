"""Declared symptoms: parsing, the probes over real objects, and polling until they show."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import pytest

from sregym_core.errors import ConfigError
from sregym_core.problems import parse_problem
from sregym_core.symptoms import (
    alert_firing,
    clients_of,
    error_lines,
    log_sources,
    normalize,
    observe_symptoms,
    pods_not_ready,
    slo_dropped,
)

OBJECTS = json.loads((Path(__file__).parent / "data" / "hotel_geo_healthy.json").read_text())
GEO = {"kind": "Deployment", "namespace": "hotel-reservation", "name": "geo", "service": "geo"}


def test_normalize_accepts_the_declared_forms():
    assert normalize("slo-drop") == ("slo-drop",)
    assert normalize(["pods-not-ready", "slo-drop"]) == ("pods-not-ready", "slo-drop")
    assert normalize("alert-firing  HighErrorRate") == ("alert-firing HighErrorRate",)
    assert normalize({"latent": True, "reason": "only under load"}) == ("latent",)
    assert normalize(None) == ()
    for bad in ("slow", "alert-firing", "slo-drop now", {"latent": False}, ["latent", "slo-drop"]):
        with pytest.raises(ValueError):
            normalize(bad)


def test_problem_files_carry_the_symptom_and_reject_a_bad_one():
    doc = {"id": "p", "app": "a", "faults": [{"fault": "f", "target": "t"}], "symptom": ["pods-not-ready", "slo-drop"]}
    assert parse_problem(doc).symptom == ("pods-not-ready", "slo-drop")
    with pytest.raises(ConfigError) as err:
        parse_problem({**doc, "symptom": "users-sad"})
    assert "$.symptom" in err.value.render() and "alert-firing <AlertName>" in err.value.render()


def test_slo_dropped():
    assert slo_dropped({"count": 40, "success_rate": 0.4}) == "success rate 0.400 over 40 requests"
    assert slo_dropped({"count": 40, "success_rate": 1.0, "p95_ms": 2500}) == "p95 latency 2500 ms"
    assert slo_dropped({"count": 40, "success_rate": 0.99, "p95_ms": 40}) is None
    assert slo_dropped({"count": 0, "success_rate": None}) is None


def test_pods_not_ready_over_real_objects():
    healthy = copy.deepcopy(OBJECTS)
    assert pods_not_ready([GEO], healthy, OBJECTS) is None
    broken = copy.deepcopy(OBJECTS)
    next(o for o in broken if o["kind"] == "Pod")["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert "pod(s) not Ready: geo-" in pods_not_ready([GEO], broken, OBJECTS)
    scaled = [o for o in copy.deepcopy(OBJECTS) if o["kind"] != "Pod"]
    next(o for o in scaled if o["kind"] == "Deployment" and o["metadata"]["name"] == "geo")["spec"]["replicas"] = 0
    assert pods_not_ready([GEO], scaled, OBJECTS) == "Deployment hotel-reservation/geo: 0/1 pods Ready"
    unserved = copy.deepcopy(OBJECTS)
    next(o for o in unserved if o["kind"] == "Endpoints")["subsets"] = []
    assert pods_not_ready([GEO], unserved, OBJECTS) == "Service hotel-reservation/geo has no ready endpoints"


def test_alerts_and_error_logs():
    alerts = [{"labels": {"alertname": "HighErrorRate"}, "state": "pending"},
              {"labels": {"alertname": "PodNotReady"}, "state": "firing"}]
    assert alert_firing(alerts, "PodNotReady") == "alert PodNotReady firing"
    assert alert_firing(alerts, "HighErrorRate") is None
    log = '{"level":"info","event":"ok"}\n{"level":"error","event":"query_failed"}\nTraceback (most recent call last):\n'
    assert len(error_lines(log)) == 2
    assert error_lines('{"level":"info","event":"no errors here"}') == []


def test_error_logs_read_the_faulty_workload_and_its_clients():
    """A broken backend's errors show in its callers' logs: the probe reads the faulty workload's pods,
    then those of every workload whose pod template (or a ConfigMap it uses) names its Service."""
    objects = copy.deepcopy(OBJECTS)
    frontend = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "frontend")
    assert clients_of(GEO, objects) == []  # the frontend calls search, not geo
    env = frontend["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "GEO_CACHE_ADDR", "value": "geo-cache:11211"})  # another service's name, not geo's
    env.append({"name": "POSTGRES_DB", "value": "geo"})  # the word, not an address
    objects.append({"kind": "ConfigMap", "metadata": {"name": "notes", "namespace": "hotel-reservation"},
                    "data": {"README": "geo answers nearby hotels; if geo is down, page the geo team."}})
    frontend["spec"]["template"]["spec"]["volumes"] = [{"name": "notes", "configMap": {"name": "notes"}}]
    assert clients_of(GEO, objects) == []
    env.append({"name": "GEO_ADDR", "value": "geo:8083"})
    assert clients_of(GEO, objects) == ["frontend"]
    env[-1]["value"] = "http://geo.hotel-reservation.svc.cluster.local:8083"
    assert clients_of(GEO, objects) == ["frontend"]
    env[-1] = {"name": "GEO_HOST", "value": "geo"}  # the host set apart from its port
    assert clients_of(GEO, objects) == ["frontend"]
    env.pop()
    objects.append({"kind": "ConfigMap", "metadata": {"name": "search-config", "namespace": "hotel-reservation"},
                    "data": {"config.yaml": "geo:\n  host: geo\n  port: 8083\n"}})
    frontend["spec"]["template"]["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "search-config"}}]
    assert clients_of(GEO, objects) == ["frontend"]
    assert clients_of({**GEO, "service": None}, objects) == []
    objects.append({"kind": "Pod", "metadata": {"name": "frontend-7d9f-x2", "namespace": "hotel-reservation",
                                                "labels": dict(frontend["spec"]["template"]["metadata"]["labels"])}})
    geo_pod = next(o["metadata"]["name"] for o in objects
                   if o["kind"] == "Pod" and o["metadata"]["name"].startswith("geo"))
    assert log_sources([GEO], objects) == [("hotel-reservation", geo_pod), ("hotel-reservation", "frontend-7d9f-x2")]


class Clock:
    def __init__(self):
        self.t = 0.0

    async def sleep(self, seconds):
        self.t += seconds

    def __call__(self):
        return self.t


def test_observe_polls_until_every_declared_symptom_shows():
    clock = Clock()

    async def slo():
        return "success rate 0.2" if clock.t >= 6 else None

    async def pods():
        return "geo not ready"

    result = asyncio.run(observe_symptoms(["pods-not-ready", "slo-drop"], {"slo-drop": slo, "pods-not-ready": pods},
                                          sleep=clock.sleep, clock=clock))
    assert result["symptom_observed"] and result["seconds"] == 6
    assert result["observed"] == {"pods-not-ready": "geo not ready", "slo-drop": "success rate 0.2"}


def test_a_symptom_that_never_shows_is_reported():
    clock = Clock()

    async def never():
        return None

    async def broken():
        raise RuntimeError("no Prometheus")

    result = asyncio.run(observe_symptoms(["slo-drop", "alert-firing X"], {"slo-drop": never, "alert-firing": broken},
                                          timeout_s=20, sleep=clock.sleep, clock=clock))
    assert result["symptom_observed"] is False and result["missing"] == ["slo-drop", "alert-firing X"]
    assert result["errors"] == {"alert-firing X": "RuntimeError: no Prometheus"}
    latent = asyncio.run(observe_symptoms(["latent"], {}, sleep=clock.sleep, clock=clock))
    assert latent["symptom_observed"] is None and latent["latent"]


def test_validate_matrix_cells():
    from sregym_core.cli.validate import symptom_cell, verdicts
    from sregym_core.results.record import AttemptRecord

    def record(agent, passed, symptom=None, error=None):
        return AttemptRecord(run_id="r", problem_id="p", agent=agent, attempt=1, app="a", diagnosis_passed=True,
                             mitigation_passed=passed, error=error, extra={"symptom": symptom} if symptom else {})

    seen = {"declared": ["slo-drop"], "symptom_observed": True, "seconds": 3.0, "missing": []}
    table = verdicts([record("reference", True, seen), record("stub-replace", False),
                      record("different-broken-value", False, error="not applicable: no field")])
    assert table["p"] == {"reference": "pass", "symptom": "observed (slo-drop; 3 s)", "stub-replace": "fails",
                          "different-broken-value": "fails (n/a)"}
    assert symptom_cell({"declared": ["slo-drop"], "symptom_observed": False, "missing": ["slo-drop"]}).startswith("UNSOUND")
    assert symptom_cell({"declared": [], "symptom_observed": None}).startswith("UNSOUND")
    assert symptom_cell({"latent": True, "symptom_observed": None}) == "latent"
    assert verdicts([record("stub-replace", True)])["p"]["stub-replace"] == "UNSOUND (mitigation passed)"
