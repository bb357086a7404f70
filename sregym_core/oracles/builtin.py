"""Builtin oracles, registered exactly like a plugin's: the mitigation-oracle leaves
(``baseline-preserved``, ``fault-invariant``, ``functional-slo``, ``workload-healthy``). Diagnosis
judges are plugins (``judge-rules``, ``judge-llm``).

Combinators (``all``, ``any``, ``sustained``, ``replay``) are syntax of the ``oracle:`` section, not
registered records; see :func:`sregym_core.oracles.mitigation.build_oracle`.
"""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from . import mitigation


@hookimpl
def sregym_oracles() -> list[OracleSpec]:
    leaf_schema = mitigation.ORACLE_SCHEMA["$defs"]["oracle"]["oneOf"][1]["properties"]
    return [
        OracleSpec(
            name="baseline-preserved",
            summary="no workload deleted, scaled down, relabelled or replaced, and every untouched pod template as after deploy",
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
            summary="workload success rate, answer content against the seeded data (and p95 latency) over a window",
            kind="mitigation",
            factory=mitigation.functional_slo,
            config_schema=leaf_schema["functional_slo"],
        ),
        OracleSpec(
            name="workload-healthy",
            summary="each faulty workload's rollout complete, desired replicas ready, Service with ready endpoints",
            kind="mitigation",
            factory=mitigation.workload_healthy,
            config_schema=leaf_schema["workload_healthy"],
        ),
    ]
