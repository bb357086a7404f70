"""The ``noop`` fault: injects nothing real, remembers that it was injected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sregym_core.faults import FaultContext
from sregym_core.types import GroundTruth, Target


class NoopFault:
    """A :class:`~sregym_core.faults.Fault` that only records its own state."""

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = True
        ctx.state["label"] = params["label"]

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
        return bool(ctx.state.get("injected"))

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = False

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        ctx.state["injected"] = False

    def ground_truth(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
        return GroundTruth(
            fault="noop", layer="k8s", components=(target.component.name,), namespace=target.namespace,
            resource_kind=target.component.kind, mechanism="an inert marker recorded in the fault's own state (noop fault)",
            mutated_values={"label": params.get("label", "noop")},
            prose=f"The noop fault was applied to {target.component.name}; it changes nothing.",
        )


PARAMS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"label": {"type": "string", "default": "noop", "description": "a tag recorded in the state"}},
}
