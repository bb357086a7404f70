"""Hook implementations: one agent per supported coding-agent CLI."""

from __future__ import annotations

import functools

from sregym_core import hookimpl
from sregym_core.types import AgentSpec

from .adapters import ADAPTERS
from .agent import SETTINGS, CLIAgent

#: upstream SREGym's names for the same CLI agents (``--agent claudecode`` works as in upstream)
UPSTREAM_NAMES = {"claudecode": "claude-code", "gemini": "gemini-cli"}

CONFIG_SCHEMA = {"type": "object", "properties": {name: {} for name in SETTINGS}, "additionalProperties": False}


@hookimpl
def sregym_agents():
    return [
        AgentSpec(name=name, summary=f"{name} coding-agent CLI with the MCP tools, sandboxed (bubblewrap)",
                  needs=frozenset({"mcp", "http-api", "kubeconfig", "llm"}),
                  factory=functools.partial(CLIAgent, name), config_schema=CONFIG_SCHEMA)
        for name in ADAPTERS
    ] + [
        AgentSpec(name=alias, summary=f"upstream SREGym's name for {name}",
                  needs=frozenset({"mcp", "http-api", "kubeconfig", "llm"}),
                  factory=functools.partial(CLIAgent, name), config_schema=CONFIG_SCHEMA)
        for alias, name in UPSTREAM_NAMES.items() if name in ADAPTERS
    ]
