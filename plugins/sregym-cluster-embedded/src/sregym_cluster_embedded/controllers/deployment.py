"""Deployment controller: ReplicaSets per template revision, rolling update / Recreate, conditions.

Follows the observable behaviour of kube-controller-manager: RS names `<deploy>-<pod-template-hash>`,
revision annotations (bumped when an old RS is reused by `rollout undo`), ScalingReplicaSet events,
Available / Progressing conditions with the real reasons and messages, history cleanup.
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta

from .base import Controller, Key
from .replicaset import adopt_orphans
from .util import (
    Obj,
    controller_of,
    get_condition,
    int_or_percent,
    is_controlled_by,
    is_deleting,
    name_of,
    now,
    owner_ref,
    parse_time,
    rfc3339,
    set_condition,
    template_hash,
)
from .writes import api_error_code, prune_zero, write_patch, write_status

COMPONENT = "deployment-controller"
HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
# deployment annotations never copied onto its ReplicaSets
SKIP_ANNOTATIONS = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, HISTORY, DESIRED, MAX,
                    "deprecated.deployment.rollback.to"}


def revision_of(obj: Obj) -> int:
    try:
        return int((obj.get("metadata", {}).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def strip_hash(template: Obj) -> Obj:
    clean = copy.deepcopy(template or {})
    labels = (clean.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH, None)
    return clean


def same_template(a: Obj, b: Obj) -> bool:
    dump = lambda t: json.dumps(strip_hash(t), sort_keys=True)  # noqa: E731
    return dump(a) == dump(b)


def replicas_of(obj: Obj) -> int:
    value = obj.get("spec", {}).get("replicas")
    return 1 if value is None else int(value)


def surge_and_unavailable(deploy: Obj) -> tuple[int, int]:
    """maxSurge rounds up, maxUnavailable rounds down; both zero would deadlock, so unavailable becomes 1."""
    desired = replicas_of(deploy)
    rolling = (deploy.get("spec", {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = int_or_percent(rolling.get("maxSurge", "25%"), desired, round_up=True)
    unavailable = int_or_percent(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, desired)


class DeploymentController(Controller):
    name = "deployment"
    component = COMPONENT

    def setup(self) -> None:
        self.deploys = self.watch("deployments.apps")
        self.rsets = self.watch("replicasets.apps", lambda _e, rs, _o: self.enqueue_owner(rs, "Deployment"))
        self.pods = self.watch("pods", self._pod_changed)

    def _pod_changed(self, event: str, pod: Obj, _old: Obj | None) -> None:
        """A pod of one of our ReplicaSets is gone or has finished: a Recreate rollout waiting for the
        old pods (``_recreate``) may go on. Their ReplicaSet's status stopped counting them when they
        began terminating, so no ReplicaSet event would bring the Deployment back."""
        phase = (pod.get("status") or {}).get("phase")
        if event != "DELETED" and phase not in ("Succeeded", "Failed"):
            return
        ref = controller_of(pod)
        if not ref or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rsets.get(pod["metadata"].get("namespace", ""), ref.get("name", ""))
        if rs is not None:
            self.enqueue_owner(rs, "Deployment")

    async def reconcile(self, key: Key) -> None:
        deploy = self.deploys.get(*key)
        if deploy is None or is_deleting(deploy):
            return
        ns = key[0]
        await adopt_orphans(self.client, deploy, self.rsets, "replicasets.apps")
        owned = [rs for rs in self.rsets.list(ns) if is_controlled_by(rs, deploy) and not is_deleting(rs)]
        spec = deploy.get("spec", {})
        template = spec.get("template") or {}
        new_rs = next((rs for rs in owned if same_template(rs.get("spec", {}).get("template"), template)), None)
        old = [rs for rs in owned if rs is not new_rs]
        created = False
        if spec.get("paused"):
            await self._sync_paused(deploy, new_rs, old)
        else:
            if new_rs is None:
                new_rs, created = await self._create_new_rs(deploy, owned), True
            else:
                new_rs = await self._sync_revision(deploy, new_rs, owned)
            if new_rs is not None:
                if (spec.get("strategy") or {}).get("type") == "Recreate":
                    await self._recreate(deploy, new_rs, old)
                else:
                    await self._rolling(deploy, new_rs, old)
            await self._cleanup(deploy, old)
        await self._sync_status(deploy, new_rs, old, created)

    # ------------------------------------------------------------ replica sets

    async def _create_new_rs(self, deploy: Obj, owned: list[Obj]) -> Obj | None:
        spec = deploy["spec"]
        ns = deploy["metadata"].get("namespace", "")
        collisions = int((deploy.get("status") or {}).get("collisionCount") or 0)
        phash = template_hash(spec.get("template") or {}, collisions)
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH] = phash
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH] = phash
        surge, _ = surge_and_unavailable(deploy)
        revision = max((revision_of(rs) for rs in owned), default=0) + 1
        annotations = self._copied_annotations(deploy)
        annotations.update({REVISION: str(revision), DESIRED: str(replicas_of(deploy)),
                            MAX: str(replicas_of(deploy) + surge)})
        start = self._initial_replicas(deploy, owned)
        rs = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{name_of(deploy)}-{phash}", "namespace": ns,
                         "labels": dict(template["metadata"]["labels"]), "annotations": annotations,
                         "ownerReferences": [owner_ref(deploy)]},
            "spec": {"replicas": start, "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                     "selector": selector, "template": template},
        }
        try:
            created = await self.client.create("replicasets.apps", rs, ns)
        except Exception as exc:
            if api_error_code(exc) == 409:  # a hash collision with a foreign RS: bump collisionCount
                status = dict(deploy.get("status") or {}, collisionCount=collisions + 1)
                await write_status(self.client, "deployments.apps", deploy, status, self.deploys)
                self.enqueue((ns, name_of(deploy)))
                return None
            raise
        self.rsets.upsert(created)
        if start > 0:
            await self._scaled_event(deploy, created, 0, start)
        await self._set_deploy_revision(deploy, revision)
        return created

    def _copied_annotations(self, deploy: Obj) -> dict[str, str]:
        return {k: v for k, v in (deploy["metadata"].get("annotations") or {}).items() if k not in SKIP_ANNOTATIONS}

    def _initial_replicas(self, deploy: Obj, owned: list[Obj]) -> int:
        if (deploy["spec"].get("strategy") or {}).get("type") == "Recreate":
            return 0
        surge, _ = surge_and_unavailable(deploy)
        current = sum(replicas_of(rs) for rs in owned)
        room = replicas_of(deploy) + surge - current
        return max(0, min(room, replicas_of(deploy)))

    async def _sync_revision(self, deploy: Obj, new_rs: Obj, owned: list[Obj]) -> Obj:
        """Reusing an old RS (rollout undo) gives it the next revision and records the old one."""
        top = max((revision_of(rs) for rs in owned), default=0)
        annotations = dict(new_rs["metadata"].get("annotations") or {})
        wanted = dict(annotations)
        wanted.update(self._copied_annotations(deploy))
        current = revision_of(new_rs)
        revision = current
        if current < top or current == 0:
            revision = top + 1
            wanted[REVISION] = str(revision)
            if current:
                history = [h for h in annotations.get(HISTORY, "").split(",") if h]
                wanted[HISTORY] = ",".join(history + [str(current)])
        surge, _ = surge_and_unavailable(deploy)
        wanted[DESIRED] = str(replicas_of(deploy))
        wanted[MAX] = str(replicas_of(deploy) + surge)
        if wanted != annotations:
            new_rs = await write_patch(self.client, "replicasets.apps", new_rs,
                                       {"metadata": {"annotations": wanted}}, self.rsets)
        if str(revision) != (deploy["metadata"].get("annotations") or {}).get(REVISION):
            await self._set_deploy_revision(deploy, revision)
        return new_rs

    async def _set_deploy_revision(self, deploy: Obj, revision: int) -> None:
        await write_patch(self.client, "deployments.apps", deploy,
                          {"metadata": {"annotations": {REVISION: str(revision)}}}, self.deploys)

    async def _scale(self, deploy: Obj, rs: Obj, replicas: int) -> Obj:
        before = replicas_of(rs)
        surge, _ = surge_and_unavailable(deploy)
        annotations = {DESIRED: str(replicas_of(deploy)), MAX: str(replicas_of(deploy) + surge)}
        if before == replicas:
            return rs
        rs = await write_patch(self.client, "replicasets.apps", rs,
                               {"spec": {"replicas": replicas}, "metadata": {"annotations": annotations}},
                               self.rsets)
        await self._scaled_event(deploy, rs, before, replicas)
        return rs

    async def _scaled_event(self, deploy: Obj, rs: Obj, before: int, after: int) -> None:
        verb = "up" if after > before else "down"
        await self.ctx.event(deploy, "ScalingReplicaSet",
                             f"Scaled {verb} replica set {name_of(rs)} from {before} to {after}",
                             component=self.component)

    # ------------------------------------------------------------ strategies

    def _available(self, rs: Obj) -> int:
        return int((rs.get("status") or {}).get("availableReplicas") or 0)

    async def _rolling(self, deploy: Obj, new_rs: Obj, old: list[Obj]) -> None:
        desired = replicas_of(deploy)
        surge, max_unavailable = surge_and_unavailable(deploy)
        active_old = [rs for rs in old if replicas_of(rs) > 0]
        # scale up the new replica set within maxSurge
        total = replicas_of(new_rs) + sum(replicas_of(rs) for rs in active_old)
        if not active_old:
            new_rs = await self._scale(deploy, new_rs, desired)
            return
        if replicas_of(new_rs) < desired:
            room = desired + surge - total
            if room > 0:
                new_rs = await self._scale(deploy, new_rs, min(desired, replicas_of(new_rs) + room))
        elif replicas_of(new_rs) > desired:
            new_rs = await self._scale(deploy, new_rs, desired)
        # scale down old replica sets within maxUnavailable
        min_available = desired - max_unavailable
        new_unavailable = replicas_of(new_rs) - self._available(new_rs)
        all_pods = replicas_of(new_rs) + sum(replicas_of(rs) for rs in active_old)
        budget = all_pods - min_available - new_unavailable
        # first drop old replicas that are not available anyway
        for rs in sorted(active_old, key=revision_of):
            if budget <= 0:
                break
            unhealthy = replicas_of(rs) - self._available(rs)
            cut = min(unhealthy, budget)
            if cut > 0:
                await self._scale(deploy, rs, replicas_of(rs) - cut)
                budget -= cut
        active_old = [self.rsets.get(rs["metadata"].get("namespace", ""), name_of(rs)) or rs for rs in active_old]
        available_total = self._available(new_rs) + sum(self._available(rs) for rs in active_old)
        budget = available_total - min_available
        for rs in sorted(active_old, key=revision_of):
            if budget <= 0:
                break
            if replicas_of(rs) == 0:
                continue
            cut = min(replicas_of(rs), budget)
            await self._scale(deploy, rs, replicas_of(rs) - cut)
            budget -= cut
        # a surge larger than the old set may let the new one go straight to its size
        if replicas_of(new_rs) < desired and sum(replicas_of(r) for r in active_old) == 0:
            await self._scale(deploy, new_rs, desired)

    async def _recreate(self, deploy: Obj, new_rs: Obj, old: list[Obj]) -> None:
        for rs in old:
            if replicas_of(rs) > 0:
                await self._scale(deploy, rs, 0)
        ns = deploy["metadata"].get("namespace", "")
        still_running = [p for rs in old for p in self.pods.list(ns) if is_controlled_by(p, rs)
                         and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        if still_running:
            return  # old pods are terminating; the pod watch brings us back
        await self._scale(deploy, new_rs, replicas_of(deploy))

    async def _sync_paused(self, deploy: Obj, new_rs: Obj | None, old: list[Obj]) -> None:
        """Paused: no rollout, but `kubectl scale` still resizes the current replica sets."""
        active = [rs for rs in ([new_rs] if new_rs else []) + old if replicas_of(rs) > 0]
        total = sum(replicas_of(rs) for rs in active)
        diff = replicas_of(deploy) - total
        if diff and active:
            newest = max(active, key=revision_of)
            await self._scale(deploy, newest, max(0, replicas_of(newest) + diff))

    async def _cleanup(self, deploy: Obj, old: list[Obj]) -> None:
        limit = deploy["spec"].get("revisionHistoryLimit")
        limit = 10 if limit is None else int(limit)
        idle = [rs for rs in old if replicas_of(rs) == 0 and not (rs.get("status") or {}).get("replicas")]
        idle.sort(key=revision_of)
        for rs in idle[: max(0, len(idle) - limit)]:
            try:
                await self.client.delete("replicasets.apps", name_of(rs), rs["metadata"].get("namespace"))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
            self.rsets.remove(rs)

    # ------------------------------------------------------------ status and conditions

    async def _sync_status(self, deploy: Obj, new_rs: Obj | None, old: list[Obj], created: bool) -> None:
        ns = deploy["metadata"].get("namespace", "")
        fresh = lambda rs: self.rsets.get(ns, name_of(rs)) or rs  # noqa: E731
        sets = [fresh(rs) for rs in ([new_rs] if new_rs else []) + old]
        new_rs = fresh(new_rs) if new_rs else None
        st = lambda rs, k: int((rs.get("status") or {}).get(k) or 0)  # noqa: E731
        desired = replicas_of(deploy)
        _, max_unavailable = surge_and_unavailable(deploy)
        previous = deploy.get("status") or {}
        status: Obj = {
            "observedGeneration": deploy["metadata"].get("generation", 1),
            "replicas": sum(st(rs, "replicas") for rs in sets),
            "updatedReplicas": st(new_rs, "replicas") if new_rs else 0,
            "readyReplicas": sum(st(rs, "readyReplicas") for rs in sets),
            "availableReplicas": sum(st(rs, "availableReplicas") for rs in sets),
        }
        status["unavailableReplicas"] = max(0, desired - status["availableReplicas"])
        if previous.get("collisionCount"):
            status["collisionCount"] = previous["collisionCount"]
        prune_zero(status, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        conds = [dict(c) for c in previous.get("conditions") or []]
        if status.get("availableReplicas", 0) >= desired - max_unavailable:
            conds = set_condition(conds, "Available", "True", "MinimumReplicasAvailable",
                                  "Deployment has minimum availability.")
        else:
            conds = set_condition(conds, "Available", "False", "MinimumReplicasUnavailable",
                                  "Deployment does not have minimum availability.")
        conds = self._progressing(deploy, new_rs, status, previous, conds, created)
        failure = next((c for rs in sets for c in (rs.get("status") or {}).get("conditions") or []
                        if c.get("type") == "ReplicaFailure" and c.get("status") == "True"), None)
        if failure is not None:  # e.g. a quota refusing pods: surfaced on the Deployment as upstream does
            conds = set_condition(conds, "ReplicaFailure", "True", failure.get("reason", "FailedCreate"),
                                  failure.get("message", ""))
        else:
            conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
        order = {"Available": 0, "Progressing": 1, "ReplicaFailure": 2}
        status["conditions"] = sorted(conds, key=lambda c: order.get(c.get("type"), 9))
        await write_status(self.client, "deployments.apps", deploy, status, self.deploys)

    def _progressing(self, deploy: Obj, new_rs: Obj | None, status: Obj, previous: Obj,
                     conds: list[Obj], created: bool) -> list[Obj]:
        spec = deploy["spec"]
        rs_name = name_of(new_rs) if new_rs else ""
        prog = next((c for c in conds if c.get("type") == "Progressing"), None)
        if spec.get("paused"):
            return set_condition(conds, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
        if prog and prog.get("reason") == "DeploymentPaused":
            conds = set_condition(conds, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed")
        desired = replicas_of(deploy)
        complete = (new_rs is not None and status.get("updatedReplicas", 0) == desired
                    and status.get("replicas", 0) == desired and status.get("availableReplicas", 0) == desired)
        if complete:
            return set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable",
                                 f'ReplicaSet "{rs_name}" has successfully progressed.')
        if new_rs is None:
            return conds
        moved = created or any(previous.get(k, 0) != status.get(k, 0)
                               for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"))
        prog = next((c for c in conds if c.get("type") == "Progressing"), None)
        if created:
            conds = set_condition(conds, "Progressing", "True", "NewReplicaSetCreated",
                                  f'Created new replica set "{rs_name}"')
        elif prog is None or prog.get("reason") in ("NewReplicaSetAvailable", "DeploymentResumed"):
            conds = set_condition(conds, "Progressing", "True", "FoundNewReplicaSet",
                                  f'Found new replica set "{rs_name}"')
        elif moved:
            conds = set_condition(conds, "Progressing", "True", "ReplicaSetUpdated",
                                  f'ReplicaSet "{rs_name}" is progressing.')
            for c in conds:
                if c.get("type") == "Progressing":
                    c["lastUpdateTime"] = rfc3339()
        deadline = spec.get("progressDeadlineSeconds")
        prog = next((c for c in conds if c.get("type") == "Progressing"), None)
        if deadline is not None and prog and prog.get("status") == "True":
            started = parse_time(prog.get("lastUpdateTime")) or now()
            remaining = (started + timedelta(seconds=int(deadline)) - now()).total_seconds()
            if remaining <= 0:
                conds = set_condition(conds, "Progressing", "False", "ProgressDeadlineExceeded",
                                      f'ReplicaSet "{rs_name}" has timed out progressing.')
            else:
                self.enqueue((deploy["metadata"].get("namespace", ""), name_of(deploy)), remaining + 0.1)
        return conds


__all__ = ["DeploymentController", "get_condition"]
