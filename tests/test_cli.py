"""The CLI, in-process (fixture host) and as the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sregym_noop.plugin

from sregym_core import hookimpl
from sregym_core.errors import ConfigError
from sregym_core.problems import compose_adhoc
from sregym_core.types import FaultSpec
from sregym_core.testing import StateFault

SREGYM = str(Path(sys.executable).parent / "sregym")


@pytest.fixture
def noop_and_app(register_plugin, fake_app):
    class Apps:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

    register_plugin(sregym_noop.plugin, name="noop", distribution="sregym-noop", version="0.1.0")
    register_plugin(Apps(), name="fake-app")


def test_list_faults_table_json_markdown(sregym_cli, noop_and_app, register_plugin):
    class Real:
        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="any-workload", summary="x", impl=StateFault())]

    register_plugin(Real(), name="real")
    table = sregym_cli("list-faults").assert_success().output
    assert "any-workload" in table and "fake-app/api" in table and "total viable pairs: 3" in table
    data = json.loads(sregym_cli("list-faults", "--json").assert_success().output)
    assert data["total"] == 3 and [f["name"] for f in data["faults"]] == ["any-workload", "noop"]
    assert {(p["fault"], p["component"]) for p in data["pairs"]} == {("any-workload", c) for c in ("frontend", "api", "db")}
    markdown = sregym_cli("list-faults", "--format", "markdown").assert_success().output
    assert markdown.startswith("# Fault compatibility matrix") and "| any-workload | k8s |" in markdown
    assert "| noop |" not in markdown  # the catalog has no row for a test stand-in
    only = json.loads(sregym_cli("list-faults", "--app", "fake-app", "--json").output)
    assert only["total"] == 3


def test_a_test_stand_in_is_listed_but_never_viable_and_still_runs(sregym_cli, noop_and_app, plugin_host):
    """noop changes nothing: list-faults offers none of its pairs (--all says why), run still takes it."""
    table = sregym_cli("list-faults").assert_success().output
    assert "- (test stand-in: changes nothing)" in table and "total viable pairs: 0" in table
    data = json.loads(sregym_cli("list-faults", "--json").assert_success().output)
    assert data["pairs"] == [] and data["total"] == 0
    assert data["faults"][0]["stand_in"] is True and data["faults"][0]["viable_targets"] == 0
    every = json.loads(sregym_cli("list-faults", "--json", "--all").assert_success().output)
    assert [(p["component"], p["viable"], p["reason"]) for p in every["pairs"]] == [
        (c, False, "test stand-in: changes nothing") for c in ("frontend", "api", "db")]
    adhoc = compose_adhoc(plugin_host, app="fake-app", fault="noop", target="api")  # what `sregym run` resolves
    assert [(f.fault, f.target) for f in adhoc.faults] == [("noop", "api")]


def test_unknown_app_is_a_clean_error(sregym_cli, noop_and_app):
    outcome = sregym_cli("list-faults", "--app", "nope").assert_failed(2)
    assert outcome.stderr.startswith("Error: unknown app 'nope'")
    assert "hint: installed apps: fake-app" in outcome.stderr
    assert "Traceback" not in outcome.stderr + outcome.output


def test_list_apps_and_plugins(sregym_cli, noop_and_app):
    apps = json.loads(sregym_cli("list-apps", "--json").assert_success().output)
    assert apps[0]["name"] == "fake-app" and len(apps[0]["components"]) == 3
    plugins = json.loads(sregym_cli("plugins", "--json").assert_success().output)
    noop = next(p for p in plugins if p["name"] == "noop")
    assert noop["distribution"] == "sregym-noop" and "sregym_faults" in noop["hooks"]


def test_schema_command(sregym_cli, noop_and_app):
    names = sregym_cli("schema").assert_success().output.split()
    assert {"problem", "app", "fault-params", "fault/noop"} <= set(names)
    problem = json.loads(sregym_cli("schema", "problem").assert_success().output)
    assert problem["title"] == "SREGym problem"
    params = json.loads(sregym_cli("schema", "fault/noop").assert_success().output)
    assert params["properties"]["label"]["default"] == "noop"
    sregym_cli("schema", "nope").assert_failed(2)


def test_plugin_errors_render_without_traceback(sregym_cli, register_plugin):
    class Dup:
        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="noop", summary="clash", impl=StateFault())]

    register_plugin(sregym_noop.plugin, name="noop", distribution="sregym-noop", version="0.1.0")
    register_plugin(Dup(), name="dup", distribution="sregym-fault-dup", version="9")
    outcome = sregym_cli("list-faults").assert_failed(1)
    assert "Error: duplicate names" in outcome.stderr
    assert "sregym-noop 0.1.0" in outcome.stderr and "sregym-fault-dup 9" in outcome.stderr
    assert "Traceback" not in outcome.stderr


def test_unexpected_errors_hint_debug(sregym_cli, register_plugin):
    class Boom:
        @hookimpl
        def sregym_apps(self):
            raise ConfigError("apps file broken", errors=[("$.components[0]", "bad")])

    register_plugin(Boom())
    outcome = sregym_cli("list-apps").assert_failed(1)
    assert "Error: apps file broken" in outcome.stderr and "at $.components[0]: bad" in outcome.stderr


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SREGYM, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_installed_plugin_shows_up_through_its_entry_point():
    """sregym-noop is pip-installed (editable) like any outside plugin: no core change needed."""
    proc = _run("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["noop"]["distribution"] == "sregym-noop" and plugins["noop"]["status"] == "loaded"
    faults = json.loads(_run("list-faults", "--json").stdout)
    assert "noop" in [f["name"] for f in faults["faults"]]
    disabled = json.loads(_run("list-faults", "--json", env={"SREGYM_DISABLE_PLUGINS": "noop"}).stdout)
    assert "noop" not in [f["name"] for f in disabled["faults"]]


def test_installed_noop_is_not_a_viable_pair_of_a_real_app():
    """`sregym list-faults --app hotel-reservation` offers no noop pair; --all shows each with the reason."""
    pytest.importorskip("sregym_app_hotel_reservation")
    env = {"SREGYM_LOAD_PLUGINS": "noop,app-hotel-reservation"}
    listed = _run("list-faults", "--app", "hotel-reservation", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["pairs"] == []
    every = json.loads(_run("list-faults", "--app", "hotel-reservation", "--json", "--all", env=env).stdout)["pairs"]
    assert len(every) == 17 and {(p["fault"], p["viable"], p["reason"]) for p in every} == {
        ("noop", False, "test stand-in: changes nothing")}


def test_console_script_errors_exit_nonzero_without_traceback():
    proc = _run("schema", "does-not-exist")
    assert proc.returncode == 2
    assert any(line.startswith("Error: no schema named") for line in proc.stderr.splitlines())
    assert "Traceback" not in proc.stderr
    debug = _run("--debug", "schema", "does-not-exist")
    assert "Traceback" in debug.stderr


def test_cluster_commands_default_to_the_cluster_run_uses():
    """`sregym run` then `sregym cluster down` must stop the cluster the run kept, not another name."""
    pytest.importorskip("sregym_cluster_embedded")
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    from sregym_core.cli import cli, register_plugin_commands

    register_plugin_commands()
    run_default = next(p.default for p in cli.commands["run"].params if p.name == "cluster_name")
    for name in ("up", "down", "kubeconfig"):  # status without a name lists every cluster
        command = cli.commands["cluster"].commands[name]
        assert next(p.default for p in command.params if p.name == "name") == run_default, name
    up = cli.commands["cluster"].commands["up"]
    assert next(p.default for p in up.params if p.name == "nodes") == EmbeddedCluster().nodes
