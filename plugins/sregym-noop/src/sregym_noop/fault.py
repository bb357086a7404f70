"""The ``noop`` fault: injects nothing real, remembers that it was injected."""

from __future__ import annotations

from typing import Any

from sregym_core.types import GroundTruth


def inject(ctx: Any, target: Any, params: dict[str, Any]) -> None:
    ctx.state["injected"] = True
    ctx.state["label"] = params["label"]


def recover(ctx: Any, target: Any, params: dict[str, Any]) -> None:
    ctx.state["injected"] = False


def is_present(ctx: Any, target: Any, params: dict[str, Any]) -> bool:
    return bool(ctx.state.get("injected"))


def reference_fix(ctx: Any, target: Any, params: dict[str, Any]) -> None:
    ctx.state["injected"] = False


def ground_truth(target: Any, params: dict[str, Any], state: dict[str, Any]) -> GroundTruth:
    return GroundTruth(
        fault="noop", layer="k8s", components=(target.component.name,), namespace=target.namespace,
        resource_kind=target.component.kind, mechanism="nothing was changed (noop fault)",
        mutated_values={"label": params.get("label", "noop")},
        prose=f"The noop fault was applied to {target.component.name}; it changes nothing.",
    )


PARAMS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"label": {"type": "string", "default": "noop", "description": "a tag recorded in the state"}},
}
