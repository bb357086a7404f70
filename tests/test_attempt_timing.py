"""An attempt's stage protocol and time points, around a fake environment (no cluster).

The attempt, its stage desk and the agent surface are real; a real HTTP server is started and the
agent speaks plain HTTP to it. Only the environment (cluster, fault, judge, oracle) is faked, to
control how long injection and grading take.
"""

from __future__ import annotations

import asyncio
import json
import time
import types
from pathlib import Path

import httpx
import pytest

from sregym_core.agent_api.server import AgentServer, ServeSettings
from sregym_core.agents import AgentOutcome
from sregym_core.conductor.attempt import Attempt, AttemptSettings
from sregym_core.oracles.mitigation import OracleVerdict
from sregym_core.types import AgentSpec, FaultInstance, FaultSpec, GroundTruth, OracleSpec, ProblemSpec, Target

INJECTION_S = 2.0
JUDGING_S = 1.0


class Judge:
    calls: list[str]

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def judge(self, solution, truth, **_kwargs):
        time.sleep(JUDGING_S)
        self.calls.append(solution)
        return types.SimpleNamespace(to_dict=lambda: {"judge": "fake", "passed": "geo" in solution})


class Oracle:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    async def evaluate(self, ctx):
        self.calls.append("oracle")
        await asyncio.sleep(0.3)
        return OracleVerdict(name="always", passed=True)


def fake_env(tmp_path: Path, judged: list[str], graded: list[str], injected: list[float]):
    class SlowFault:
        async def inject(self, ctx, target, params):
            await asyncio.sleep(INJECTION_S)
            injected.append(time.monotonic())

        async def is_present(self, ctx, target, params):
            return False

        async def recover(self, ctx, target, params):
            return None

        async def reference_fix(self, ctx, target, params):
            return None

        def ground_truth(self, ctx, target, params):
            return GroundTruth(fault="slow-inject", layer="k8s", components=("geo",), namespace="fake",
                               resource_kind="Deployment", mechanism="slow", prose="geo is slow")

    fault = FaultSpec(name="slow-inject", summary="takes 2 s to inject", impl=SlowFault())
    oracles = {"judge-rules": OracleSpec(name="judge-rules", kind="judge", factory=lambda **_: Judge(judged)),
               "always": OracleSpec(name="always", kind="mitigation", factory=lambda **_: Oracle(graded))}
    host = types.SimpleNamespace(get_faults=lambda: {"slow-inject": fault}, get_oracles=lambda: oracles, get_problems=dict,
                                 get_agent_tools=lambda: {}, before_inject=lambda *a: None,
                                 after_inject=lambda *a: None, before_recover=lambda *a: None,
                                 after_recover=lambda *a: None)
    component = types.SimpleNamespace(name="geo", kind="Deployment", service_name="geo", config_map=None)
    app = types.SimpleNamespace(name="fake-app", namespace="fake", description="A fake app.", components=(component,),
                                component=lambda name: component)
    app.target = lambda name: Target(app=app, component=component, namespace=app.namespace)
    cluster = types.SimpleNamespace(kubeconfig=lambda: tmp_path / "admin-kubeconfig")
    env = types.SimpleNamespace(host=host, cluster=cluster, kubectl="kubectl", observability=lambda: None, kube=None,
                                capabilities=frozenset({"embedded"}))
    deployed = types.SimpleNamespace(app=app, namespaces=("fake",), agent_kubeconfig=tmp_path / "agent-kubeconfig",
                                     baseline=types.SimpleNamespace(workloads=[]), workload=None)
    return env, deployed


class ImmediateAgent:
    """Submits at once, twice in a row for the diagnosis (a retried POST), then mitigates when told."""

    def __init__(self, seen: dict) -> None:
        self.seen = seen

    async def run(self, task):
        async with httpx.AsyncClient(base_url=task.api_url, trust_env=False) as http:
            first = await http.post("/submit", json={"solution": "geo has a wrong image"})
            again = await http.post("/submit", json={"solution": "a second diagnosis, to be absorbed"})
            self.seen["first"], self.seen["again"] = first.json(), again.json()
            self.seen["stage_while_judging"] = (await http.get("/status")).json()["stage"]
            while (await http.get("/status")).json()["stage"] == "diagnosis":
                await asyncio.sleep(0.05)
            await http.post("/submit", json={"solution": "done"})
            self.seen["stage_while_oracle"] = (await http.get("/status")).json()["stage"]
        return AgentOutcome(status="ok", steps=3)


@pytest.fixture(autouse=True)
def _no_cluster_identity(monkeypatch):
    """The per-attempt ServiceAccount needs a cluster; here there is none to grant it on."""
    async def nothing(self):
        return None

    monkeypatch.setattr(Attempt, "_grant_identity", nothing)
    monkeypatch.setattr(Attempt, "_revoke_identity", nothing)


def run_attempt(tmp_path, stages=None, agent_factory=None, agent_access=(), capabilities=("embedded",)):
    judged, graded, injected, seen = [], [], [], {}
    env, deployed = fake_env(tmp_path, judged, graded, injected)
    env.capabilities = frozenset(capabilities)
    problem = ProblemSpec(id="fake-problem", app="fake-app", faults=[FaultInstance(id="f0", fault="slow-inject",
                                                                                     target="geo")],
                          oracle={"always": {}}, ground_truth=[], agent_timeout=60, agent_access=agent_access)
    agent = AgentSpec(name="immediate", factory=agent_factory or (lambda **_: ImmediateAgent(seen)))
    settings = AttemptSettings(mitigation_grace=0.0, stages=stages)

    async def scenario():
        server = AgentServer(settings=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True))
        await server.start()
        try:
            attempt = Attempt(env, deployed, problem, agent, attempt_no=1, run_id="r1", settings=settings,
                              workdir=tmp_path / "work")
            created = time.monotonic()
            record = await attempt.run(server)
            return record, created
        finally:
            await server.stop()

    record, created = asyncio.run(scenario())
    return record, created, judged, graded, injected, seen


def test_times_are_measured_from_the_end_of_injection(tmp_path):
    record, created, judged, graded, injected, seen = run_attempt(tmp_path)
    assert injected and injected[0] - created >= INJECTION_S  # the injection really took ≥ 2 s
    # measured from the attempt's creation (the old behaviour) TTD would be ≥ 2 s: the agent submitted at once
    assert record.time_to_diagnose_s is not None and record.time_to_diagnose_s < INJECTION_S / 2
    assert record.diagnosis_graded_s >= JUDGING_S > record.time_to_diagnose_s
    assert record.time_to_mitigate_s >= record.diagnosis_graded_s
    assert record.mitigation_graded_s >= record.time_to_mitigate_s
    assert record.diagnosis_passed is True and record.mitigation_passed is True and record.success


def test_diagnosis_is_graded_while_current_and_a_duplicate_is_absorbed(tmp_path):
    record, _created, judged, graded, _injected, seen = run_attempt(tmp_path)
    assert seen["first"] == {"status": "200", "message": "Submission received"}
    # the other text, sent while the first was judged: upstream's answer, and the truth that it is not graded
    assert seen["again"]["status"] == "200" and seen["again"]["graded"] is False, seen["again"]
    assert record.extra["absorbed_submissions"] == [{"stage": "diagnosis", "solution": "a second diagnosis, to be absorbed"}]
    assert seen["stage_while_judging"] == "diagnosis"
    assert judged == ["geo has a wrong image"]  # the duplicate was not judged, nor taken as the mitigation
    assert seen["stage_while_oracle"] == "mitigation" and graded == ["oracle"]
    assert record.stages == ("diagnosis", "mitigation")


class MitigationOnlyAgent:
    def __init__(self, seen: dict) -> None:
        self.seen = seen

    async def run(self, task):
        async with httpx.AsyncClient(base_url=task.api_url, trust_env=False) as http:
            self.seen["stage"] = (await http.get("/status")).json()["stage"]
            self.seen["reply"] = (await http.post("/submit", json={"solution": "done"})).json()
        return AgentOutcome(status="ok")


@pytest.mark.parametrize("stages", [("mitigation",), ("diagnosis",)])
def test_stage_selection(tmp_path, stages):
    seen: dict = {}
    record, _c, judged, graded, _i, _s = run_attempt(tmp_path, stages=stages,
                                                     agent_factory=lambda **_: MitigationOnlyAgent(seen))
    assert seen["stage"] == stages[0] and seen["reply"]["status"] == "200"
    assert record.stages == stages
    if stages == ("mitigation",):
        assert judged == [] and graded == ["oracle"]
        assert record.diagnosis_passed is None and record.diagnosis is None and record.mitigation_passed is True
        assert record.success is True  # success is over the selected stages only
    else:
        assert graded == [] and len(judged) == 1
        assert record.mitigation_passed is None and record.mitigation is None
        assert record.success is False  # "done" is not a diagnosis naming geo


def test_autosubmit_submits_a_fixed_answer_in_each_stage(tmp_path):
    pytest.importorskip("sregym_agent_baselines")
    from sregym_agent_baselines.agents import AutosubmitAgent

    record, _c, judged, graded, _i, _s = run_attempt(tmp_path, agent_factory=lambda **_: AutosubmitAgent())
    assert judged == [AutosubmitAgent.ANSWER] and graded == ["oracle"]
    assert record.diagnosis_passed is False and record.success is False


OUTSIDE_AGENT = r"""
import json, sys, time, urllib.request

base = sys.argv[1]

def get(path):
    with urllib.request.urlopen(base + path) as reply:
        return json.load(reply)

def post(solution):
    request = urllib.request.Request(base + "/submit", data=json.dumps({"solution": solution}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request) as reply:
        return json.load(reply)

while True:
    try:
        if get("/status")["stage"] == "diagnosis":
            break
    except Exception:
        pass
    time.sleep(0.1)
app = get("/get_app")
print(json.dumps(post(f"geo in {app['namespaces'][0]} has a bad image")))
while get("/status")["stage"] == "diagnosis":
    time.sleep(0.1)
print(json.dumps(post("done")))
"""


def test_external_harness_waits_for_an_outside_process(tmp_path):
    """The attempt's agent is the external-harness waiter; the real agent is another process speaking HTTP."""
    import subprocess
    import sys

    from sregym_core.agent_api.external import ExternalHarness

    script = tmp_path / "outside_agent.py"
    script.write_text(OUTSIDE_AGENT)
    outside: list[subprocess.Popen] = []

    class StartsOutsideAgent(ExternalHarness):
        async def run(self, task):
            outside.append(subprocess.Popen([sys.executable, str(script), task.api_url], stdout=subprocess.PIPE,
                                            text=True))
            return await super().run(task)

    record, _c, judged, graded, _i, _s = run_attempt(tmp_path, agent_factory=lambda **_: StartsOutsideAgent(poll_s=0.1))
    out, _ = outside[0].communicate(timeout=30)
    assert outside[0].returncode == 0
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["200", "200"]
    assert judged == ["geo in fake has a bad image"] and graded == ["oracle"]
    assert record.success and record.agent_status == "ok"


def test_after_the_last_grading_the_surface_answers_done_until_the_harness_has_read_it(tmp_path):
    """An upstream driver polls /status for ``done`` after its last submission: the run keeps the
    API up, answering ``done``, until the harness has read it (at most a bounded grace)."""
    from sregym_core.agent_api.external import ExternalHarness, announce_done, hold_until_told

    env, deployed = fake_env(tmp_path, [], [], [])
    problem = ProblemSpec(id="fake-problem", app="fake-app", faults=[FaultInstance(id="f0", fault="slow-inject",
                                                                                     target="geo")],
                          oracle={"always": {}}, ground_truth=[], agent_timeout=60)
    seen: dict = {}

    class SubmitsThenWaits(ExternalHarness):
        async def run(self, task):
            seen["harness"] = asyncio.create_task(ImmediateAgent(seen).run(task))
            return await super().run(task)

    async def scenario():
        server = AgentServer(settings=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True))
        await server.start()
        try:
            agent = AgentSpec(name="external-harness", factory=lambda **_: SubmitsThenWaits(poll_s=0.1))
            attempt = Attempt(env, deployed, problem, agent, attempt_no=1, run_id="r1",
                              settings=AttemptSettings(mitigation_grace=0.0), workdir=tmp_path / "work")
            record = await attempt.run(server)
            await seen["harness"]
            announce_done(server, attempt)
            await asyncio.sleep(0.5)  # the run resets the app meanwhile; nobody has asked yet
            untold = await hold_until_told(server, grace_s=0.0)

            async def poll_later():
                await asyncio.sleep(0.3)
                async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http:
                    return ((await http.get("/status")).json(),
                            (await http.post("/submit", json={"solution": "done"})).json(),
                            (await http.get("/get_app")).json()["namespaces"])

            poller = asyncio.create_task(poll_later())
            told = await hold_until_told(server, grace_s=120)  # True: released by the read, not the grace
            return record, untold, told, await poller
        finally:
            await server.stop()

    record, untold, told, (status, reply, namespaces) = asyncio.run(scenario())
    assert record.success and untold is False and told is True
    assert status == {"stage": "done"} and reply["status"] == "done" and namespaces == ["fake"]
    stamps = [step["timestamp"] for step in record.extra["trajectory"]]
    assert [step["stage"] for step in record.extra["trajectory"]][-1] in ("tearing_down", "done")
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps) >= 2


def test_the_identity_is_revoked_before_the_grant_guard_looks_last(tmp_path, monkeypatch):
    """Red-team round 8, finding 1: the guard put the held objects back, then the identity was revoked, and an
    agent writing until its token died left its change behind. The token dies first, then the guard looks."""
    from sregym_core.conductor.grants import GrantGuard

    order: list[str] = []

    async def revoke(self):
        order.append("revoke identity")

    async def stop(self):
        order.append("grant guard's last look")
        return []

    monkeypatch.setattr(Attempt, "_revoke_identity", revoke)
    monkeypatch.setattr(GrantGuard, "stop", stop)
    run_attempt(tmp_path)
    # revoked as the fix is graded (red-team round 21, finding 2) and again as the attempt ends, before the guard
    assert order[-1] == "grant guard's last look" and order[:-1] and set(order[:-1]) == {"revoke identity"}, order


def test_the_journal_and_standing_objects_bracket_injection_and_recovery(tmp_path, monkeypatch):
    """Before anything is injected the attempt journals the granted objects (after mending the last attempt's
    leftovers) and creates the standing ones; after every fault is recovered it removes them and seals the
    journal (what a dead attempt left, or a late write of an ended one, the next one puts back:
    conductor.journal, issue 34)."""
    from sregym_core.conductor import attempt as attempt_module
    from sregym_core.conductor.grants import GrantGuard
    from sregym_core.types import AgentGrant

    order: list[str] = []

    def step(name, result=None):
        def record(*_args, **_kwargs):
            order.append(name)
            return result
        return record

    async def guard_start(self):
        order.append("guard snapshot")

    async def guard_stop(self):
        return []

    async def inject(self, instance):
        order.append("inject")

    async def recover(self, instance):
        order.append("recover")

    monkeypatch.setattr(attempt_module, "open_journal", step("journal", {}))
    monkeypatch.setattr(attempt_module, "stand_up", step("stand up", ["/apis/x/v1/things/hook"]))
    monkeypatch.setattr(attempt_module, "note_created", step("journal the created"))
    monkeypatch.setattr(attempt_module, "take_down", step("take down"))
    monkeypatch.setattr(attempt_module, "seal_journal", step("seal journal"))
    monkeypatch.setattr(GrantGuard, "start", guard_start)
    monkeypatch.setattr(GrantGuard, "stop", guard_stop)
    monkeypatch.setattr(Attempt, "_inject", inject)
    monkeypatch.setattr(Attempt, "_recover", recover)
    hook = AgentGrant(group="admissionregistration.k8s.io", resource="validatingwebhookconfigurations",
                      name="pod-admission-{namespace}", verbs=("get", "patch"), may_change={"webhooks": "any"},
                      standing={"apiVersion": "admissionregistration.k8s.io/v1",
                                "kind": "ValidatingWebhookConfiguration"})
    record, *_ = run_attempt(tmp_path, agent_access=(hook,))
    assert record.diagnosis_passed
    assert order == ["journal", "stand up", "journal the created", "inject", "guard snapshot", "recover",
                     "take down", "seal journal"]
    # a cluster the benchmark does not own gets no standing object (a BGP peer would change its routing)
    order.clear()
    run_attempt(tmp_path / "real", agent_access=(hook,), capabilities=("real",))
    assert order == ["journal", "inject", "guard snapshot", "recover", "seal journal"]


def test_a_recovery_that_fails_is_in_the_record(tmp_path, monkeypatch):
    """Red-team rounds 10 and 11: a fault whose recovery failed (the agent had left the target unreachable) was
    named only in the run log; the record now says which fault and why, and settle() still retries it."""
    async def failing_recover(self, instance):
        raise RuntimeError("the target pod is gone")

    monkeypatch.setattr(Attempt, "_recover", failing_recover)
    record, *_ = run_attempt(tmp_path)
    assert record.extra["fault_recovery_failed"] == [
        {"fault": "slow-inject", "instance": "f0", "error": "RuntimeError: the target pod is gone"}]
    # a recovery that works leaves no such entry
    monkeypatch.undo()
    monkeypatch.setattr(Attempt, "_grant_identity", _nothing)
    monkeypatch.setattr(Attempt, "_revoke_identity", _nothing)
    record, *_ = run_attempt(tmp_path / "again")
    assert "fault_recovery_failed" not in record.extra


async def _nothing(self):
    return None


class ForgedUsageAgent(ImmediateAgent):
    """Works the problem, then reports the usage a CLI printed on its stdout (red-team round 20, finding 3)."""

    async def run(self, task):
        done = await super().run(task)
        return AgentOutcome(status=done.status, steps=-2, prompt_tokens=-1000, completion_tokens=7,
                            cost=float("-inf"))


def test_usage_an_agent_reports_that_no_record_can_hold_is_left_out_and_the_attempt_still_recorded(tmp_path):
    """Negative tokens and cost printed by a CLI agent made the record invalid, and `sregym run` stopped before its
    next attempt. Now the record holds 0 for what cannot be a count or an amount, says what it left out, and keeps
    the rest; the grading is unchanged. The record passes its own schema (the writer's check)."""
    from sregym_core.results.schema import validate_record_dict

    record, *_rest = run_attempt(tmp_path, agent_factory=lambda **_: ForgedUsageAgent({}))
    assert record.success and (record.steps, record.prompt_tokens, record.completion_tokens) == (0, 0, 7)
    assert record.cost_usd == 0.0
    assert record.extra["usage_rejected"] == {"steps": "-2", "prompt_tokens": "-1000", "cost_usd": "-inf"}
    validate_record_dict(record.to_dict())


def test_usage_beyond_any_real_attempt_is_left_out():
    """Red-team round 21: 10^30 tokens and a cost of 1e300 printed by a CLI were recorded as printed."""
    from sregym_core.conductor.attempt import MAX_USAGE_COST_USD, MAX_USAGE_COUNT, agent_usage

    usage, rejected = agent_usage(AgentOutcome(status="ok", steps=12, prompt_tokens=10**30,
                                               completion_tokens=MAX_USAGE_COUNT, cost=1e300))
    assert usage == {"steps": 12, "prompt_tokens": 0, "completion_tokens": MAX_USAGE_COUNT, "cost_usd": 0.0}
    assert set(rejected) == {"prompt_tokens", "cost_usd"}
    assert agent_usage(AgentOutcome(status="ok", cost=MAX_USAGE_COST_USD))[0]["cost_usd"] == MAX_USAGE_COST_USD
