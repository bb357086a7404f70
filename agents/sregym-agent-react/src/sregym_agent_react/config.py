"""The react agent's settings: the model and its budgets.

Everything comes from the agent config (``sregym run --model`` arrives as ``model``), then the
environment (``AGENT_MODEL``, ``AGENT_API_BASE``, ``AGENT_API_KEY``), then defaults. A local
OpenAI-compatible server (vLLM, Ollama, a test stub) is ``model="openai/<name>"`` with
``api_base="http://127.0.0.1:8000/v1"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from sregym_core.errors import AgentError, ConfigError

ENV_MODEL, ENV_API_BASE, ENV_API_KEY = "AGENT_MODEL", "AGENT_API_BASE", "AGENT_API_KEY"

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "model": {"type": "string", "description": "litellm model string (default $AGENT_MODEL)"},
        "api_base": {"type": "string", "description": "OpenAI-compatible base URL (default $AGENT_API_BASE)"},
        "api_key": {"type": "string", "description": "provider key (default $AGENT_API_KEY)"},
        "max_steps_diagnosis": {"type": "integer", "minimum": 1},
        "max_steps_mitigation": {"type": "integer", "minimum": 1},
        "max_tokens_diagnosis": {"type": "integer", "minimum": 1},
        "max_tokens_mitigation": {"type": "integer", "minimum": 1},
        "max_output_tokens": {"type": "integer", "minimum": 1},
        "observation_chars": {"type": "integer", "minimum": 200},
        "context_chars": {"type": "integer", "minimum": 2000},
        "max_retries": {"type": "integer", "minimum": 0},
        "retry_backoff": {"type": "number", "minimum": 0},
        "call_timeout": {"type": "number", "exclusiveMinimum": 0},
        "self_check": {"type": "boolean"},
        "self_check_rejections": {"type": "integer", "minimum": 0},
        "completion_kwargs": {"type": "object"},
    },
    "additionalProperties": True,
}


def _whole(minimum: int):
    def check(_instance: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"react agent setting {attribute.name} must be a whole number >= {minimum}, got {value!r}")

    return check


@attrs.frozen(kw_only=True)
class ReactConfig:
    """Resolved settings of one react agent.

    Budgets are per phase: ``max_steps_*`` counts model calls, ``max_tokens_*`` counts prompt plus
    completion tokens over those calls. ``observation_chars`` cuts each tool output (head and tail
    kept); ``context_chars`` is the size above which old tool outputs are shortened.
    """

    model: str | None = None
    api_base: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    max_steps_diagnosis: int = attrs.field(default=25, validator=_whole(1))
    max_steps_mitigation: int = attrs.field(default=25, validator=_whole(1))
    max_tokens_diagnosis: int = attrs.field(default=400_000, validator=_whole(1))
    max_tokens_mitigation: int = attrs.field(default=400_000, validator=_whole(1))
    max_output_tokens: int = attrs.field(default=2048, validator=_whole(1))
    observation_chars: int = attrs.field(default=6000, validator=_whole(1))
    context_chars: int = attrs.field(default=80_000, validator=_whole(1))
    max_retries: int = attrs.field(default=3, validator=_whole(0))
    retry_backoff: float = 2.0
    call_timeout: float = 180.0
    self_check: bool = True
    self_check_rejections: int = attrs.field(default=1, validator=_whole(0))
    completion_kwargs: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> ReactConfig:
        """Merge the agent config with the environment; unknown keys are an error with the known list."""
        environ = os.environ if environ is None else environ
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(f"the react agent does not take {', '.join(unknown)}",
                              hints=(f"known settings: {', '.join(sorted(known))}",))
        values = {key: value for key, value in settings.items() if value is not None}
        values.setdefault("model", environ.get(ENV_MODEL) or None)
        values.setdefault("api_base", environ.get(ENV_API_BASE) or None)
        values.setdefault("api_key", environ.get(ENV_API_KEY) or None)
        return cls(**values)

    def require_model(self) -> str:
        if not self.model:
            raise AgentError(
                "the react agent needs a model and none is configured",
                hints=(f"pass --model (any litellm model string, e.g. gpt-4o-mini) or set {ENV_MODEL}",
                       f"for a local OpenAI-compatible server (vLLM, Ollama): {ENV_MODEL}=openai/<name> "
                       f"{ENV_API_BASE}=http://127.0.0.1:8000/v1"),
            )
        return self.model

    def budget(self, phase: str) -> tuple[int, int]:
        """(steps, tokens) for ``diagnosis`` or ``mitigation``."""
        if phase == "diagnosis":
            return self.max_steps_diagnosis, self.max_tokens_diagnosis
        return self.max_steps_mitigation, self.max_tokens_mitigation
