"""The observability tools agents call over MCP satisfy the tool contract; the stack, the observability contract."""

from __future__ import annotations

import sregym_observability.plugin

from sregym_core.testing.contracts import ObservabilityContract, ToolContract


class TestObservabilityTools(ToolContract):
    plugin = sregym_observability.plugin


class TestObservabilityStack(ObservabilityContract):
    plugin = sregym_observability.plugin
