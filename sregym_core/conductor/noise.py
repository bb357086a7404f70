"""Ambient noise during an attempt: transient disturbances that are never the root cause.

Two parts:

* :func:`plan_noise` turns a profile (``--noise``; profiles are data in ``noise_profiles.json``
  or a JSON/YAML file), the problem's pinned ``noise:`` entries and a seed into a schedule: a
  list of :class:`PlannedNoise` (kind, target, params, start, duration). It is a pure function:
  the same seed gives the same schedule, so a run can be repeated. Targets are drawn away from
  the faults' own targets and their direct dependencies (callers and callees in the app's
  component inventory), so noise never lands on the path of the real problem.
* :class:`NoiseRunner` plays a schedule against the live cluster through the registered noise
  sources (``sregym_noise_sources``). Its clock counts only unpaused time: grading pauses it
  (:meth:`NoiseRunner.paused` reverts what is active and waits until it has settled), and
  :meth:`NoiseRunner.stop` reverts everything before the faults are recovered.

Every inject and revert is recorded (time, kind, target, action) for the attempt record. None of
this is shown to the agent: the objects noise sources create carry ordinary names.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from ..errors import ConfigError
from ..faults import FaultContext, call_fault
from ..results.record import utc_now
from ..types import AppSpec, ComponentSpec, NoiseSpec, ProblemSpec, Target

log = structlog.get_logger()

PROFILES_FILE = Path(__file__).with_name("noise_profiles.json")
#: how long a revert may take to settle (a killed pod's replacement becoming ready) while grading waits
SETTLE_TIMEOUT_S = 90.0
#: after settling, how long callers get to reconnect before the oracle's traffic window may start
QUIET_MARGIN_S = 5.0


# ---------------------------------------------------------------------------------------- profiles


@attrs.frozen(kw_only=True)
class NoiseProfile:
    """One ambient noise profile: rounds of ``concurrent`` experiments, ``duration_s`` each, then
    ``cooldown_s`` of quiet."""

    name: str
    kinds: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    concurrent: int = 1
    duration_s: float = 60.0
    cooldown_s: float = 240.0
    first_at_s: float = 0.0
    params: Mapping[str, Mapping[str, Any]] = attrs.Factory(dict)


def builtin_profiles() -> dict[str, dict[str, Any]]:
    data = json.loads(PROFILES_FILE.read_text())
    return {name: body for name, body in data.items() if not name.startswith("_")}


def load_profile(spec: str | None) -> NoiseProfile | None:
    """``off``/None → no ambient noise; a built-in name; or a JSON/YAML file with one profile."""
    if spec is None or spec == "off":
        return None
    profiles = builtin_profiles()
    if spec in profiles:
        return _profile(spec, profiles[spec], source=f"built-in profile {spec!r}")
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"unknown noise profile {spec!r}",
                          hints=(f"use off, {', '.join(sorted(profiles))}, or a path to a JSON/YAML profile file",))
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            body = yaml.safe_load(path.read_text())
        else:
            body = json.loads(path.read_text())
    except Exception as exc:  # a broken file is the user's mistake: say which and why
        raise ConfigError(f"{path}: cannot read noise profile: {exc}") from None
    return _profile(path.stem, body, source=str(path))


_PROFILE_KEYS = {"kinds", "concurrent", "duration_s", "cooldown_s", "first_at_s", "params"}


def _profile(name: str, body: Any, *, source: str) -> NoiseProfile:
    if not isinstance(body, Mapping):
        raise ConfigError(f"{source}: $: a noise profile must be a mapping")
    unknown = sorted(set(body) - _PROFILE_KEYS)
    if unknown:
        raise ConfigError(f"{source}: $.{unknown[0]}: unknown key", hints=(f"known keys: {', '.join(sorted(_PROFILE_KEYS))}",))
    kinds = body.get("kinds")
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
        raise ConfigError(f"{source}: $.kinds: a non-empty list of noise source names is required")
    for key in ("duration_s", "cooldown_s", "first_at_s"):
        value = body.get(key, 0.0 if key == "first_at_s" else None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            raise ConfigError(f"{source}: $.{key}: must be a number >= 0")
    concurrent = body.get("concurrent", 1)
    if isinstance(concurrent, bool) or not isinstance(concurrent, int) or concurrent < 1:
        raise ConfigError(f"{source}: $.concurrent: must be an integer >= 1")
    return NoiseProfile(name=name, kinds=kinds, concurrent=concurrent,
                        duration_s=float(body.get("duration_s", 60.0)), cooldown_s=float(body.get("cooldown_s", 240.0)),
                        first_at_s=float(body.get("first_at_s", 0.0)), params=dict(body.get("params") or {}))


# ---------------------------------------------------------------------------------------- planning


@attrs.frozen(kw_only=True)
class PlannedNoise:
    """One scheduled experiment; ``at_s`` counts unpaused seconds from the faults' injection."""

    kind: str
    target: str
    at_s: float
    duration_s: float
    params: Mapping[str, Any] = attrs.Factory(dict)
    pinned: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "at_s": round(self.at_s, 3),
                "duration_s": round(self.duration_s, 3), "params": dict(self.params), "pinned": self.pinned}


def _callees(component: ComponentSpec, inventory: Sequence[ComponentSpec]) -> set[str]:
    """What ``component`` calls: peers named by ``<PEER>_ADDR`` env vars, and its own datastores
    (``postgres-<name>``, ``memcached-<name>``: named after the service that owns them)."""
    names = {c.name for c in inventory}
    out = set()
    for var in component.env:
        if var.endswith("_ADDR"):
            peer = var[:-5].lower().replace("_", "-")
            if peer in names:
                out.add(peer)
    for other in inventory:
        if other.name != component.name and other.name.endswith(f"-{component.name}"):
            out.add(other.name)
    return out


def related_components(app: AppSpec, targets: Iterable[str]) -> set[str]:
    """The fault targets with their direct dependencies: what they call and what calls them."""
    inventory = app.components
    targets = set(targets)
    related = set(targets)
    for component in inventory:
        callees = _callees(component, inventory)
        if component.name in targets:
            related |= callees
        if callees & targets:
            related.add(component.name)
    return related


def eligible_targets(spec: NoiseSpec, app: AppSpec, avoid: set[str]) -> list[str]:
    return sorted(c.name for c in app.components if c.name not in avoid and spec.selector.matches(c))


def plan_noise(profile: NoiseProfile | None, problem: ProblemSpec, app: AppSpec, sources: Mapping[str, NoiseSpec], *,
               seed: int, horizon_s: float) -> list[PlannedNoise]:
    """The whole schedule for one attempt (pure: the same inputs give the same schedule).

    Pinned entries of the problem come first: each starts at 0 (with the fault) and repeats every
    ``period`` seconds when one is given. Ambient rounds of the profile follow until ``horizon_s``.
    """
    plan: list[PlannedNoise] = []
    for index, pinned in enumerate(problem.noise):
        spec = sources.get(pinned.noise)
        if spec is None:
            raise ConfigError(f"problem {problem.id}: $.noise[{index}].noise: unknown noise source {pinned.noise!r}")
        duration = float(pinned.duration or spec.default_duration)
        target = pinned.target
        if target is None:
            rng = random.Random(f"{seed}:pinned:{index}:{pinned.seed}")
            choices = eligible_targets(spec, app, related_components(app, (f.target for f in problem.faults)))
            if not choices:
                continue
            target = rng.choice(choices)
        start = 0.0
        while start < horizon_s:
            plan.append(PlannedNoise(kind=pinned.noise, target=target, at_s=start, duration_s=duration,
                                     params=dict(pinned.params), pinned=True))
            if not pinned.period:
                break
            start += float(pinned.period)
    if profile is None:
        return plan
    missing = [k for k in profile.kinds if k not in sources]
    if missing:
        raise ConfigError(f"noise profile {profile.name!r}: no noise source named {missing[0]!r}",
                          hints=("install sregym-noise-basic (`sregym plugins` lists what is registered)",))
    rng = random.Random(f"{seed}:{problem.id}:{profile.name}")
    avoid = related_components(app, (f.target for f in problem.faults))
    start = profile.first_at_s
    while start < horizon_s:
        kinds = [k for k in profile.kinds if eligible_targets(sources[k], app, avoid)]
        chosen = rng.sample(kinds, min(profile.concurrent, len(kinds)))
        used: set[str] = set()
        for kind in chosen:
            choices = [t for t in eligible_targets(sources[kind], app, avoid) if t not in used] \
                or eligible_targets(sources[kind], app, avoid)
            target = rng.choice(choices)
            used.add(target)
            plan.append(PlannedNoise(kind=kind, target=target, at_s=start, duration_s=profile.duration_s,
                                     params=dict(profile.params.get(kind, {}))))
        start += profile.duration_s + profile.cooldown_s
        if profile.duration_s + profile.cooldown_s <= 0:
            break
    return sorted(plan, key=lambda p: (p.at_s, p.kind, p.target))


# ---------------------------------------------------------------------------------------- running


@attrs.define
class _Live:
    planned: PlannedNoise
    ctx: FaultContext
    target: Target
    spec: NoiseSpec
    reverted: bool = False


Recorder = Callable[[dict[str, Any]], None]


class NoiseRunner:
    """Plays a schedule on the live cluster; its clock stops while paused."""

    def __init__(self, plan: Sequence[PlannedNoise], sources: Mapping[str, NoiseSpec], base_ctx: FaultContext | None,
                 app: AppSpec, *, clock: Callable[[], float] = time.monotonic,
                 settle_timeout: float = SETTLE_TIMEOUT_S, quiet_margin: float = QUIET_MARGIN_S) -> None:
        self.plan = list(plan)
        self.sources, self.base_ctx, self.app = sources, base_ctx, app
        self.events: list[dict[str, Any]] = []
        self._clock, self._settle_timeout, self._quiet_margin = clock, settle_timeout, quiet_margin
        self._live: list[_Live] = []
        self._task: asyncio.Task | None = None
        self._started: float | None = None
        self._paused_total = 0.0
        self._paused_since: float | None = None
        self._pauses = 0
        #: when the last pause had reverted and settled everything (the oracle's traffic window starts after it)
        self.quiet_since: float | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()

    # ---------------------------------------------------------------- clock

    def elapsed(self) -> float:
        """Unpaused seconds since :meth:`start`."""
        if self._started is None:
            return 0.0
        now = self._paused_since if self._paused_since is not None else self._clock()
        return now - self._started - self._paused_total

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        if not self.plan or self._task is not None:
            return
        self._started = self._clock()
        self._task = asyncio.create_task(self._play(), name="ambient-disturbances")

    async def stop(self) -> None:
        """Stop the schedule and revert everything still live (before the faults are recovered)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        async with self._lock:
            await self._revert_all("end")

    def paused(self, grade: Callable[[str], Awaitable[Any]]) -> Callable[[str], Awaitable[Any]]:
        """Wrap a grader: the schedule is paused (live noise reverted and settled) while it runs."""
        async def graded(solution: str) -> Any:
            await self.pause()
            try:
                return await grade(solution)
            finally:
                self.resume()

        return graded

    async def pause(self) -> None:
        # from this call on nothing new starts (_play checks _pauses); an inject already
        # under way finishes first (it cannot be taken back half-done), so the pause is recorded, and
        # noise counts as off, only once the lock is ours: no inject ever lands after the pause
        self._pauses += 1
        self._changed.set()
        async with self._lock:
            if self._pauses >= 1 and self._paused_since is None and self._started is not None:
                self._paused_since = self._clock()
                self._record_state("pause")
            await self._revert_all("grading")
            await self._settle()
        if self._live:
            # clients reconnect to a replaced pod with some backoff: the quiet starts a little later
            self.quiet_since = self._clock() + self._quiet_margin

    def resume(self) -> None:
        self._pauses = max(0, self._pauses - 1)
        self._changed.set()
        if self._pauses == 0 and self._paused_since is not None:
            self._paused_total += self._clock() - self._paused_since
            self._paused_since = None
            self._record_state("resume")
            self._changed.set()

    # ---------------------------------------------------------------- the loop

    async def _play(self) -> None:
        # reverts are due at planned.at_s + duration_s; injects at planned.at_s (both in unpaused time)
        pending = sorted(self.plan, key=lambda p: p.at_s)
        while pending or any(not live.reverted for live in self._live):
            due_reverts = [live for live in self._live if not live.reverted]
            next_times = [p.at_s for p in pending[:1]] + [l.planned.at_s + l.planned.duration_s for l in due_reverts]
            wait = min(next_times) - self.elapsed() if next_times else 0.0
            if self._pauses or self._paused_since is not None or wait > 0:
                self._changed.clear()
                if self._pauses or self._paused_since is not None:
                    await self._changed.wait()
                    continue
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout=wait)
                except TimeoutError:
                    pass
                continue
            async with self._lock:
                if self._pauses or self._paused_since is not None:
                    continue
                now = self.elapsed()
                for live in [l for l in self._live if not l.reverted and l.planned.at_s + l.planned.duration_s <= now]:
                    await self._revert(live, "expired")
                # a pause (grading) may be asked for while we inject: nothing new starts after that
                while pending and pending[0].at_s <= now and not self._pauses:
                    await self._inject(pending.pop(0))

    async def _inject(self, planned: PlannedNoise) -> None:
        spec = self.sources[planned.kind]
        component = self.app.component(planned.target)
        if component is None or self.base_ctx is None:
            self._record(planned, "skipped", detail=f"no component {planned.target!r}")
            return
        ctx = self.base_ctx.child()
        target = Target(app=self.app, component=component, namespace=self.app.namespace)
        live = _Live(planned=planned, ctx=ctx, target=target, spec=spec)
        try:
            await call_fault(spec.impl.inject, ctx, target, planned.params, retry_for=10.0)
        except Exception as exc:  # noise that cannot start is recorded; the attempt goes on
            log.warning("ambient_inject_failed", kind=planned.kind, target=planned.target, error=str(exc))
            self._record(planned, "error", detail=f"{type(exc).__name__}: {exc}")
            live.reverted = True
            await self._revert(live, "failed-inject", record=False)
            return
        self._live.append(live)
        try:
            detail = await self._describe(live)
        except asyncio.CancelledError:  # stopped while describing it: the noise is live, its inject is still recorded
            self._record(planned, "inject")
            raise
        self._record(planned, "inject", detail=detail)

    async def _revert(self, live: _Live, reason: str, *, record: bool = True) -> None:
        live.reverted = True
        try:
            await call_fault(live.spec.impl.revert, live.ctx, live.target, live.planned.params, retry_for=10.0)
        except Exception as exc:
            log.warning("ambient_revert_failed", kind=live.planned.kind, target=live.planned.target, error=str(exc))
            self._record(live.planned, "error", detail=f"revert: {type(exc).__name__}: {exc}")
            return
        if record:
            self._record(live.planned, "revert", detail=reason)

    async def _revert_all(self, reason: str) -> None:
        for live in self._live:
            if not live.reverted:
                await self._revert(live, reason)

    async def _settle(self) -> None:
        """Wait until no reverted experiment is still in effect (a killed pod's replacement is ready)."""
        deadline = self._clock() + self._settle_timeout
        for live in self._live:
            while self._clock() < deadline:
                try:
                    active = await call_fault(live.spec.impl.is_active, live.ctx, live.target, live.planned.params,
                                              retry_for=0.0)
                except Exception:
                    break
                if not active:
                    break
                await asyncio.sleep(0.5)

    async def _describe(self, live: _Live) -> str:
        try:
            return str(await call_fault(live.spec.impl.describe, live.ctx, live.target, live.planned.params, retry_for=0.0))
        except Exception:
            return ""

    # ---------------------------------------------------------------- records

    def _record(self, planned: PlannedNoise, action: str, *, detail: str = "") -> None:
        event = {"at": utc_now(), "offset_s": round(self.elapsed(), 3), "kind": planned.kind, "target": planned.target,
                 "action": action, "planned_at_s": planned.at_s, "pinned": planned.pinned, "detail": detail}
        self.events.append(event)
        log.info("ambient_event", **{k: v for k, v in event.items() if k != "at"})

    def _record_state(self, action: str) -> None:
        self.events.append({"at": utc_now(), "offset_s": round(self.elapsed(), 3), "kind": "-", "target": "-",
                            "action": action, "detail": "grading"})


def runner_for_attempt(profile_spec: str | None, seed: int, problem: ProblemSpec, app: AppSpec, host: Any,
                       base_ctx: FaultContext, horizon_s: float) -> NoiseRunner:
    """The runner an attempt uses (an empty one when there is nothing to play)."""
    profile = load_profile(profile_spec)
    if profile is None and not problem.noise:
        return NoiseRunner([], {}, base_ctx, app)
    sources = host.get_noise_sources()
    plan = plan_noise(profile, problem, app, sources, seed=seed, horizon_s=horizon_s)
    return NoiseRunner(plan, sources, base_ctx, app)


__all__ = ["NoiseProfile", "NoiseRunner", "PlannedNoise", "builtin_profiles", "load_profile", "plan_noise",
           "related_components", "runner_for_attempt"]
