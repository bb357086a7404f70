"""Builtin oracles, registered exactly like a plugin's: the ``judge-rules`` diagnosis judge and the
mitigation-oracle leaves (``baseline-preserved``, ``fault-invariant``, ``functional-slo``).

Combinators (``all``, ``any``, ``sustained``, ``replay``) are syntax of the ``oracle:`` section, not
registered records; see :func:`sregym_core.oracles.mitigation.build_oracle`.
"""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from . import mitigation
from .rules import make_rules_judge

_THRESHOLD_SCHEMA = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


@hookimpl
def sregym_oracles() -> list[OracleSpec]:
    leaf_schema = mitigation.ORACLE_SCHEMA["$defs"]["oracle"]["oneOf"][1]["properties"]
    return [
        OracleSpec(
            name="judge-rules",
            summary="deterministic offline checklist judge: text matching against the structured ground truth",
            kind="judge",
            factory=make_rules_judge,
            config_schema={
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "threshold": _THRESHOLD_SCHEMA,
                    "over_broad_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                    "over_broad_min": {"type": "integer", "minimum": 1},
                },
            },
        ),
        OracleSpec(
            name="baseline-preserved",
            summary="no workload deleted, scaled to zero, relabelled or replaced since the post-deploy baseline",
            kind="mitigation",
            factory=mitigation.baseline_preserved,
            config_schema=leaf_schema["baseline_preserved"],
        ),
        OracleSpec(
            name="fault-invariant",
            summary="every fault instance's is_present check is false",
            kind="mitigation",
            factory=mitigation.fault_invariant,
            config_schema=leaf_schema["fault_invariant"],
        ),
        OracleSpec(
            name="functional-slo",
            summary="workload success rate (and p95 latency) over a window",
            kind="mitigation",
            factory=mitigation.functional_slo,
            config_schema=leaf_schema["functional_slo"],
        ),
    ]
