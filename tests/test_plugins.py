"""Plugin loading: entry points, allow/block lists, load failures, duplicate names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sregym_core import hookimpl
from sregym_core.errors import PluginError
from sregym_core.plugins import new_plugin_host
from sregym_core.types import AgentSpec, FaultSpec
from sregym_core.testing import StateFault

FAKE_DIST = Path(__file__).parent / "data" / "sregym-test-plugin"


@pytest.fixture
def fake_distribution(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE_DIST))
    yield
    for name in [m for m in sys.modules if m.startswith("sregym_test_plugin")]:
        del sys.modules[name]


def _load(warnings):
    host = new_plugin_host(builtins=False, entry_points=False, warn=warnings.append)
    host.load_entry_points()
    return host


def test_entry_point_plugins_load_and_failures_warn_once(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "sregym-test-plugin")
    warnings: list[str] = []
    host = _load(warnings)
    faults = host.get_faults()
    assert "test-success-fault" in faults
    assert "test-blocked-fault" in faults  # not blocked in this test
    assert len(warnings) == 1
    assert "importerror" in warnings[0] and "sregym-test-plugin" in warnings[0]
    assert "ModuleNotFoundError" in warnings[0]
    statuses = {i.name: i.status for i in host.plugin_infos()}
    assert statuses == {"blocked": "loaded", "importerror": "failed", "success": "loaded"}


def test_disable_plugins_blocks_entry_point(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "sregym-test-plugin")
    monkeypatch.setenv("SREGYM_DISABLE_PLUGINS", "blocked,importerror")
    warnings: list[str] = []
    host = _load(warnings)
    assert "test-blocked-fault" not in host.get_faults()
    assert "test-success-fault" in host.get_faults()
    assert warnings == []
    assert host.pm.is_blocked("blocked")
    assert {i.name: i.status for i in host.plugin_infos()}["blocked"] == "blocked"


def test_empty_allow_list_loads_nothing(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "")
    host = _load([])
    assert host.get_faults() == {}


def _fault(name: str) -> FaultSpec:
    return FaultSpec(name=name, summary="x", impl=StateFault())


def test_duplicate_names_name_every_provider(plugin_host):
    class One:
        @hookimpl
        def sregym_faults(self):
            return [_fault("pod-kill")]

    class Two:
        @hookimpl
        def sregym_faults(self):
            return [_fault("pod-kill"), _fault("other")]

    plugin_host.register(One(), name="one", distribution="sregym-fault-one", version="1.0")
    plugin_host.register(Two(), name="two", distribution="sregym-fault-two", version="2.0")
    with pytest.raises(PluginError) as info:
        plugin_host.get_faults()
    message = str(info.value)
    assert "pod-kill" in message and "sregym-fault-one 1.0" in message and "sregym-fault-two 2.0" in message


def test_wrong_record_type_is_a_plugin_error(plugin_host, register_plugin):
    class Bad:
        @hookimpl
        def sregym_agents(self):
            return [_fault("not-an-agent")]

    register_plugin(Bad(), name="bad")
    with pytest.raises(PluginError, match="expected AgentSpec"):
        plugin_host.get_agents()


def test_unknown_hook_fails_loudly(plugin_host):
    class Typo:
        @hookimpl
        def sregym_fualts(self):
            return []

    plugin_host.register(Typo(), name="typo")
    with pytest.raises(Exception, match="unknown hook|sregym_fualts"):
        plugin_host.pm.check_pending()


def test_register_and_unregister_round_trip(plugin_host, register_plugin):
    class Agents:
        @hookimpl
        def sregym_agents(self):
            return [AgentSpec(name="Some_Agent", summary="x", factory=object)]

    name = register_plugin(Agents())
    assert list(plugin_host.get_agents()) == ["some-agent"]
    plugin_host.unregister(name)
    assert plugin_host.get_agents() == {}


def test_bad_name_is_rejected():
    with pytest.raises(PluginError, match="invalid name"):
        _fault("bad name!")
