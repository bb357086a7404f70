"""The task prompt every CLI gets (also written to TASK.md in its work directory)."""

from __future__ import annotations

from sregym_core.agents import AgentTask

TEMPLATE = """\
You are an on-call Site Reliability Engineer. A fault has been injected into a microservice \
application running on Kubernetes; find it and repair it.

Application: {app_name} (namespace {namespace})
{description}

Tools:
- The MCP server "sregym" (already configured) provides exec_kubectl_cmd_safely(cmd), get_metrics(query), \
get_alerts(), get_logs(query, last_n_minutes), get_services(), get_operations(service), \
get_traces(service, last_n_minutes), get_dependency_graph(last_n_minutes), rollback_command() and \
submit(ans).
- kubectl in your shell is configured ($KUBECONFIG) with the same restricted credentials.

Do this in order:
1. Diagnosis. Investigate without changing anything, then submit your diagnosis with the MCP tool \
submit(ans="...") — or: curl -s -X POST {submit_url} -H 'Content-Type: application/json' \
-d '{{"solution": "..."}}'. Name the faulty component(s) and namespace, the affected resource, the \
mechanism (what exactly is wrong), the concrete values (e.g. the bad image tag, before -> after) and \
the symptoms. Name only the components actually at fault.
2. Mitigation. Repair the root cause (do not delete workloads, scale them to zero or restart everything \
blindly). Verify: all pods Ready, no alerts firing, no new errors in the logs. Then submit again with \
ans="done" (same tool or URL).
Do not finish before you have submitted twice. The current stage is at GET {status_url}.
"""


def task_prompt(task: AgentTask) -> str:
    return TEMPLATE.format(app_name=task.app_name, namespace=task.app_namespace,
                           description=task.app_description.strip(), submit_url=f"{task.api_url}/submit",
                           status_url=f"{task.api_url}/status")
