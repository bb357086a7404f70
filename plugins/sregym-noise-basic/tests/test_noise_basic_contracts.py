"""The noise sources pass the contract suite, and what they create carries ordinary names."""

from __future__ import annotations

import json

import sregym_noise_basic.plugin
from sregym_noise_basic import sources

from sregym_core.testing.contracts import NoiseContract
from sregym_core.types import ComponentSpec


class TestNoiseBasic(NoiseContract):
    plugin = sregym_noise_basic.plugin


def test_the_ten_sources_are_registered():
    names = {spec.name for spec in sregym_noise_basic.plugin.sregym_noise_sources()}
    assert names == {"pod-kill", "pod-failure", "rollout-restart", "warning-events", "log-burst", "cpu-stress",
                     "network-delay", "network-loss", "flapping-alert", "config-reload"}


def test_sources_never_target_the_entrypoint_the_generator_or_a_stateful_store():
    for spec in sregym_noise_basic.plugin.sregym_noise_sources():
        for roles in (("frontend", "service:http"), ("workload-generator",), ("db:postgres", "stateful")):
            assert not spec.selector.matches(ComponentSpec(name="x", roles=roles, ports=(80,), config_map="x-config"))
        assert spec.selector.matches(ComponentSpec(name="geo", roles=("service:grpc",), ports=(8083,),
                                                   config_map="geo-config"))


class _Ctx:
    """Records the manifests a source creates (unit test of the objects only; the live test runs them)."""

    namespace = "hotel"

    def __init__(self):
        self.state, self.created = {}, []

    def kubectl(self, *args, input=None, check=True, timeout=60.0):
        if args[:2] == ("create", "-f"):
            self.created.append(json.loads(input))
        return ""


class _Target:
    component = ComponentSpec(name="geo", roles=("service:grpc",), ports=(8083,), labels={"app": "geo"})


def test_created_objects_never_name_their_purpose(monkeypatch):
    monkeypatch.setattr(sources, "_a_ready_pod", lambda ctx, target: {
        "metadata": {"name": "geo-abc", "uid": "u1"}, "spec": {"nodeName": "node-1", "containers": [{"name": "geo"}]},
        "status": {"podIP": "10.0.0.9"}})
    ctx = _Ctx()
    for impl in (sources.LogBurst(), sources.CpuStress(), sources.WarningEvents()):
        impl.inject(ctx, _Target(), {})
    text = json.dumps(ctx.created).lower()
    assert ctx.created and "noise" not in text and "chaos" not in text and "sregym" not in text
    assert {o["kind"] for o in ctx.created} == {"Pod", "Event"}
    assert all(o["spec"]["restartPolicy"] == "Never" for o in ctx.created if o["kind"] == "Pod")
    busy = next(o for o in ctx.created if o["metadata"]["name"].startswith("report-builder-"))
    assert busy["spec"]["activeDeadlineSeconds"] > 0 and "timeout" in busy["spec"]["containers"][0]["command"][2]


def test_new_objects_never_name_their_purpose_either():
    ctx = _Ctx()
    sources.FlappingAlert().inject(ctx, _Target(), {})
    [exporter] = ctx.created
    text = json.dumps(exporter).lower()
    assert "noise" not in text and "chaos" not in text and "flap" not in text and "sregym" not in text
    assert exporter["metadata"]["annotations"]["prometheus.io/scrape"] == "true"  # Prometheus scrapes it
    assert exporter["spec"]["restartPolicy"] == "Never"


def test_the_flapping_exporter_script_is_valid_python():
    compile(sources._flapping_exporter(20, 45, 9102), "<exporter>", "exec")
