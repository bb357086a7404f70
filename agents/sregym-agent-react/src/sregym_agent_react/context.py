"""The conversation sent to the model, kept under a size limit.

Old tool outputs are shortened first (the model has already read them and said what it learned);
if that is not enough, whole old exchanges (an assistant turn and its tool results) are dropped.
The system prompt and the phase instructions are pinned and never trimmed.
"""

from __future__ import annotations

import json
from typing import Any

SHORTENED_CHARS = 300


def message_chars(message: dict[str, Any]) -> int:
    size = len(message.get("content") or "")
    if message.get("tool_calls"):
        size += len(json.dumps(message["tool_calls"]))
    return size


class Conversation:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._pinned: set[int] = set()

    def add(self, message: dict[str, Any], *, pin: bool = False) -> None:
        self.messages.append(message)
        if pin:
            self._pinned.add(id(message))

    def chars(self) -> int:
        return sum(message_chars(m) for m in self.messages)

    def trim(self, limit: int, *, keep_recent: int = 6) -> int:
        """Bring the conversation under ``limit`` characters; returns how many characters went."""
        before = self.chars()
        if before <= limit:
            return 0
        recent_from = max(len(self.messages) - keep_recent, 0)
        for message in self.messages[:recent_from]:
            if message["role"] == "tool" and len(message.get("content") or "") > SHORTENED_CHARS:
                text = message["content"]
                message["content"] = (text[:SHORTENED_CHARS]
                                      + f"\n[... older tool output shortened, {len(text) - SHORTENED_CHARS} characters cut]")
            if self.chars() <= limit:
                return before - self.chars()
        while self.chars() > limit and self._drop_oldest_exchange(keep_recent):
            pass
        return before - self.chars()

    def _drop_oldest_exchange(self, keep_recent: int) -> bool:
        limit = len(self.messages) - keep_recent
        for index in range(limit):
            message = self.messages[index]
            if id(message) in self._pinned or message["role"] == "tool":
                continue
            end = index + 1
            if message.get("tool_calls"):
                # the tool results belong to this turn: drop them with it so no result is orphaned
                while end < len(self.messages) and self.messages[end]["role"] == "tool":
                    end += 1
            if end > limit:
                return False
            del self.messages[index:end]
            return True
        return False
