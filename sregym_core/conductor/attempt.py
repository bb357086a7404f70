"""One attempt: the stage machine ``setup → diagnosis → mitigation → tearing_down → done``.

The agent sees only the app description, the API/MCP URLs and its restricted kubeconfig. The
diagnosis is judged in the background as soon as it arrives; the mitigation oracle runs on the live
system after the second submission; then faults are recovered and the app reconciled to baseline.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..agent_api.kubectl_tool import KubectlTool
from ..agent_api.server import AgentServer
from ..agents import AgentOutcome, AgentTask, PrivilegedAccess
from ..errors import SregymError
from ..faults import FaultContext, call_fault
from ..oracles.mitigation import OracleVerdict, build_oracle
from ..problems import derive_ground_truth
from ..results.record import AGENT_STATUSES, AttemptRecord, utc_now
from ..types import AgentSpec, FaultInstance, ProblemSpec, Target
from .environment import DeployedApp, Environment
from .schedule import FaultScheduler

log = structlog.get_logger()

STAGES = ("setup", "diagnosis", "mitigation", "tearing_down", "done")


@attrs.define
class AttemptSettings:
    judge: str = "judge-rules"
    judge_model: str | None = None
    agent_timeout: float | None = None
    oracle_window: float | None = None
    mitigation_grace: float = 2.0
    agent_config: dict[str, Any] = attrs.Factory(dict)


class Attempt:
    """The live state of one attempt; also the API's :class:`SubmissionSink`."""

    def __init__(self, env: Environment, deployed: DeployedApp, problem: ProblemSpec, agent: AgentSpec, *,
                 attempt_no: int, run_id: str, settings: AttemptSettings, workdir: Path) -> None:
        self.env, self.deployed, self.problem, self.agent_spec = env, deployed, problem, agent
        self.attempt_no, self.run_id, self.settings, self.workdir = attempt_no, run_id, settings, workdir
        self.attempt_id = uuid.uuid4().hex[:12]
        self.stage = "setup"
        self.started = time.monotonic()
        self.diagnosis_text: str | None = None
        self.diagnosis_at: float | None = None
        self.mitigation_at: float | None = None
        self.mitigation_submitted = asyncio.Event()
        self.judge_task: asyncio.Task | None = None
        self.faults = env.host.get_faults()
        self.contexts: dict[str, FaultContext] = {}
        self.targets: dict[str, Target] = {}
        app = deployed.app
        base_ctx = FaultContext(kubeconfig=env.cluster.kubeconfig(), namespace=app.namespace, app=app,
                                cluster=env.cluster, kubectl_path=env.kubectl)
        for instance in problem.faults:
            self.contexts[instance.id] = base_ctx.child()
            self.targets[instance.id] = Target(app=app, component=app.component(instance.target), namespace=app.namespace)
        self.scheduler = FaultScheduler(problem.faults, self._inject, self._recover_transient)

    # ------------------------------------------------------------------ SubmissionSink

    def submit(self, solution: str) -> tuple[int, dict[str, Any]]:
        now = time.monotonic()
        if self.stage == "diagnosis":
            self.diagnosis_text, self.diagnosis_at = solution, now
            self.judge_task = asyncio.get_running_loop().create_task(self._judge(solution))
            self.stage = "mitigation"
            log.info("diagnosis_submitted", attempt=self.attempt_id, chars=len(solution))
            return 200, {"status": "accepted", "stage": self.stage,
                         "message": "Diagnosis received. Now mitigate the fault, then submit again when done."}
        if self.stage == "mitigation":
            self.mitigation_at = now
            self.stage = "tearing_down"
            self.mitigation_submitted.set()
            log.info("mitigation_submitted", attempt=self.attempt_id)
            return 200, {"status": "accepted", "stage": self.stage, "message": "Mitigation received; grading."}
        return 409, {"error": f"no submission is expected in stage {self.stage!r}", "stage": self.stage}

    def app_info(self) -> dict[str, Any]:
        app = self.deployed.app
        return {"app_name": app.name, "namespace": app.namespace, "descriptions": app.description}

    # ------------------------------------------------------------------ faults

    async def _inject(self, instance: FaultInstance) -> None:
        spec = self.faults[instance.fault]
        self.env.host.pm.hook.sregym_before_inject(problem=self.problem, instance=instance)
        await call_fault(spec.inject, self.contexts[instance.id], self.targets[instance.id], instance.params)
        self.env.host.pm.hook.sregym_after_inject(problem=self.problem, instance=instance)
        log.info("fault_injected", fault=instance.fault, target=instance.target, instance=instance.id)

    async def _recover_transient(self, instance: FaultInstance) -> None:
        await self._recover(instance)

    async def _recover(self, instance: FaultInstance) -> None:
        spec = self.faults[instance.fault]
        self.env.host.pm.hook.sregym_before_recover(problem=self.problem, instance=instance)
        await call_fault(spec.recover, self.contexts[instance.id], self.targets[instance.id], instance.params)
        self.env.host.pm.hook.sregym_after_recover(problem=self.problem, instance=instance)
        log.info("fault_recovered", fault=instance.fault, instance=instance.id)

    async def fault_present(self, index: int) -> bool:
        instance = self.problem.faults[index]
        spec = self.faults[instance.fault]
        return bool(await call_fault(spec.is_present, self.contexts[instance.id], self.targets[instance.id], instance.params))

    # ------------------------------------------------------------------ grading

    def ground_truth(self):
        if self.problem.ground_truth:
            return self.problem.ground_truth
        return tuple(derive_ground_truth(self.faults[i.fault], self.targets[i.id], i, self.contexts[i.id].state)
                     for i in self.problem.faults if i.role != "trigger")

    async def _judge(self, solution: str) -> Any:
        spec = self.env.host.get_oracles().get(self.settings.judge)
        if spec is None or spec.kind != "judge":
            raise SregymError(f"no diagnosis judge named {self.settings.judge!r}")
        options: dict[str, Any] = {"threshold": self.problem.judge_threshold}
        if self.settings.judge_model:
            options["model"] = self.settings.judge_model
        judge = spec.factory(**options)
        app = self.deployed.app
        return await asyncio.to_thread(judge.judge, solution, self.ground_truth(),
                                       app_components=tuple(c.name for c in app.components), app_namespace=app.namespace)

    def oracle_context(self) -> OracleAccess:
        return OracleAccess(self)

    # ------------------------------------------------------------------ the run

    async def run(self) -> AttemptRecord:
        record: dict[str, Any] = {"run_id": self.run_id, "problem_id": self.problem.id, "agent": self.agent_spec.name,
                                  "attempt": self.attempt_no, "app": self.problem.app, "started_at": utc_now()}
        timeouts: list[str] = []
        outcome = AgentOutcome(status="crashed", error="agent never started")
        server = AgentServer(self, KubectlTool(kubeconfig=self.deployed.agent_kubeconfig, kubectl=self.env.kubectl,
                                               namespace=self.deployed.app.namespace, cache_dir=self.workdir / "kube-cache"),
                             tools=self.env.host.get_agent_tools(), endpoints=self.env.observability())
        await server.start()
        diagnosis: dict[str, Any] | None = None
        mitigation: OracleVerdict | None = None
        try:
            await self.scheduler.start()
            try:
                await self.scheduler.wait_initial()
            except Exception as exc:  # a fault that cannot be injected is recorded, and the run goes on
                log.warning("fault_injection_failed", problem=self.problem.id, error=str(exc))
                record["error"] = f"fault injection failed: {exc}"
                outcome = AgentOutcome(status="ok", error="not started: fault injection failed")
                raise _InjectionFailed from exc
            self.stage = "diagnosis"
            task = self._agent_task(server)
            timeout = self.settings.agent_timeout or self.problem.agent_timeout
            try:
                agent = self.agent_spec.factory(**self.settings.agent_config)
            except Exception as exc:  # a bad agent configuration is a recorded failure, not a crash
                agent = _FailedAgent(f"could not create agent {self.agent_spec.name!r}: {type(exc).__name__}: {exc}")
            agent_run = asyncio.create_task(self._run_agent(agent, task))
            done, _ = await asyncio.wait({agent_run}, timeout=timeout)
            if not done:
                agent_run.cancel()
                timeouts.append("agent")
                outcome = AgentOutcome(status="timeout", error=f"agent exceeded {timeout:g} s")
                try:
                    await agent_run
                except (asyncio.CancelledError, Exception):
                    pass
            else:
                outcome = agent_run.result()
            self.stage = "tearing_down" if self.stage != "diagnosis" else self.stage
            diagnosis = await self._diagnosis_verdict()
            mitigation = await self._mitigation_verdict()
        except _InjectionFailed:
            diagnosis = {"passed": False, "error": record["error"]}
            mitigation = OracleVerdict(name="mitigation", passed=False, evidence={"reason": record["error"]})
        finally:
            self.stage = "tearing_down"
            await self.scheduler.stop()
            await server.stop()
            await self._recover_all()
            self.stage = "done"
        ttd = (self.diagnosis_at - self.started) if self.diagnosis_at else None
        ttm = (self.mitigation_at - self.started) if self.mitigation_at else None
        record.update(
            diagnosis_passed=diagnosis.get("passed") if diagnosis else False, diagnosis=diagnosis,
            mitigation_passed=mitigation.passed, mitigation=mitigation.to_dict(),
            time_to_diagnose_s=ttd, time_to_mitigate_s=ttm, steps=outcome.steps,
            prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens, cost_usd=outcome.cost,
            agent_status=outcome.status if outcome.status in AGENT_STATUSES else "ok", timeouts=tuple(timeouts),
            error=record.get("error") or outcome.error, finished_at=utc_now(),
            extra={"trajectory": list(outcome.trajectory)[:500], "attempt_id": self.attempt_id},
        )
        return AttemptRecord(**record)

    def _agent_task(self, server: AgentServer) -> AgentTask:
        app = self.deployed.app
        privileged = None
        if "ground-truth" in self.agent_spec.needs:
            fixes = []
            for instance in self.problem.faults:
                spec = self.faults[instance.fault]
                if spec.reference_fix is not None and instance.role != "trigger":
                    fixes.append(_fix(spec.reference_fix, self.contexts[instance.id], self.targets[instance.id], instance.params))
            workloads = tuple((app.namespace, self.targets[i.id].component.kind, self.targets[i.id].component.name)
                              for i in self.problem.faults)
            privileged = PrivilegedAccess(ground_truth=self.ground_truth(), reference_fixes=tuple(fixes),
                                          faulty_workloads=workloads, admin_kubeconfig=self.env.cluster.kubeconfig())
        workdir = self.workdir / "agent"
        workdir.mkdir(parents=True, exist_ok=True)
        return AgentTask(attempt_id=self.attempt_id, app_name=app.name, app_namespace=app.namespace,
                         app_description=app.description, api_url=server.api_url, mcp_url=server.mcp_url,
                         kubeconfig=self.deployed.agent_kubeconfig, workdir=workdir,
                         timeout=self.settings.agent_timeout or self.problem.agent_timeout, kubectl=self.env.kubectl,
                         config=self.settings.agent_config, privileged=privileged)

    async def _run_agent(self, agent: Any, task: AgentTask) -> AgentOutcome:
        try:
            outcome = await agent.run(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an agent crash is a result, not a benchmark failure
            log.warning("agent_crashed", agent=self.agent_spec.name, error=str(exc))
            return AgentOutcome(status="crashed", error=f"{type(exc).__name__}: {exc}")
        if not isinstance(outcome, AgentOutcome):
            return AgentOutcome(status="crashed", error=f"agent returned {type(outcome).__name__}, not AgentOutcome")
        return outcome

    async def _diagnosis_verdict(self) -> dict[str, Any] | None:
        if self.judge_task is None:
            return {"passed": False, "error": "no diagnosis was submitted"}
        try:
            verdict = await self.judge_task
        except Exception as exc:
            return {"passed": False, "error": f"judge failed: {type(exc).__name__}: {exc}"}
        return verdict.to_dict() if hasattr(verdict, "to_dict") else attrs.asdict(verdict)

    async def _mitigation_verdict(self) -> OracleVerdict:
        if self.mitigation_at is None:
            return OracleVerdict(name="mitigation", passed=False, evidence={"reason": "no mitigation was submitted"})
        oracles = {name: spec.factory for name, spec in self.env.host.get_oracles().items() if spec.kind == "mitigation"}
        config = _allow_recreated(self.problem.oracle, self._recreated())
        if self.settings.oracle_window:
            config = _override_window(config, self.settings.oracle_window)
        oracle = build_oracle(config, extra=oracles, source=f"problem {self.problem.id}")
        await asyncio.sleep(self.settings.mitigation_grace)
        return await oracle.evaluate(self.oracle_context())

    def _recreated(self) -> list[str]:
        patterns = []
        for instance in self.problem.faults:
            component = self.targets[instance.id].component
            for template in self.faults[instance.fault].recreates:
                patterns.append(template.format(component=component.name, service=component.service_name or component.name,
                                                config_map=component.config_map or ""))
        return patterns

    async def _recover_all(self) -> None:
        self.unrecovered: list[FaultInstance] = []
        for instance in reversed(self.scheduler.injected()):
            try:
                await self._recover(instance)
            except Exception as exc:  # e.g. the datastore pod was deleted by the agent: retried after reconcile
                log.warning("fault_recover_failed", fault=instance.fault, error=str(exc))
                self.unrecovered.append(instance)

    async def settle(self) -> bool:
        """After the app was reconciled to baseline: retry recoveries that failed and check that no
        fault is still present. Returns False when the environment needs a hard reset."""
        retry, self.unrecovered = list(getattr(self, "unrecovered", [])), []
        for instance in retry:
            try:
                await self._recover(instance)
            except Exception as exc:
                log.warning("fault_recover_failed_again", fault=instance.fault, error=str(exc))
                self.unrecovered.append(instance)
        if self.unrecovered:
            return False
        for index, instance in enumerate(self.problem.faults):
            if instance not in self.scheduler.ever_injected():
                continue
            try:
                if await self.fault_present(index):
                    log.warning("fault_still_present", fault=instance.fault, instance=instance.id)
                    return False
            except Exception as exc:
                log.warning("fault_check_failed", fault=instance.fault, error=str(exc))
                return False
        return True


class _InjectionFailed(Exception):
    """Internal: the problem's faults could not be injected; the attempt is recorded as such."""


class _FailedAgent:
    def __init__(self, error: str) -> None:
        self.error = error

    async def run(self, task: AgentTask) -> AgentOutcome:
        return AgentOutcome(status="crashed", error=self.error)


def _fix(func: Any, ctx: FaultContext, target: Target, params: Any):
    async def apply() -> None:
        await call_fault(func, ctx, target, params)

    return apply


def _allow_recreated(config: Any, patterns: list[str]) -> Any:
    """Let ``baseline_preserved`` accept objects the fault's correct fix has to recreate."""
    if not patterns:
        return config
    if config == "baseline_preserved":
        return {"baseline_preserved": {"allow_replaced": patterns}}
    if isinstance(config, list):
        return [_allow_recreated(item, patterns) for item in config]
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key == "baseline_preserved":
                value = dict(value or {})
                value["allow_replaced"] = [*value.get("allow_replaced", []), *patterns]
                out[key] = value
            else:
                out[key] = _allow_recreated(value, patterns)
        return out
    return config


def _override_window(config: Any, window: float) -> Any:
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key == "functional_slo" and isinstance(value, dict):
                out[key] = {**value, "window_s": window}
            elif key == "functional_slo" and value is None:
                out[key] = {"window_s": window}
            else:
                out[key] = _override_window(value, window)
        return out
    if isinstance(config, list):
        return [{"functional_slo": {"window_s": window}} if item == "functional_slo" else _override_window(item, window)
                for item in config]
    if config == "functional_slo":
        return {"functional_slo": {"window_s": window}}
    return config


@attrs.define
class OracleAccess:
    """The :class:`~sregym_core.oracles.context.OracleContext` over a live attempt."""

    attempt: Attempt

    @property
    def baseline_workloads(self) -> list[dict[str, Any]]:
        return self.attempt.deployed.baseline.workloads

    @property
    def fault_instances(self):
        return self.attempt.problem.faults

    async def list_workloads(self) -> list[dict[str, Any]]:
        return await self.attempt.env.kube.aworkloads(self.attempt.deployed.namespaces)

    async def fault_present(self, instance_index: int) -> bool:
        return await self.attempt.fault_present(instance_index)

    async def workload_stats(self, window_s: float) -> dict[str, Any]:
        workload = self.attempt.deployed.workload
        if workload is None:
            return {"count": 0, "success_rate": None, "error": "this app has no workload generator"}
        # the window must cover only traffic after the mitigation
        since = self.attempt.mitigation_at or time.monotonic()
        wait = since + window_s - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        return await workload.astats(window_s)

    async def replay_trigger(self, name: str) -> None:
        await self.attempt.scheduler.replay(name)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def now(self) -> float:
        return time.monotonic()
