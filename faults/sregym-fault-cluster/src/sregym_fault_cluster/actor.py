"""A recurring actor: a CronJob that re-applies a bad memory limit to the target every minute.

Fixing the Deployment alone does not hold: the "rebalance" job patches it back within a minute
through the API (its own ServiceAccount, a Role allowed to patch Deployments). The fix is to stop
the actor (suspend or delete the CronJob) and restore the limit.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import api_actor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAME = "nightly-rebalance"
SELECTOR = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "db:*", "cache:*"))

#: what the job runs: a strategic-merge patch of the target's memory through the in-cluster API
SCRIPT = api_actor.API_PRELUDE + """\
target, container, memory = os.environ["TARGET"], os.environ["CONTAINER"], os.environ["MEMORY"]
resources = {"limits": {"memory": memory}, "requests": {"memory": memory}}
body = {"spec": {"template": {"spec": {"containers": [{"name": container, "resources": resources}]}}}}
request = urllib.request.Request(
    f"{base}/apis/apps/v1/namespaces/{namespace}/deployments/{target}", method="PATCH",
    data=json.dumps(body).encode(), headers={"Authorization": "Bearer " + token,
                                             "Content-Type": "application/strategic-merge-patch+json"})
with urllib.request.urlopen(request, context=context, timeout=20) as answer:
    print("rebalanced", target, "memory", memory, "->", answer.status, flush=True)
"""


def _objects(ctx: FaultContext, target: Target, memory: str, container: str) -> list[dict]:
    return api_actor.actor_objects(
        ctx.namespace, NAME,
        rules=[{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]}],
        containers=[api_actor.container("rebalance", SCRIPT, {"TARGET": target.component.name,
                                                              "CONTAINER": container, "MEMORY": memory})])


def _limit(ctx: FaultContext, target: Target) -> str | None:
    obj = kube.workload(ctx, target)
    container = kube.container(obj, target.component.container_name)
    return ((container.get("resources") or {}).get("limits") or {}).get("memory")


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    container = kube.container(obj, target.component.container_name)
    ctx.state.update(resources=container.get("resources") or {}, container=container["name"],
                     memory=params["memory"])
    for item in _objects(ctx, target, params["memory"], container["name"]):
        kube.apply(ctx, item)  # leaves no last-applied annotation (issue #34)
    # the first run right away (the schedule repeats it every minute)
    ctx.kubectl("create", "job", f"{NAME}-manual", f"--from=cronjob/{NAME}", "-n", ctx.namespace)


def _actor_active(ctx: FaultContext) -> bool:
    cron = kube.get(ctx, "cronjob", NAME, missing_ok=True)
    return cron is not None and not cron["spec"].get("suspend")


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    # the bad limit is in place, or the actor is still scheduled to put it back
    return _actor_active(ctx) or _limit(ctx, target) == ctx.state.get("memory", params["memory"])


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # stop the actor first, then restore the limit it keeps overwriting
    kube.patch(ctx, "cronjob", NAME, {"spec": {"suspend": True}})
    api_actor.delete_jobs(ctx, NAME)
    index = kube.container_index(kube.workload(ctx, target), ctx.state["container"])
    kube.patch(ctx, target.component.kind, target.component.name, [
        {"op": "add", "path": f"/spec/template/spec/containers/{index}/resources", "value": ctx.state["resources"]}],
        type="json")


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    api_actor.remove_actor(ctx, NAME)
    ctx.kubectl("delete", f"job/{NAME}-manual", "-n", ctx.namespace, "--ignore-not-found", "--wait=false")
    if "resources" in ctx.state and _limit(ctx, target) == ctx.state.get("memory"):
        index = kube.container_index(kube.workload(ctx, target), ctx.state["container"])
        kube.patch(ctx, target.component.kind, target.component.name, [
            {"op": "add", "path": f"/spec/template/spec/containers/{index}/resources",
             "value": ctx.state["resources"]}], type="json")


FAULTS: list[FaultSpec] = [
    function_fault(
        name="recurring-memory-actor", summary="a CronJob re-applies a tiny memory limit to the target every minute",
        layer="k8s", selector=SELECTOR, resource_kind="CronJob",
        params_schema=schema(memory={"type": "string", "default": "12Mi"}),
        mechanism="a recurring CronJob actor patches the Deployment's memory limit to a tiny value every minute, "
                  "so the container is OOMKilled and a fix of the Deployment alone is undone",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("OOMKilled", "CrashLoopBackOff"),
        keywords=("CronJob", NAME, "memory", "limit", "OOMKilled"),
        values=lambda t, p, s: {"cronjob": NAME, "memory_limit": s.get("memory", p.get("memory"))},
        prose="The CronJob {cronjob} patches {component}'s memory limit to {memory_limit} every minute: the "
              "container is OOMKilled, and restoring the limit alone is undone by the next run.",
    ),
]
