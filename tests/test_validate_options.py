"""``sregym validate`` takes the agent surface's ports as ``run`` does, and an ad hoc
``--app/--fault/--target`` validation declares its symptom with ``--symptom`` (the forms of a problem
file's ``symptom:``), so it can be sound; without one it says so before anything is deployed."""

from __future__ import annotations

import contextlib

import pytest
import sregym_noop.plugin

from sregym_core import hookimpl
from sregym_core.cli import validate as validate_cli

ADHOC = ("validate", "--app", "fake-app", "--fault", "noop", "--target", "api", "--agents", "reference")


@pytest.fixture
def planned(register_plugin, fake_app, monkeypatch):
    """The RunPlan validate would run, caught where the executor would take it (no cluster starts)."""

    class Shipper:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

    register_plugin(sregym_noop.plugin, name="noop")
    register_plugin(Shipper())
    plans: list = []

    @contextlib.contextmanager
    def no_cluster(host, **_options):
        yield lambda plan, progress: plans.append(plan) or []

    monkeypatch.setattr(validate_cli, "plan_runner", no_cluster)
    return plans


def test_ports_reach_the_agent_surface_as_in_run(planned, sregym_cli):
    sregym_cli(*ADHOC, "--symptom", "slo-drop", "--api-port", "18123", "--mcp-port", "0").assert_success()
    [plan] = planned
    assert (plan.serve.api_port, plan.serve.mcp_port, plan.serve.strict) == (18123, 0, True)


def test_a_bad_port_is_a_usage_error(planned, sregym_cli):
    outcome = sregym_cli(*ADHOC, "--symptom", "slo-drop", "--api-port", "70000").assert_failed(2)
    assert "--api-port" in outcome.stderr and not planned


def test_adhoc_symptoms_are_declared_on_the_problem(planned, sregym_cli):
    sregym_cli(*ADHOC, "--symptom", "pods-not-ready", "--symptom", "alert-firing  HighErrorRate").assert_success()
    [plan] = planned
    assert plan.problems[0].symptom == ("pods-not-ready", "alert-firing HighErrorRate")
    assert plan.settings.symptom_agents == ("reference",)


def test_adhoc_without_a_symptom_says_it_cannot_be_sound(planned, sregym_cli):
    outcome = sregym_cli(*ADHOC).assert_failed(2)
    assert "declares no symptom" in outcome.stderr and "--symptom slo-drop" in outcome.stderr
    assert "--no-symptom" in outcome.stderr and not planned
    sregym_cli(*ADHOC, "--no-symptom").assert_success()  # the check skipped on purpose: no symptom needed
    assert planned[0].problems[0].symptom == () and planned[0].settings.symptom_agents == ()


def test_an_unknown_symptom_is_a_clear_error(planned, sregym_cli):
    outcome = sregym_cli(*ADHOC, "--symptom", "users-sad").assert_failed(2)
    assert "unknown symptom 'users-sad'" in outcome.stderr and "Traceback" not in outcome.stderr and not planned


def test_symptom_is_for_adhoc_problems_only(planned, sregym_cli):
    outcome = sregym_cli("validate", "--problem", "anything", "--symptom", "slo-drop").assert_failed(2)
    assert "ad hoc" in outcome.stderr and "`symptom:`" in outcome.stderr and not planned


def test_symptom_and_no_symptom_contradict(planned, sregym_cli):
    outcome = sregym_cli(*ADHOC, "--symptom", "slo-drop", "--no-symptom").assert_failed(2)
    assert "--no-symptom skips that check" in outcome.stderr and not planned
