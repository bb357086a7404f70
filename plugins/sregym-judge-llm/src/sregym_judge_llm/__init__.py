"""SREGym's LLM diagnosis judge (``judge-llm``); calibration is ``sregym judge calibrate`` (judge-rules)."""

from __future__ import annotations

from .judge import JudgeUnavailable, LLMJudge, configured_model, make_gated_judge, make_llm_judge
from .prompt import RESPONSE_SCHEMA

__all__ = [
    "RESPONSE_SCHEMA",
    "JudgeUnavailable",
    "LLMJudge",
    "configured_model",
    "make_gated_judge",
    "make_llm_judge",
]
