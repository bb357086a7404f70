"""The engine commands (run, validate, deploy) need the ``sregym-core[run]`` extra: the Kubernetes
client, the pinned kubectl, the MCP server. Without it they stop with one clear error."""

from __future__ import annotations

import importlib

from ..errors import UsageError

#: the modules the conductor and the agent API import (from the ``run`` extra)
ENGINE_MODULES = ("kubernetes", "httpx", "mcp", "uvicorn", "starlette")


def require_engine(command: str) -> None:
    """Raise a :class:`UsageError` naming the extra when an engine dependency is not installed."""
    for module in ENGINE_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(
                f"`sregym {command}` needs the engine, which is not installed (no module {module!r})",
                hints=("pip install 'sregym-core[run]'",),
            ) from exc
