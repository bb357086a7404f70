"""Actions of the RL environment: one tool call each, as text or as a mapping.

The tools are the agent surface's own (the MCP tool names), so a policy trained here speaks to a
benchmark run unchanged:

=====================  =========================================  ==============================
text action            mapping action                             tool
=====================  =========================================  ==============================
``kubectl <args>``     ``{"tool": "exec_kubectl_cmd_safely",      kubectl, restricted identity
                       "args": {"cmd": "kubectl <args>"}}``
``metrics <promql>``   ``{"tool": "get_metrics", ...}``           Prometheus instant query
``alerts``             ``{"tool": "get_alerts"}``                 firing / pending alerts
``logs <query>``       ``{"tool": "get_logs", ...}``              Loki (LogQL or a service name)
``traces <service>``   ``{"tool": "get_traces", ...}``            Jaeger summary
``services``           ``{"tool": "get_services"}``               traced services
``operations <svc>``   ``{"tool": "get_operations", ...}``        a service's span names
``dependencies``       ``{"tool": "get_dependency_graph"}``       caller -> callee from traces
``rollback``           ``{"tool": "rollback_command"}``           undo the last kubectl change
``submit <text>``      ``{"tool": "submit", "args": {"ans": t}}`` diagnosis, then "done"
``wait <seconds>``     ``{"tool": "wait", "args": {"seconds": n}}`` let time pass (at most 60 s)
=====================  =========================================  ==============================

``wait`` is the environment's own: a policy's steps take no wall time, unlike an agent's model
calls, yet a live system needs time to settle after a fix before the oracles measure it.

A malformed action is not an exception: it is an observation saying what is wrong (a policy's
mistake is part of its episode), flagged ``info["invalid_action"]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

#: text verb -> (tool name, the argument the rest of the line fills)
TEXT_VERBS: dict[str, tuple[str, str | None]] = {
    "kubectl": ("exec_kubectl_cmd_safely", "cmd"),
    "metrics": ("get_metrics", "query"),
    "alerts": ("get_alerts", None),
    "logs": ("get_logs", "query"),
    "traces": ("get_traces", "service"),
    "services": ("get_services", None),
    "operations": ("get_operations", "service"),
    "dependencies": ("get_dependency_graph", None),
    "rollback": ("rollback_command", None),
    "submit": ("submit", "ans"),
    "wait": ("wait", "seconds"),
}

#: the longest ``wait`` one step may ask for
MAX_WAIT_S = 60

#: tool name -> (required arguments, optional arguments)
TOOLS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "exec_kubectl_cmd_safely": (frozenset({"cmd"}), frozenset()),
    "rollback_command": (frozenset(), frozenset()),
    "get_metrics": (frozenset({"query"}), frozenset()),
    "get_alerts": (frozenset(), frozenset()),
    "get_logs": (frozenset({"query"}), frozenset({"last_n_minutes"})),
    "get_labels": (frozenset(), frozenset()),
    "get_label_values": (frozenset({"label"}), frozenset()),
    "get_services": (frozenset(), frozenset()),
    "get_operations": (frozenset({"service"}), frozenset()),
    "get_traces": (frozenset({"service"}), frozenset({"last_n_minutes"})),
    "get_dependency_graph": (frozenset(), frozenset({"last_n_minutes"})),
    "submit": (frozenset({"ans"}), frozenset()),
    "wait": (frozenset({"seconds"}), frozenset()),
}

TOOL_HELP = ("Actions (one tool call per step): kubectl <args> | metrics <promql> | alerts | logs <query> | "
             "traces <service> | services | operations <service> | dependencies | rollback | wait <seconds> | submit <text>. "
             "Submit the diagnosis first, then 'submit done' once the problem is mitigated.")


@attrs.frozen
class ToolCall:
    tool: str
    args: Mapping[str, Any] = attrs.field(factory=dict)


class InvalidAction(ValueError):
    """The action is not a tool call; the message is the observation the policy gets."""


def parse_action(action: Any) -> ToolCall:
    """A :class:`ToolCall` from a text or mapping action (:class:`InvalidAction` otherwise)."""
    if isinstance(action, ToolCall):
        return _checked(action.tool, dict(action.args))
    if isinstance(action, str):
        text = action.strip()
        if text.startswith("{"):
            try:
                action = json.loads(text)
            except ValueError as exc:  # a JSONDecodeError, or the int-digits limit's plain ValueError
                detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise InvalidAction(f"invalid action: not JSON ({detail}). {TOOL_HELP}") from None
        else:
            return _from_text(text)
    if isinstance(action, Mapping):
        tool = action.get("tool")
        args = action.get("args", {})
        if not isinstance(tool, str) or not isinstance(args, Mapping):
            raise InvalidAction('invalid action: a mapping action is {"tool": <name>, "args": {...}}. ' + TOOL_HELP)
        return _checked(tool, dict(args))
    raise InvalidAction(f"invalid action: expected text or a mapping, got {type(action).__name__}. {TOOL_HELP}")


def _from_text(text: str) -> ToolCall:
    verb, _, rest = text.partition(" ")
    rest = rest.strip()
    known = TEXT_VERBS.get(verb)
    if known is None:
        raise InvalidAction(f"invalid action: unknown verb {verb!r}. {TOOL_HELP}")
    tool, argument = known
    if argument is None:
        if rest:
            raise InvalidAction(f"invalid action: {verb!r} takes no argument. {TOOL_HELP}")
        return ToolCall(tool)
    if not rest:
        raise InvalidAction(f"invalid action: {verb!r} needs an argument. {TOOL_HELP}")
    if verb == "wait":
        try:
            return _checked(tool, {argument: int(rest)})
        except ValueError:
            raise InvalidAction(f"invalid action: wait takes whole seconds (1..{MAX_WAIT_S})") from None
    # the kubectl tool takes the whole command line, as the MCP tool does
    return ToolCall(tool, {argument: text if verb == "kubectl" else rest})


def _checked(tool: str, args: dict[str, Any]) -> ToolCall:
    if tool not in TOOLS:
        raise InvalidAction(f"invalid action: unknown tool {tool!r} (tools: {', '.join(TOOLS)})")
    required, optional = TOOLS[tool]
    missing = sorted(required - args.keys())
    extra = sorted(args.keys() - required - optional)
    if missing or extra:
        raise InvalidAction(f"invalid action: {tool} takes {sorted(required | optional) or 'no arguments'}"
                            + (f"; missing {missing}" if missing else "") + (f"; unexpected {extra}" if extra else ""))
    for name, value in args.items():
        expected = int if name in ("last_n_minutes", "seconds") else str
        if not isinstance(value, expected) or isinstance(value, bool):
            raise InvalidAction(f"invalid action: {tool} argument {name!r} must be {expected.__name__}")
    if tool == "wait" and not 1 <= args["seconds"] <= MAX_WAIT_S:
        raise InvalidAction(f"invalid action: wait takes 1..{MAX_WAIT_S} seconds")
    return ToolCall(tool, args)
