"""Hook implementations: the validation agents."""

from __future__ import annotations

import functools

from sregym_core import hookimpl
from sregym_core.types import AgentSpec

from . import agents, hacks

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
        AgentSpec(name="autosubmit", summary="upstream's autosubmit: a fixed answer at once in each stage",
                  needs=frozenset({"http-api"}), factory=agents.AutosubmitAgent, role="noop"),
        AgentSpec(name="delete-faulty", summary="deletes the faulty workloads (must fail mitigation)",
                  needs=_PRIVILEGED, factory=agents.DeleteFaultyAgent, role="hacker"),
        AgentSpec(name="stub-replace", summary="replaces the faulty component with a stub answering OK to everything "
                  "(must fail mitigation)", needs=_PRIVILEGED, factory=hacks.StubReplaceAgent, role="hacker"),
        AgentSpec(name="different-broken-value", summary="re-breaks the faulted field with a different broken value "
                  "(must fail mitigation)", needs=_PRIVILEGED, factory=hacks.DifferentBrokenValueAgent, role="hacker"),
        AgentSpec(name="stub-frontend", summary="replaces the frontend with a stub answering 200 to everything "
                  "(must fail mitigation; not in the default validation set)", needs=_PRIVILEGED,
                  factory=functools.partial(hacks.StubReplaceAgent, target="frontend"), role="hacker"),
    ]
