"""The validation agents pass the agent contract and write sensible diagnoses."""

from __future__ import annotations

import sregym_agent_baselines.plugin
from sregym_agent_baselines.agents import describe_truth

from sregym_core.testing.contracts import AgentContract
from sregym_core.types import GroundTruth


class TestBaselineAgents(AgentContract):
    plugin = sregym_agent_baselines.plugin


def test_describe_truth_names_component_mechanism_and_values():
    truth = GroundTruth(fault="wrong-image", layer="k8s", components=("geo",), namespace="hotel-reservation",
                        resource_kind="Deployment", mechanism="container image set to a tag that does not exist",
                        mutated_values={"image": {"before": "hotel:1.0", "after": "hotel:404"}})
    text = describe_truth((truth,))
    assert "geo" in text and "hotel-reservation" in text and "hotel:1.0 -> hotel:404" in text
    assert "tag that does not exist" in text
