"""The conductor fires the seven lifecycle hooks, in order, with their documented arguments.

``run_plan`` runs for real: the plugin host, the work queue, the agent surface (a real HTTP server on
loopback), the attempt's stage machine, the fault scheduler, the results writer and the reset. Only
what needs a cluster is replaced: the environment's deploy and reset, and the attempt's
per-attempt ServiceAccount. Everything the run uses (app, fault, agent, oracle) and the recorder
are plugins registered through the host.
"""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from sregym_core import hookimpl
from sregym_core.agent_api.server import ServeSettings
from sregym_core.agents import AgentOutcome
from sregym_core.conductor import runner
from sregym_core.conductor.attempt import Attempt, AttemptSettings
from sregym_core.conductor.environment import DeployedApp, Environment
from sregym_core.oracles.mitigation import OracleVerdict
from sregym_core.results.record import AttemptRecord
from sregym_core.testing import StateFault
from sregym_core.types import (
    AgentSpec,
    AppSpec,
    ComponentSpec,
    FaultInstance,
    FaultSpec,
    OracleSpec,
    ProblemSpec,
)


class Recorder:
    """Records every lifecycle hook call, and the fault's own inject/recover, into one timeline."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def sregym_before_inject(self, problem, instance):
        self.calls.append(("before_inject", {"problem": problem, "instance": instance}))

    @hookimpl
    def sregym_after_inject(self, problem, instance):
        self.calls.append(("after_inject", {"problem": problem, "instance": instance}))

    @hookimpl
    def sregym_before_recover(self, problem, instance):
        self.calls.append(("before_recover", {"problem": problem, "instance": instance}))

    @hookimpl
    def sregym_after_recover(self, problem, instance):
        self.calls.append(("after_recover", {"problem": problem, "instance": instance}))

    @hookimpl
    def sregym_run_started(self, results_dir, run_id):
        self.calls.append(("run_started", {"results_dir": results_dir, "run_id": run_id}))

    @hookimpl
    def sregym_attempt_finished(self, record, results_dir):
        self.calls.append(("attempt_finished", {"record": record, "results_dir": results_dir}))

    @hookimpl
    def sregym_run_finished(self, results_dir, records):
        self.calls.append(("run_finished", {"results_dir": results_dir, "records": list(records)}))


class TimelineFault(StateFault):
    """A fault that changes nothing but says on the recorder's timeline when it acts."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def inject(self, ctx, target, params):
        self.recorder.calls.append(("fault.inject", {}))
        super().inject(ctx, target, params)

    def recover(self, ctx, target, params):
        self.recorder.calls.append(("fault.recover", {}))
        super().recover(ctx, target, params)


class SubmittingAgent:
    """Submits a mitigation at once, over the real agent API."""

    async def run(self, task):
        async with httpx.AsyncClient(base_url=task.api_url, trust_env=False) as http:
            reply = await http.post("/submit", json={"solution": "done"})
        return AgentOutcome(status="ok", steps=1, error=None if reply.status_code == 200 else reply.text)


class PassingOracle:
    async def evaluate(self, ctx):
        return OracleVerdict(name="always-passes", passed=True)


class World:
    """The smallest app, fault, agent and oracle a run needs, as one plugin."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    @hookimpl
    def sregym_apps(self):
        return [AppSpec(name="tiny-app", namespace="tiny", description="One web service.",
                        components=(ComponentSpec(name="web", roles=("frontend",)),))]

    @hookimpl
    def sregym_faults(self):
        return [FaultSpec(name="timeline-fault", summary="records when it acts", impl=TimelineFault(self.recorder))]

    @hookimpl
    def sregym_agents(self):
        return [AgentSpec(name="submitter", factory=lambda **_: SubmittingAgent())]

    @hookimpl
    def sregym_oracles(self):
        return [OracleSpec(name="always-passes", kind="mitigation", factory=lambda **_: PassingOracle())]


class NoClusterEnvironment(Environment):
    """The real environment, with deploy and reset (the parts that need a cluster) left out."""

    async def _deploy(self, app: AppSpec) -> DeployedApp:
        return DeployedApp(app=app, namespaces=(app.namespace,), baseline=types.SimpleNamespace(workloads=[]),
                           agent_kubeconfig=None, workload=None, deploy_seconds=0.0)

    async def reset_app(self, name, *, after_reconcile=None, users_during_settle=False):
        if after_reconcile is not None:
            await after_reconcile()
        return []


class Cluster:
    name = "no-cluster"
    capabilities = frozenset({"any"})

    def __init__(self, kubeconfig: Path) -> None:
        self._kubeconfig = kubeconfig

    def up(self) -> None:
        return None

    def kubeconfig(self) -> Path:
        return self._kubeconfig


@pytest.fixture
def no_cluster(monkeypatch):
    async def nothing(self):
        return None

    monkeypatch.setattr(runner, "Environment", NoClusterEnvironment)
    monkeypatch.setattr(Attempt, "_grant_identity", nothing)
    monkeypatch.setattr(Attempt, "_revoke_identity", nothing)


def test_the_conductor_fires_every_lifecycle_hook_in_order(plugin_host, register_plugin, no_cluster, tmp_path):
    recorder = Recorder()
    register_plugin(World(recorder), name="world")
    register_plugin(recorder, name="recorder")
    instance = FaultInstance(id="f0", fault="timeline-fault", target="web")
    problem = ProblemSpec(id="tiny-problem", app="tiny-app", faults=[instance], oracle={"always-passes": {}},
                          ground_truth=[], agent_timeout=30)
    plan = runner.RunPlan(problems=[problem], agents=["submitter"], results_dir=tmp_path / "results",
                          settings=AttemptSettings(stages=("mitigation",), mitigation_grace=0.0, settle_timeout=0.0),
                          observability=False,
                          serve=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True))

    records = asyncio.run(runner.run_plan(plugin_host, Cluster(tmp_path / "kubeconfig"), plan))

    assert [name for name, _args in recorder.calls] == [
        "run_started", "before_inject", "fault.inject", "after_inject",
        "before_recover", "fault.recover", "after_recover",
        "attempt_finished", "run_finished",
    ]
    calls = dict(recorder.calls)
    for hook in ("before_inject", "after_inject", "before_recover", "after_recover"):
        assert calls[hook]["problem"].id == "tiny-problem", hook
        assert calls[hook]["instance"] == instance, hook
    (record,) = records
    assert isinstance(record, AttemptRecord)
    assert record.problem_id == "tiny-problem" and record.agent == "submitter" and record.mitigation_passed is True
    assert calls["run_started"] == {"results_dir": str(tmp_path / "results"), "run_id": record.run_id}
    assert calls["attempt_finished"] == {"record": record, "results_dir": str(tmp_path / "results")}
    assert calls["run_finished"] == {"results_dir": str(tmp_path / "results"), "records": [record]}
