"""``judge-llm``: the checklist judge through litellm (any provider, any model string).

Configuration, first found wins: the factory's arguments (``model``, ``api_base``, ``api_key``,
``threshold``...), then the environment (``JUDGE_MODEL``, ``JUDGE_API_BASE``, ``JUDGE_API_KEY``).
A local OpenAI-compatible server (vLLM, Ollama, a test stub) is ``model="openai/<name>"`` with
``api_base="http://127.0.0.1:8000/v1"``.

The judge asks once at temperature 0, validates the reply against
:data:`~sregym_judge_llm.prompt.RESPONSE_SCHEMA`, and on a malformed reply asks again (telling the
model what was wrong), at most ``max_attempts`` times in all. Tokens and cost add up over every
call. When no valid reply comes, the verdict fails with ``error`` set, so a broken judge is never
mistaken for a wrong diagnosis.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import structlog

from sregym_core.errors import ConfigError
from sregym_core.oracles.judge import (
    CHECKLIST,
    DEFAULT_THRESHOLD,
    ChecklistAnswer,
    JudgeVerdict,
    check_threshold,
    clip_submission,
    coerce_truth,
    failed_verdict,
    make_verdict,
)
from sregym_core.types import GroundTruth

from .prompt import MalformedReply, parse_reply, retry_prompt, system_prompt, user_prompt

log = structlog.get_logger()

NAME = "judge-llm"
ENV_MODEL, ENV_API_BASE, ENV_API_KEY = "JUDGE_MODEL", "JUDGE_API_BASE", "JUDGE_API_KEY"


def _litellm() -> Any:
    # litellm fetches a price list from the internet at import unless told to use its bundled copy;
    # these machines may only talk to 127.0.0.1, and the bundled copy is what cost figures need.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LLMJudge:
    """The checklist judge on an LLM.

    :param model: a litellm model string (``gpt-4o-mini``, ``anthropic/claude-...``,
        ``openai/<name>`` for an OpenAI-compatible server); default ``$JUDGE_MODEL``.
    :param api_base: the server's base URL; default ``$JUDGE_API_BASE``.
    :param api_key: default ``$JUDGE_API_KEY``.
    :param threshold: composite needed to pass (0.7).
    :param max_attempts: calls per diagnosis when replies are malformed or the call fails (>= 1).
    :param timeout: seconds per call.
    :param completion_kwargs: extra litellm arguments (e.g. ``mock_response`` in tests).
    """

    name = NAME

    def __init__(
        self,
        *,
        model: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        max_attempts: int = 3,
        timeout: float = 120.0,
        completion_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model or os.environ.get(ENV_MODEL)
        if not self.model:
            raise ConfigError(
                "judge-llm needs a model",
                hints=(
                    f"pass --judge-model or set {ENV_MODEL} (any litellm model string, e.g. gpt-4o-mini)",
                    f"for a local OpenAI-compatible server: {ENV_MODEL}=openai/<name> {ENV_API_BASE}=http://127.0.0.1:8000/v1",
                ),
            )
        self.api_base = api_base or os.environ.get(ENV_API_BASE) or None
        self.api_key = api_key or os.environ.get(ENV_API_KEY) or None
        self.threshold = check_threshold(threshold)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ConfigError(f"judge-llm max_attempts must be a positive integer, got {max_attempts!r}")
        self.max_attempts = max_attempts
        self.timeout = float(timeout)
        self.completion_kwargs = dict(completion_kwargs or {})

    def judge(
        self,
        submission: str,
        truth: tuple[GroundTruth, ...] | GroundTruth,
        *,
        app_components: tuple[str, ...] = (),
        app_namespace: str = "",
    ) -> JudgeVerdict:
        truths = coerce_truth(truth)
        submission, submitted_chars = clip_submission(submission)
        common = {
            "judge": self.name,
            "threshold": self.threshold,
            "submission": submission,
            "truth": truths,
            "app_components": tuple(app_components),
            "app_namespace": app_namespace,
            "submitted_chars": submitted_chars,
        }
        messages = [
            {"role": "system", "content": system_prompt()},
            {"role": "user", "content": user_prompt(submission, truths, app_components=app_components, app_namespace=app_namespace)},
        ]
        tokens = {"prompt": 0, "completion": 0}
        cost: float | None = None
        problems: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = self._complete(messages)
            except Exception as exc:  # noqa: BLE001 - provider errors are many; all end in a recorded error
                problems.append(f"call {attempt}: {_provider_message(exc)}")
                log.warning("judge_call_failed", model=self.model, attempt=attempt, error=problems[-1])
                continue
            usage = getattr(response, "usage", None)
            tokens["prompt"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            tokens["completion"] += int(getattr(usage, "completion_tokens", 0) or 0)
            call_cost = self._cost(response)
            if call_cost is not None:
                cost = (cost or 0.0) + call_cost
            content = _content(response)
            try:
                by_id = parse_reply(content)
            except MalformedReply as exc:
                problems.append(f"reply {attempt}: {exc}")
                log.info("judge_reply_malformed", model=self.model, attempt=attempt, error=str(exc))
                messages += [{"role": "assistant", "content": content or ""}, {"role": "user", "content": retry_prompt(str(exc))}]
                continue
            answers = [
                ChecklistAnswer(
                    id=q.id,
                    dimension=q.dimension,
                    question=q.question,
                    answer=bool(by_id[q.id]["answer"]),
                    evidence=str(by_id[q.id]["evidence"]),
                    confidence=float(by_id[q.id]["confidence"]),
                )
                for q in CHECKLIST
            ]
            verdict = make_verdict(answers=answers, cost=cost, tokens=tokens, **common)
            if problems:  # keep what it took to get a valid reply
                verdict = _with_inputs(verdict, retries=problems, model=self.model)
            else:
                verdict = _with_inputs(verdict, model=self.model)
            return verdict
        error = f"no valid reply from {self.model} after {self.max_attempts} attempt(s): " + "; ".join(problems)
        return _with_inputs(failed_verdict(error=error, cost=cost, tokens=tokens, **common), retries=problems, model=self.model)

    def _complete(self, messages: list[dict[str, str]]) -> Any:
        litellm = _litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": 0,
            "timeout": self.timeout,
            "response_format": {"type": "json_object"},
            "drop_params": True,  # providers without JSON mode get the prompt's instructions only
            # one retry policy, ours (bounded by max_attempts): no hidden client-side retries
            "num_retries": 0,
            "max_retries": 0,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
            # OpenAI-compatible local servers rarely check keys, but the client insists on one
            kwargs["api_key"] = self.api_key or "sk-no-key"
        elif self.api_key:
            kwargs["api_key"] = self.api_key
        kwargs.update(self.completion_kwargs)
        return litellm.completion(**kwargs)

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        if isinstance(hidden.get("response_cost"), int | float):
            return float(hidden["response_cost"])
        try:
            return float(_litellm().completion_cost(completion_response=response))
        except Exception:  # noqa: BLE001 - unknown models have no price; cost stays unknown
            return None


def _content(response: Any) -> str | None:
    try:
        return response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def _provider_message(exc: BaseException) -> str:
    message = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0] if message else ''}".strip()


def _with_inputs(verdict: JudgeVerdict, **extra: Any) -> JudgeVerdict:
    import attrs

    return attrs.evolve(verdict, inputs={**verdict.inputs, **extra})


def make_llm_judge(**config: Any) -> LLMJudge:
    """``OracleSpec`` factory: ``model``, ``api_base``, ``api_key``, ``threshold``, ``max_attempts``,
    ``timeout`` from the configuration (the rest from the environment)."""
    allowed = {"model", "api_base", "api_key", "threshold", "max_attempts", "timeout", "completion_kwargs"}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ConfigError(f"judge-llm does not take {', '.join(unknown)}", hints=(f"known options: {', '.join(sorted(allowed))}",))
    return LLMJudge(**config)

