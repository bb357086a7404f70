"""A scripted OpenAI-compatible stub (replies and the rules-backed grader); conftest.py serves it on 127.0.0.1.

A module with its own name: test files import from it (``from conftest import`` picks whichever
conftest was imported first when several test folders run together)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

# litellm must never reach the internet for its price list: only 127.0.0.1 is allowed here
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def chat_reply(content: str, *, prompt_tokens: int = 500, completion_tokens: int = 120) -> dict[str, Any]:
    """An OpenAI chat.completion body."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "stub-judge",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    }


def rules_backed_reply(request: dict[str, Any]) -> str:
    """Answer as a careful judge would, by running judge-rules over what the prompt contains.

    It reads the ground truth, components, namespace and fenced diagnosis back out of the prompt,
    so it also proves the prompt carries everything a judge needs.
    """
    from sregym_core.plugins import process_host
    from sregym_core.types import GroundTruth

    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    truth_json = user.split("Ground truth (JSON):\n", 1)[1].split("\n\nApplication namespace:", 1)[0]
    namespace = re.search(r"Application namespace: (.*)\n", user).group(1)
    components = re.search(r"Application components \(\d+\): (.*)\n", user).group(1).split(", ")
    diagnosis = re.search(r"=+ BEGIN DIAGNOSIS =+\n(.*)\n=+ END DIAGNOSIS =+", user, re.S).group(1)
    truths = tuple(GroundTruth.from_config(t) for t in json.loads(truth_json))
    rules = process_host().get_oracles()["judge-rules"].factory()
    verdict = rules.judge(diagnosis, truths, app_components=tuple(components), app_namespace=namespace)
    return json.dumps(
        {"answers": [{"id": a.id, "answer": a.answer, "evidence": a.evidence[:200], "confidence": 0.8} for a in verdict.answers]}
    )


class StubLLM:
    """Replies from a script: each entry is a string (the message content), a dict (a whole
    response body), a callable(request) -> str, or an int (an HTTP error status). The last entry
    repeats once the script runs out."""

    def __init__(self) -> None:
        self.script: list[str | dict | Callable[[dict], str] | int] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def next_reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not self.script:
            return 500, {"error": {"message": "no script"}}
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, int):
            return step, {"error": {"message": f"scripted status {step}", "type": "server_error"}}
        if isinstance(step, dict):
            return 200, step
        content = step(body) if callable(step) else step
        return 200, chat_reply(content)
