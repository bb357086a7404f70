"""The react agent: a diagnosis phase, then a mitigation phase, each a ReAct loop over the MCP tools.

Each step is one model call; the model answers with tool calls (run through MCP, outputs cut to
``observation_chars``) or text (nudged back to the tools). A phase ends when ``submit`` is
accepted, or when its step or token budget runs out — then the agent submits on the model's behalf
(its last words as the diagnosis, or "done") so the attempt is still graded. Before a "done" is
sent, a health self-check runs; if it finds problems the model is told and may carry on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import structlog

from sregym_core.agents import AgentOutcome, AgentTask
from sregym_core.errors import AgentError, SregymError

from . import prompts
from .config import ReactConfig
from .context import Conversation
from .health import check_health
from .llm import ChatModel, ContextTooLong, ProviderError, Reply
from .tools import ToolBox, truncate

log = structlog.get_logger()

PHASES = ("diagnosis", "mitigation")


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """The model's tool arguments as a dict, or why they are unusable."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    return value, None


class ReactAgent:
    """``react``: SREGym's open baseline agent. Settings: see :class:`~sregym_agent_react.config.ReactConfig`."""

    def __init__(self, **settings: Any) -> None:
        self.settings = dict(settings)

    async def run(self, task: AgentTask) -> AgentOutcome:
        run = _Run(task, self.settings)
        return await run.execute()


class _Run:
    """The state of one attempt: conversation, budgets, totals and trajectory."""

    def __init__(self, task: AgentTask, settings: Mapping[str, Any]) -> None:
        self.task = task
        self.settings = {**dict(task.config), **dict(settings)}
        self.trajectory: list[dict[str, Any]] = []
        self.prompt_tokens = self.completion_tokens = self.steps = 0
        self.cost = 0.0
        self.notes: list[str] = []
        self.conversation = Conversation()
        self.config: ReactConfig | None = None
        self.finished = False  # the conductor accepts no more submissions

    # ------------------------------------------------------------------ outcome

    def outcome(self, status: str = "ok", error: str | None = None) -> AgentOutcome:
        if error is None and self.notes:
            error = "; ".join(self.notes)
        return AgentOutcome(status=status, steps=self.steps, prompt_tokens=self.prompt_tokens,
                            completion_tokens=self.completion_tokens, cost=round(self.cost, 6),
                            trajectory=tuple(self.trajectory), error=error)

    def record(self, action: str, phase: str, **fields: Any) -> None:
        self.trajectory.append({"action": action, "phase": phase, "timestamp": round(time.time(), 3), **fields})

    # ------------------------------------------------------------------ run

    async def execute(self) -> AgentOutcome:
        try:
            self.config = ReactConfig.from_settings(self.settings)
            model = ChatModel(self.config)
        except SregymError as exc:
            return self.outcome("crashed", exc.render())
        if not self.task.mcp_url:
            return self.outcome("crashed", AgentError("the react agent needs the MCP server and the task has no mcp_url").render())
        try:
            async with ToolBox(self.task.mcp_url, timeout=max(self.config.call_timeout, 60.0)) as toolbox:
                missing = toolbox.missing()
                if missing:
                    return self.outcome("crashed", f"AgentError: the MCP server lacks {', '.join(missing)}")
                self.conversation.add({"role": "system", "content": prompts.SYSTEM}, pin=True)
                self.conversation.add({"role": "user", "content": prompts.DIAGNOSIS.format(
                    app_name=self.task.app_name, namespace=self.task.app_namespace,
                    description=self.task.app_description.strip())}, pin=True)
                for phase in PHASES:
                    if phase == "mitigation":
                        self.conversation.add({"role": "user", "content": prompts.MITIGATION}, pin=True)
                    await self.phase(phase, model, toolbox)
                    if self.finished and phase == "diagnosis":
                        break
                    if phase == "diagnosis":
                        await self.wait_for_grading()
        except ProviderError as exc:
            log.warning("react_agent_provider_failed", error=str(exc), attempts=exc.attempts)
            return self.outcome("crashed", f"ProviderError after {exc.attempts} attempt(s): {exc}")
        except Exception as exc:  # noqa: BLE001 - e.g. the MCP server went away; keep the trajectory so far
            log.warning("react_agent_failed", error=_first_error(exc))
            return self.outcome("crashed", f"AgentError: {_first_error(exc)}")
        return self.outcome()

    async def phase(self, phase: str, model: ChatModel, toolbox: ToolBox) -> None:
        max_steps, max_tokens = self.config.budget(phase)
        steps = tokens = 0
        warned = trimmed_hard = False
        last_text = ""
        while True:
            if steps >= max_steps or tokens >= max_tokens:
                which = "step" if steps >= max_steps else "token"
                self.notes.append(f"{phase} {which} budget exhausted ({steps} steps, {tokens} tokens)")
                await self.fallback_submit(phase, toolbox, last_text, which)
                return
            if not warned and max_steps - steps <= 2 and max_steps > 2:
                self.conversation.add({"role": "user", "content": prompts.BUDGET_WARNING.format(steps=max_steps - steps)})
                warned = True
            cut = self.conversation.trim(self.config.context_chars)
            if cut:
                self.record("context_trimmed", phase, chars_cut=cut)
            try:
                reply = await model.complete(self.conversation.messages, toolbox.schemas)
            except ContextTooLong:
                if trimmed_hard:
                    raise
                trimmed_hard = True
                cut = self.conversation.trim(self.config.context_chars // 2, keep_recent=2)
                self.record("context_trimmed", phase, chars_cut=cut, reason="provider context window exceeded")
                continue
            steps += 1
            self.steps += 1
            tokens += reply.prompt_tokens + reply.completion_tokens
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens
            self.cost += reply.cost
            if reply.content.strip():
                last_text = reply.content.strip()
            done = await self.act(phase, reply, toolbox)
            if done:
                return

    async def act(self, phase: str, reply: Reply, toolbox: ToolBox) -> bool:
        """Carry out one model reply; True when the phase is over."""
        step = {"step": self.steps, "message": reply.content, "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens, "cost": reply.cost, "latency_s": reply.latency_s,
                "llm_attempts": reply.attempts, "tool_calls": [], "observations": []}
        if not reply.tool_calls:
            self.conversation.add({"role": "assistant", "content": reply.content or ""})
            self.conversation.add({"role": "user", "content": prompts.NO_TOOL_CALL})
            self.record("llm", phase, **step)
            return False
        parsed = [(call, *parse_arguments(call.arguments)) for call in reply.tool_calls]
        # malformed arguments are echoed back as {} so the next request stays valid for every provider
        self.conversation.add({"role": "assistant", "content": reply.content or None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments if error is None else "{}"}}
            for call, _args, error in parsed]})
        phase_over = False
        for call, args, error in parsed:
            step["tool_calls"].append({"id": call.id, "name": call.name,
                                       "arguments": args if error is None else {"raw": call.arguments[:2000]}})
            if phase_over:
                observation = "Not run: the phase ended with your submission."
            elif error is not None:
                observation = (f"Your arguments for {call.name} were {error}: {call.arguments[:300]!r}. "
                               "Call the tool again with a JSON object of its parameters.")
            elif call.name == "submit":
                observation, phase_over = await self.submit(phase, args, toolbox)
            else:
                observation = truncate(await toolbox.call(call.name, args), self.config.observation_chars)
            self.conversation.add({"role": "tool", "tool_call_id": call.id, "content": observation})
            step["observations"].append({"tool_call_id": call.id, "content": observation[:4000],
                                         **({"error": error} if error else {})})
        self.record("llm", phase, **step)
        return phase_over

    async def submit(self, phase: str, args: Mapping[str, Any], toolbox: ToolBox) -> tuple[str, bool]:
        answer = args.get("ans", args.get("solution", ""))
        answer = answer if isinstance(answer, str) else json.dumps(answer)
        if phase == "mitigation" and self.config.self_check:
            rejections = sum(1 for s in self.trajectory if s["action"] == "self_check" and not s["healthy"])
            report = await check_health(toolbox.call, self.task.app_namespace, toolbox.names)
            self.record("self_check", phase, **report.to_dict())
            if not report.healthy and rejections < self.config.self_check_rejections:
                return prompts.SELF_CHECK_FAILED.format(report=report.text()), False
        text = await toolbox.call("submit", {"ans": answer})
        return text, self.accepted(text)

    def accepted(self, text: str) -> bool:
        """Whether ``submit`` took the answer: ``{"status": "200"|"done"|"error", "text": ...}``."""
        try:
            body = json.loads(text)
        except ValueError:
            return False
        status = str(body.get("status")) if isinstance(body, dict) else None
        if status == "done" or (status == "error" and "Cannot submit at stage" in str(body.get("text"))):
            self.finished = True  # the conductor moved on (e.g. the attempt is being torn down)
            return True
        return status not in (None, "error")

    async def wait_for_grading(self) -> None:
        """The diagnosis is graded while the stage is still ``diagnosis`` (upstream's protocol);
        mitigating before it moves on would make the next ``submit`` a duplicate diagnosis."""
        import httpx

        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            for _ in range(600):
                try:
                    reply = await client.get(f"{self.task.api_url}/status")
                    if reply.status_code != 200 or reply.json().get("stage") != "diagnosis":
                        return
                except (httpx.HTTPError, ValueError):
                    return
                await asyncio.sleep(0.5)

    async def fallback_submit(self, phase: str, toolbox: ToolBox, last_text: str, which: str) -> None:
        if phase == "diagnosis":
            answer = last_text or "The investigation budget ran out before a root cause was identified."
        else:
            answer = "done"
        text = await toolbox.call("submit", {"ans": answer})
        self.accepted(text)
        self.record("submit_fallback", phase, message=answer[:2000], reason=f"{which} budget exhausted",
                    observations=[{"content": text[:2000]}])


def _first_error(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
