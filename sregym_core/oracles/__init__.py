"""Grading: diagnosis judges (the 9-question checklist) and mitigation-oracle combinators.

Public names:

* judges — :class:`Judge`, :class:`JudgeVerdict`, :class:`ChecklistAnswer`, :data:`CHECKLIST`,
  (the judges themselves are plugins: ``judge-rules``, ``judge-llm``);
* mitigation — :class:`OracleContext`, :class:`OracleVerdict`, :func:`build_oracle`,
  :data:`ORACLE_SCHEMA`, :data:`DEFAULT_ORACLE_CONFIG` and the building blocks
  :func:`baseline_preserved`, :func:`fault_invariant`, :func:`functional_slo`, :func:`workload_healthy`,
  :func:`sustained`,
  :func:`replay`, :func:`all_of`, :func:`any_of`.
"""

from __future__ import annotations

from .context import OracleContext
from .judge import (
    CHECKLIST,
    DEFAULT_THRESHOLD,
    DIMENSIONS,
    QUESTION_IDS,
    ChecklistAnswer,
    ChecklistQuestion,
    Judge,
    JudgeVerdict,
)
from .mitigation import (
    DEFAULT_ORACLE_CONFIG,
    ORACLE_SCHEMA,
    Oracle,
    OracleVerdict,
    all_of,
    any_of,
    baseline_preserved,
    build_oracle,
    describe_oracle,
    fault_invariant,
    functional_slo,
    replay,
    sustained,
    validate_oracle_config,
    workload_healthy,
)

__all__ = [
    "CHECKLIST",
    "DEFAULT_ORACLE_CONFIG",
    "DEFAULT_THRESHOLD",
    "DIMENSIONS",
    "ORACLE_SCHEMA",
    "QUESTION_IDS",
    "ChecklistAnswer",
    "ChecklistQuestion",
    "Judge",
    "JudgeVerdict",
    "Oracle",
    "OracleContext",
    "OracleVerdict",
    "all_of",
    "any_of",
    "baseline_preserved",
    "build_oracle",
    "describe_oracle",
    "fault_invariant",
    "functional_slo",
    "replay",
    "sustained",
    "validate_oracle_config",
    "workload_healthy",
]
