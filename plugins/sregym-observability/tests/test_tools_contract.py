"""The observability tools agents call over MCP satisfy the tool contract."""

from __future__ import annotations

import sregym_observability.plugin

from sregym_core.testing.contracts import ToolContract


class TestObservabilityTools(ToolContract):
    plugin = sregym_observability.plugin
