"""SREGym's LLM diagnosis judge (``judge-llm``) and judge calibration."""

from __future__ import annotations

from .calibration import CalibrationItem, CalibrationReport, calibrate, cohen_kappa, load_dataset
from .judge import LLMJudge, make_llm_judge
from .prompt import RESPONSE_SCHEMA

__all__ = [
    "RESPONSE_SCHEMA",
    "CalibrationItem",
    "CalibrationReport",
    "LLMJudge",
    "calibrate",
    "cohen_kappa",
    "load_dataset",
    "make_llm_judge",
]
