"""The OracleContext contract: what mitigation oracles may ask, and that the conductor provides it."""

from __future__ import annotations

import inspect

import pytest

from sregym_core.oracles.context import OracleContext

ASYNC_MEMBERS = ("list_workloads", "fault_present", "workload_stats", "replay_trigger", "sleep")
ATTRIBUTES = ("baseline_workloads", "fault_instances")


def test_protocol_members():
    for name in ASYNC_MEMBERS:
        assert inspect.iscoroutinefunction(getattr(OracleContext, name)), name
    assert not inspect.iscoroutinefunction(OracleContext.now)
    assert set(ATTRIBUTES) <= set(OracleContext.__annotations__)


def test_conductor_implements_the_protocol():
    attempt = pytest.importorskip("sregym_core.conductor.attempt")
    access = attempt.OracleAccess
    for name in ASYNC_MEMBERS:
        assert inspect.iscoroutinefunction(getattr(access, name)), f"OracleAccess.{name} must be async"
        assert list(inspect.signature(getattr(access, name)).parameters)[1:] == list(
            inspect.signature(getattr(OracleContext, name)).parameters
        )[1:], name
    assert callable(access.now) and not inspect.iscoroutinefunction(access.now)
    for name in ATTRIBUTES:
        assert hasattr(access, name), f"OracleAccess lacks {name}"
