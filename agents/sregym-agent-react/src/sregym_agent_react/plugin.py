"""Hook implementations: the ``react`` agent."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import AgentSpec

from .agent import ReactAgent
from .config import CONFIG_SCHEMA


@hookimpl
def sregym_agents():
    return [
        AgentSpec(name="react", summary="open baseline SRE agent: ReAct over the MCP tools on any litellm model",
                  needs=frozenset({"mcp", "http-api", "llm"}), factory=ReactAgent, config_schema=CONFIG_SCHEMA),
    ]
