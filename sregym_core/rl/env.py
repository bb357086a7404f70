"""An SREGym problem as a reinforcement-learning environment, with Gymnasium's conventions.

``reset(seed=..., options=...) -> (observation, info)``, ``step(action) -> (observation, reward,
terminated, truncated, info)``, ``close()``. Observations are text; actions are tool calls
(:mod:`.actions`). One episode is one conductor attempt, run in-process by the conductor's own
:class:`~sregym_core.conductor.attempt.Attempt`: the same fault injection, restricted agent identity,
agent-surface tools (the very objects behind the MCP servers), judge and mitigation oracles as
``sregym run``. The policy plays the agent's part: each ``step`` is one tool call.

Reward: 0 on every step but the last; on the last, the share of the episode's graded stages that
passed (diagnosis by the judge, mitigation by the oracles on the live system), so 1.0 is a correct
diagnosis and a real fix. ``info["record"]`` then carries the attempt's result record.

Between episodes the deployed app is kept: ``reset`` recovers the faults, reconciles the app to its
post-deploy baseline (redeploying it only when that fails) and injects the next problem's faults;
``info`` says how long that took (``reset_seconds``, split into ``reconcile_seconds`` and
``inject_seconds``).

``info`` is for the training loop, not for the policy: it names the problem, which the observation
never does (the attempt id and every path the agent sees are opaque).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..agents import AgentOutcome, AgentTask
from ..errors import SregymError, UsageError
from ..types import AgentSpec, ProblemSpec
from .actions import TOOL_HELP, InvalidAction, ToolCall, parse_action

log = structlog.get_logger()

#: the agent name RL episodes are recorded under
POLICY_AGENT = "rl-policy"
#: the kubectl session (rollback stack) of the policy
POLICY_SESSION = "ssid:rl-policy"


class EpisodeOver(SregymError):
    """``step`` after the episode ended (Gymnasium leaves it undefined; here it is an error)."""


def default_reward(record: Any) -> float:
    """The share of the graded stages that passed: diagnosis (judge) and mitigation (oracles)."""
    results = [flag for flag in (record.diagnosis_passed, record.mitigation_passed) if flag is not None]
    return sum(1.0 for flag in results if flag) / len(results) if results else 0.0


class _LoopThread:
    """An event loop in a daemon thread: the env's synchronous API runs coroutines on it, so several
    environments (the vector form) work side by side."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


@attrs.define
class _Episode:
    """One attempt driven step by step: the bridge between ``step`` and the conductor's stage machine."""

    problem: ProblemSpec
    number: int
    started: asyncio.Event = attrs.Factory(asyncio.Event)  # the agent's turn began (faults injected)
    finish: asyncio.Event = attrs.Factory(asyncio.Event)  # the policy is done: let the attempt end
    task: asyncio.Task | None = None
    attempt: Any = None
    agent_task: AgentTask | None = None
    steps: int = 0
    trajectory: list[dict[str, Any]] = attrs.Factory(list)
    record: Any = None

    def running(self) -> asyncio.Task:
        """The attempt's task, which reset() starts before any step."""
        if self.task is None:
            raise EpisodeOver("no episode started: call reset()")
        return self.task

    def outcome(self) -> AgentOutcome:
        return AgentOutcome(status="ok", steps=self.steps, trajectory=tuple(self.trajectory))


class _PolicyBridge:
    """The "agent" of an RL attempt: it hands the turn to ``step`` and returns when the episode ends."""

    def __init__(self, episode: _Episode) -> None:
        self.episode = episode

    async def run(self, task: AgentTask) -> AgentOutcome:
        self.episode.agent_task = task
        self.episode.started.set()
        await self.episode.finish.wait()
        return self.episode.outcome()


class SregymEnv:
    """One environment: a cluster, the apps deployed on it, one episode at a time (see the module docs).

    Build it with :func:`sregym_core.rl.make` (``sregym.make``).
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode = None

    def __init__(self, problems: Sequence[ProblemSpec], *, host: Any, cluster: Any, owns_cluster: bool,
                 workdir: Path, max_steps: int = 50, settings: Any = None, observability: bool = True,
                 results_dir: Path | None = None, reward_fn: Callable[[Any], float] = default_reward,
                 name: str = "sregym-env") -> None:
        from ..agent_api.server import AgentServer, ServeSettings
        from ..conductor.attempt import AttemptSettings
        from ..conductor.environment import Environment

        if not problems:
            raise UsageError("an RL environment needs at least one problem")
        if max_steps < 1:
            raise UsageError(f"max_steps must be at least 1, got {max_steps}")
        self.problems = list(problems)
        self.host, self.cluster, self.owns_cluster = host, cluster, owns_cluster
        self.max_steps, self.reward_fn = max_steps, reward_fn
        self.settings = settings or AttemptSettings()
        self.workdir = Path(workdir)
        self.results_dir = Path(results_dir) if results_dir else None
        self.env = Environment(host=host, cluster=cluster, workdir=self.workdir, with_observability=observability,
                               standing_agent_access=False)
        # the agent surface on free loopback ports: outside tools may use it too, and environments
        # side by side never collide on upstream's fixed ports; it asks for this environment's own token
        # (``api_token``), so no other process on the machine submits for the policy (red-team round 11)
        import secrets

        self.api_token = secrets.token_urlsafe(24)
        self.server = AgentServer(settings=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True,
                                                         token=self.api_token))
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-rl-" + uuid.uuid4().hex[:6]
        self._rng = random.Random()
        self._loop = _LoopThread(name)
        self._up = False
        self._closed = False
        self._episode: _Episode | None = None
        self._pending_reset: Any = None  # the finished attempt whose app still needs reconciling
        self._episodes = 0
        self.reset_times: list[float] = []
        self._results = None  # where trajectories go; the records go through the host's results plugins
        if self.results_dir is not None:
            from ..results.writer import ResultsDir

            self._results = ResultsDir(self.results_dir)

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start the next episode: a problem drawn with the env's seeded generator, or
        ``options={"problem": id}``."""
        self._check_open()
        if seed is not None:
            self._rng.seed(seed)
        options = dict(options or {})
        problem = self._choose(options.pop("problem", None))
        if options:
            raise UsageError(f"unknown reset option(s): {', '.join(sorted(options))}", hints=("reset takes 'problem'",))
        return self._loop.run(self._areset(problem))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._check_open()
        return self._loop.run(self._astep(action))

    def close(self) -> None:
        """End the episode (faults recovered, app reconciled), stop the agent surface, leave the
        cluster (stopping it when this env started it). Idempotent."""
        if self._closed:
            return
        try:
            self._loop.run(self._aclose())
        finally:
            self._closed = True
            self._loop.stop()
            release = getattr(self.cluster, "release", None)
            if self._up and self.owns_cluster:
                self.cluster.down()
            elif self._up and callable(release):
                release()  # a cluster we only used keeps running, free for the next command

    def __enter__(self) -> SregymEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def unwrapped(self) -> SregymEnv:
        return self

    # ------------------------------------------------------------------ the loop side

    async def _areset(self, problem: ProblemSpec) -> tuple[str, dict[str, Any]]:
        from ..conductor.attempt import Attempt, new_attempt_id
        from ..problems import resolve_problem

        started = time.monotonic()
        if not self._up:
            await self.server.start()
            await self.env.up()
            self.server.surface.tools = self.host.get_agent_tools()
            self._up = True
            started = time.monotonic()  # the first cluster bring-up is not a reset
        if self._episode is not None and self._episode.record is None:
            await self._end_episode()  # reset mid-episode: the attempt ends and is recorded as it stands
        reconcile_s = await self._reconcile()
        resolved = resolve_problem(problem, self.host, capabilities=self.env.capabilities)
        app = self.host.get_apps()[resolved.app]
        deployed_before = self.env.is_deployed(app)
        deployed = await self.env.ensure_app(app)
        inject_started = time.monotonic()
        self._episodes += 1
        episode = _Episode(problem=resolved, number=self._episodes)
        spec = AgentSpec(name=POLICY_AGENT, summary="the RL policy driving this environment",
                         needs=frozenset({"kubeconfig"}), factory=lambda **_config: _PolicyBridge(episode))
        attempt_id = new_attempt_id()
        episode.attempt = Attempt(self.env, deployed, resolved, spec, attempt_no=episode.number, run_id=self.run_id,
                                  settings=self.settings, workdir=self.workdir / attempt_id, attempt_id=attempt_id)
        episode.task = asyncio.create_task(episode.attempt.run(self.server))
        self._episode = episode
        waiter = asyncio.create_task(episode.started.wait())
        await asyncio.wait({waiter, episode.task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        now = time.monotonic()
        info: dict[str, Any] = {"problem_id": resolved.id, "app": app.name, "episode": episode.number,
                                "attempt_id": attempt_id, "stage": episode.attempt.stage,
                                "reconcile_seconds": round(reconcile_s, 3),
                                "inject_seconds": round(now - inject_started, 3)}
        if deployed_before:  # a reset of a deployed app (not the first deploy): what RL throughput depends on
            info["reset_seconds"] = round(now - started, 3)
            self.reset_times.append(now - started)
        else:
            info["deploy_seconds"] = round(now - started, 3)
        if not episode.started.is_set():  # injection failed: the attempt is over before the policy's turn
            await self._collect(episode)
            info["error"] = episode.record.error
            return (f"The environment could not start this episode: {episode.record.error}. Call reset().", info)
        return self._briefing(episode), info

    async def _astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is None or episode.record is not None:
            raise EpisodeOver("the episode is over (or none started): call reset()")
        episode.steps += 1
        info: dict[str, Any] = {"step": episode.steps}
        if episode.running().done():  # the attempt ended by itself (its time limit)
            await self._collect(episode)
            return self._final("The episode's time limit passed.", episode, info, truncated=True)
        call: ToolCall | None
        try:
            parsed = parse_action(action)
        except InvalidAction as exc:
            info["invalid_action"] = True
            observation = str(exc)
            call = None
        else:
            call = parsed
            observation = await self._call(episode, parsed)
        episode.trajectory.append({"message": _describe(call, action),
                                   "tool_calls": [{"function_name": call.tool, "arguments": dict(call.args)}] if call else [],
                                   "observations": [{"content": observation}]})
        info["stage"] = episode.attempt.stage
        if episode.attempt.desk.finished.is_set():  # every graded stage was graded
            await self._end_episode()
            return self._final(observation, episode, info, terminated=True)
        if episode.steps >= self.max_steps:
            await self._end_episode()
            return self._final(observation + f"\n(step limit of {self.max_steps} reached)", episode, info, truncated=True)
        return observation, 0.0, False, False, info

    async def _call(self, episode: _Episode, call: ToolCall) -> str:
        surface = self.server.surface
        if call.tool == "wait":
            await asyncio.sleep(call.args["seconds"])
            return f"waited {call.args['seconds']} s (stage: {episode.attempt.stage})"
        if call.tool == "submit":
            stage = episode.attempt.stage
            code, body = await surface.submit(call.args["ans"])
            grading = episode.attempt.desk.tasks.get(stage)
            if code == 200 and grading is not None:
                await asyncio.wait({grading})  # graded while current: the next observation shows the next stage
            message = body.get("message") or body.get("detail") or body
            return f"{message} (stage now: {episode.attempt.stage})"
        if call.tool in ("exec_kubectl_cmd_safely", "rollback_command"):
            # the policy's session is this episode's: a session opened in an earlier attempt acts for no later one
            kubectl = surface.kubectl(f"{POLICY_SESSION}-{surface.generation}")
            if kubectl is None:
                return "Command Rejected: No problem has been started"
            return await (kubectl.execute(call.args["cmd"]) if call.tool == "exec_kubectl_cmd_safely"
                          else kubectl.rollback())
        return await surface.call_tool(call.tool, False, **call.args)

    async def _end_episode(self) -> None:
        episode = self._episode
        if episode is None or episode.record is not None:
            return
        episode.finish.set()
        await self._collect(episode)

    async def _collect(self, episode: _Episode) -> None:
        """Wait for the attempt to finish (graded, faults recovered) and keep its record."""
        from ..conductor.runner import _with_trajectory

        record = await episode.running()
        if self._results is not None:
            record = _with_trajectory(self._results, record, POLICY_AGENT, _TrajectoryPlan())
            # the builtin results plugin appends it to results.jsonl/results.csv; a plugin that fails
            # on it is logged by the host and the episode goes on
            self.host.attempt_finished(record, results_dir=str(self.results_dir))
        episode.record = record
        self._pending_reset = episode.attempt

    async def _reconcile(self) -> float:
        """Put the app back to its baseline after the last episode (the conductor's own reset)."""
        attempt, self._pending_reset = self._pending_reset, None
        if attempt is None:
            return 0.0
        from ..conductor.runner import reset_after_attempt

        started = time.monotonic()
        app = attempt.deployed.app
        await reset_after_attempt(self.env, app, attempt, lambda text: log.info("rl_reset", message=text))
        return time.monotonic() - started

    async def _aclose(self) -> None:
        try:
            if self._episode is not None and self._episode.record is None:
                await self._end_episode()
            if self._up:
                await self._reconcile()
        finally:
            await self.server.stop()

    # ------------------------------------------------------------------ helpers

    def _final(self, observation: str, episode: _Episode, info: dict[str, Any], *, terminated: bool = False,
               truncated: bool = False) -> tuple[str, float, bool, bool, dict[str, Any]]:
        record = episode.record
        reward = float(self.reward_fn(record))
        info.update(record=record.to_dict(), diagnosis_passed=record.diagnosis_passed,
                    mitigation_passed=record.mitigation_passed, success=record.success)
        return observation, reward, terminated, truncated, info

    def _briefing(self, episode: _Episode) -> str:
        task = episode.agent_task
        if task is None:  # reset() briefs only once the agent's turn began, which sets it
            raise EpisodeOver("the episode's attempt never reached the agent's turn")
        stages = " then ".join(episode.attempt.stages)
        return (f"You are the on-call SRE for the application {task.app_name!r} in namespace "
                f"{task.app_namespace!r}.\n{task.app_description}\n"
                f"Something is wrong. Stages: {stages}. Current stage: {episode.attempt.stage}.\n{TOOL_HELP}")

    def _choose(self, wanted: str | None) -> ProblemSpec:
        if wanted is None:
            return self._rng.choice(self.problems)
        for problem in self.problems:
            if problem.id == wanted:
                return problem
        raise UsageError(f"problem {wanted!r} is not one of this environment's",
                         hints=(f"its problems: {', '.join(p.id for p in self.problems)}",))

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("this environment is closed")


@attrs.define
class _TrajectoryPlan:
    """What the runner's trajectory writer reads from a run plan."""

    settings: Any = None


def _describe(call: ToolCall | None, action: Any) -> str:
    if call is None:
        return str(action)[:500]
    if call.tool == "exec_kubectl_cmd_safely":
        return call.args["cmd"]
    return f"{call.tool} {' '.join(str(v) for v in call.args.values())}".strip()
