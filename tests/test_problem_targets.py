"""A problem never makes the grading instruments its target (issue #39): a fault (or noise) aimed at
the workload generator, a component with a ``workload`` role or one standing for the app's
generator is refused when the problem loads, whatever the fault's selector or a plugin's
compatibility hook says; and params a fault does not take are refused with their JSON path and a
hint naming the params it does take."""

from __future__ import annotations

import pytest

from sregym_core import hookimpl
from sregym_core.errors import ConfigError
from sregym_core.faultkit import schema
from sregym_core.problems import compose_adhoc, parse_problem, resolve_problem, unresolvable
from sregym_core.types import AppSpec, ComponentSpec, FaultSpec, GroundTruth, TargetSelector, WorkloadSpec


class Anything:
    """A fault that would take any target: it changes nothing, it only has to resolve."""

    def inject(self, ctx, target, params): ...
    def is_present(self, ctx, target, params): return False
    def recover(self, ctx, target, params): ...
    def reference_fix(self, ctx, target, params): ...

    def ground_truth(self, ctx, target, params):
        return GroundTruth(fault="any", layer="k8s", components=(target.component.name,), namespace=target.namespace,
                           resource_kind="Deployment", mechanism="anything")


APP = AppSpec(
    name="gen-app", summary="an app that lists its generator and a replayer as components", namespace="gen",
    description="An app whose inventory names its load generator, to prove it is never a fault target.",
    components=(
        ComponentSpec(name="api", roles=("service:http",), ports=(8080,)),
        ComponentSpec(name="loadgen", roles=("workload-generator",), ports=(8089,)),
        ComponentSpec(name="replayer", roles=("workload:replay",), ports=(8090,)),
        ComponentSpec(name="users", roles=("service:http",), ports=(8091,)),
    ),
    workload=WorkloadSpec(name="users", namespace="gen", service="users", port=8091),
    hidden_namespaces=("gen-workload",),
)


@pytest.fixture
def host(register_plugin, plugin_host):
    class Shipper:
        @hookimpl
        def sregym_apps(self):
            return [APP]

        @hookimpl
        def sregym_faults(self):
            # a selector that excludes nothing, and one with closed params
            return [FaultSpec(name="any-target", summary="x", impl=Anything(),
                              selector=TargetSelector(kinds=("Deployment",), exclude_roles=())),
                    FaultSpec(name="timeout", summary="x", impl=Anything(),
                              params_schema=schema(milliseconds={"type": "integer"}, retries={"type": "integer"}))]

        @hookimpl
        def sregym_check_compatibility(self, fault, component, app):
            return True  # a plugin that says yes to everything still cannot aim a fault at the generator

    register_plugin(Shipper())
    return plugin_host


def problem(target: str, fault: str = "any-target", params: dict | None = None):
    return parse_problem({"id": f"aim-{target}", "app": "gen-app", "summary": "s", "symptom": "slo-drop",
                          "faults": [{"id": "f0", "fault": fault, "target": target, "params": params or {}}]})


@pytest.mark.parametrize("target, why", [
    ("loadgen", "workload-generator"), ("replayer", "workload:replay"), ("users", "the app's workload generator")])
def test_a_fault_aimed_at_the_grading_instruments_is_refused_at_load(host, target, why):
    with pytest.raises(ConfigError) as caught:
        resolve_problem(problem(target), host)
    text = caught.value.render()
    assert "$.faults[0].target" in text and why in text and "never a fault target" in text
    assert "hint:" in text


def test_an_ordinary_target_still_resolves(host):
    assert resolve_problem(problem("api"), host).faults[0].target == "api"


def test_an_ad_hoc_pair_on_the_generator_is_refused_too(host):
    with pytest.raises(ConfigError, match="never a fault target"):
        compose_adhoc(host, app="gen-app", fault="any-target", target="loadgen")


def test_such_a_problem_is_broken_not_fatal(host):
    [broken] = unresolvable([problem("loadgen"), problem("api")], host)
    assert broken.id == "aim-loadgen" and "never a fault target" in broken.error


def test_noise_aimed_at_the_generator_is_refused(host, register_plugin):
    from sregym_core.types import NoiseSpec

    class Noise:
        def inject(self, ctx, target, params): ...
        def is_active(self, ctx, target, params): return False
        def revert(self, ctx, target, params): ...
        def describe(self, ctx, target, params): return "chatter"

    class NoisePlugin:
        @hookimpl
        def sregym_noise_sources(self):
            return [NoiseSpec(name="chatter", summary="x", impl=Noise(),
                              selector=TargetSelector(kinds=("Deployment",), exclude_roles=()))]

    register_plugin(NoisePlugin())
    spec = parse_problem({"id": "noisy", "app": "gen-app", "summary": "s", "symptom": "slo-drop",
                          "faults": [{"id": "f0", "fault": "any-target", "target": "api"}],
                          "noise": [{"noise": "chatter", "target": "loadgen"}]})
    with pytest.raises(ConfigError, match=r"(?s)\$\.noise\[0\]\.target.*never a noise target"):
        resolve_problem(spec, host)


def test_an_unknown_param_is_refused_with_its_path_and_the_params_the_fault_takes(host):
    with pytest.raises(ConfigError) as caught:
        resolve_problem(problem("api", "timeout", {"milisecond": 5}), host)
    text = caught.value.render()
    assert "$.faults[0].params" in text and "'milisecond' was unexpected" in text
    assert "hint:" in text and "milliseconds, retries" in text and "sregym schema fault/timeout" in text


class TruthFromTheCluster(Anything):
    """A plugin bug: its ground truth reads the cluster (or state only inject saves) before injection."""

    def __init__(self, how: str) -> None:
        self.how = how

    def ground_truth(self, ctx, target, params):
        if self.how == "kubectl":
            ctx.kubectl("get", "deployment", target.component.name)
        return GroundTruth(fault="x", layer="k8s", components=(target.component.name,), namespace=target.namespace,
                           resource_kind="Deployment", mechanism=f"was {ctx.state['image']}")


@pytest.mark.parametrize("how", ["kubectl", "state"])
def test_a_fault_whose_ground_truth_breaks_costs_only_its_problem(register_plugin, plugin_host, sregym_cli, tmp_path,
                                                                  how):
    from sregym_core.problems import load_problem_dir

    (tmp_path / "bad.yaml").write_text("id: bad-truth\napp: gen-app\nsummary: s\nsymptom: slo-drop\n"
                                       "faults: [{id: f0, fault: bad-truth, target: api}]\n")
    (tmp_path / "good.yaml").write_text("id: good\napp: gen-app\nsummary: s\nsymptom: slo-drop\n"
                                        "faults: [{id: f0, fault: any-target, target: api}]\n")

    class Shipper:
        @hookimpl
        def sregym_apps(self):
            return [APP]

        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="bad-truth", summary="x", impl=TruthFromTheCluster(how)),
                    FaultSpec(name="any-target", summary="x", impl=Anything())]

        @hookimpl
        def sregym_problems(self):
            return load_problem_dir(tmp_path)

    register_plugin(Shipper())
    with pytest.raises(ConfigError) as caught:
        resolve_problem(plugin_host.get_problems()["bad-truth"], plugin_host)
    text = caught.value.render()
    assert "$.faults[0]" in text and "ground_truth of fault 'bad-truth' failed" in text and "ctx.state" in text
    outcome = sregym_cli("list-problems", "--all").assert_success()
    assert "good" in outcome.output and "bad-truth" in outcome.output and "BROKEN" in outcome.output
    assert "Traceback" not in outcome.stderr


def test_a_plugin_schema_left_open_still_refuses_a_key_it_does_not_name(register_plugin, plugin_host):
    """An outside plugin's schema that forgot additionalProperties: a typo is still refused at load;
    a schema that opens itself on purpose (additionalProperties: true or a schema) is respected."""

    class Shipper:
        @hookimpl
        def sregym_apps(self):
            return [APP]

        @hookimpl
        def sregym_faults(self):
            named = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
            return [FaultSpec(name="forgot", summary="x", impl=Anything(), params_schema=named),
                    FaultSpec(name="free-map", summary="x", impl=Anything(),
                              params_schema={**named, "additionalProperties": {"type": "string"}})]

    register_plugin(Shipper())
    with pytest.raises(ConfigError) as caught:
        resolve_problem(problem("api", "forgot", {"replica": 0}), plugin_host)
    text = caught.value.render()
    assert "$.faults[0].params" in text and "'replica'" in text and "it takes replicas" in text
    assert resolve_problem(problem("api", "free-map", {"label": "x"}), plugin_host).faults[0].params == {"label": "x"}
