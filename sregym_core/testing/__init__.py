"""pytest harness for SREGym plugin authors.

Enable it explicitly in a ``conftest.py``::

    pytest_plugins = ["sregym_core.testing"]

Fixtures (in :mod:`sregym_core.testing.fixtures`, which this module loads; this module itself
stays in the contract layer and imports no engine):

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

from collections.abc import Mapping
from typing import Any

import attrs

from ..faults import FaultContext
from ..types import GroundTruth, Target
from .recording import RecordingFaultContext

#: the fixtures live beside this module (they need the plugin host, the CLI and live clusters);
#: pytest loads them when a conftest names this harness
pytest_plugins = ["sregym_core.testing.fixtures"]


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


__all__ = ["CliOutcome", "RecordingFaultContext", "StateFault"]
