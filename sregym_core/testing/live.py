"""Prove a fault on a live cluster from its own package: fixtures and the live fault contract.

Fixtures (enabled with ``pytest_plugins = ["sregym_core.testing"]``):

* ``embedded_cluster`` — one embedded cluster for the whole pytest session (skipped when
  ``sregym-cluster-embedded`` is not installed). ``SREGYM_E2E_CLUSTER=<name>`` reuses a running
  one (with the ``SREGYM_HOME`` it runs under) and leaves it running.
* ``deployed_app`` — ``deployed_app("hotel-reservation")`` deploys an app once per session on that
  cluster, through the conductor's own ``Environment`` (the code path ``sregym run`` uses), and
  returns a :class:`LiveApp`. Every module on the session's cluster shares it;
  ``deployed_app.remove(name)`` takes it off again (a module done with an app other modules do not use).

:class:`LiveFaultContract` runs, per case: inject → the symptom an SRE would see (a
:mod:`~sregym_core.testing.probes` probe) → ``is_present`` → ``reference_fix`` → not present →
the workload recovers → ``recover`` → reconcile the app to its baseline for the next case.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from ..faults import FaultContext, call_fault
from ..types import ComponentSpec, Target
from ..validation import validate
from . import probes
from .probes import Live, RequestFor

CLUSTER = "e2e"
#: how long a live contract waits for the broken request kind to succeed after the reference fix:
#: an outer bound against hangs, not a service level
RECOVERY_HANG_S = 300.0


@attrs.define
class EmbeddedCluster:
    """A running embedded cluster: its state home, name and kubeconfig."""

    home: Path
    name: str = CLUSTER

    @property
    def environ(self) -> dict[str, str]:
        # the agent surface on loopback and free ports: tests run side by side with other environments
        return {**os.environ, "SREGYM_HOME": str(self.home), "API_BIND_HOST": "127.0.0.1", "API_PORT": "0",
                "MCP_SERVER_PORT": "0"}

    @property
    def kubeconfig(self) -> Path:
        return self.home / "clusters" / self.name / "kubeconfig"

    @property
    def workdir(self) -> Path:
        return self.home / "work"


def _sregym() -> str:
    return str(Path(sys.executable).parent / "sregym")


@pytest.fixture(scope="session")
def embedded_cluster(tmp_path_factory) -> Iterator[EmbeddedCluster]:
    pytest.importorskip("sregym_cluster_embedded", reason="needs the sregym-cluster-embedded plugin")
    import psutil

    reuse = os.environ.get("SREGYM_E2E_CLUSTER")
    if reuse:
        yield EmbeddedCluster(Path(os.environ["SREGYM_HOME"]), reuse)
        return
    cluster = EmbeddedCluster(tmp_path_factory.mktemp("sregym-e2e"))
    before = {p.pid for p in psutil.process_iter()}
    up = subprocess.run([_sregym(), "cluster", "up", "--name", cluster.name, "--nodes", "1"], env=cluster.environ,
                        capture_output=True, text=True,
                        timeout=float(os.environ.get("SREGYM_CLUSTER_START_TIMEOUT", "180")) + 60)
    assert up.returncode == 0, up.stderr
    try:
        yield cluster
    finally:
        subprocess.run([_sregym(), "cluster", "down", "--name", cluster.name], env=cluster.environ,
                       capture_output=True, timeout=120)
    time.sleep(1.0)
    leftovers = [p for p in psutil.process_iter(["pid", "cmdline"])
                 if p.pid not in before and str(cluster.home) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, f"processes left behind: {[p.info['cmdline'][:3] for p in leftovers]}"


class LiveApp:
    """One app deployed on the session's cluster, as the live contract drives it."""

    def __init__(self, host: Any, env: Any, deployed: Any) -> None:
        self.host, self.env, self.deployed = host, env, deployed
        self.app = deployed.app

    def run(self, coro: Any) -> Any:
        return asyncio.run(coro)

    def live(self, since: float, extra: dict[str, ComponentSpec] | None = None, *,
             request_for: RequestFor | None = None, frontend: tuple[str, int] = ("frontend", 5000)) -> Live:
        components = {c.name: c for c in self.app.components} | (extra or {})
        return Live(self.env.cluster.kubeconfig(), self.env.kubectl, self.app.namespace, components,
                    self.deployed.workload, since, request_for=request_for, frontend=frontend)

    def context(self) -> FaultContext:
        """A fresh admin fault context, as the conductor makes one per fault instance (the admin API
        client, and the deployed app's workload generator as the users probe)."""
        return FaultContext(kubeconfig=self.env.cluster.kubeconfig(), namespace=self.app.namespace, app=self.app,
                            cluster=self.env.cluster, kubectl_path=self.env.kubectl, api=lambda: self.env.kube.api,
                            users=self.deployed.workload)

    def reset(self, *, restore_volumes: bool = False) -> None:
        """Reconcile the app to its baseline (what the conductor does between problems). No agent
        acted, so the volumes are not put back unless asked (it restarts every datastore)."""
        self.run(self.env.reset_app(self.app.name, restore_volumes=restore_volumes))


@contextlib.contextmanager
def _home(cluster: EmbeddedCluster) -> Iterator[None]:
    """SREGYM_HOME set to the session cluster's home inside the block, restored after it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SREGYM_HOME", str(cluster.home))
        yield


@pytest.fixture(scope="session")
def deployed_app(embedded_cluster) -> Iterator[Callable[[str], LiveApp]]:
    from ..clusters import get_cluster
    from ..conductor.environment import Environment
    from ..plugins import new_plugin_host

    # the cluster plugin finds its state through SREGYM_HOME: point it at the session's cluster
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SREGYM_HOME", str(embedded_cluster.home))
        host = new_plugin_host()
        cluster = get_cluster(host, provider="embedded", name=embedded_cluster.name)
        # the same stack and app parameters as the CLI's deploys on this shared cluster, so deploying
        # again changes nothing (no rollout) before or after
        env = Environment(host=host, cluster=cluster, workdir=embedded_cluster.workdir / "live-contract")
        apps: dict[str, LiveApp] = {}

        def deploy(name: str) -> LiveApp:
            if name not in apps:
                async def bring_up() -> Any:
                    await env.ensure_observability()
                    return await env.ensure_app(host.get_apps()[name])

                # a module fixture deploys before the per-test _live_cluster_home runs: pin the home
                # here too, whatever another module's fixture left in the variable
                with _home(embedded_cluster):
                    apps[name] = LiveApp(host, env, asyncio.run(bring_up()))
            else:  # a `sregym run` on this cluster since idles the users as it ends: they run again
                with _home(embedded_cluster):
                    asyncio.run(env.resume_users(name))
            return apps[name]

        def remove(name: str) -> None:
            """Take app ``name`` off the session's cluster (a later ``deploy(name)`` deploys it again):
            a module done with an app frees the 2-core machine of its pods and workload."""
            live = apps.pop(name, None)
            if live is not None:
                with _home(embedded_cluster):
                    try:
                        asyncio.run(env.remove_app(live.app))
                    except Exception as exc:  # noqa: BLE001 - a clean-up that failed is not a test's failure
                        warnings.warn(f"could not remove {name} from the session's cluster: {exc}", stacklevel=2)

        deploy.remove = remove  # type: ignore[attr-defined]
        yield deploy


@pytest.fixture(autouse=True)
def _live_cluster_home(request: pytest.FixtureRequest) -> Any:
    """Every test on the session's cluster runs with its SREGYM_HOME, whatever another package's
    fixture did to the variable since ``deployed_app`` set it (the cluster handle finds its state
    through it)."""
    if "deployed_app" not in request.fixturenames:
        yield
        return
    with _home(request.getfixturevalue("embedded_cluster")):
        yield


@attrs.frozen
class LiveCase:
    """How one fault is proved live.

    Attributes:
        target: the component to inject into.
        symptom: a probe that returns evidence once the symptom is visible.
        params: the fault's params (defaults filled from its schema).
        endpoint: the request kind whose success shows recovery (the one the fault breaks).
        symptom_timeout: seconds to wait for the symptom.
        provoke: run right after injection (a rollout that a latent fault then blocks).
    """

    target: str
    symptom: probes.Probe
    params: dict = attrs.field(factory=dict)
    endpoint: str = "search"
    symptom_timeout: float = 90.0
    provoke: Callable[[Live], None] | None = None


def rollout(component: str) -> Callable[[Live], None]:
    """A ``provoke`` that restarts the component's Deployment."""
    def provoke(live: Live) -> None:
        live.kubectl("rollout", "restart", f"deployment/{component}", "-n", live.namespace)
    return provoke


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """Poll until ``predicate()`` is truthy (returns it) or ``timeout`` passes (returns the last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    return last


def _recovered(live: Live, endpoint: str, in_a_row: int = 3) -> str | None:
    """Requests of the kind the fault broke succeed again, ``in_a_row`` times in a row: an event,
    not a service level (the landing suite grades no rate or latency on a shared machine; the
    service level after a fix is graded by ``sregym validate``, docs/ci.md)."""
    for _ in range(in_a_row):
        status, _seconds = live.call(endpoint)
        if not 200 <= status < 300:
            return None
    return f"{endpoint} answered {in_a_row} requests in a row"


class LiveFaultContract:
    """Proves every fault a plugin registers on a live app (slow: needs the embedded cluster).

    Set ``plugin`` (the module with ``sregym_faults``), ``cases`` (fault name → :class:`LiveCase`),
    ``app_name`` and ``request_for`` (the app's ``request_for(kind, rng) -> (method, path)``);
    ``not_here`` lists faults that cannot run on this cluster or app, with the reason (they must
    then need a capability the embedded cluster lacks, or be covered by a test of their own).
    ``test_every_fault_has_a_live_case`` (fast) fails for a fault with neither.
    """

    plugin: ClassVar[Any] = None
    cases: ClassVar[dict[str, LiveCase]] = {}
    not_here: ClassVar[dict[str, str]] = {}
    app_name: ClassVar[str] = "hotel-reservation"
    request_for: ClassVar[RequestFor | None] = None
    frontend: ClassVar[tuple[str, int]] = ("frontend", 5000)
    burst: ClassVar[tuple[int, int]] = (60, 10)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "case_name" in metafunc.fixturenames:
            if not self.cases:
                metafunc.parametrize("case_name", [pytest.param(None, marks=pytest.mark.skip(reason="no live cases"))])
                return
            # a default run proves a rotating daily sample of the cases; --matrix runs every one
            today = set(daily_sample(self.cases))
            metafunc.parametrize("case_name", [name if name in today else pytest.param(name, marks=pytest.mark.matrix)
                                               for name in sorted(self.cases)])

    def _faults(self) -> dict[str, Any]:
        from .contracts import hook_records

        return {spec.name: spec for spec in hook_records(self.plugin.sregym_faults)}

    def _request_for(self) -> RequestFor | None:
        # a plain function stored on the class would be bound as a method: unwrap it
        return type(self).__dict__.get("request_for") or getattr(type(self), "request_for", None)

    def test_every_fault_has_a_live_case(self):
        if self.plugin is None:
            pytest.skip("set `plugin` on the contract subclass")
        faults = set(self._faults())
        missing = faults - set(self.cases) - set(self.not_here)
        assert not missing, f"faults without a live case: {sorted(missing)}"
        assert not (set(self.cases) - faults), "cases for faults the plugin does not register"

    @pytest.fixture
    def live_app(self, deployed_app) -> LiveApp:
        app = deployed_app(self.app_name)
        if app.app.namespace not in probes.HEALTHY_MS:  # this app's healthy latencies, once, before any fault
            live = app.live(time.time(), request_for=self._request_for(), frontend=self.frontend)
            calls = [live.call("search") for _ in range(10)]
            probes.HEALTHY_MS[live.namespace] = [seconds * 1000 for status, seconds in calls if status == 200]
            probes.HEALTHY_BURST_MS[live.namespace] = [seconds * 1000 for status, seconds
                                                       in live.burst("search", *self.burst) if status == 200]
        return app

    @pytest.mark.slow
    def test_fault_live(self, live_app, case_name):
        case = self.cases[case_name]
        spec = live_app.host.get_faults()[case_name]
        target = Target(app=live_app.app, component=live_app.app.component(case.target),
                        namespace=live_app.app.namespace)
        exercise(live_app, spec, case, target, request_for=self._request_for(), frontend=self.frontend)

    @pytest.mark.slow
    def test_not_runnable_here_is_excluded_by_capabilities(self, live_app):
        for name, why in self.not_here.items():
            if why.startswith("covered by"):
                continue
            spec = self._faults()[name]
            assert spec.needs(live_app.env.capabilities), f"{name} should need a capability this cluster lacks"


def daily_sample(names: Any, size: int | None = None, day: int | None = None) -> list[str]:
    """The group of ``size`` names (``SREGYM_LIVE_SAMPLE``, default 2) that today's runs prove live.

    Names are sorted and cut into groups; the group rotates by UTC day (``SREGYM_LIVE_GROUP=N``
    picks one by hand), so successive CI runs cover every case while each run stays short. A short
    last group is topped up from the start."""
    ordered = sorted(names)
    # 2 a day: the live lane runs every pack's cases one after another on one worker (docs/ci.md),
    # so the landing check stays within its budget; --matrix proves every case
    size = size or int(os.environ.get("SREGYM_LIVE_SAMPLE", 2))
    if len(ordered) <= size:
        return ordered
    groups = -(-len(ordered) // size)
    if day is None:
        day = int(os.environ.get("SREGYM_LIVE_GROUP", int(time.time() // 86400)))
    chosen = ordered[(day % groups) * size:(day % groups + 1) * size]
    return chosen + ordered[:size - len(chosen)]


def exercise(live_app: LiveApp, spec: Any, case: LiveCase, target: Target, *, request_for: RequestFor | None = None,
             frontend: tuple[str, int] = ("frontend", 5000)) -> dict[str, float]:
    """Inject → symptom → is_present → reference fix → gone → recovered; then recover and reset.
    Returns the seconds each phase took."""
    params = validate(dict(case.params), dict(spec.params_schema), what=f"params of {spec.name}", fill_defaults=True)
    ctx = live_app.context()
    live = live_app.live(time.time(), {target.component.name: target.component}, request_for=request_for,
                         frontend=frontend)
    impl = spec.impl
    fixed = False
    phases: dict[str, float] = {}
    mark = time.monotonic()

    def phase(label: str) -> None:
        nonlocal mark
        now = time.monotonic()
        phases[label] = round(now - mark, 1)
        mark = now

    try:
        live_app.run(call_fault(impl.inject, ctx, target, params))
        if case.provoke:
            case.provoke(live)
        phase("inject")
        evidence = wait_for(lambda: case.symptom(live), case.symptom_timeout)
        phase("symptom")
        assert evidence, f"{spec.name}: no symptom visible within {case.symptom_timeout:.0f} s"
        assert live_app.run(call_fault(impl.is_present, ctx, target, params)) is True
        live_app.run(call_fault(impl.reference_fix, ctx, target, params))
        phase("fix")
        gone = wait_for(lambda: not live_app.run(call_fault(impl.is_present, ctx, target, params)), 60, 1.0)
        assert gone, f"{spec.name}: still present after the reference fix"
        fixed = True
        # generous: only a hang fails here, however loaded the machine
        healthy = wait_for(lambda: _recovered(live, case.endpoint), RECOVERY_HANG_S, 1.0)
        phase("recovery")
        assert healthy, f"{spec.name}: the workload did not recover after the fix (evidence was: {evidence})"
    finally:
        try:
            live_app.run(call_fault(impl.recover, ctx, target, params))
        except Exception:
            if fixed:
                raise  # after a fix, recover must still be safe to call
        live_app.reset()
        phase("reset")
        print(f"{spec.name}: {phases}")
    return phases


def load_request_for(module: str, name: str = "request_for") -> RequestFor:
    """The app package's ``request_for`` (imported by name, so a pack's tests need not import the app)."""
    return getattr(importlib.import_module(module), name)


__all__ = ["EmbeddedCluster", "LiveApp", "LiveCase", "LiveFaultContract", "deployed_app", "embedded_cluster",
           "exercise", "load_request_for", "rollout", "wait_for"]
