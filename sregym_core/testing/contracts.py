"""Contract suites plugin authors subclass.

Point a subclass at your plugin module; every ``test_*`` method then runs against your records::

    from sregym_core.testing.contracts import FaultContract
    import my_plugin.plugin

    class TestMyFaults(FaultContract):
        plugin = my_plugin.plugin

The suites need the harness fixtures (``pytest_plugins = ["sregym_core.testing"]``).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, ClassVar

import jsonschema
import pytest

from ..errors import SregymError
from ..faults import call_fault
from ..types import (
    LAYERS,
    AgentSpec,
    AppSpec,
    ClusterProviderSpec,
    FaultSpec,
    GroundTruth,
    OracleSpec,
    Target,
    normalize_name,
)
from ..validation import load_schema, validate


class _Contract:
    plugin: ClassVar[Any] = None
    hook: ClassVar[str] = ""

    def records(self, register_plugin, plugin_manager) -> list[Any]:
        if self.plugin is None:
            pytest.skip("set `plugin` on the contract subclass")
        register_plugin(self.plugin)
        getter = {
            "sregym_faults": plugin_manager.get_faults, "sregym_apps": plugin_manager.get_apps,
            "sregym_agents": plugin_manager.get_agents, "sregym_clusters": plugin_manager.get_clusters,
            "sregym_oracles": plugin_manager.get_oracles,
        }[self.hook]
        records = list(getter().values())
        assert records, f"{self.plugin!r} registers nothing through {self.hook}"
        return records

    def test_names_are_normalized_and_unique(self, register_plugin, plugin_manager):
        records = self.records(register_plugin, plugin_manager)
        names = [r.name for r in records]
        assert all(normalize_name(n) == n for n in names)
        assert len(names) == len(set(names))

    def test_records_have_summaries(self, register_plugin, plugin_manager):
        for record in self.records(register_plugin, plugin_manager):
            assert record.summary.strip(), f"{record.name} has no summary"


class FaultContract(_Contract):
    """Checks every fault a plugin registers.

    Override ``example_params`` (fault name → params) for faults whose params have required keys,
    and ``round_trip`` = False for faults that cannot run against the recording context.
    """

    hook = "sregym_faults"
    example_params: ClassVar[dict[str, dict[str, Any]]] = {}
    round_trip: ClassVar[bool] = True

    def _params(self, fault: FaultSpec) -> dict[str, Any]:
        return validate(self.example_params.get(fault.name, {}), dict(fault.params_schema),
                        what=f"example params of {fault.name}", fill_defaults=True)

    def test_fault_declares_layer_selector_and_schema(self, register_plugin, plugin_manager):
        for fault in self.records(register_plugin, plugin_manager):
            assert fault.layer in LAYERS
            jsonschema.Draft202012Validator.check_schema(dict(fault.params_schema))
            validate(dict(fault.params_schema), load_schema("fault-params"), what=f"params schema of {fault.name}")
            assert fault.capabilities, f"{fault.name} declares no capabilities"
            for name in ("inject", "recover", "is_present"):
                assert callable(getattr(fault, name)), f"{fault.name}.{name} is not callable"

    def test_example_params_validate(self, register_plugin, plugin_manager):
        for fault in self.records(register_plugin, plugin_manager):
            params = self._params(fault)
            assert isinstance(params, dict)

    def test_bad_params_are_config_errors(self, register_plugin, plugin_manager):
        for fault in self.records(register_plugin, plugin_manager):
            with pytest.raises(SregymError):
                validate(["not", "an", "object"], dict(fault.params_schema), what=f"params of {fault.name}")

    def test_targets_some_component_of_the_fake_app(self, register_plugin, plugin_manager, fake_app):
        for fault in self.records(register_plugin, plugin_manager):
            assert fault.selector.describe()
            assert isinstance(any(fault.selector.matches(c) for c in fake_app.components), bool)

    def test_ground_truth_is_structured(self, register_plugin, plugin_manager, fake_app):
        for fault in self.records(register_plugin, plugin_manager):
            if fault.ground_truth is None:
                continue
            component = next((c for c in fake_app.components if fault.selector.matches(c)), None)
            if component is None:
                continue
            truth = fault.ground_truth(Target(app=fake_app, component=component, namespace=fake_app.namespace),
                                       self._params(fault), {})
            assert isinstance(truth, GroundTruth)
            assert truth.components and truth.mechanism and truth.namespace

    def test_inject_recover_round_trip(self, register_plugin, plugin_manager, fake_app, fake_fault_context):
        if not self.round_trip:
            pytest.skip("this plugin's faults need a live cluster for the round trip")
        for fault in self.records(register_plugin, plugin_manager):
            component = next((c for c in fake_app.components if fault.selector.matches(c)), None)
            if component is None:
                continue
            target = Target(app=fake_app, component=component, namespace=fake_app.namespace)
            params = self._params(fault)
            ctx = fake_fault_context.child()
            asyncio.run(call_fault(fault.inject, ctx, target, params))
            assert asyncio.run(call_fault(fault.is_present, ctx, target, params)) is True
            asyncio.run(call_fault(fault.recover, ctx, target, params))
            assert asyncio.run(call_fault(fault.is_present, ctx, target, params)) is False


class AppContract(_Contract):
    """Checks every app a plugin registers: inventory shape, manifests exist, images declared."""

    hook = "sregym_apps"

    def test_inventory_matches_schema(self, register_plugin, plugin_manager):
        for app in self.records(register_plugin, plugin_manager):
            assert isinstance(app, AppSpec)
            document = {
                "name": app.name, "namespace": app.namespace,
                "components": [{k: v for k, v in {
                    "name": c.name, "kind": c.kind, "roles": list(c.roles), "ports": list(c.ports),
                    "pvcs": list(c.pvcs),
                }.items()} for c in app.components],
            }
            validate(document, load_schema("app"), what=f"inventory of {app.name}")

    def test_manifests_exist(self, register_plugin, plugin_manager):
        for app in self.records(register_plugin, plugin_manager):
            assert app.manifests, f"{app.name} has no manifests"
            for path in app.manifests:
                assert path.exists(), f"{app.name}: manifest {path} is missing"

    def test_has_description_for_agents(self, register_plugin, plugin_manager):
        for app in self.records(register_plugin, plugin_manager):
            assert len(app.description) > 40, f"{app.name}: the agent needs a real description"


class AgentContract(_Contract):
    """Checks every agent a plugin registers can be built and has an async ``run``."""

    hook = "sregym_agents"
    factory_config: ClassVar[dict[str, dict[str, Any]]] = {}

    def test_factory_builds_an_agent(self, register_plugin, plugin_manager):
        for spec in self.records(register_plugin, plugin_manager):
            assert isinstance(spec, AgentSpec)
            agent = spec.factory(**self.factory_config.get(spec.name, {}))
            assert inspect.iscoroutinefunction(agent.run), f"{spec.name}: run must be async"


class ClusterContract(_Contract):
    """Checks every cluster provider: capabilities declared, factory callable."""

    hook = "sregym_clusters"

    def test_declares_capabilities(self, register_plugin, plugin_manager):
        for spec in self.records(register_plugin, plugin_manager):
            assert isinstance(spec, ClusterProviderSpec)
            assert spec.capabilities
            assert callable(spec.factory)


class OracleContract(_Contract):
    """Checks every oracle or judge a plugin registers."""

    hook = "sregym_oracles"

    def test_kind_and_factory(self, register_plugin, plugin_manager):
        for spec in self.records(register_plugin, plugin_manager):
            assert isinstance(spec, OracleSpec)
            assert spec.kind in ("mitigation", "judge")
            assert callable(spec.factory)


__all__ = ["AgentContract", "AppContract", "ClusterContract", "FaultContract", "OracleContract"]
