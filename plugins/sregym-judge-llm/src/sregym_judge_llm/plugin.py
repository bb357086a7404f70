"""Hook implementations of the judge-llm plugin (the logic lives in sibling modules)."""

from __future__ import annotations

from typing import Any

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from .judge import make_gated_judge, make_llm_judge

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "api_base": {"type": "string"},
        "api_key": {"type": "string"},
        "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "mode": {"enum": ["plain", "gated"]},
        "rubric": {"enum": ["sregym", "upstream"]},
    },
}


@hookimpl
def sregym_oracles() -> list[OracleSpec]:
    return [
        OracleSpec(
            name="judge-llm",
            summary="9-question checklist judge on an LLM through litellm (JUDGE_MODEL, JUDGE_API_BASE, JUDGE_API_KEY)",
            kind="judge",
            factory=make_llm_judge,
            config_schema=CONFIG_SCHEMA,
        ),
        OracleSpec(
            name="judge-llm-gated",
            summary="judge-llm behind judge-rules' hard gates (component asserted as the cause, no hedge, no kitchen sink, "
                    "no injection); the default of `sregym run` when a judge model is configured",
            kind="judge",
            factory=make_gated_judge,
            config_schema=CONFIG_SCHEMA,
        ),
    ]

