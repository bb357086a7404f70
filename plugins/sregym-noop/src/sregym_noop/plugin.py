"""Hook implementations of the stand-in plugin."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import AgentSpec, FaultSpec, TargetSelector

from . import fault
from .agent import EchoAgent


@hookimpl
def sregym_faults():
    return [
        FaultSpec(
            name="noop", summary="changes nothing (test stand-in)", layer="k8s",
            selector=TargetSelector(), params_schema=fault.PARAMS_SCHEMA,
            inject=fault.inject, recover=fault.recover, is_present=fault.is_present,
            reference_fix=fault.reference_fix, ground_truth=fault.ground_truth,
            capabilities=frozenset({"any"}), symptoms=("none",),
        )
    ]


@hookimpl
def sregym_agents():
    return [AgentSpec(name="echo", summary="submits a fixed diagnosis (test stand-in)",
                      needs=frozenset({"http-api"}), factory=EchoAgent, role="noop")]
