"""Per-attempt agent trajectories in an ATIF-style JSON document.

The layout follows the Agent Trajectory Interchange Format (v1.7, as upstream SREGym writes it) so trajectories can be replayed,
visualised or used for training by tools that read it: a root with ``schema_version``,
``session_id``, ``trajectory_id``, ``agent`` (name, version, model_name) and ``steps``; each step has ``step_id``,
``timestamp``, ``source`` (``system``, ``user`` or ``agent``), ``message``, optional
``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments``), ``observation`` (``results``
with ``source_call_id`` and ``content``) and ``metrics`` (``prompt_tokens``,
``completion_tokens``, ``cost_usd``); ``final_metrics`` sums them.

The file is rewritten atomically after each step (by default), so a crash leaves the trajectory
up to the last completed step.

.. versionadded:: 0.1
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from .record import utc_now

ATIF_VERSION = "ATIF-v1.7"
SOURCES = ("system", "user", "agent")
#: Observations longer than this are cut (with a marker); trajectories must stay readable.
MAX_OBSERVATION_CHARS = 65_536


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool invocation by the agent."""

    tool_call_id: str
    function_name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"tool_call_id": self.tool_call_id, "function_name": self.function_name, "arguments": dict(self.arguments)}


@attrs.frozen(kw_only=True)
class Observation:
    """What a tool call returned."""

    source_call_id: str | None
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"source_call_id": self.source_call_id, "content": _cut(self.content)}


def _tool_call(item: ToolCall | Mapping[str, Any], index: int) -> dict[str, Any]:
    """A tool call from a record or from the shapes agents commonly log (OpenAI, MCP, ad hoc)."""
    if isinstance(item, ToolCall):
        return item.to_dict()
    if not isinstance(item, Mapping):
        return ToolCall(tool_call_id=f"call_{index}", function_name=str(item)).to_dict()
    raw_function = item.get("function")
    function = raw_function if isinstance(raw_function, Mapping) else {}
    name = item.get("function_name") or item.get("name") or function.get("name") or item.get("tool") or "unknown"
    arguments = item.get("arguments", item.get("args", item.get("input", function.get("arguments", {}))))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = {"raw": arguments}
    if not isinstance(arguments, Mapping):
        arguments = {"value": arguments}
    ident = item.get("tool_call_id") or item.get("id") or f"call_{index}"
    return ToolCall(tool_call_id=str(ident), function_name=str(name), arguments=dict(arguments)).to_dict()


def _observation(item: Observation | Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(item, Observation):
        return item.to_dict()
    if isinstance(item, Mapping):
        source = item.get("source_call_id") or item.get("tool_call_id") or item.get("id")
        content = item.get("content", item.get("output", item.get("result", "")))
        return Observation(source_call_id=None if source is None else str(source), content=content).to_dict()
    return Observation(source_call_id=None, content=item).to_dict()


def _cut(content: Any) -> str:
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    if len(text) <= MAX_OBSERVATION_CHARS:
        return text
    return text[:MAX_OBSERVATION_CHARS] + f"\n[... {len(text) - MAX_OBSERVATION_CHARS} characters cut]"


class TrajectoryWriter:
    """Build and save one attempt's trajectory.

    :param path: the JSON file (``ResultsWriter.trajectory_path(...)``).
    :param session_id: identifies the attempt (run id + problem + agent + attempt).
    :param agent_name, agent_version, model_name: the ``agent`` block.
    :param autosave: rewrite the file after every step.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        session_id: str,
        agent_name: str,
        agent_version: str = "",
        model_name: str | None = None,
        autosave: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.session_id = session_id
        self.agent = {"name": agent_name, "version": agent_version, "model_name": model_name}
        self.autosave = autosave
        self.extra = dict(extra or {})
        self.steps: list[dict[str, Any]] = []
        self.notes: str | None = None

    def add_step(
        self,
        source: str,
        message: str = "",
        *,
        tool_calls: Iterable[ToolCall | Mapping[str, Any]] = (),
        observations: Iterable[Observation | Mapping[str, Any]] = (),
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = None,
        reasoning: str | None = None,
        model_name: str | None = None,
        timestamp: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """Append a step; returns its ``step_id`` (from 1)."""
        if source not in SOURCES:
            raise ValueError(f"step source must be one of {', '.join(SOURCES)}, got {source!r}")
        step: dict[str, Any] = {
            "step_id": len(self.steps) + 1,
            "timestamp": timestamp or utc_now(),
            "source": source,
            "message": message if isinstance(message, str) else json.dumps(message, default=str),
        }
        if model_name or (source == "agent" and self.agent["model_name"]):
            step["model_name"] = model_name or self.agent["model_name"]
        if reasoning:
            step["reasoning_content"] = reasoning
        calls = [_tool_call(c, i) for i, c in enumerate(tool_calls or (), 1)]
        if calls:
            step["tool_calls"] = calls
        results = [_observation(o) for o in observations or ()]
        if results:
            step["observation"] = {"results": results}
        metrics = {
            k: v
            for k, v in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens), ("cost_usd", cost_usd))
            if v is not None
        }
        if metrics:
            step["metrics"] = metrics
        if extra:
            step["extra"] = dict(extra)
        self.steps.append(step)
        if self.autosave:
            self.save()
        return step["step_id"]

    def observe(self, step_id: int, observations: Iterable[Observation | Mapping[str, Any]]) -> None:
        """Attach tool results to an earlier step (tools often answer after the call was logged)."""
        step = self.steps[step_id - 1]
        results = step.setdefault("observation", {"results": []})["results"]
        results += [_observation(o) for o in observations]
        if self.autosave:
            self.save()

    @property
    def final_metrics(self) -> dict[str, Any]:
        def total(key: str) -> Any:
            values = [s["metrics"][key] for s in self.steps if key in s.get("metrics", {})]
            return sum(values) if values else None

        cost = total("cost_usd")
        return {
            "total_prompt_tokens": total("prompt_tokens") or 0,
            "total_completion_tokens": total("completion_tokens") or 0,
            "total_cost_usd": None if cost is None else round(cost, 8),
            "total_steps": len(self.steps),
        }

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "schema_version": ATIF_VERSION,
            "session_id": self.session_id,
            "trajectory_id": self.session_id,
            "agent": dict(self.agent),
            "steps": self.steps,
            "final_metrics": self.final_metrics,
        }
        if self.notes:
            document["notes"] = self.notes
        if self.extra:
            document["extra"] = self.extra
        return document

    def save(self) -> Path:
        """Write the document atomically (temporary file + rename) and fsync it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".traj-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self.to_dict(), handle, ensure_ascii=False, default=str, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return self.path

    def close(self, notes: str | None = None) -> Path:
        """Final save, with optional notes (why the attempt ended)."""
        if notes:
            self.notes = notes
        return self.save()


def load_trajectory(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a trajectory file and check its shape (``ValueError`` when it is not one)."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(document, dict) or not str(document.get("schema_version", "")).startswith("ATIF"):
        raise ValueError(f"{path} is not an ATIF trajectory")
    for index, step in enumerate(document.get("steps", []), 1):
        if step.get("step_id") != index or step.get("source") not in SOURCES:
            raise ValueError(f"{path}: step {index} is malformed")
    return document
