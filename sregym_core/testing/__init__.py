"""pytest harness for SREGym plugin authors.

Enable it explicitly in a ``conftest.py``::

    pytest_plugins = ["sregym_core.testing"]

Fixtures:

* ``plugin_host`` — a fresh host with no builtins and no entry points, installed as the
  process-wide host for the test.
* ``plugin_host_with_builtins`` — the same with the builtins registered.
* ``register_plugin`` — ``register_plugin(obj, name=None)`` registers hook implementations and
  unregisters them at teardown.
* ``sregym_cli`` — ``sregym_cli("list-faults", "--json")`` runs the CLI in-process against the
  fixture host and returns a :class:`CliOutcome`.
* ``fake_app`` / ``fake_target`` — an in-memory app and target; ``fake_fault_context`` a
  :class:`RecordingFaultContext`, whose ``kubectl`` records calls and answers from in-memory objects
  seeded from the app's inventory (for the contract suites' offline round trip).
* ``log_output`` — captured structlog events.

Helpers: :class:`StateFault`, a :class:`~sregym_core.faults.Fault` that only changes ``ctx.state``
(for tests of the plumbing around faults). Live fixtures (``embedded_cluster``, ``deployed_app``)
and the live fault contract are in :mod:`sregym_core.testing.live`.
Real servers on the loopback for unit tests (redis-server, memcached: a free port, started until
they listen, stopped at the end) are in :mod:`sregym_core.testing.localservers`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog

from ..faults import FaultContext
from ..plugins import PluginHost, new_plugin_host, set_plugin_host
from ..types import AppSpec, ComponentSpec, GroundTruth, Target
from .live import _live_cluster_home, deployed_app, embedded_cluster  # noqa: F401  (fixtures of the harness)
from .recording import RecordingFaultContext

_counter = itertools.count()


@attrs.frozen
class CliOutcome:
    """The result of one in-process CLI run."""

    exit_code: int
    output: str
    stderr: str
    exception: BaseException | None

    def assert_success(self) -> CliOutcome:
        assert self.exit_code == 0, f"exit {self.exit_code}\nstdout:\n{self.output}\nstderr:\n{self.stderr}"
        return self

    def assert_failed(self, code: int | None = None) -> CliOutcome:
        assert self.exit_code != 0, f"expected failure, got success:\n{self.output}"
        if code is not None:
            assert self.exit_code == code, f"expected exit {code}, got {self.exit_code}\n{self.stderr}"
        return self


def _install(host: PluginHost):
    previous = set_plugin_host(host)
    return previous


@pytest.fixture
def plugin_host() -> PluginHost:
    host = new_plugin_host(builtins=False, entry_points=False)
    previous = _install(host)
    yield host
    set_plugin_host(previous)


@pytest.fixture
def plugin_host_with_builtins(plugin_host: PluginHost) -> PluginHost:
    plugin_host.load_builtins()
    return plugin_host


@pytest.fixture
def register_plugin(plugin_host: PluginHost):
    names: list[str] = []

    def register(plugin: object, name: str | None = None, **kwargs: Any) -> str:
        registered = plugin_host.register(plugin, name=name or f"test-plugin-{next(_counter)}", **kwargs)
        names.append(registered)
        return registered

    yield register
    for name in reversed(names):
        plugin_host.unregister(name)


@pytest.fixture
def sregym_cli(plugin_host: PluginHost, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from ..cli import App, cli

    monkeypatch.delenv("SREGYM_RAISE_ERRORS", raising=False)

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliOutcome:
        runner = CliRunner()
        app = App()
        app._host = plugin_host
        result = runner.invoke(cli, list(args), obj=app, input=input, env=env, catch_exceptions=True)
        exception = result.exception if not isinstance(result.exception, SystemExit) else None
        return CliOutcome(exit_code=result.exit_code, output=result.stdout, stderr=result.stderr, exception=exception)

    return run


@pytest.fixture
def fake_app(tmp_path: Path) -> AppSpec:
    return AppSpec(
        name="fake-app", summary="an in-memory app for tests", namespace="fake",
        description="A fake app with a frontend, an API and a database.",
        components=(
            ComponentSpec(name="frontend", roles=("frontend", "service:http"), ports=(8080,), env=("API_ADDR",)),
            ComponentSpec(name="api", roles=("service:grpc",), ports=(9000,), config_map="api-config", env=("DB_ADDR",)),
            ComponentSpec(name="db", kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,), pvcs=("data-db-0",)),
        ),
    )


@pytest.fixture
def fake_target(fake_app: AppSpec) -> Target:
    return Target(app=fake_app, component=fake_app.components[1], namespace=fake_app.namespace)


@pytest.fixture
def fake_fault_context(fake_app: AppSpec, tmp_path: Path) -> FaultContext:
    return RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=fake_app.namespace, app=fake_app)


class StateFault:
    """A :class:`~sregym_core.faults.Fault` that changes nothing but ``ctx.state["injected"]``."""

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = True

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
        return bool(ctx.state.get("injected"))

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = False

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = False

    def ground_truth(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
        return GroundTruth(fault="state-fault", layer="k8s", components=(target.component.name,),
                           namespace=target.namespace, resource_kind=target.component.kind,
                           mechanism="nothing (a test stand-in)", mutated_values=dict(params))


@pytest.fixture
def log_output():
    capture = structlog.testing.LogCapture()
    structlog.configure(processors=[capture], cache_logger_on_first_use=False)
    yield capture.entries
    structlog.reset_defaults()


__all__ = ["CliOutcome", "RecordingFaultContext", "StateFault"]
