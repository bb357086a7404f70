"""Agent sessions: one kubectl tool (and so one rollback stack) per session, as upstream keys them.

A session is named by the ``sregym_ssid`` header when the client sends one, else by the
``session_id`` query parameter (the MCP SSE transport puts its own session id there on every
message), else by the streamable-HTTP ``mcp-session-id`` header. Sessions are kept in an LRU of
10 000 entries that expire after 600 s without use (upstream's bounds).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

SESSION_HEADER = "sregym_ssid"
DEFAULT_SESSION = ""  # the attempt's default session (KubectlTool.for_session(None) names it so too)
MAX_SESSIONS = 10_000
SESSION_TTL_S = 600.0


def session_key(headers: Mapping[str, str] | None, query: Mapping[str, str] | None) -> str:
    """Which session a request belongs to."""
    headers = headers or {}
    query = query or {}
    for name in (SESSION_HEADER, SESSION_HEADER.replace("_", "-")):
        value = headers.get(name)
        if value:
            return f"ssid:{value}"
    if query.get("session_id"):
        return f"sse:{query['session_id']}"
    if headers.get("mcp-session-id"):
        return f"mcp:{headers['mcp-session-id']}"
    return DEFAULT_SESSION


class SessionTools:
    """Per-session objects made by ``factory(session_key)``; least recently used dropped first."""

    def __init__(self, factory: Callable[[str], Any], *, max_sessions: int = MAX_SESSIONS,
                 ttl_s: float = SESSION_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.factory, self.max_sessions, self.ttl_s, self.clock = factory, max_sessions, ttl_s, clock
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def get(self, key: str) -> Any:
        now = self.clock()
        self._expire(now)
        entry = self._items.pop(key, None)
        item = entry[1] if entry is not None else self.factory(key)
        self._items[key] = (now, item)
        while len(self._items) > self.max_sessions:
            self._items.popitem(last=False)
        return item

    def __len__(self) -> int:
        return len(self._items)

    def _expire(self, now: float) -> None:
        while self._items:
            key, (used, _item) = next(iter(self._items.items()))
            if now - used <= self.ttl_s:
                break
            del self._items[key]
