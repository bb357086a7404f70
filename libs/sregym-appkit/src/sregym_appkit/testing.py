"""What the apps' own tests check alike: the inventory against the manifests, the shipped files
against ``build()``, and the live modules' shared steps (one deployment per module, the workload's
right answers, Jaeger's API).

Host side, tests only (needs sregym-core's test harness for the live helpers, which take its
``deployed_app`` fixture and ``LiveCase`` objects as arguments).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


def assert_inventory_matches(app: Any, docs: Iterable[dict[str, Any]]) -> None:
    """Every component of the AppSpec ``app`` is in the rendered manifests ``docs`` as it says: in
    the app's namespace, its ports on its pod's containers, its labels on the pod, its PVCs mounted,
    its env set on its container, its ConfigMap and Service shipped. Agents and faults act on the
    inventory, so an inventory that drifts from the manifests sends them to objects that do not exist."""
    by_key = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    for c in app.components:
        workload = by_key[(c.kind, c.name)]
        assert workload["metadata"]["namespace"] == app.namespace, c.name
        pod = workload["spec"]["template"]["spec"]
        ports = {p["containerPort"] for x in pod["containers"] for p in x.get("ports", [])}
        assert set(c.ports) == ports, c.name
        container = next(x for x in pod["containers"] if x["name"] == c.container_name)
        assert c.labels.items() <= workload["spec"]["template"]["metadata"]["labels"].items(), c.name
        claims = {v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", []) if "persistentVolumeClaim" in v}
        assert set(c.pvcs) == claims, c.name
        env = {e["name"] for e in container.get("env", [])}
        assert set(c.env) <= env, (c.name, set(c.env) - env)
        if c.config_map:
            assert ("ConfigMap", c.config_map) in by_key, c.name
        if c.service_name:
            assert ("Service", c.service_name) in by_key, c.name


def assert_shipped_files_are_built(shipped: Any, scratch: Path) -> None:
    """The YAML files an app ships are what its ``build()`` writes today (``shipped``: its
    :class:`~sregym_appkit.manifests.ShippedManifests`; ``scratch``: an empty folder to write into). A
    stale or missing file names the command that regenerates them."""
    scratch.mkdir(parents=True, exist_ok=True)
    shipped.write(scratch)
    command = f"python -m {shipped.package}.manifests --write"
    assert sorted(p.name for p in scratch.glob("*.yaml")) == [p.name for p in shipped.files()], \
        f"the shipped files are not the built ones: {command}"
    for path in shipped.files():
        assert (scratch / path.name).read_text() == path.read_text(), f"{path.name} is stale: {command}"


def every_kind_served(stats: dict[str, Any], endpoints: Iterable[str], *, min_count: int = 60,
                      min_success_rate: float = 0.99) -> bool:
    """The healthy service level of a window of the workload's ``stats`` (``GET /stats``): at least
    ``min_count`` requests, a success rate of ``min_success_rate`` or more, no wrong content, and
    every request kind of ``endpoints`` seen succeeding."""
    seen = {e for e, s in stats["by_endpoint"].items() if s["success"]}
    return (stats["count"] >= min_count and stats["success_rate"] >= min_success_rate
            and stats["content_errors"] == 0 and seen == set(endpoints))


def deployment_for_module(deployed_app: Any, name: str) -> Iterator[Any]:
    """The body of a live module's module-scoped fixture: the app ``name`` deployed through the
    conductor's own path (sregym_core.testing.live's ``deployed_app``), its deploy time printed, and
    removed when the module is done (only this module uses it on the session's cluster)::

        @pytest.fixture(scope="module")
        def shop(deployed_app):
            yield from deployment_for_module(deployed_app, "astronomy-shop")
    """
    started = time.monotonic()
    app = deployed_app(name)
    deployed = app.env.deployed_app(name)
    print(f"{name} deploy (apply to workload healthy): {deployed.deploy_seconds:.1f} s; "
          f"fixture incl. cluster: {time.monotonic() - started:.1f} s")
    yield app
    deployed_app.remove(name)


def right_answers_on_every_kind(live: Any, kinds: Iterable[str], window_s: float) -> Callable[[], dict[str, Any] | None]:
    """A probe for ``wait_for``: the generator's stats over ``window_s`` once every request kind has
    been answered right and no answer contradicted the seeded data (behaviour, not a service level:
    the success-rate bar is for validation runs, never the shared landing machine)."""
    wanted = set(kinds)

    def probe() -> dict[str, Any] | None:
        stats = live.stats(window_s)
        seen = {e for e, s in stats["by_endpoint"].items() if s["success"]}
        return stats if seen == wanted and stats["content_errors"] == 0 else None

    return probe


def jaeger(app: Any, path: str) -> dict[str, Any]:
    """Jaeger's query API ``path`` on the app's cluster (through the API server's service proxy);
    ``{"data": [], "error": ...}`` when it does not answer JSON yet."""
    stack = next(iter(app.host.get_observability().values()))
    name, port = stack.services["jaeger"]
    out = app.live(time.time()).kubectl("get", "--raw",
                                        f"/api/v1/namespaces/{stack.namespace}/services/{name}:{port}/proxy{path}")
    try:
        return json.loads(out)
    except ValueError:
        return {"data": [], "error": out[:300]}


def assert_every_kind_answered_right(live: Any, kinds: Iterable[str], window_s: float, *,
                                     also_call: Iterable[str] = (), timeout_s: float = 300) -> dict[str, Any]:
    """Wait (``timeout_s`` only catches a hang) until the generator has answered every request kind
    right (:func:`right_answers_on_every_kind`), then send each of ``also_call`` as a user and expect
    a 200; the stats. The event, never a rate measured on a loaded machine."""
    from sregym_core.testing.live import wait_for

    stats = wait_for(right_answers_on_every_kind(live, kinds, window_s), timeout_s, 5)
    assert stats, json.dumps(live.stats(window_s))[:1500]
    for kind in also_call:
        assert_user_call_answers(live, kind, 200)
    return stats


def assert_user_call_answers(live: Any, kind: str, status: int, *, timeout_s: float = 120) -> None:
    """Send ``kind`` as a user until the app answers ``status`` (``timeout_s`` only catches a hang).
    On a loaded machine one call may outlive its client timeout (status 0), which says nothing about
    the app (CI, stop 54), so the answer is an event; a wrong status every time still fails."""
    from sregym_core.testing.live import wait_for

    statuses: list[int] = []

    def answered() -> bool:
        statuses.append(live.call(kind, timeout=15.0)[0])
        return statuses[-1] == status

    assert wait_for(answered, timeout_s, 3), f"{kind}: wanted {status}, got {statuses[-10:]}"


def live_fault_contract(plugin: Any, request_for: Callable[..., tuple[str, str]], frontend: tuple[str, int], *,
                        burst: tuple[int, int] = (20, 4)) -> type[Any]:
    """The base class of an app's live fault contract (sregym_core.testing.live's
    ``LiveFaultContract``), filled in by the kit's conventions: the faults are those ``plugin``
    registers, the app is the one its package's ``app`` module names (``NAME``), the probes send
    ``request_for(kind, rng)`` to ``frontend`` (service, port), and the healthy latency inside a
    burst is measured with ``burst`` (requests, concurrency: by default 20, 4 at a time, which an
    app of one-replica services answers on a shared machine). The subclass names its cases::

        class TestMyAppLiveFaults(live_fault_contract(sregym_app_myapp.plugin, request_for, FRONTEND)):
            cases = {"wrong-image": LiveCase("backend", ...)}
    """
    from importlib import import_module

    from sregym_core.testing.live import LiveFaultContract

    app = import_module(".app", plugin.__package__)
    return type(f"{app.NAME}-live-fault-contract", (LiveFaultContract,),
                {"plugin": plugin, "app_name": app.NAME, "request_for": request_for, "frontend": frontend,
                 "burst": burst, "__module__": __name__})
