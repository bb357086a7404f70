"""Run problems × agents × attempts on one cluster, recording every attempt as it finishes.

Recording is the plugin host's: the run announces itself (``sregym_run_started``), hands every
record to ``sregym_attempt_finished`` and ends with ``sregym_run_finished``; the builtin results
plugin (:mod:`sregym_core.results.results_writer`) writes the files. What the run reads back
(``--resume``'s recorded keys, where a trajectory goes) it reads through a
:class:`~sregym_core.results.writer.ResultsDir`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import datetime, timezone
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..agent_api.external import EXTERNAL_AGENT, announce_done, external_agent_spec, hold_until_told
from ..agent_api.server import AgentServer, ServeSettings, environment_token
from ..clusters import capabilities_of, name_of
from ..errors import DeployError, SregymError, UsageError
from ..plugins import HookFailure, PluginHost
from ..problems import missing_capabilities, resolve_problem, unavailable_mechanisms
from ..results.record import AttemptRecord, attempt_key
from ..results.trajectory import TrajectoryWriter
from ..results.writer import ResultsDir
from ..types import ProblemSpec
from .attempt import Attempt, AttemptSettings, new_attempt_id
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
    serve: ServeSettings | None = None  # where the agent surface listens (None: API_* env, upstream's defaults)


@attrs.frozen
class WorkItem:
    problem: ProblemSpec
    agent: str
    number: int


def serve_settings_for(settings: ServeSettings, index: int, parallel: int) -> ServeSettings:
    """The agent surface of environment ``index`` of ``parallel``: one environment keeps the run's
    settings (upstream's :8000/:9954 by default); side by side, ports given explicitly are offset by
    the environment's index and the defaults become free ports (each environment prints its own)."""
    if parallel <= 1:
        return settings
    # one token for the run would let one environment's agent submit to another's API (red-team round 10, attack 3):
    # each environment asks for its own, derived from the run's (environment_token; printed with its API address)
    token = environment_token(settings.token, index) if settings.token else settings.token
    if settings.strict:
        return attrs.evolve(settings, api_port=settings.api_port + index if settings.api_port else 0,
                            mcp_port=settings.mcp_port + index if settings.mcp_port else 0, token=token)
    return attrs.evolve(settings, api_port=0, mcp_port=0, strict=True, token=token)


@attrs.define
class _RunState:
    """What the environments of one run share: the work queue, the results, the deploy failures."""

    host: PluginHost
    plan: RunPlan
    run_id: str
    agents: dict[str, Any]
    results: ResultsDir  # read side: recorded keys, trajectory paths (records go through the host)
    done: set
    items: list[WorkItem]
    queue: asyncio.Queue
    records: list[AttemptRecord] = attrs.Factory(list)
    claimed: set = attrs.Factory(set)  # indexes of items taken by an environment (or recorded as failed)
    # False in a remote worker (see :mod:`.session`): the driver that merges the records hands them to its host
    announce: bool = True

    def record(self, record: AttemptRecord) -> list[HookFailure]:
        """Hand ``record`` to the plugin host (the builtin results plugin writes it first) and keep
        it for ``sregym_run_finished``; returns the plugins that failed on it, for the run to say."""
        failures = self.host.attempt_finished(record, results_dir=str(self.plan.results_dir)) if self.announce else []
        self.records.append(record)
        return failures


async def run_plan(host: PluginHost, cluster: Any, plan: RunPlan, *, progress: Progress | None = None,
                   clusters: Sequence[Any] | None = None) -> list[AttemptRecord]:
    """Run every (problem, agent, attempt) of the plan; deploy each app once per environment; reset
    between attempts. ``clusters`` (several) run that many environments side by side, each taking
    the next work item when it is free; their records go to the one results directory."""
    say = progress or (lambda _text: None)
    clusters = list(clusters) if clusters else [cluster]
    agents = resolve_agents(host, plan)
    recorded = ResultsDir(plan.results_dir)  # the read side; the records go through the host
    items = plan_items(host, plan, capabilities_of(clusters[0]), name_of(clusters[0], "?"), say,
                       probe=mechanism_probe(clusters[0]))
    queue: asyncio.Queue = asyncio.Queue()
    for index in range(len(items)):
        queue.put_nowait(index)
    state = _RunState(host=host, plan=plan, run_id=new_run_id(), agents=agents, results=recorded,
                      done=recorded.completed_keys() if plan.resume else set(), items=items, queue=queue)
    _say_failures(say, host.run_started(str(plan.results_dir), state.run_id))
    structlog.contextvars.bind_contextvars(run_id=state.run_id)
    try:
        workers = [_environment_worker(state, handle, index, len(clusters), say) for index, handle in enumerate(clusters)]
        results = await asyncio.gather(*workers, return_exceptions=True)
    finally:
        structlog.contextvars.clear_contextvars()
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures and (len(failures) == len(clusters) or not isinstance(failures[0], SregymError)):
        raise failures[0]
    for failure in failures:  # another environment finished the work: say what this one could not do
        say(f"an environment failed and its remaining work went to the others: {failure}")
    _say_failures(say, host.run_finished(str(plan.results_dir), state.records))
    return state.records


def _say_failures(say: Progress, failures: Sequence[HookFailure]) -> None:
    """A plugin's lifecycle hook that raised, as the run reports it (the run and the other plugins went on)."""
    for failure in failures:
        say(f"{failure.describe()} (the run goes on; the other plugins were still called)")


def plan_model(plan: RunPlan) -> str | None:
    """The model the plan's agents run with (``--model``), part of each attempt's key."""
    return (plan.settings.agent_config or {}).get("model")


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def resolve_agents(host: PluginHost, plan: RunPlan) -> dict[str, Any]:
    """The plan's agents by name (a clear error for one not installed)."""
    agents = dict(host.get_agents())
    if EXTERNAL_AGENT in plan.agents:  # --external-harness: the agent runs outside, on the served ports
        agents[EXTERNAL_AGENT] = external_agent_spec()
    for name in plan.agents:
        if name not in agents:
            raise UsageError(f"unknown agent {name!r}", hints=(f"installed agents: {', '.join(agents) or 'none'}",))
    return agents


def mechanism_probe(cluster: Any) -> dict | None:
    """The cluster's fault mechanism probe (``sregym_core.mechanisms``), None when it has none."""
    from ..clusters import ProbesFaultMechanisms, capability

    probing = capability(cluster, ProbesFaultMechanisms)
    if probing is None:
        return None
    try:
        return dict(probing.fault_mechanisms())
    except Exception:  # noqa: BLE001 - a probe that fails refuses nothing: inject says why
        return None


def plan_items(host: PluginHost, plan: RunPlan, capabilities: frozenset, cluster_name: str,
               say: Progress, *, probe: dict | None = None) -> list[WorkItem]:
    """The plan's work items, problem by problem, agent by agent, attempt by attempt: every
    executor (this module's environments side by side, or a distributed one) runs these.
    ``probe``: the cluster's fault mechanism probe; a fault none of whose mechanisms for its
    operation runs there is not run either."""
    runnable = []
    for problem in plan.problems:
        # a fault whose mechanism this cluster cannot provide (say, the embedded node agent on a real
        # cluster) is not run; the run says why and goes on with the others
        missing = missing_capabilities(problem, host, capabilities)
        unavailable = unavailable_mechanisms(problem, host, probe)
        if missing:
            needs = "; ".join(f"fault {name!r} needs {', '.join(sorted(caps))}" for name, caps in missing.items())
            say(f"{problem.id}: skipped: {needs} (cluster {cluster_name!r} provides "
                f"{', '.join(sorted(capabilities))})")
        elif unavailable:
            say(f"{problem.id}: skipped: " + "; ".join(f"fault {name!r}: {why}" for name, why in unavailable.items())
                + f" (cluster {cluster_name!r})")
        else:
            runnable.append(problem)
    return [WorkItem(problem, agent, number) for problem in runnable for agent in plan.agents
            for number in range(1, plan.attempts + 1)]


async def _environment_worker(state: _RunState, cluster: Any, index: int, parallel: int, say: Progress) -> None:
    """One environment: bring its cluster up, then run work items from the shared queue until none is left."""
    plan, host = state.plan, state.host
    tag = f"[env {index + 1}] " if parallel > 1 else ""

    def tell(text: str) -> None:
        say(tag + text)

    workdir = plan.results_dir / ".work" / (f"env-{index + 1}" if parallel > 1 else "")
    env = Environment(host=host, cluster=cluster, workdir=workdir, with_observability=plan.observability,
                      standing_agent_access=False)
    # the agent surface is up for the whole run; until an attempt starts it answers 400 "No problem has been started"
    server = AgentServer(settings=serve_settings_for(plan.serve or ServeSettings.from_env(), index, parallel))
    await server.start()
    tell(f"agent API: {server.api_url} (MCP: {server.mcp_base_url}/<kubectl|prometheus|jaeger|loki|submit>/sse, "
         f"{server.mcp_url})" + (f"; this environment's token: {server.settings.token}"
                                 if parallel > 1 and server.settings.token else ""))
    try:
        say(f"cluster: bringing up {name_of(cluster)}")
        await env.up()
        while True:
            try:
                item_index = state.queue.get_nowait()
            except asyncio.QueueEmpty:
                if not await hold_until_told(server):  # an outside harness polling for `done` must read it
                    tell("the outside agent did not read 'done' within the grace; stopping the agent API")
                return
            if item_index in state.claimed:
                continue
            state.claimed.add(item_index)
            await _run_item(state, env, server, state.items[item_index], tell, index)
    finally:
        with contextlib.suppress(Exception):  # the cluster may be gone (a crash): nothing to idle then
            await env.idle_apps()
        await server.stop()


async def retire_finished_apps(state: _RunState, env: Environment, keep: str, say: Progress) -> None:
    """Before an item of app ``keep``: remove every other app this environment deployed that no item
    still waiting in the run needs. Kept, each app would go on serving its own users beside the one
    under test, so what an attempt is graded on would depend on which apps ran before it: at the end
    of the lite suite on two Ray workers each ran all four apps, and that load alone made TrainTicket
    references miss their SLO window (docs/scale.md). Items come in problem order, so an environment
    leaves an app once; a distributed worker sees one item at a time, so it hosts one app at a time.
    The last app stays deployed on a kept cluster."""
    model = plan_model(state.plan)
    waiting = {item.problem.app for index, item in enumerate(state.items) if index not in state.claimed
               and attempt_key(item.problem.id, item.agent, item.number, model) not in state.done}
    apps = state.host.get_apps()
    for name in [n for n in env.deployed_names if n != keep and n not in waiting]:
        say(f"removing {name}: no work left for it in this run")
        try:
            await env.remove_app(apps[name])
        except SregymError as exc:  # a slow namespace deletion costs load, not correctness
            say(f"{name} could not be removed: {exc}")


async def _run_item(state: _RunState, env: Environment, server: AgentServer, item: WorkItem, say: Progress,
                    env_index: int = 0) -> None:
    plan, host = state.plan, state.host
    resolved = resolve_problem(item.problem, host, capabilities=env.capabilities)
    app = host.get_apps()[resolved.app]
    structlog.contextvars.bind_contextvars(problem=resolved.id, app=app.name)
    model = plan_model(plan)
    if attempt_key(resolved.id, item.agent, item.number, model) in state.done:
        say(f"{resolved.id} × {item.agent} #{item.number}: already recorded, skipped (--resume)")
        return
    try:
        await retire_finished_apps(state, env, app.name, say)
        if not env.is_deployed(app):
            say(f"{resolved.id}: deploying {app.name} (once per run)")
        deployed = await env.ensure_app(app)
    except DeployError as exc:
        # every attempt of this problem not yet taken by an environment is recorded as failed
        failed = [item] + [other for index, other in enumerate(state.items)
                           if other.problem is item.problem and index not in state.claimed]
        state.claimed.update(index for index, other in enumerate(state.items) if other in failed)
        for other in failed:
            if attempt_key(resolved.id, other.agent, other.number, model) in state.done:
                continue
            _say_failures(say, state.record(AttemptRecord(
                run_id=state.run_id, problem_id=resolved.id, upstream_id=resolved.upstream_id, agent=other.agent,
                attempt=other.number, app=app.name, model=model, deploy_failed=True, diagnosis_passed=False,
                mitigation_passed=False, deploy_attempts=getattr(exc, "deploy_attempts", 1), error=exc.render())))
        say(f"{resolved.id}: deploy failed: {exc}")
        return
    say(f"{resolved.id} × {item.agent} #{item.number}: running")
    # an opaque id names everything the agent is handed (cwd, HOME, kubeconfig, identity);
    # the record alone maps it to the problem
    attempt_id = new_attempt_id()
    attempt = Attempt(env, deployed, resolved, state.agents[item.agent], attempt_no=item.number, run_id=state.run_id,
                      settings=plan.settings, workdir=plan.results_dir / ".work" / attempt_id, attempt_id=attempt_id)
    record = await attempt.run(server)
    if item.agent == EXTERNAL_AGENT:  # no await since the attempt reached `done`: the harness has not missed it
        announce_done(server, attempt)
    extra = {**record.extra, "environment": env_index + 1}
    reconciled = getattr(env, "last_reset_s", None)
    if reconciled is not None and attempt.injected_at is not None:
        # graded -> next fault injected: the previous attempt's reset plus this one's setup and injection
        extra["reset_s"] = round(reconciled + (attempt.injected_at - attempt.started), 3)
    record = _with_trajectory(state.results, attrs.evolve(record, extra=extra), item.agent, plan)
    _say_failures(say, state.record(record))
    say(f"{resolved.id} × {item.agent} #{item.number}: {stage_verdicts(record)} ({record.agent_status})")
    started = time.monotonic()
    await reset_after_attempt(env, app, attempt, say)
    env.last_reset_s = time.monotonic() - started
    log.info("app_reset", seconds=round(env.last_reset_s, 2))


def stage_verdicts(record: AttemptRecord) -> str:
    """``diagnosis PASS, mitigation FAIL``; a stage the attempt did not run says so."""
    return ", ".join(f"{stage} {'not run' if stage not in record.stages else 'PASS' if passed else 'FAIL'}"
                     for stage, passed in (("diagnosis", record.diagnosis_passed),
                                           ("mitigation", record.mitigation_passed)))


async def reset_after_attempt(env: Environment, app: Any, attempt: Attempt, say: Callable[[str], None]) -> tuple[Any, list[str]]:
    """Put the app back to its baseline after an attempt; redeploy it from scratch when that fails."""
    settled: list[bool] = []

    async def settle() -> None:
        settled.append(await attempt.settle())

    try:
        # a recovery that failed is retried in settle() and waits for the users: they keep running then
        retries = bool(getattr(attempt, "unrecovered", None))
        actions = await env.reset_app(app.name, after_reconcile=settle, users_during_settle=retries)
    except SregymError as exc:
        log.warning("app_reset_failed", app=app.name, error=str(exc))
        say(f"{attempt.problem.id}: {app.name} did not come back after the reset; redeploying it from scratch")
        return await env.redeploy_app(app), []
    if not all(settled):
        # a fault survived recovery (say, a datastore change on a volume): start over
        say(f"{attempt.problem.id}: a fault survived recovery; redeploying {app.name} from scratch")
        return await env.redeploy_app(app), actions
    return env.deployed_app(app.name), actions


def _with_trajectory(writer: ResultsDir, record: AttemptRecord, agent: str, plan: object) -> AttemptRecord:
    """The agent's logged steps as an ATIF v1.7 trajectory, with the tool outputs it logged as
    observations and its model as ``model_name``. (``plan``, a run plan or the RL API's stand-in, is
    not read.)"""
    steps = record.extra.get("trajectory") or []
    path = writer.trajectory_path(record.problem_id, agent, record.attempt, record.run_id)
    # the session is named by the id the problem was run as (upstream's when given), the document keeps both
    trajectory = TrajectoryWriter(path, session_id=f"{record.run_id}/{record.upstream_id or record.problem_id}/{agent}/"
                                                   f"{record.attempt}",
                                  agent_name=agent, model_name=record.model, autosave=False,
                                  extra={"problem_id": record.problem_id,
                                         **({"upstream_id": record.upstream_id} if record.upstream_id else {})})
    for step in _with_ambient_events(steps, record.extra.get("noise_events") or ()):
        if "ambient" in step:  # what happened around the agent (a pod killed, a rollout...), from the system
            event = step["ambient"]
            trajectory.add_step("system", message=f"cluster activity: {event['kind']} {event['action']} on "
                                                  f"{event['target']}" + (f" ({event['detail']})" if event.get("detail") else ""),
                                timestamp=event.get("at"), extra={"ambient_event": dict(event)})
            continue
        step = dict(step)
        observations = step.pop("observations", None)
        if not isinstance(observations, list):
            single = step.pop("observation", None)  # agents that log one output per step
            observations = [] if single is None else [single if isinstance(single, dict) else {"content": single}]
        trajectory.add_step("agent", message=str(step.get("message") or step.get("action") or ""),
                            timestamp=_iso(step.get("timestamp")),
                            tool_calls=step.pop("tool_calls", ()) if isinstance(step.get("tool_calls"), list) else (),
                            observations=[o for o in observations if isinstance(o, dict)],
                            prompt_tokens=step.get("prompt_tokens"), completion_tokens=step.get("completion_tokens"),
                            model_name=step.get("model") if isinstance(step.get("model"), str) else None,
                            extra={k: v for k, v in step.items() if k not in ("message",)})
    trajectory.save()
    extra = {k: v for k, v in record.extra.items() if k != "trajectory"}
    return attrs.evolve(record, trajectory_path=writer.relative(path), extra=extra)


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _iso(value: Any) -> str | None:
    """A step's own time (epoch seconds or ISO-8601, as agents log it) in the record's format;
    ``None`` (the time it is written) for a step that has none."""
    when = _epoch(value)
    if when is None:
        return None
    stamp = datetime.fromtimestamp(when, tz=timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _with_ambient_events(steps: list, events: Any) -> list:
    """The agent's steps with the injects/reverts of ambient disturbances placed among them by
    time (a step without a timestamp keeps its place after the one before it)."""
    items: list[tuple[float, int, Any]] = []
    last = float("-inf")
    for index, step in enumerate(steps):
        when = _epoch(step.get("timestamp")) if isinstance(step, dict) else None
        last = when if when is not None else last
        items.append((last, index, step))
    for index, event in enumerate(events):
        if isinstance(event, dict) and event.get("action") in ("inject", "revert", "error"):
            when = _epoch(event.get("at"))
            items.append((when if when is not None else float("inf"), len(steps) + index, {"ambient": event}))
    return [item for _, _, item in sorted(items, key=lambda t: (t[0], t[1]))]


def run_sync(host: PluginHost, cluster: Any, plan: RunPlan, *, progress: Progress | None = None,
             clusters: Sequence[Any] | None = None) -> list[AttemptRecord]:
    try:
        return asyncio.run(run_plan(host, cluster, plan, progress=progress, clusters=clusters))
    except SregymError:
        raise
