"""pytest harness for SREGym plugin authors.

Enable it explicitly in a ``conftest.py``::

    pytest_plugins = ["sregym_core.testing"]

Fixtures:

* ``plugin_manager`` — a fresh host with no builtins and no entry points, installed as the
  process-wide host for the test.
* ``plugin_manager_with_builtins`` — the same with the builtins registered.
* ``register_plugin`` — ``register_plugin(obj, name=None)`` registers hook implementations and
  unregisters them at teardown.
* ``sregym_cli`` — ``sregym_cli("list-faults", "--json")`` runs the CLI in-process against the
  fixture host and returns a :class:`CliOutcome`.
* ``fake_app`` / ``fake_target`` — an in-memory app and target; ``fake_fault_context`` a context
  whose ``kubectl`` records calls instead of running them (for contract tests of fault plumbing).
* ``log_output`` — captured structlog events.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog

from ..faults import FaultContext
from ..plugins import PluginHost, new_plugin_host, set_plugin_manager
from ..types import AppSpec, ComponentSpec, Target

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
    previous = set_plugin_manager(host)
    return previous


@pytest.fixture
def plugin_manager() -> PluginHost:
    warnings: list[str] = []
    host = new_plugin_host(builtins=False, entry_points=False, warn=warnings.append)
    previous = _install(host)
    yield host
    set_plugin_manager(previous)


@pytest.fixture
def plugin_manager_with_builtins(plugin_manager: PluginHost) -> PluginHost:
    plugin_manager.load_builtins()
    return plugin_manager


@pytest.fixture
def register_plugin(plugin_manager: PluginHost):
    names: list[str] = []

    def register(plugin: object, name: str | None = None, **kwargs: Any) -> str:
        registered = plugin_manager.register(plugin, name=name or f"test-plugin-{next(_counter)}", **kwargs)
        names.append(registered)
        return registered

    yield register
    for name in reversed(names):
        plugin_manager.unregister(name)


@pytest.fixture
def sregym_cli(plugin_manager: PluginHost, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from ..cli import App, cli

    monkeypatch.delenv("SREGYM_RAISE_ERRORS", raising=False)

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliOutcome:
        runner = CliRunner()
        app = App()
        app._host = plugin_manager
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


@attrs.define
class RecordingFaultContext(FaultContext):
    """A fault context whose kubectl records the calls instead of running them."""

    calls: list[tuple[str, ...]] = attrs.Factory(list)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        self.calls.append(args)
        return ""


@pytest.fixture
def log_output():
    capture = structlog.testing.LogCapture()
    structlog.configure(processors=[capture], cache_logger_on_first_use=False)
    yield capture.entries
    structlog.reset_defaults()
