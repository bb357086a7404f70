"""``judge-llm``: the checklist judge through litellm (any provider, any model string).

Configuration, first found wins: the factory's arguments (``model``, ``api_base``, ``api_key``,
``threshold``...), then the environment (``JUDGE_MODEL`` or upstream's ``JUDGE_MODEL_ID``,
``JUDGE_API_BASE``, ``JUDGE_API_KEY``).

Two modes. ``plain`` (``judge-llm``): the model answers the checklist. ``gated``
(``judge-llm-gated``, what ``sregym run`` uses when a judge model is configured): the rules-based
hard gates of ``judge-rules`` decide first (the faulty component asserted as the cause, no hedge,
no kitchen sink, no text addressed to the grader); a diagnosis that fails a gate fails without a
model call, and only the others go to the model. ``rubric="upstream"`` asks upstream SREGym's
checklist with its prompt shape and JSON-array reply, and scores it its way.
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
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from sregym_core.errors import ConfigError
from sregym_core.oracles.judge import (
    DEFAULT_THRESHOLD,
    ChecklistAnswer,
    JudgeVerdict,
    check_threshold,
    checklist_for,
    clip_submission,
    coerce_truth,
    failed_verdict,
    make_verdict,
)
from sregym_core.types import GroundTruth

from .prompt import (
    MalformedReply,
    parse_reply,
    parse_upstream_reply,
    retry_prompt,
    system_prompt,
    upstream_retry_prompt,
    upstream_system_prompt,
    upstream_user_prompt,
    user_prompt,
)

if TYPE_CHECKING:
    from sregym_core.catalog import Catalog

log = structlog.get_logger()

NAME = "judge-llm"
GATED_NAME = "judge-llm-gated"
MODES = ("plain", "gated")
ENV_MODEL, ENV_API_BASE, ENV_API_KEY = "JUDGE_MODEL", "JUDGE_API_BASE", "JUDGE_API_KEY"
ENV_MODEL_UPSTREAM = "JUDGE_MODEL_ID"  # upstream SREGym's name for the same setting


def configured_model() -> str | None:
    """The judge model the environment configures (``JUDGE_MODEL``, else ``JUDGE_MODEL_ID``)."""
    return os.environ.get(ENV_MODEL) or os.environ.get(ENV_MODEL_UPSTREAM) or None


class JudgeUnavailable(ConfigError):
    """The configured judge model did not answer the pre-flight call."""


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
    :param mode: ``plain`` or ``gated`` (rules-based hard gates first).
    :param rubric: ``sregym`` (the project's checklist) or ``upstream``.
    :param host: the plugin host the gated mode finds judge-rules in (the plugin's registration hook
        hands it over); a judge built by hand without one reads the installed plugins.
    """

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
        mode: str = "plain",
        rubric: str = "sregym",
        host: Catalog | None = None,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"judge-llm mode must be one of {', '.join(MODES)}, got {mode!r}")
        checklist_for(rubric)  # rejects an unknown rubric
        self.mode, self.rubric, self.host = mode, rubric, host
        self.name = GATED_NAME if mode == "gated" else NAME
        self.model = model or configured_model()
        if not self.model:
            raise ConfigError(
                "judge-llm needs a model",
                hints=(
                    f"pass --judge-model or set {ENV_MODEL} or {ENV_MODEL_UPSTREAM} (any litellm model string, e.g. gpt-4o-mini)",
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
        clipped, submitted_chars = clip_submission(submission)
        gates = None
        if self.mode == "gated":
            gate = self._rules().judge(clipped, truths, app_components=tuple(app_components), app_namespace=app_namespace)
            gates = dict(gate.inputs.get("gates") or {})
            if not gates.get("passed"):  # a hard gate failed: the checklist cannot pass, no model call
                return _with_inputs(attrs.evolve(gate, judge=self.name), model=self.model, gated_by="judge-rules")
        verdict = self._ask_model(clipped, truths, tuple(app_components), app_namespace, submitted_chars)
        if gates is not None:  # the rules' reading stays in the record: which sentence asserted what
            verdict = _with_inputs(verdict, gates=gates, gated_by="judge-rules", evidence=gate.inputs.get("evidence"))
        return verdict

    def _rules(self) -> Any:
        """judge-rules, through the plugin host (one plugin never imports another)."""
        if self.host is None:  # built by hand, outside a host: a host of the installed plugins, kept
            from sregym_core.plugins import new_plugin_host

            self.host = new_plugin_host()
        spec = self.host.get_oracles().get("judge-rules")
        if spec is None or spec.kind != "judge":
            raise ConfigError("judge-llm-gated needs the judge-rules plugin", hints=("pip install sregym-judge-rules",))
        return spec.factory(threshold=self.threshold, rubric=self.rubric)

    def preflight(self) -> None:
        """One tiny call ("Say ok.") so a run fails fast when the model does not answer.

        :raises JudgeUnavailable: with the provider's error.
        """
        try:
            response = self._complete([{"role": "user", "content": "Say ok."}], json_mode=False, max_tokens=5)
        except Exception as exc:  # noqa: BLE001 - every provider error means the same here
            raise JudgeUnavailable(
                f"the judge model {self.model} did not answer the pre-flight call: {_provider_message(exc)}",
                hints=(f"check {ENV_MODEL}/{ENV_MODEL_UPSTREAM}, {ENV_API_BASE} and {ENV_API_KEY}",
                       "or grade offline with --judge judge-rules"),
            ) from None
        if not (_content(response) or "").strip():
            raise JudgeUnavailable(f"the judge model {self.model} answered the pre-flight call with nothing")

    def _ask_model(self, submission: str, truths: tuple[GroundTruth, ...], app_components: tuple[str, ...],
                   app_namespace: str, submitted_chars: int) -> JudgeVerdict:
        upstream = self.rubric == "upstream"
        common: dict[str, Any] = {
            "judge": self.name,
            "threshold": self.threshold,
            "submission": submission,
            "truth": truths,
            "app_components": app_components,
            "app_namespace": app_namespace,
            "submitted_chars": submitted_chars,
            "rubric": self.rubric,
        }
        if upstream:
            messages = [{"role": "system", "content": upstream_system_prompt()},
                        {"role": "user", "content": upstream_user_prompt(submission, truths)}]
        else:
            messages = [
                {"role": "system", "content": system_prompt()},
                {"role": "user", "content": user_prompt(submission, truths, app_components=app_components, app_namespace=app_namespace)},
            ]
        tokens = {"prompt": 0, "completion": 0}
        cost: float | None = None
        problems: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = self._complete(messages, json_mode=not upstream)
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
                by_id = parse_upstream_reply(content) if upstream else parse_reply(content)
            except MalformedReply as exc:
                problems.append(f"reply {attempt}: {exc}")
                log.info("judge_reply_malformed", model=self.model, attempt=attempt, error=str(exc))
                retry = upstream_retry_prompt(str(exc)) if upstream else retry_prompt(str(exc))
                messages += [{"role": "assistant", "content": content or ""}, {"role": "user", "content": retry}]
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
                for q in checklist_for(self.rubric)
            ]
            verdict = make_verdict(answers=answers, cost=cost, tokens=tokens, **common)
            if problems:  # keep what it took to get a valid reply
                return _with_inputs(verdict, retries=problems, model=self.model)
            return _with_inputs(verdict, model=self.model)
        error = f"no valid reply from {self.model} after {self.max_attempts} attempt(s): " + "; ".join(problems)
        return _with_inputs(failed_verdict(error=error, cost=cost, tokens=tokens, **common), retries=problems, model=self.model)

    def _complete(self, messages: list[dict[str, str]], *, json_mode: bool = True, max_tokens: int | None = None) -> Any:
        litellm = _litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": 0,
            "timeout": self.timeout,
            "drop_params": True,  # providers without JSON mode get the prompt's instructions only
            # one retry policy, ours (bounded by max_attempts): no hidden client-side retries
            "num_retries": 0,
            "max_retries": 0,
        }
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
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
    return attrs.evolve(verdict, inputs={**verdict.inputs, **extra})


def make_llm_judge(*, host: Catalog | None = None, **config: Any) -> LLMJudge:
    """``OracleSpec`` factory: ``model``, ``api_base``, ``api_key``, ``threshold``, ``max_attempts``,
    ``timeout`` from the configuration (the rest from the environment); ``host`` is bound by the
    plugin's registration hook."""
    allowed = {"model", "api_base", "api_key", "threshold", "max_attempts", "timeout", "completion_kwargs", "mode", "rubric"}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ConfigError(f"judge-llm does not take {', '.join(unknown)}", hints=(f"known options: {', '.join(sorted(allowed))}",))
    return LLMJudge(**config, host=host)


def make_gated_judge(*, host: Catalog | None = None, **config: Any) -> LLMJudge:
    """``OracleSpec`` factory of ``judge-llm-gated``: judge-llm behind the judge-rules gates (found
    in ``host``)."""
    return make_llm_judge(host=host, **{**config, "mode": "gated"})

