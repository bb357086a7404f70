"""Problem files: schema validation with JSON paths, resolution against plugins, ad-hoc composition."""

from __future__ import annotations

import pytest
import sregym_noop.plugin
import yaml

from sregym_core import hookimpl
from sregym_core.errors import ConfigError, UsageError
from sregym_core.problems import (
    compose_adhoc,
    derive_ground_truth,
    load_problem_dir,
    load_problem_file,
    parse_problem,
    resolve_problem,
)
from sregym_core.types import FaultSpec, Target, TargetSelector
from sregym_core.faults import FaultContext
from sregym_core.testing import StateFault


@pytest.fixture
def with_fake_app(register_plugin, fake_app):
    class Apps:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

    class DbFault:
        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="db-only", summary="only databases", layer="datastore",
                              selector=TargetSelector(roles=("db:*",)), impl=StateFault(),
                              params_schema={"type": "object", "properties": {"n": {"type": "integer", "default": 3}},
                                             "additionalProperties": False})]

    register_plugin(Apps(), name="fake-app-plugin")
    register_plugin(DbFault(), name="db-fault-plugin")
    register_plugin(sregym_noop.plugin, name="noop")
    return fake_app


GOOD = {
    "id": "fake-noop-api",
    "app": "fake-app",
    "summary": "noop on the api",
    "tags": ["lite"],
    "faults": [{"fault": "noop", "target": "api", "params": {"label": "x"}}],
}


def test_parse_good_problem():
    problem = parse_problem(GOOD)
    assert problem.id == "fake-noop-api"
    assert problem.faults[0].id == "f0" and problem.faults[0].params == {"label": "x"}
    assert problem.suites == ("lite",)


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"),
    [
        (lambda d: d.pop("app"), "$", "'app' is a required property"),
        (lambda d: d["faults"][0].pop("target"), "$.faults[0]", "'target' is a required property"),
        (lambda d: d["faults"][0].update(when={"at": -1}), "$.faults[0].when.at", "less than the minimum"),
        (lambda d: d.update(colour="blue"), "$", "unknown key"),
        (lambda d: d.update(faults=[]), "$.faults", "should be non-empty"),
        (lambda d: d.update(difficulty="impossible"), "$.difficulty", "is not one of"),
    ],
)
def test_invalid_problem_reports_json_path(mutate, path, fragment):
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    mutate(data)
    with pytest.raises(ConfigError) as info:
        parse_problem(data, source="p.yaml")
    assert any(p == path and fragment in why for p, why in info.value.errors), info.value.errors
    assert "p.yaml" in str(info.value)


def test_unknown_after_reference():
    data = {**GOOD, "faults": [{"fault": "noop", "target": "api", "when": {"after": "nope"}}]}
    with pytest.raises(ConfigError) as info:
        parse_problem(data)
    assert info.value.errors[0][0] == "$.faults[0].when.after"


def test_bad_yaml_file_names_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("id: x\nfaults: [\n  - {a: 1\n")
    with pytest.raises(ConfigError, match="line"):
        load_problem_file(path)


def test_resolve_checks_targets_and_params(plugin_host, with_fake_app):
    resolved = resolve_problem(parse_problem(GOOD), plugin_host)
    assert resolved.oracle == {"all": ["baseline_preserved", "fault_invariant", "functional_slo", "workload_healthy"]}
    assert resolved.ground_truth == ()  # derived at attempt time, from the injected state
    app = plugin_host.get_apps()["fake-app"]
    truth = derive_ground_truth(plugin_host.get_faults()["noop"], FaultContext.detached(app),
                                Target(app=app, component=app.component("api"), namespace="fake"), resolved.faults[0])
    assert truth.components == ("api",) and truth.namespace == "fake" and truth.mutated_values == {"label": "x"}

    wrong_target = {**GOOD, "faults": [{"fault": "db-only", "target": "frontend"}]}
    with pytest.raises(ConfigError) as info:
        resolve_problem(parse_problem(wrong_target), plugin_host)
    assert info.value.errors[0][0] == "$.faults[0].target"
    assert "cannot target" in info.value.errors[0][1]

    bad_params = {**GOOD, "faults": [{"fault": "db-only", "target": "db", "params": {"n": "three"}}]}
    with pytest.raises(ConfigError) as info:
        resolve_problem(parse_problem(bad_params), plugin_host)
    assert info.value.errors[0][0] == "$.faults[0].params.n"

    defaults = {**GOOD, "faults": [{"fault": "db-only", "target": "db"}]}
    assert resolve_problem(parse_problem(defaults), plugin_host).faults[0].params == {"n": 3}

    unknown = {**GOOD, "app": "nope"}
    with pytest.raises(ConfigError, match="unknown app"):
        resolve_problem(parse_problem(unknown), plugin_host)


def test_capabilities_filter(plugin_host, register_plugin, with_fake_app):
    class RootFault:
        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="needs-root", summary="x", capabilities={"root"}, impl=StateFault())]

    register_plugin(RootFault())
    problem = parse_problem({**GOOD, "faults": [{"fault": "needs-root", "target": "api"}]})
    with pytest.raises(ConfigError, match="capabilities root"):
        resolve_problem(problem, plugin_host, capabilities={"any", "embedded"})
    assert resolve_problem(problem, plugin_host, capabilities={"any", "root"})


def test_compose_adhoc(plugin_host, with_fake_app):
    problem = compose_adhoc(plugin_host, app="fake-app", fault="db-only", target="db")
    assert problem.id == "adhoc-fake-app-db-only-db"
    assert problem.faults[0].params == {"n": 3}
    assert problem.faults[0].fault == "db-only"
    with pytest.raises(UsageError):
        compose_adhoc(plugin_host, app="fake-app", fault="nope", target="db")


def test_load_problem_dir(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(GOOD))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(yaml.safe_dump({**GOOD, "id": "other"}))
    assert [p.id for p in load_problem_dir(tmp_path)] == ["fake-noop-api", "other"]
    assert load_problem_dir(tmp_path / "missing") == []


def test_bad_oracle_composition_is_rejected_with_path():
    data = {**GOOD, "oracle": {"all": ["baseline_preserved", {"functional_slo": {"window_s": -1}}]}}
    with pytest.raises(ConfigError) as info:
        parse_problem(data)
    assert any(path.startswith("$.oracle") for path, _why in info.value.errors), info.value.errors
