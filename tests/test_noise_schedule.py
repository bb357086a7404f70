"""The ambient noise schedule (sregym_core.conductor.noise): seeded, away from the fault, paused
while grading, everything reverted at the end. The sources here are recording stand-ins; the live
test (tests/e2e/test_noise_live.py) drives the real ones on the embedded cluster."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sregym_core.conductor.noise import (NoiseRunner, PlannedNoise, builtin_profiles, load_profile, plan_noise,
                                         related_components)
from sregym_core.errors import ConfigError
from sregym_core.faults import FaultContext
from sregym_core.testing.waiting import until
from sregym_core.types import (AppSpec, ComponentSpec, FaultInstance, NoiseInstance, NoiseSpec, ProblemSpec,
                               TargetSelector)

SERVICES = ["frontend", "search", "geo", "rate", "profile", "recommendation", "reservation", "user"]
PEERS = {"frontend": ["search", "profile", "recommendation", "reservation", "user"], "search": ["geo", "rate"]}


def _app() -> AppSpec:
    comps = [ComponentSpec(name=s, ports=(8080,), labels={"app": s},
                           env=tuple(f"{p.upper()}_ADDR" for p in PEERS.get(s, ())),
                           roles=("frontend",) if s == "frontend" else ("service:grpc",)) for s in SERVICES]
    comps += [ComponentSpec(name=f"postgres-{s}", kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,))
              for s in ("geo", "rate", "profile")]
    comps += [ComponentSpec(name="memcached-rate", ports=(11211,), roles=("cache:memcached",))]
    comps += [ComponentSpec(name="loadgen", roles=("workload-generator",))]
    return AppSpec(name="hotel", namespace="hotel", components=tuple(comps))


class Recording:
    """A stand-in source: records calls; active from inject until revert."""

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def inject(self, ctx, target, params):
        ctx.state["on"] = True
        self.calls.append(("inject", target.component.name))

    def is_active(self, ctx, target, params):
        return bool(ctx.state.get("on"))

    def revert(self, ctx, target, params):
        ctx.state["on"] = False
        self.calls.append(("revert", target.component.name))

    def describe(self, ctx, target, params):
        return "x"


def _sources(calls: list | None = None) -> dict[str, NoiseSpec]:
    impl = Recording(calls if calls is not None else [])
    selector = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful"))
    return {name: NoiseSpec(name=name, impl=impl, selector=selector)
            for name in ("pod-kill", "pod-failure", "rollout-restart", "network-delay", "network-loss", "warning-events",
                         "log-burst", "cpu-stress", "flapping-alert", "config-reload")}


def _problem(target: str = "geo", noise=()) -> ProblemSpec:
    return ProblemSpec(id="p1", app="hotel", faults=(FaultInstance(id="f0", fault="network-delay", target=target),),
                       noise=tuple(noise))


def test_related_components_are_the_target_its_callees_and_callers():
    assert related_components(_app(), ["geo"]) == {"geo", "search", "postgres-geo"}
    assert related_components(_app(), ["search"]) == {"search", "geo", "rate", "frontend"}


def test_same_seed_same_schedule_and_different_seeds_differ():
    profile, app, sources = load_profile("upstream"), _app(), _sources()
    first = plan_noise(profile, _problem(), app, sources, seed=7, horizon_s=3600)
    again = plan_noise(profile, _problem(), app, sources, seed=7, horizon_s=3600)
    assert [p.to_dict() for p in first] == [p.to_dict() for p in again]
    others = [[p.to_dict() for p in plan_noise(profile, _problem(), app, sources, seed=s, horizon_s=3600)]
              for s in range(8, 14)]
    assert any(o != [p.to_dict() for p in first] for o in others)


def test_upstream_profile_is_two_at_a_time_120s_then_300s_cooldown():
    plan = plan_noise(load_profile("upstream"), _problem(), _app(), _sources(), seed=1, horizon_s=1000)
    starts = sorted({p.at_s for p in plan})
    assert starts == [0.0, 420.0, 840.0]
    for start in starts:
        round_ = [p for p in plan if p.at_s == start]
        assert len(round_) == 2 and len({p.kind for p in round_}) == 2
        assert all(p.duration_s == 120 for p in round_)
        assert {p.kind for p in round_} <= {"pod-kill", "pod-failure", "network-delay", "network-loss"}
    assert all(p.params == {"delay_ms": 500} for p in plan if p.kind == "network-delay")
    assert all(p.params == {"loss_pct": 50} for p in plan if p.kind == "network-loss")


@pytest.mark.parametrize("fault_target", ["geo", "search", "rate", "frontend", "user"])
def test_targets_avoid_the_fault_and_its_direct_dependencies(fault_target):
    avoid = related_components(_app(), [fault_target])
    for seed in range(20):
        for profile in ("upstream", "heavy", "light"):
            plan = plan_noise(load_profile(profile), _problem(fault_target), _app(), _sources(), seed=seed, horizon_s=2000)
            assert plan
            for p in plan:
                assert p.target not in avoid
                assert not p.target.startswith(("loadgen", "postgres-"))  # the generator, stateful stores: never


def test_pinned_noise_plays_with_the_fault_even_when_the_profile_is_off():
    pinned = NoiseInstance(noise="pod-kill", target="user", period=100, duration=10)
    plan = plan_noise(None, _problem(noise=[pinned]), _app(), _sources(), seed=0, horizon_s=250)
    assert [(p.kind, p.target, p.at_s, p.duration_s, p.pinned) for p in plan] == [
        ("pod-kill", "user", 0.0, 10.0, True), ("pod-kill", "user", 100.0, 10.0, True),
        ("pod-kill", "user", 200.0, 10.0, True)]
    assert plan_noise(None, _problem(), _app(), _sources(), seed=0, horizon_s=250) == []


def test_profiles_are_data_and_bad_ones_are_clear_errors(tmp_path: Path):
    assert {"upstream", "light", "heavy"} <= set(builtin_profiles())
    assert load_profile("off") is None and load_profile(None) is None
    with pytest.raises(ConfigError, match="unknown noise profile 'loud'"):
        load_profile("loud")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kinds": [], "concurrent": 1}))
    with pytest.raises(ConfigError, match=r"\$\.kinds"):
        load_profile(str(bad))
    bad.write_text(json.dumps({"kinds": ["pod-kill"], "concurrent": 0}))
    with pytest.raises(ConfigError, match=r"\$\.concurrent"):
        load_profile(str(bad))
    bad.write_text(json.dumps({"kinds": ["pod-kill"], "bogus": 1}))
    with pytest.raises(ConfigError, match=r"\$\.bogus"):
        load_profile(str(bad))
    good = tmp_path / "short.yaml"
    good.write_text("kinds: [pod-kill]\nconcurrent: 1\nduration_s: 2\ncooldown_s: 3\n")
    assert load_profile(str(good)).duration_s == 2
    with pytest.raises(ConfigError, match="no noise source named 'pod-kill'"):
        plan_noise(load_profile(str(good)), _problem(), _app(), {}, seed=0, horizon_s=10)


def _runner(plan, calls):
    app = _app()
    ctx = FaultContext(kubeconfig=Path("/nonexistent"), namespace="hotel", app=app)
    return NoiseRunner(plan, _sources(calls), ctx, app, settle_timeout=1.0)


def test_runner_injects_and_reverts_on_schedule_and_stop_reverts_everything():
    calls: list = []
    # the second inject is due 1.9 s before the first one's revert: a loaded machine cannot swap them
    plan = [PlannedNoise(kind="pod-kill", target="user", at_s=0.0, duration_s=2.0),
            PlannedNoise(kind="log-burst", target="profile", at_s=0.1, duration_s=30.0)]

    async def main():
        runner = _runner(plan, calls)
        await runner.start()
        assert await until(lambda: len(calls) >= 3), calls
        assert calls == [("inject", "user"), ("inject", "profile"), ("revert", "user")]
        await runner.stop()  # the long one is still live: stop reverts it
        return runner

    runner = asyncio.run(main())
    assert calls[-1] == ("revert", "profile")
    actions = [(e["action"], e["kind"], e["target"]) for e in runner.events]
    assert actions == [("inject", "pod-kill", "user"), ("inject", "log-burst", "profile"),
                       ("revert", "pod-kill", "user"), ("revert", "log-burst", "profile")]
    assert all("offset_s" in e and "at" in e for e in runner.events)


def test_grading_pauses_the_schedule_and_reverts_what_is_live():
    calls: list = []
    # the second is due 1 s in: long after the first one's inject on a loaded machine, and before grading ends
    plan = [PlannedNoise(kind="pod-kill", target="user", at_s=0.0, duration_s=30.0),
            PlannedNoise(kind="log-burst", target="profile", at_s=1.0, duration_s=30.0)]
    seen_during_grading: list = []

    def recorded(action, target):
        return any(e["action"] == action and e["target"] == target for e in runner.events)

    async def main():
        nonlocal runner
        runner = _runner(plan, calls)
        await runner.start()
        assert await until(lambda: recorded("inject", "user"))

        async def grade(solution):
            seen_during_grading.append(list(calls))
            await asyncio.sleep(1.5)  # longer than the 1 s at which the next one is due
            seen_during_grading.append(list(calls))
            return "graded"

        assert await runner.paused(grade)("fix") == "graded"
        assert ("inject", "profile") not in calls  # the clock stood still while grading
        assert await until(lambda: recorded("inject", "profile"))  # and runs on after it (its event recorded)
        await runner.stop()
        return runner

    runner = None

    runner = asyncio.run(main())
    assert seen_during_grading[0] == [("inject", "user"), ("revert", "user")]
    assert seen_during_grading[0] == seen_during_grading[1]
    assert [e["action"] for e in runner.events] == ["inject", "pause", "revert", "resume", "inject", "revert"]


# ------------------------------------------------------------------ curated problems with pinned noise


def _real_host():
    import importlib.util

    if importlib.util.find_spec("sregym_noise_basic") is None or importlib.util.find_spec("sregym_app_hotel_reservation") is None:
        pytest.skip("needs sregym-noise-basic and hotel-reservation")
    from sregym_core.plugins import new_plugin_host

    return new_plugin_host()


def test_curated_noise_problems_pin_unrelated_noise_that_starts_with_the_fault():
    from sregym_core.problems import resolve_problem

    host = _real_host()
    noisy = [p for p in host.get_problems().values() if "noise" in p.tags]
    assert len(noisy) >= 3
    app = host.get_apps()["hotel-reservation"]
    for problem in noisy:
        resolve_problem(problem, host)
        plan = plan_noise(None, problem, app, host.get_noise_sources(), seed=0, horizon_s=problem.agent_timeout)
        assert any(p.at_s == 0 for p in plan), problem.id  # part of the scenario: it coincides with the fault
        assert not {p.target for p in plan} & related_components(app, [f.target for f in problem.faults]), problem.id


def test_pinned_noise_on_a_fault_target_or_with_bad_params_is_rejected(tmp_path: Path):
    from sregym_core.problems import load_problem_file, resolve_problem

    host = _real_host()
    path = tmp_path / "p.yaml"
    path.write_text("id: bad-noise\napp: hotel-reservation\nfaults:\n- {id: f0, fault: scale-zero, target: rate}\n"
                    "noise:\n- {noise: pod-kill, target: rate}\n- {noise: warning-events, target: geo, params: {count: 0}}\n"
                    "- {noise: log-burst, target: frontend}\n")
    with pytest.raises(ConfigError) as err:
        resolve_problem(load_problem_file(path), host)
    paths = [p for p, _ in err.value.errors]
    assert "$.noise[0].target" in paths and "$.noise[2].target" in paths
    assert any(p.startswith("$.noise[1].params") for p in paths)


def test_nothing_new_starts_once_grading_began_and_the_quiet_starts_after_settling():
    calls: list = []
    plan = [PlannedNoise(kind="pod-kill", target="user", at_s=0.0, duration_s=30.0),
            PlannedNoise(kind="log-burst", target="profile", at_s=0.0, duration_s=30.0)]

    async def main():
        app = _app()
        sources = _sources(calls)

        class SlowInject(Recording):
            def inject(self, ctx, target, params):
                import time as _t
                _t.sleep(2.0)  # grading is asked for while this one is starting
                super().inject(ctx, target, params)

        sources = {k: (NoiseSpec(name=k, impl=SlowInject(calls), selector=v.selector) if k == "pod-kill" else v)
                   for k, v in sources.items()}
        runner = NoiseRunner(plan, sources, FaultContext(kubeconfig=Path("/x"), namespace="hotel", app=app), app,
                             settle_timeout=1.0, quiet_margin=1.5)
        await runner.start()
        await asyncio.sleep(0.1)
        import time as _t

        async def grade(_solution):
            return _t.monotonic()

        graded_at = await runner.paused(grade)("done")
        # the 1.5 s margin counts from the end of the pause, not from when it was asked for (the inject under
        # way then still had about 1.9 s to go): 0.75 s of slack for a loaded machine, under what a margin
        # counted from the request would miss by
        assert runner.quiet_since is not None and runner.quiet_since >= graded_at + 0.75
        await runner.stop()
        return runner

    runner = asyncio.run(main())
    assert ("inject", "profile") not in calls  # due at the same moment, but grading had begun
    assert calls == [("inject", "user"), ("revert", "user")]


def test_no_inject_lands_after_the_pause_even_one_under_way_or_already_due():
    """Issue #34 attack 6: an experiment was injected (and reverted 5 ms later) while grading had
    paused noise. The pause now counts from the moment nothing can start any more: an inject under
    way when grading asks for quiet finishes first, so every inject is recorded before the pause,
    and one that falls due meanwhile waits for the resume."""
    calls: list = []
    plan = [PlannedNoise(kind="pod-kill", target="user", at_s=0.0, duration_s=30.0),
            PlannedNoise(kind="log-burst", target="profile", at_s=0.05, duration_s=30.0)]
    during: list = []

    class SlowInject(Recording):
        def inject(self, ctx, target, params):
            import time as _t
            _t.sleep(0.4)  # in flight when grading asks for the pause
            super().inject(ctx, target, params)

    async def main():
        app = _app()
        sources = {k: (NoiseSpec(name=k, impl=SlowInject(calls), selector=v.selector) if k == "pod-kill" else v)
                   for k, v in _sources(calls).items()}
        runner = NoiseRunner(plan, sources, FaultContext(kubeconfig=Path("/x"), namespace="hotel", app=app), app,
                             settle_timeout=1.0, quiet_margin=0.0)
        await runner.start()
        await asyncio.sleep(0.1)

        async def grade(_solution):
            during.append(list(calls))
            await asyncio.sleep(0.3)
            during.append(list(calls))

        await runner.paused(grade)("done")
        await runner.stop()
        return runner

    runner = asyncio.run(main())
    actions = [e["action"] for e in runner.events]
    pause = actions.index("pause")
    assert "inject" not in actions[pause:actions.index("resume")]
    assert during[0] == during[1] == [("inject", "user"), ("revert", "user")]
