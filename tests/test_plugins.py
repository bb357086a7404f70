"""Plugin loading: entry points, allow/block lists, load failures, duplicate names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core import hookimpl
from sregym_core.errors import PluginError, PluginImportError
from sregym_core.plugins import new_plugin_host
from sregym_core.types import AgentSpec, FaultSpec
from sregym_core.testing import StateFault

FAKE_DIST = Path(__file__).parent / "data" / "sregym-test-plugin"
SREGYM = str(Path(sys.executable).parent / "sregym")


@pytest.fixture
def fake_distribution(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE_DIST))
    yield
    for name in [m for m in sys.modules if m.startswith("sregym_test_plugin")]:
        del sys.modules[name]


def _load():
    host = new_plugin_host(builtins=False, entry_points=False)
    host.load_entry_points()
    return host


def _import_attempts() -> list[str]:
    import sregym_test_plugin

    return sregym_test_plugin.IMPORT_ATTEMPTS


def test_a_plugin_that_fails_to_import_stops_loading_with_an_error_naming_it(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "sregym-test-plugin")
    with pytest.raises(PluginImportError) as info:
        _load()
    error = info.value
    assert isinstance(error, PluginError)
    assert (error.entry_point, error.distribution) == ("importerror", "sregym-test-plugin")
    assert isinstance(error.__cause__, ModuleNotFoundError) and error.cause is error.__cause__
    assert str(error) == ("plugin 'importerror' from distribution 'sregym-test-plugin' failed to import: "
                          "ModuleNotFoundError: No module named 'sregym_this_module_does_not_exist'")
    assert any("pip uninstall sregym-test-plugin" in hint and "SREGYM_DISABLE_PLUGINS=importerror" in hint
               for hint in error.hints)
    assert _import_attempts() == ["sregym_test_plugin.importerror"]


def test_disable_plugins_blocks_entry_point_without_importing_it(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "sregym-test-plugin")
    monkeypatch.setenv("SREGYM_DISABLE_PLUGINS", "blocked,importerror")
    host = _load()
    assert "test-blocked-fault" not in host.get_faults()
    assert "test-success-fault" in host.get_faults()
    assert host.pm.is_blocked("blocked") and host.pm.is_blocked("importerror")
    statuses = {i.name: i.status for i in host.plugin_infos()}
    assert statuses == {"blocked": "blocked", "importerror": "blocked", "success": "loaded"}
    assert _import_attempts() == []
    assert "sregym_test_plugin.blocked" not in sys.modules


def test_a_plugin_outside_the_allow_list_is_never_imported(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "success")
    host = _load()
    assert list(host.get_faults()) == ["test-success-fault"]
    assert _import_attempts() == []


def test_the_cli_reports_a_broken_plugin_as_an_error_without_a_traceback(monkeypatch):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(FAKE_DIST), os.environ.get("PYTHONPATH")))),
           "SREGYM_LOAD_PLUGINS": "sregym-test-plugin"}
    env.pop("SREGYM_DISABLE_PLUGINS", None)
    proc = subprocess.run([SREGYM, "plugins"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.startswith("Error: plugin 'importerror' from distribution 'sregym-test-plugin' failed to import: "
                                  "ModuleNotFoundError"), proc.stderr
    assert "hint: uninstall it (pip uninstall sregym-test-plugin), or skip it with SREGYM_DISABLE_PLUGINS=importerror" \
        in proc.stderr
    assert "Traceback" not in proc.stderr
    skipped = subprocess.run([SREGYM, "plugins", "--json"], capture_output=True, text=True, timeout=60,
                             env={**env, "SREGYM_DISABLE_PLUGINS": "importerror"})
    assert skipped.returncode == 0, skipped.stderr
    assert {p["name"]: p["status"] for p in json.loads(skipped.stdout)} == {
        "builtin": "builtin", "results-writer": "builtin", "blocked": "loaded", "importerror": "blocked",
        "success": "loaded"}


def test_empty_allow_list_loads_nothing(fake_distribution, monkeypatch):
    monkeypatch.setenv("SREGYM_LOAD_PLUGINS", "")
    host = _load()
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
