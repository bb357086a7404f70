"""The stand-in plugin passes the contract suites plugin authors use."""

from __future__ import annotations

import sregym_noop.plugin

from sregym_core.testing.contracts import AgentContract, FaultContract


class TestNoopFault(FaultContract):
    plugin = sregym_noop.plugin


class TestEchoAgent(AgentContract):
    plugin = sregym_noop.plugin
