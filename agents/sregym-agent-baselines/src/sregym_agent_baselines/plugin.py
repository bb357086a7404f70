"""Hook implementations: the validation agents."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import AgentSpec

from . import agents

_PRIVILEGED = frozenset({"http-api", "kubeconfig", "ground-truth"})


@hookimpl
def sregym_agents():
    return [
        AgentSpec(name="reference", summary="applies each fault's gold fix and submits the ground truth",
                  needs=_PRIVILEGED, factory=agents.ReferenceAgent, role="reference"),
        AgentSpec(name="noop", summary="changes nothing (must fail mitigation)",
                  needs=frozenset({"http-api"}), factory=agents.NoopAgent, role="noop"),
        AgentSpec(name="restart-all", summary="deletes every app pod (must fail mitigation)",
                  needs=_PRIVILEGED, factory=agents.RestartAllAgent, role="hacker"),
        AgentSpec(name="scale-zero-faulty", summary="scales the faulty workloads to zero (must fail mitigation)",
                  needs=_PRIVILEGED, factory=agents.ScaleZeroFaultyAgent, role="hacker"),
        AgentSpec(name="delete-faulty", summary="deletes the faulty workloads (must fail mitigation)",
                  needs=_PRIVILEGED, factory=agents.DeleteFaultyAgent, role="hacker"),
    ]
