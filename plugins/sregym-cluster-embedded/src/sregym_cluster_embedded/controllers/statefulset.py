"""StatefulSet controller: stable ordinal pods, claims from volumeClaimTemplates, ordered rollout."""

from __future__ import annotations

import copy
import re

from .base import Controller, Key
from .replicaset import pod_from_template
from .revisions import ensure_revision
from .util import (
    Obj,
    is_controlled_by,
    is_deleting,
    is_pod_available,
    is_pod_ready,
    name_of,
    owner_ref,
    template_hash,
)
from .writes import api_error_code, api_error_message, prune_zero, write_status

COMPONENT = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    match = re.fullmatch(re.escape(name_of(sts)) + r"-(\d+)", name_of(pod))
    return int(match.group(1)) if match else None


def revision_name(sts: Obj) -> str:
    return f"{name_of(sts)}-{template_hash(sts.get('spec', {}).get('template') or {})}"


def claim_name(template: Obj, sts: Obj, ordinal: int) -> str:
    return f"{name_of(template)}-{name_of(sts)}-{ordinal}"


class StatefulSetController(Controller):
    name = "statefulset"
    component = COMPONENT

    def setup(self) -> None:
        self.sets = self.watch("statefulsets.apps")
        self.pods = self.watch("pods", lambda _e, pod, _o: self.enqueue_owner(pod, "StatefulSet"))
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.revisions = self.ctx.informer("controllerrevisions.apps")

    async def reconcile(self, key: Key) -> None:
        sts = self.sets.get(*key)
        if sts is None or is_deleting(sts):
            return
        ns = key[0]
        spec = sts.get("spec", {})
        replicas = 1 if spec.get("replicas") is None else int(spec["replicas"])
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        update_rev = revision_name(sts)
        await self._ensure_revision(sts, update_rev)
        pods: dict[int, Obj] = {}
        for p in self.pods.list(ns):
            if is_controlled_by(p, sts) and (ordinal := ordinal_of(sts, p)) is not None:
                pods[ordinal] = p
        wanted = list(range(start, start + replicas))
        # failed pods are replaced
        for ordinal, member in list(pods.items()):
            if (member.get("status") or {}).get("phase") in ("Failed", "Succeeded") and not is_deleting(member):
                await self._delete(sts, member)
                pods.pop(ordinal)
        blocked = False
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is None:
                if blocked:
                    break
                ok = await self._create(sts, ordinal, update_rev)
                if not ok or not parallel:
                    blocked = True
                continue
            if not parallel and (not is_pod_ready(pod) or is_deleting(pod)):
                blocked = True  # OrderedReady: wait for this ordinal before the next
        # scale down: highest ordinal first
        extra = sorted((o for o in pods if o not in wanted), reverse=True)
        if extra and not blocked:
            victims = extra if parallel else extra[:1]
            if parallel or all(is_pod_ready(pods[o]) for o in wanted if o in pods):
                for ordinal in victims:
                    if not is_deleting(pods[ordinal]):
                        await self._delete(sts, pods[ordinal])
        # rolling update in reverse ordinal order
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and not extra:
            partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
            current = [pods.get(o) for o in wanted]
            if all(p is not None and is_pod_ready(p) and not is_deleting(p) for p in current):
                for ordinal in sorted(wanted, reverse=True):
                    pod = pods[ordinal]
                    if ordinal - start < partition:
                        break
                    if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_rev:
                        await self._delete(sts, pod)
                        break
        await self._status(sts, update_rev)

    async def _ensure_revision(self, sts: Obj, rev: str) -> None:
        await ensure_revision(self.client, self.revisions, sts, rev, rev.rsplit("-", 1)[-1])

    async def _create(self, sts: Obj, ordinal: int, rev: str) -> bool:
        ns = sts["metadata"].get("namespace", "")
        spec = sts["spec"]
        name = f"{name_of(sts)}-{ordinal}"
        pod = pod_from_template(spec.get("template") or {}, sts, name, ns)
        pod["metadata"]["labels"].update({REVISION_LABEL: rev, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
        pod["spec"]["hostname"] = name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        volumes = pod["spec"].setdefault("volumes", [])
        for template in spec.get("volumeClaimTemplates") or []:
            claim = claim_name(template, sts, ordinal)
            if not await self._ensure_claim(sts, template, claim, name):
                return False
            volumes[:] = [v for v in volumes if v.get("name") != name_of(template)]
            volumes.append({"name": name_of(template), "persistentVolumeClaim": {"claimName": claim}})
        if not volumes:
            pod["spec"].pop("volumes")
        try:
            created = await self.client.create("pods", pod, ns)
        except Exception as exc:
            if api_error_code(exc) == 409:
                return False
            await self.ctx.event(sts, "FailedCreate", f"create Pod {name} in StatefulSet {name_of(sts)} failed error: "
                                 f"{api_error_message(exc)}", type="Warning", component=COMPONENT)
            self.enqueue((ns, name_of(sts)), 5.0)
            return False
        self.pods.upsert(created)
        await self.ctx.event(sts, "SuccessfulCreate", f"create Pod {name} in StatefulSet {name_of(sts)} successful",
                             component=COMPONENT)
        return True

    async def _ensure_claim(self, sts: Obj, template: Obj, claim: str, pod_name: str) -> bool:
        ns = sts["metadata"].get("namespace", "")
        if self.claims.get(ns, claim) is not None:
            return True
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update((sts["spec"].get("selector") or {}).get("matchLabels") or {})
        body: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns, "labels": labels},
                "spec": copy.deepcopy(template.get("spec") or {})}
        if tmeta.get("annotations"):
            body["metadata"]["annotations"] = dict(tmeta["annotations"])
        policy = (sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted", "Retain")
        if policy == "Delete":
            body["metadata"]["ownerReferences"] = [dict(owner_ref(sts), controller=False)]
        try:
            self.claims.upsert(await self.client.create("persistentvolumeclaims", body, ns))
        except Exception as exc:
            if api_error_code(exc) == 409:
                return True
            await self.ctx.event(sts, "FailedCreate", f"create Claim {claim} for Pod {pod_name} in StatefulSet "
                                 f"{name_of(sts)} failed error: {api_error_message(exc)}", type="Warning",
                                 component=COMPONENT)
            return False
        await self.ctx.event(sts, "SuccessfulCreate", f"create Claim {claim} Pod {pod_name} in StatefulSet "
                             f"{name_of(sts)} success", component=COMPONENT)
        return True

    async def _delete(self, sts: Obj, pod: Obj) -> None:
        try:
            gone = await self.client.delete("pods", name_of(pod), pod["metadata"].get("namespace"))
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise
            gone = None
        if isinstance(gone, dict) and is_deleting(gone):
            self.pods.upsert(gone)
        else:
            self.pods.remove(pod)
        await self.ctx.event(sts, "SuccessfulDelete", f"delete Pod {name_of(pod)} in StatefulSet {name_of(sts)} "
                             "successful", component=COMPONENT)

    async def _status(self, sts: Obj, update_rev: str) -> None:
        ns = sts["metadata"].get("namespace", "")
        pods = [p for p in self.pods.list(ns) if is_controlled_by(p, sts) and not is_deleting(p)
                and (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]
        min_ready = int(sts["spec"].get("minReadySeconds") or 0)
        previous = sts.get("status") or {}
        updated = [p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == update_rev]
        current_rev = previous.get("currentRevision") or update_rev
        replicas = 1 if sts["spec"].get("replicas") is None else int(sts["spec"]["replicas"])
        if len(updated) == replicas == len(pods):
            current_rev = update_rev
        current = [p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == current_rev]
        status: Obj = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": sum(1 for p in pods if is_pod_ready(p)),
            "currentReplicas": len(current),
            "updatedReplicas": len(updated),
            "availableReplicas": sum(1 for p in pods if is_pod_available(p, min_ready)),
            "currentRevision": current_rev,
            "updateRevision": update_rev,
            "collisionCount": 0,
        }
        prune_zero(status, "readyReplicas", "currentReplicas", "updatedReplicas")
        await write_status(self.client, "statefulsets.apps", sts, status, self.sets)
