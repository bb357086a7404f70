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
            impl=fault.NoopFault(),
            capabilities=frozenset({"any"}), symptoms=("none",),
            # runs wherever a test asks for it, but is never offered as a viable pair of a real app
            stand_in=True,
        )
    ]


@hookimpl
def sregym_agents():
    return [AgentSpec(name="echo", summary="submits a fixed diagnosis (test stand-in)",
                      needs=frozenset({"http-api"}), factory=EchoAgent, role="noop")]
