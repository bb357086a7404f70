"""What an agent receives and returns.

An agent is any object with ``async run(task: AgentTask) -> AgentOutcome``. It talks to the
benchmark only through what the task gives it: the app description, the MCP URL, the conductor's
HTTP API (``POST {api_url}/submit``) and a restricted kubeconfig. Validation agents (``needs``
contains ``ground-truth``) also get :class:`PrivilegedAccess`; evaluated agents never do.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

from .types import GroundTruth


@attrs.frozen(kw_only=True)
class PrivilegedAccess:
    """Handed only to reference and hacker agents, which prove problems sound.

    Attributes:
        ground_truth: the problem's ground truth.
        reference_fixes: coroutine functions applying each fault's gold fix (as an agent would).
        faulty_workloads: ``(namespace, kind, name)`` of the workloads the faults touch.
        admin_kubeconfig: the benchmark's own kubeconfig (hackers use the agent one anyway).
        injected: per fault instance (triggers excluded), what the injection did: ``fault``,
            ``kind``, ``namespace``, ``name``, ``service`` and ``state`` (a JSON copy of the fault's
            state: for template faults the JSON-patch ``ops`` and the ``originals`` they replaced), so
            a hacker can re-break the same field with a different value.
    """

    ground_truth: tuple[GroundTruth, ...]
    reference_fixes: tuple[Callable[[], Awaitable[None]], ...] = attrs.field(default=(), eq=False)
    faulty_workloads: tuple[tuple[str, str, str], ...] = ()
    admin_kubeconfig: Path | None = None
    injected: tuple[Mapping[str, Any], ...] = ()


@attrs.frozen(kw_only=True)
class AgentTask:
    """Everything an agent is given for one attempt.

    Attributes:
        attempt_id: opaque id of the attempt (never the problem id).
        app_name, app_namespace, app_description: what the agent is told about the app.
        api_url: the conductor HTTP API base URL (``/submit``, ``/status``, ``/get_app``).
        mcp_url: the MCP server's streamable-HTTP URL, if one runs.
        kubeconfig: the agent's restricted kubeconfig.
        workdir: a scratch directory the agent may write to.
        timeout: seconds the agent has in total.
        config: agent-specific settings (model, budgets...).
        privileged: only for validation agents.
    """

    attempt_id: str
    app_name: str
    app_namespace: str
    app_description: str
    api_url: str
    kubeconfig: Path
    workdir: Path
    timeout: float = 600.0
    mcp_url: str | None = None
    kubectl: str = "kubectl"
    config: Mapping[str, Any] = attrs.field(factory=dict)
    privileged: PrivilegedAccess | None = None


@attrs.frozen(kw_only=True)
class AgentOutcome:
    """How an agent's run ended.

    ``status`` is ``ok`` (it returned), ``crashed``, ``timeout`` or ``garbage`` (it broke the
    protocol).
    """

    status: str = "ok"
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    trajectory: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None


class Agent(Protocol):
    async def run(self, task: AgentTask) -> AgentOutcome: ...
