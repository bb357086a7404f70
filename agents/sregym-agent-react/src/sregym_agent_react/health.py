"""The self-check before declaring a mitigation done: pods Ready, no alerts firing, recent error logs.

It runs through the same MCP tools the model uses (so it sees what the agent is allowed to see) and
turns their text answers into a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

CallTool = Callable[[str, Mapping[str, Any]], Awaitable[str]]

POD_COLUMNS = ("NAME:.metadata.name,PHASE:.status.phase,READY:.status.containerStatuses[*].ready,"
               "RESTARTS:.status.containerStatuses[*].restartCount")


@attrs.frozen(kw_only=True)
class HealthReport:
    healthy: bool
    unready_pods: tuple[str, ...] = ()
    firing_alerts: int | None = None
    error_log_lines: int | None = None
    notes: tuple[str, ...] = ()

    def text(self) -> str:
        lines = []
        if self.unready_pods:
            lines.append(f"- pods not Ready: {', '.join(self.unready_pods)}")
        if self.firing_alerts:
            lines.append(f"- {self.firing_alerts} alert(s) firing (see get_alerts)")
        if self.error_log_lines:
            lines.append(f"- {self.error_log_lines} log line(s) in the last minute look like errors (see get_logs)")
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) or "- no problems found"

    def to_dict(self) -> dict[str, Any]:
        return {"healthy": self.healthy, "unready_pods": list(self.unready_pods), "firing_alerts": self.firing_alerts,
                "error_log_lines": self.error_log_lines, "notes": list(self.notes)}


def unready_pods(table: str) -> tuple[list[str], str | None]:
    """Pods from ``kubectl get pods -o custom-columns=POD_COLUMNS --no-headers`` that are not Ready.

    Returns the pods and, when the output is not a pod table at all, a note saying so.
    """
    bad = []
    rows = [line.split() for line in table.strip().splitlines() if line.strip()]
    if not rows or table.startswith(("Command Rejected", "Refused", "Tool error", "error", "Error")):
        return [], f"could not list pods: {table.strip()[:200]}"
    for row in rows:
        if len(row) < 3:
            continue
        name, phase, ready = row[0], row[1], row[2]
        if phase == "Succeeded":
            continue  # finished jobs are fine
        if phase != "Running" or ready in ("<none>", "") or "false" in ready.split(","):
            bad.append(f"{name} ({phase}{', not ready' if phase == 'Running' else ''})")
    return bad, None


def firing_alerts(text: str) -> int | None:
    if text.startswith("No alerts"):
        return 0
    found = re.match(r"\s*(\d+) firing", text)
    return int(found.group(1)) if found else None


def error_lines(text: str) -> int | None:
    found = re.search(r"\((\d+) look like errors\)", text)
    if found:
        return int(found.group(1))
    return 0 if text.startswith("No log lines") else None


async def check_health(call: CallTool, namespace: str, tool_names: set[str]) -> HealthReport:
    pods_text = await call("exec_kubectl_cmd_safely",
                           {"cmd": f"kubectl get pods -n {namespace} --no-headers -o custom-columns={POD_COLUMNS}"})
    bad, note = unready_pods(pods_text)
    notes = [note] if note else []
    alerts = logs = None
    if "get_alerts" in tool_names:
        alerts = firing_alerts(await call("get_alerts", {}))
    if "get_logs" in tool_names:
        logs = error_lines(await call("get_logs", {"query": f'{{namespace="{namespace}"}}', "last_n_minutes": 1}))
    # error lines alone do not block: logs from before the repair stay in the window for a minute
    healthy = not bad and not alerts and note is None
    return HealthReport(healthy=healthy, unready_pods=tuple(bad), firing_alerts=alerts, error_log_lines=logs,
                        notes=tuple(notes))
