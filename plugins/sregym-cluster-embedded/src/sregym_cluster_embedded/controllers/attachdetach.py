"""attachdetach-controller: network disks are attached to the nodes whose pods use them.

Only *attachable* volumes take part: PVs of a CSI driver that attaches (the embedded network disk
``sregym.io/network-disk``, provisioned for the StorageClass ``standard-rwo``). Local volumes
(hostPath, local, the ``standard`` class) are never attached; their node affinity keeps their pods
on their node instead (the scheduler's VolumeBinding filter).

As kube-controller-manager does: a volume whose access modes allow no sharing (ReadWriteOnce, or
ReadWriteOncePod, without ReadWriteMany/ReadOnlyMany) is attached to one node at a time. A pod on
another node gets ``FailedAttachVolume`` events (``Multi-Attach error for volume "pv" Volume is
already used by pod(s) ...``) and its kubelet waits for the attachment, so it stays
ContainerCreating. The attachment is a VolumeAttachment object and an entry in the node's
``status.volumesAttached``; the kubelet starts the pod once its node lists the volume. A volume is
detached when no pod on that node uses it any more. ReadWriteOncePod (one pod, not one node) is
the scheduler's rule (VolumeRestrictions): a second pod is never placed.
"""

from __future__ import annotations

import hashlib
import time

from .base import Controller, Key
from .util import Obj, name_of
from .writes import api_error_code

COMPONENT = "attachdetach-controller"
DRIVER = "sregym.io/network-disk"
ALL: Key = ("", "")
#: how often a blocked pod hears about it again (the event's count goes up, as kubectl describe shows)
REPORT_EVERY_S = 15.0
SHARING_MODES = {"ReadWriteMany", "ReadOnlyMany"}


def unique_name(pv: Obj) -> str:
    """The name a node's ``status.volumesAttached`` lists the volume under (``kubernetes.io/csi/<driver>^<handle>``)."""
    csi = pv.get("spec", {}).get("csi") or {}
    return f"kubernetes.io/csi/{csi.get('driver', '')}^{csi.get('volumeHandle', name_of(pv))}"


def attachable(pv: Obj | None) -> bool:
    return pv is not None and ((pv.get("spec") or {}).get("csi") or {}).get("driver") == DRIVER


def multi_attach_allowed(pv: Obj) -> bool:
    modes = set(pv.get("spec", {}).get("accessModes") or [])
    return not modes or bool(modes & SHARING_MODES)


def attachment_name(pv: Obj, node: str) -> str:
    csi = pv["spec"]["csi"]
    digest = hashlib.sha256(f"{csi.get('volumeHandle', '')}{csi.get('driver', '')}{node}".encode()).hexdigest()
    return f"csi-{digest}"


def _active(pod: Obj) -> bool:
    return bool(pod.get("spec", {}).get("nodeName")) and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class AttachDetachController(Controller):
    name = "attachdetach"
    component = COMPONENT

    def setup(self) -> None:
        self.pods = self.watch("pods", lambda _e, _p, _o: self.enqueue(ALL))
        self.pvcs = self.watch("persistentvolumeclaims", lambda _e, _p, _o: self.enqueue(ALL))
        self.pvs = self.watch("persistentvolumes", lambda _e, _p, _o: self.enqueue(ALL))
        self.nodes = self.watch("nodes", lambda e, _n, _o: self.enqueue(ALL) if e != "MODIFIED" else None)
        self._reported: dict[tuple[str, str], float] = {}

    def desired(self) -> dict[str, dict[str, list[Obj]]]:
        """PV name -> node -> the active pods there that use it."""
        out: dict[str, dict[str, list[Obj]]] = {}
        for pod in self.pods.list():
            if not _active(pod):
                continue
            ns = pod["metadata"].get("namespace", "")
            for vol in pod.get("spec", {}).get("volumes") or []:
                claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
                pvc = self.pvcs.get(ns, claim) if claim else None
                volume = (pvc or {}).get("spec", {}).get("volumeName")
                if volume and attachable(self.pvs.get(None, volume)):
                    out.setdefault(volume, {}).setdefault(pod["spec"]["nodeName"], []).append(pod)
        return out

    def attached(self) -> dict[str, set[str]]:
        """Unique volume name -> the nodes whose status lists it as attached."""
        out: dict[str, set[str]] = {}
        for node in self.nodes.list():
            for entry in (node.get("status") or {}).get("volumesAttached") or []:
                out.setdefault(entry.get("name", ""), set()).add(name_of(node))
        return out

    async def reconcile(self, key: Key) -> None:
        want = self.desired()
        have = self.attached()
        live = {(p["metadata"].get("uid", ""), pv) for pv, by_node in want.items() for ps in by_node.values() for p in ps}
        self._reported = {k: v for k, v in self._reported.items() if k in live}
        pvs = {name_of(pv): pv for pv in self.pvs.list() if attachable(pv)}
        # detach first: a node freed now lets a waiting pod elsewhere attach in the same pass
        for pv_name, pv in pvs.items():
            for node in sorted(have.get(unique_name(pv), set()) - set(want.get(pv_name, {}))):
                await self._detach(pv, node)
                have[unique_name(pv)].discard(node)
        for pv_name, by_node in sorted(want.items()):
            pv = pvs[pv_name]
            on = have.setdefault(unique_name(pv), set())
            for node, pods in sorted(by_node.items(), key=lambda item: min(_created(p) for p in item[1])):
                if node in on:
                    continue
                others = on - {node}
                if others and not multi_attach_allowed(pv):
                    await self._multi_attach_error(pv, pods, sorted(others), by_node)
                    continue
                await self._attach(pv, node, pods)
                on.add(node)
        if self._reported:
            self.enqueue(ALL, REPORT_EVERY_S)

    async def _attach(self, pv: Obj, node: str, pods: list[Obj]) -> None:
        body: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                "metadata": {"name": attachment_name(pv, node)},
                "spec": {"attacher": DRIVER, "nodeName": node, "source": {"persistentVolumeName": name_of(pv)}}}
        try:
            await self.client.create("volumeattachments.storage.k8s.io", body)
        except Exception as exc:
            if api_error_code(exc) not in (409, 404):  # 404: an API server without the kind
                raise
        try:
            await self.client.patch("volumeattachments.storage.k8s.io", body["metadata"]["name"],
                                    {"status": {"attached": True}}, subresource="status")
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise
        await self._set_node_volumes(node, add=unique_name(pv))
        for pod in pods:
            self._reported.pop((pod["metadata"].get("uid", ""), name_of(pv)), None)
            await self.ctx.event(pod, "SuccessfulAttachVolume",
                                 f'AttachVolume.Attach succeeded for volume "{name_of(pv)}" ', component=COMPONENT)

    async def _detach(self, pv: Obj, node: str) -> None:
        await self._set_node_volumes(node, remove=unique_name(pv))
        try:
            await self.client.delete("volumeattachments.storage.k8s.io", attachment_name(pv, node))
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise

    async def _set_node_volumes(self, node_name: str, *, add: str = "", remove: str = "") -> None:
        for _ in range(5):
            node = await self.client.get("nodes", node_name)
            status = node.setdefault("status", {})
            entries = [e for e in status.get("volumesAttached") or [] if e.get("name") not in (add, remove)]
            if add:
                entries.append({"name": add, "devicePath": ""})
            status["volumesAttached"] = entries or None
            try:
                self.nodes.upsert(await self.client.update("nodes", node, subresource="status"))
                return
            except Exception as exc:
                if api_error_code(exc) != 409:
                    raise

    async def _multi_attach_error(self, pv: Obj, pods: list[Obj], nodes: list[str],
                                  by_node: dict[str, list[Obj]]) -> None:
        users = [p for n in nodes for p in by_node.get(n, [])]
        now = time.monotonic()
        for pod in pods:
            key = (pod["metadata"].get("uid", ""), name_of(pv))
            if now - self._reported.get(key, -REPORT_EVERY_S) < REPORT_EVERY_S - 0.5:
                continue
            self._reported[key] = now
            ns = pod["metadata"].get("namespace", "")
            local = [name_of(p) for p in users if p["metadata"].get("namespace", "") == ns]
            elsewhere = len(users) - len(local)
            if local:
                why = f"Volume is already used by pod(s) {', '.join(local)}"
                if elsewhere:
                    why += f" and {elsewhere} pod(s) in different namespaces"
            elif elsewhere:
                why = f"Volume is already used by {elsewhere} pod(s) in different namespaces"
            else:
                why = "Volume is already exclusively attached to one node and can't be attached to another"
            await self.ctx.event(pod, "FailedAttachVolume", f'Multi-Attach error for volume "{name_of(pv)}" {why}',
                                 type="Warning", component=COMPONENT)


def _created(pod: Obj) -> str:
    return pod["metadata"].get("creationTimestamp") or ""
