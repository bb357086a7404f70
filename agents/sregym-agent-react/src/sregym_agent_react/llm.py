"""Model calls through litellm: function calling at temperature 0, bounded retries, usage and cost.

litellm is imported lazily (it takes many seconds to import) and told to use its bundled price
list, because these machines may only talk to 127.0.0.1 and cost figures need the list anyway.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import structlog

from .config import ReactConfig

log = structlog.get_logger()

#: Provider errors worth another try: rate limits, timeouts, overload, connection trouble.
RETRYABLE_ERRORS = frozenset({"RateLimitError", "APIConnectionError", "Timeout", "ServiceUnavailableError",
                              "InternalServerError", "BadGatewayError", "APIError"})
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def litellm_module() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class ProviderError(Exception):
    """The model could not be reached or refused the request (after the allowed retries)."""

    def __init__(self, message: str, *, attempts: int, retryable: bool) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


class ContextTooLong(ProviderError):
    """The provider says the conversation no longer fits the model's context window."""


@attrs.frozen(kw_only=True)
class ToolCallRequest:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it (may be malformed)


@attrs.frozen(kw_only=True)
class Reply:
    content: str
    tool_calls: tuple[ToolCallRequest, ...]
    prompt_tokens: int
    completion_tokens: int
    cost: float
    latency_s: float
    attempts: int
    finish_reason: str | None = None


def is_retryable(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in RETRYABLE_STATUS:
        return True
    if isinstance(status, int) and 400 <= status < 500:
        return False
    return type(exc).__name__ in RETRYABLE_ERRORS or isinstance(exc, TimeoutError | ConnectionError)


def describe_error(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".strip()


class ChatModel:
    """One model, called with the conversation and tool schemas; never retries on its own beyond
    ``config.max_retries`` (litellm's client-side retries are switched off)."""

    def __init__(self, config: ReactConfig) -> None:
        self.config = config
        self.model = config.require_model()

    async def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> Reply:
        litellm = litellm_module()
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": list(messages), "temperature": 0,
            "max_tokens": self.config.max_output_tokens, "timeout": self.config.call_timeout,
            "num_retries": 0, "max_retries": 0, "drop_params": True,
        }
        if tools:
            kwargs["tools"] = list(tools)
            kwargs["tool_choice"] = "auto"
        if self.config.api_base:
            kwargs["api_base"] = self.config.api_base
            kwargs["api_key"] = self.config.api_key or "sk-no-key"  # local servers rarely check; clients insist
        elif self.config.api_key:
            kwargs["api_key"] = self.config.api_key
        kwargs.update(self.config.completion_kwargs)
        attempts = 0
        while True:
            attempts += 1
            started = time.monotonic()
            try:
                response = await litellm.acompletion(**kwargs)
            except Exception as exc:  # noqa: BLE001 - providers raise many types; classify, then retry or give up
                if type(exc).__name__ == "ContextWindowExceededError":
                    raise ContextTooLong(describe_error(exc), attempts=attempts, retryable=False) from exc
                retryable = is_retryable(exc)
                log.warning("agent_llm_error", model=self.model, attempt=attempts, retryable=retryable,
                            error=describe_error(exc))
                if not retryable or attempts > self.config.max_retries:
                    raise ProviderError(describe_error(exc), attempts=attempts, retryable=retryable) from exc
                await asyncio.sleep(self.config.retry_backoff * (2 ** (attempts - 1)))
                continue
            return self._reply(response, time.monotonic() - started, attempts)

    def _reply(self, response: Any, latency: float, attempts: int) -> Reply:
        usage = getattr(response, "usage", None)
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError):
            choice, message = None, None
        calls = []
        for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
            function = getattr(call, "function", None)
            name = getattr(function, "name", None) or ""
            arguments = getattr(function, "arguments", None)
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments if arguments is not None else {})
            calls.append(ToolCallRequest(id=getattr(call, "id", None) or f"call_{index}", name=name, arguments=arguments))
        return Reply(content=getattr(message, "content", None) or "", tool_calls=tuple(calls),
                     prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                     completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                     cost=self._cost(response), latency_s=round(latency, 3), attempts=attempts,
                     finish_reason=getattr(choice, "finish_reason", None))

    def _cost(self, response: Any) -> float:
        hidden = getattr(response, "_hidden_params", None) or {}
        if isinstance(hidden.get("response_cost"), int | float):
            return float(hidden["response_cost"])
        try:
            return float(litellm_module().completion_cost(completion_response=response) or 0.0)
        except Exception:  # noqa: BLE001 - models without a price cost 0 here (e.g. local servers)
            return 0.0
