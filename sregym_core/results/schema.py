"""JSON Schema of a result record (one line of ``results.jsonl``).

The same schema is published as ``schemas/result.schema.json`` at the repository root for tools
outside Python; a test keeps the two identical (regenerate with
``python -m sregym_core.results.schema > schemas/result.schema.json``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sregym_core.errors import ConfigError

from .record import AGENT_STATUSES, SCHEMA_VERSION, STAGES

_OPT_NUMBER = {"type": ["number", "null"], "minimum": 0}
_OPT_INT = {"type": ["integer", "null"], "minimum": 0}
_OPT_STRING = {"type": ["string", "null"]}
_TIMESTAMP = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"}

RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://sregym.dev/schemas/result.schema.json",
    "title": "SREGym attempt record",
    "description": "One attempt of one agent at one problem: verdicts with evidence, timings, cost.",
    "type": "object",
    "required": [
        "schema_version", "run_id", "problem_id", "agent", "attempt", "started_at", "success", "agent_status",
        "diagnosis_passed", "mitigation_passed",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "run_id": {"type": "string", "minLength": 1},
        "problem_id": {"type": "string", "minLength": 1},
        "upstream_id": {"type": ["string", "null"], "minLength": 1,
                        "description": "the upstream SREGym id the problem was run as; null: run by problem_id"},
        "agent": {"type": "string", "minLength": 1},
        "attempt": {"type": "integer", "minimum": 1},
        "app": {"type": "string"},
        "model": _OPT_STRING,
        "started_at": _TIMESTAMP,
        "finished_at": {"oneOf": [_TIMESTAMP, {"type": "null"}]},
        "diagnosis_passed": {"type": ["boolean", "null"], "description": "null: no diagnosis was submitted"},
        "diagnosis": {
            "description": "the judge's verdict (JudgeVerdict.to_dict())",
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "description": "a full verdict, or {passed: false, error: ...} when no judge ran",
                    "required": ["passed"],
                    "properties": {
                        "judge": {"type": "string"},
                        "passed": {"type": "boolean"},
                        "composite": {"type": "number", "minimum": 0, "maximum": 1},
                        "dimensions": {"type": "object", "additionalProperties": {"type": "number"}},
                        "answers": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["id", "dimension", "answer"],
                                "properties": {
                                    "id": {"type": "string"},
                                    "dimension": {"type": "string"},
                                    "question": {"type": "string"},
                                    "answer": {"type": "boolean"},
                                    "evidence": {"type": "string"},
                                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                },
                            },
                        },
                        "threshold": {"type": "number"},
                        "inputs": {"type": "object"},
                        "cost": _OPT_NUMBER,
                        "tokens": {"type": "object"},
                        "error": _OPT_STRING,
                    },
                },
            ],
        },
        "mitigation_passed": {"type": ["boolean", "null"], "description": "null: the mitigation was not graded"},
        "mitigation": {
            "description": "the mitigation oracle's verdict tree (OracleVerdict.to_dict())",
            "oneOf": [{"type": "null"}, {"$ref": "#/$defs/oracle_verdict"}],
        },
        "success": {"type": "boolean"},
        "stages": {
            "type": "array", "description": "the graded stages this attempt ran, in order",
            "items": {"enum": ["diagnosis", "mitigation"]}, "minItems": 1, "uniqueItems": True,
        },
        "time_to_diagnose_s": {**_OPT_NUMBER, "description": "s from the end of injection to the diagnosis submission"},
        "time_to_mitigate_s": {**_OPT_NUMBER, "description": "s from the end of injection to the mitigation submission"},
        "diagnosis_graded_s": {**_OPT_NUMBER, "description": "s from the end of injection to the end of judging (upstream TTL)"},
        "mitigation_graded_s": {**_OPT_NUMBER,
                                "description": "s from the end of injection to the end of the oracle (upstream TTM)"},
        "agent_timeout_s": {**_OPT_NUMBER, "description": "the agent's time limit in seconds"},
        "steps": _OPT_INT,
        "prompt_tokens": _OPT_INT,
        "completion_tokens": _OPT_INT,
        "cost_usd": _OPT_NUMBER,
        "agent_status": {"enum": list(AGENT_STATUSES)},
        "timeouts": {
            "type": "array",
            "description": "what ran out of time: 'agent' (the agent's overall limit) or a stage: " + ", ".join(STAGES),
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
        },
        "deploy_failed": {"type": "boolean"},
        "deploy_attempts": {"type": "integer", "minimum": 0},
        "error": _OPT_STRING,
        "fault_mechanism": {
            "type": ["string", "null"], "pattern": "^[a-z0-9-]+(,[a-z0-9-]+)*$",
            "description": "the real machinery the faults ran by (sregym_core.mechanisms names: bpf-lsm, bpf-fmod-ret, "
                           "bpf-cgroup, seccomp-supervisor, fuse-badblocks, dm-dust, ld-preload-shim), comma-joined "
                           "in problem order; null: faults acting through the Kubernetes API alone",
        },
        "trajectory_path": _OPT_STRING,
        "extra": {"type": "object"},
    },
    "$defs": {
        "oracle_verdict": {
            "type": "object",
            "required": ["name", "passed"],
            "properties": {
                "name": {"type": "string"},
                "passed": {"type": "boolean"},
                "evidence": {"type": "object"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/oracle_verdict"}},
                "error": _OPT_STRING,
            },
        }
    },
}


def validate_record_dict(data: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` naming every JSON path where ``data`` breaks :data:`RESULT_SCHEMA`."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(RESULT_SCHEMA)
    errors = sorted(validator.iter_errors(dict(data)), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(
            "invalid result record",
            errors=[("record" + "".join(f"[{p!r}]" for p in e.absolute_path), e.message) for e in errors],
        )


def schema_json() -> str:
    """The schema as published in ``schemas/result.schema.json``."""
    return json.dumps(RESULT_SCHEMA, indent=2) + "\n"


if __name__ == "__main__":  # pragma: no cover - regeneration helper
    print(schema_json(), end="")
