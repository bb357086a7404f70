"""Hook implementations of the judge-rules plugin (the logic lives in sibling modules)."""

from __future__ import annotations

from typing import Any

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from .rules import make_rules_judge

_THRESHOLD_SCHEMA = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "threshold": _THRESHOLD_SCHEMA,
        "over_broad_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "over_broad_min": {"type": "integer", "minimum": 1},
        "rubric": {"enum": ["sregym", "upstream"]},
    },
}


@hookimpl
def sregym_oracles() -> list[OracleSpec]:
    return [
        OracleSpec(
            name="judge-rules",
            summary="deterministic offline checklist judge: assertions about the faulty component against the structured ground truth",
            kind="judge",
            factory=make_rules_judge,
            config_schema=CONFIG_SCHEMA,
        )
    ]


@hookimpl
def sregym_register_commands(cli: Any) -> None:
    from .cli import judge_group

    cli.add_command(judge_group)
