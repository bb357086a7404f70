"""The harness's pytest fixtures (see :mod:`sregym_core.testing`, which loads them): plugin hosts,
the in-process CLI, an in-memory app and its recording fault context, captured logs, and the live
fixtures of :mod:`sregym_core.testing.live`.

This module is the engine side of the harness (the CLI, live clusters); :mod:`sregym_core.testing`
itself stays in the contract layer, so importing its offline helpers pulls in no engine.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from ..faults import FaultContext
from ..plugins import PluginHost, new_plugin_host, set_plugin_host
from ..types import AppSpec, ComponentSpec, Target
from . import CliOutcome
from .live import _live_cluster_home, deployed_app, embedded_cluster  # noqa: F401  (fixtures of the harness)
from .recording import RecordingFaultContext

_counter = itertools.count()


def _install(host: PluginHost):
    previous = set_plugin_host(host)
    return previous


@pytest.fixture
def plugin_host() -> Iterator[PluginHost]:
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


@pytest.fixture
def log_output():
    capture = structlog.testing.LogCapture()
    structlog.configure(processors=[capture], cache_logger_on_first_use=False)
    yield capture.entries
    structlog.reset_defaults()
