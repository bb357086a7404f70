"""Hook implementations: one agent per supported coding-agent CLI."""

from __future__ import annotations

import functools

from sregym_core import hookimpl
from sregym_core.types import AgentSpec

from .adapters import ADAPTERS
from .agent import SETTINGS, CLIAgent

CONFIG_SCHEMA = {"type": "object", "properties": {name: {} for name in SETTINGS}, "additionalProperties": False}


@hookimpl
def sregym_agents():
    return [
        AgentSpec(name=name, summary=f"{name} coding-agent CLI with the MCP tools, sandboxed (bubblewrap)",
                  needs=frozenset({"mcp", "http-api", "kubeconfig", "llm"}),
                  factory=functools.partial(CLIAgent, name), config_schema=CONFIG_SCHEMA)
        for name in ADAPTERS
    ]
