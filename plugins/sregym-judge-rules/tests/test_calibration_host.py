"""Calibration finds judges and curated problems in the plugin host it is handed, never in a
process-wide host (issue #39)."""

from __future__ import annotations

import warnings

import pytest
from sregym_judge_rules.calibration import curated_truths, resolve_judge

from sregym_core import hookimpl
from sregym_core.plugins import new_plugin_host
from sregym_core.testing import StateFault
from sregym_core.types import AppSpec, ComponentSpec, FaultInstance, FaultSpec, OracleSpec, ProblemSpec


class Installed:
    """One app, one fault, one problem and one judge: everything calibration asks a host for."""

    app = AppSpec(name="tiny", namespace="tiny", components=(ComponentSpec(name="api"), ComponentSpec(name="db")))

    @hookimpl
    def sregym_apps(self):
        return [self.app]

    @hookimpl
    def sregym_faults(self):
        return [FaultSpec(name="state-fault", summary="changes ctx.state", impl=StateFault())]

    @hookimpl
    def sregym_problems(self):
        return [ProblemSpec(id="tiny-api", app="tiny", faults=(FaultInstance(id="f0", fault="state-fault", target="api"),))]

    @hookimpl
    def sregym_oracles(self):
        return [OracleSpec(name="stand-in", kind="judge", factory=lambda **options: ("stand-in", options))]


@pytest.fixture
def host():
    host = new_plugin_host(builtins=False, entry_points=False)
    host.register(Installed(), name="installed")
    return host


def test_judges_and_truths_come_from_the_host_handed_over(host):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no reaching for the deprecated global
        assert resolve_judge("stand-in", {"threshold": 0.5}, host=host) == ("stand-in", {"threshold": 0.5})
        truths = curated_truths({"tiny-api", "not-installed"}, host=host)
    assert list(truths) == ["tiny-api"]
    app, components, namespace, (truth,) = truths["tiny-api"]
    assert (app, components, namespace) == ("tiny", ("api", "db"), "tiny")
    assert truth.fault == "state-fault" and truth.components == ("api",)
