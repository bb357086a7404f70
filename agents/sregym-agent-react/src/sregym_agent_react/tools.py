"""The benchmark's MCP tools, seen through the official MCP client and offered to the model as
OpenAI-style function schemas."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

#: Tools the agent must have to do its job.
REQUIRED_TOOLS = ("exec_kubectl_cmd_safely", "submit")


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail of a long tool output; errors and summaries sit at either end."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    keep = max(limit - len(marker), 0)
    head = keep * 2 // 3
    return text[:head] + marker + text[len(text) - (keep - head):]


def function_schema(tool: Any) -> dict[str, Any]:
    """An MCP tool as an OpenAI ``tools`` entry (what litellm translates for every provider)."""
    schema = dict(getattr(tool, "input_schema", None) or {"type": "object", "properties": {}})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema.pop("title", None)
    schema.pop("$schema", None)
    return {"type": "function", "function": {"name": tool.name,
                                             "description": (tool.description or tool.name)[:1024],
                                             "parameters": schema}}


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult`` (every text block, structured content as JSON otherwise)."""
    parts = []
    for block in getattr(result, "content", None) or ():
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else json.dumps(getattr(block, "model_dump", dict)(), default=str))
    if not parts and getattr(result, "structured_content", None):
        parts.append(json.dumps(result.structured_content, default=str))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        return f"Tool error: {text}"
    return text


class ToolBox:
    """An open MCP session: ``schemas`` for the model, ``call`` to run one tool."""

    def __init__(self, url: str, *, timeout: float = 120.0) -> None:
        self.url = url
        self.timeout = timeout
        self.schemas: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self._stack: AsyncExitStack | None = None
        self._client: Any = None

    async def __aenter__(self) -> ToolBox:
        from mcp import Client

        self._stack = AsyncExitStack()
        try:
            self._client = await self._stack.enter_async_context(Client(self.url, read_timeout_seconds=self.timeout))
            listing = await self._client.list_tools()
        except BaseException:
            await self._stack.aclose()
            raise
        self.schemas = [function_schema(tool) for tool in listing.tools]
        self.names = {tool.name for tool in listing.tools}
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._stack is not None:
            await self._stack.aclose()

    def missing(self) -> list[str]:
        return [name for name in REQUIRED_TOOLS if name not in self.names]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        if name not in self.names:
            return f"Unknown tool {name!r}. Available tools: {', '.join(sorted(self.names))}."
        try:
            result = await self._client.call_tool(name, dict(arguments))
        except Exception as exc:  # noqa: BLE001 - a failed call is an observation the model can act on
            return f"Tool {name} failed: {type(exc).__name__}: {exc}"
        return result_text(result)
