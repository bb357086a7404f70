"""Waiting for an event in an asyncio test: a poll whose bound only catches a hang.

The landing suite runs on a shared, often loaded machine (docs/ci.md): a test waits until what it
expects has happened, never for a fixed moment, and its bound is far beyond the event's usual time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.02) -> bool:
    """Poll the running event loop until ``predicate()`` holds (True) or ``timeout`` seconds pass (False)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(interval)
    return True


__all__ = ["until"]
