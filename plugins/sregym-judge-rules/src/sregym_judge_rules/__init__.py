"""SREGym's deterministic diagnosis judge (``judge-rules``), its labelled set and ``sregym judge``."""

from __future__ import annotations

from .rules import RulesJudge, concrete_values, make_rules_judge

__all__ = ["RulesJudge", "concrete_values", "make_rules_judge"]
