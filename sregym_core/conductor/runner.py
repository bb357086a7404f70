"""Run problems × agents × attempts on one cluster, recording every attempt as it finishes."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..errors import DeployError, SregymError, UsageError
from ..plugins import PluginHost
from ..problems import resolve_problem
from ..results.record import AttemptRecord
from ..results.trajectory import TrajectoryWriter
from ..results.writer import ResultsWriter
from ..types import ProblemSpec
from .attempt import Attempt, AttemptSettings
from .environment import Environment

log = structlog.get_logger()
Progress = Callable[[str], None]


@attrs.define
class RunPlan:
    problems: Sequence[ProblemSpec]
    agents: Sequence[str]
    attempts: int = 1
    results_dir: Path = Path("results")
    resume: bool = False
    settings: AttemptSettings = attrs.Factory(AttemptSettings)
    observability: bool = True


async def run_plan(host: PluginHost, cluster: Any, plan: RunPlan, *, progress: Progress | None = None) -> list[AttemptRecord]:
    """Run every (problem, agent, attempt) of the plan; deploy each app once; reset between attempts."""
    say = progress or (lambda _text: None)
    agents = host.get_agents()
    for name in plan.agents:
        if name not in agents:
            raise UsageError(f"unknown agent {name!r}", hints=(f"installed agents: {', '.join(agents) or 'none'}",))
    writer = ResultsWriter(plan.results_dir)
    done = writer.completed_keys() if plan.resume else set()
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    env = Environment(host=host, cluster=cluster, workdir=plan.results_dir / ".work",
                      with_observability=plan.observability)
    say(f"cluster: bringing up {getattr(cluster, 'name', 'cluster')}")
    await env.up()
    records: list[AttemptRecord] = []
    structlog.contextvars.bind_contextvars(run_id=run_id)
    try:
        for problem in plan.problems:
            resolved = resolve_problem(problem, host, capabilities=env.capabilities)
            app = host.get_apps()[resolved.app]
            structlog.contextvars.bind_contextvars(problem=resolved.id, app=app.name)
            try:
                if not env.is_deployed(app):
                    say(f"{resolved.id}: deploying {app.name} (once per run)")
                deployed = await env.ensure_app(app)
            except DeployError as exc:
                for agent in plan.agents:
                    for number in range(1, plan.attempts + 1):
                        record = AttemptRecord(run_id=run_id, problem_id=resolved.id, agent=agent, attempt=number,
                                               app=app.name, deploy_failed=True, diagnosis_passed=False,
                                               mitigation_passed=False,
                                               deploy_attempts=getattr(exc, "deploy_attempts", 1), error=exc.render())
                        writer.append(record)
                        records.append(record)
                say(f"{resolved.id}: deploy failed: {exc}")
                continue
            for agent in plan.agents:
                for number in range(1, plan.attempts + 1):
                    if (resolved.id, agent, number) in done:
                        say(f"{resolved.id} × {agent} #{number}: already recorded, skipped (--resume)")
                        continue
                    say(f"{resolved.id} × {agent} #{number}: running")
                    workdir = plan.results_dir / ".work" / f"{resolved.id}-{agent}-{number}"
                    attempt = Attempt(env, deployed, resolved, agents[agent], attempt_no=number, run_id=run_id,
                                      settings=plan.settings, workdir=workdir)
                    record = await attempt.run()
                    record = _with_trajectory(writer, record, agent, plan)
                    writer.append(record)
                    records.append(record)
                    host.pm.hook.sregym_attempt_finished(record=record)
                    say(f"{resolved.id} × {agent} #{number}: diagnosis {'PASS' if record.diagnosis_passed else 'FAIL'}, "
                        f"mitigation {'PASS' if record.mitigation_passed else 'FAIL'} ({record.agent_status})")
                    started = time.monotonic()
                    deployed, actions = await _reset(env, app, attempt, say)
                    log.info("app_reset", seconds=round(time.monotonic() - started, 2), actions=len(actions))
    finally:
        structlog.contextvars.clear_contextvars()
    host.pm.hook.sregym_run_finished(results_dir=str(plan.results_dir), records=records)
    return records


async def _reset(env: Environment, app: Any, attempt: Attempt, say: Callable[[str], None]) -> tuple[Any, list[str]]:
    """Put the app back to its baseline after an attempt; redeploy it from scratch when that fails."""
    settled: list[bool] = []

    async def settle() -> None:
        settled.append(await attempt.settle())

    try:
        actions = await env.reset_app(app.name, after_reconcile=settle)
    except SregymError as exc:
        log.warning("app_reset_failed", app=app.name, error=str(exc))
        say(f"{attempt.problem.id}: {app.name} did not come back after the reset; redeploying it from scratch")
        return await env.redeploy_app(app), []
    if not all(settled):
        # a fault survived recovery (say, a datastore change on a volume): start over
        say(f"{attempt.problem.id}: a fault survived recovery; redeploying {app.name} from scratch")
        return await env.redeploy_app(app), actions
    return env.deployed_app(app.name), actions


def _with_trajectory(writer: ResultsWriter, record: AttemptRecord, agent: str, plan: RunPlan) -> AttemptRecord:
    steps = record.extra.get("trajectory") or []
    path = writer.trajectory_path(record.problem_id, agent, record.attempt, record.run_id)
    trajectory = TrajectoryWriter(path, session_id=f"{record.run_id}/{record.problem_id}/{agent}/{record.attempt}",
                                  agent_name=agent, autosave=False)
    for step in steps:
        step = dict(step)
        trajectory.add_step("agent", message=str(step.get("message") or step.get("action") or ""),
                            tool_calls=step.pop("tool_calls", ()) if isinstance(step.get("tool_calls"), list) else (),
                            prompt_tokens=step.get("prompt_tokens"), completion_tokens=step.get("completion_tokens"),
                            extra={k: v for k, v in step.items() if k not in ("message",)})
    trajectory.save()
    extra = {k: v for k, v in record.extra.items() if k != "trajectory"}
    return attrs.evolve(record, trajectory_path=writer.relative(path), extra=extra)


def run_sync(host: PluginHost, cluster: Any, plan: RunPlan, *, progress: Progress | None = None) -> list[AttemptRecord]:
    try:
        return asyncio.run(run_plan(host, cluster, plan, progress=progress))
    except SregymError:
        raise
