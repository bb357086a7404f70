"""Hook implementations of the judge-llm plugin (the logic lives in sibling modules)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from .judge import make_gated_judge, make_llm_judge

if TYPE_CHECKING:
    from sregym_core.catalog import Catalog

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
def sregym_oracles(host: Catalog) -> list[OracleSpec]:
    # the gated judge finds judge-rules in the host it was registered with (bound, never read here)
    return [
        OracleSpec(
            name="judge-llm",
            summary="9-question checklist judge on an LLM through litellm (JUDGE_MODEL, JUDGE_API_BASE, JUDGE_API_KEY)",
            kind="judge",
            factory=functools.partial(make_llm_judge, host=host),
            config_schema=CONFIG_SCHEMA,
        ),
        OracleSpec(
            name="judge-llm-gated",
            summary="judge-llm behind judge-rules' hard gates (component asserted as the cause, no hedge, no kitchen sink, "
                    "no injection); the default of `sregym run` when a judge model is configured",
            kind="judge",
            factory=functools.partial(make_gated_judge, host=host),
            config_schema=CONFIG_SCHEMA,
        ),
    ]

