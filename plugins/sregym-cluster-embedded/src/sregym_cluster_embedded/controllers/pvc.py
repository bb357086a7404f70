"""PersistentVolume binder and the local provisioner behind the default StorageClass `standard`.

A claim of class `standard` (provisioner `sregym.io/local`) gets a PV backed by a directory under
`<state_dir>/volumes/`, pinned to the node the scheduler chose (WaitForFirstConsumer) or to the first
node (Immediate). A claim of class `standard-rwo` (provisioner `sregym.io/network-disk`) gets a
network disk: a CSI PV with no node affinity, which the attachdetach controller attaches to the node
of the pod using it. Claims with `storageClassName: ""` bind statically to a matching Available PV.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sregym_core.quantity import quantity_or_zero

from .base import Controller, Key
from .util import Obj, is_deleting, name_of, uid_of
from .writes import api_error_code

COMPONENT = "persistentvolume-controller"
PROVISIONER = "sregym.io/local"
NETWORK_DISK = "sregym.io/network-disk"
# the API server's bootstrap class may name the provisioner "sregym.io/local-path": both are ours
OUR_PROVISIONERS = {PROVISIONER, "sregym.io/local-path", NETWORK_DISK}
DEFAULT_CLASS = "standard"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def default_storage_class() -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS, "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True}


def volumes_dir(settings) -> Path:
    base = getattr(settings, "state_dir", None)
    return Path(base) / "volumes" if base else Path(tempfile.gettempdir()) / f"sregym-volumes-{os.geteuid()}"


class PersistentVolumeController(Controller):
    name = "pvc"
    component = COMPONENT

    def setup(self) -> None:
        self.claims = self.watch("persistentvolumeclaims", self._claim)
        self.volumes = self.watch("persistentvolumes", lambda _e, pv, _o: self._pv(pv))
        self.classes = self.watch("storageclasses.storage.k8s.io", lambda _e, _c, _o: self.enqueue(("", "")))
        self.nodes = self.ctx.informer("nodes")
        self.enqueue(("", ""))  # make sure the default StorageClass exists

    def _claim(self, event: str, pvc: Obj, _old: Obj | None) -> None:
        self.enqueue((pvc["metadata"].get("namespace", ""), name_of(pvc)))
        volume = pvc.get("spec", {}).get("volumeName")
        if event == "DELETED" and volume:
            self.enqueue(("/pv", volume))  # its volume is released now

    def _pv(self, pv: Obj) -> None:
        ref = pv.get("spec", {}).get("claimRef") or {}
        if ref.get("name"):
            self.enqueue((ref.get("namespace", ""), ref["name"]))
        # a claim that names this volume (static binding) may have been reconciled before the volume
        # reached the cache; without this it would wait for a change that never comes
        for pvc in self.claims.list():
            if pvc.get("spec", {}).get("volumeName") == name_of(pv):
                self.enqueue((pvc["metadata"].get("namespace", ""), name_of(pvc)))
        self.enqueue(("/pv", name_of(pv)))

    def storage_class(self, pvc: Obj) -> tuple[str, Obj | None]:
        name = pvc.get("spec", {}).get("storageClassName")
        if name is None:
            defaults = [c for c in self.classes.list()
                        if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
            name = name_of(defaults[0]) if defaults else DEFAULT_CLASS
        return name, (self.classes.get(None, name) if name else None)

    async def reconcile(self, key: Key) -> None:
        if key == ("", ""):
            await self._ensure_default_class()
            for claim in self.claims.list():
                self.enqueue((claim["metadata"].get("namespace", ""), name_of(claim)))
            return
        if key[0] == "/pv":
            await self._reclaim(key[1])
            return
        pvc = self.claims.get(*key)
        if pvc is None or is_deleting(pvc):
            return
        volume_name = pvc.get("spec", {}).get("volumeName")
        if volume_name:
            pv = self.volumes.get(None, volume_name)
            if pv is not None:
                await self._bind(pvc, pv)
            else:  # the volume's event re-enqueues this claim; the retry only covers a missed event
                self.enqueue(key, delay=5.0)
            return
        class_name, cls = self.storage_class(pvc)
        if pvc.get("spec", {}).get("storageClassName") is None and cls is not None:
            pvc = await self._assign_default_class(pvc, class_name)
        pv = self._find_available(pvc, class_name)
        if pv is None and cls is not None and cls.get("provisioner") in OUR_PROVISIONERS:
            node = self._provision_node(pvc, cls)
            if node is None:
                await self.ctx.event(pvc, "WaitForFirstConsumer",
                                     "waiting for first consumer to be created before binding", component=COMPONENT)
                return
            pv = await self._provision(pvc, class_name, cls, node)
        elif pv is None:
            if class_name and cls is None:
                await self.ctx.event(pvc, "ProvisioningFailed", f'storageclass.storage.k8s.io "{class_name}" not found',
                                     type="Warning", component=COMPONENT)
            else:
                await self.ctx.event(pvc, "FailedBinding", "no persistent volumes available for this claim and no "
                                     "storage class is set", type="Warning", component=COMPONENT)
            return
        await self._bind(pvc, pv)

    async def _assign_default_class(self, pvc: Obj, class_name: str) -> Obj:
        """Retroactive default StorageClass assignment, as the PV controller does for unbound claims."""
        try:
            updated = await self.client.patch("persistentvolumeclaims", name_of(pvc),
                                              {"spec": {"storageClassName": class_name}}, pvc["metadata"].get("namespace"))
        except Exception:
            return pvc  # an API that treats the field as immutable: bind anyway
        self.claims.upsert(updated)
        return updated

    async def _ensure_default_class(self) -> None:
        if self.classes.get(None, DEFAULT_CLASS) is not None:
            return
        try:
            self.classes.upsert(await self.client.create("storageclasses.storage.k8s.io", default_storage_class()))
        except Exception as exc:
            if api_error_code(exc) != 409:
                raise

    def _find_available(self, pvc: Obj, class_name: str) -> Obj | None:
        spec = pvc.get("spec", {})
        want = quantity_or_zero(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
        modes = set(spec.get("accessModes") or [])
        best = None
        for pv in self.volumes.list():
            pspec = pv.get("spec", {})
            ref = pspec.get("claimRef") or {}
            if (pv.get("status") or {}).get("phase") not in (None, "Available", "Pending") or is_deleting(pv):
                continue
            if ref and (ref.get("name"), ref.get("namespace")) != (name_of(pvc), pvc["metadata"].get("namespace")):
                continue
            if (pspec.get("storageClassName") or "") != (class_name or ""):
                continue
            if not modes <= set(pspec.get("accessModes") or []):
                continue
            size = quantity_or_zero((pspec.get("capacity") or {}).get("storage"))
            if size < want:
                continue
            if best is None or size < quantity_or_zero(best["spec"]["capacity"]["storage"]):
                best = pv
        return best

    def _provision_node(self, pvc: Obj, cls: Obj) -> str | None:
        selected = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if selected:
            return selected
        if cls.get("volumeBindingMode", "Immediate") == "WaitForFirstConsumer":
            return None
        nodes = sorted(name_of(n) for n in self.nodes.list())
        return nodes[0] if nodes else ""

    async def _provision(self, pvc: Obj, class_name: str, cls: Obj, node: str) -> Obj:
        ns = pvc["metadata"].get("namespace", "")
        name = f"pvc-{uid_of(pvc)}"
        provisioner = cls.get("provisioner", PROVISIONER)
        existing = self.volumes.get(None, name)
        if existing is not None:
            return existing
        path = volumes_dir(self.ctx.settings) / name
        path.mkdir(parents=True, exist_ok=True)
        # world-writable, as hostPath provisioners make it (local-path: mkdir -m 0777): pods run as
        # non-root users and must be able to write their own volume; datastores tighten it themselves
        path.chmod(0o777)
        spec = pvc.get("spec", {})
        pv: Obj = {"apiVersion": "v1", "kind": "PersistentVolume",
                   "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
                                "finalizers": ["kubernetes.io/pv-protection"]},
                   "spec": {"capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
                            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                            "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy", "Delete"),
                            "storageClassName": class_name, "volumeMode": spec.get("volumeMode", "Filesystem"),
                            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name_of(pvc),
                                         "uid": uid_of(pvc), "apiVersion": "v1",
                                         "resourceVersion": pvc["metadata"].get("resourceVersion", "")}}}
        if provisioner == NETWORK_DISK:
            pv["spec"]["csi"] = {"driver": NETWORK_DISK, "volumeHandle": name, "fsType": "ext4"}
            node = ""  # reachable from every node: attached where it is used, no node affinity
        else:
            pv["spec"]["hostPath"] = {"path": str(path), "type": "DirectoryOrCreate"}
        if node:
            pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        await self.ctx.event(pvc, "Provisioning", f'External provisioner is provisioning volume for claim "{ns}/{name_of(pvc)}"',
                             component=f"{provisioner}_{node or 'local'}")
        try:
            created = await self.client.create("persistentvolumes", pv)
        except Exception as exc:
            if api_error_code(exc) != 409:
                raise
            created = await self.client.get("persistentvolumes", name)
        self.volumes.upsert(created)
        await self.ctx.event(pvc, "ProvisioningSucceeded", f"Successfully provisioned volume {name}",
                             component=f"{provisioner}_{node or 'local'}")
        return created

    async def _bind(self, pvc: Obj, pv: Obj) -> None:
        ns = pvc["metadata"].get("namespace", "")
        ref = pv.get("spec", {}).get("claimRef") or {}
        if ref.get("uid") != uid_of(pvc) or (pv.get("status") or {}).get("phase") != "Bound":
            claim_ref = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name_of(pvc), "uid": uid_of(pvc),
                         "apiVersion": "v1", "resourceVersion": pvc["metadata"].get("resourceVersion", "")}
            pv = await self.client.patch("persistentvolumes", name_of(pv), {"spec": {"claimRef": claim_ref}})
            pv = await self.client.patch("persistentvolumes", name_of(pv), {"status": {"phase": "Bound"}},
                                         subresource="status")
            self.volumes.upsert(pv)
        if pvc.get("spec", {}).get("volumeName") != name_of(pv) or \
                (pvc["metadata"].get("annotations") or {}).get("pv.kubernetes.io/bind-completed") != "yes":
            annotations = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
            if (pv["metadata"].get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") in OUR_PROVISIONERS:
                by = pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"]
                annotations["volume.kubernetes.io/storage-provisioner"] = by
                annotations["volume.beta.kubernetes.io/storage-provisioner"] = by
            patch: Obj = {"metadata": {"annotations": annotations}}
            if not pvc.get("spec", {}).get("volumeName"):
                patch["spec"] = {"volumeName": name_of(pv)}
            pvc = await self.client.patch("persistentvolumeclaims", name_of(pvc), patch, ns)
            self.claims.upsert(pvc)
        if (pvc.get("status") or {}).get("phase") != "Bound":
            status = {"phase": "Bound", "accessModes": pv["spec"].get("accessModes"),
                      "capacity": pv["spec"].get("capacity")}
            self.claims.upsert(await self.client.patch("persistentvolumeclaims", name_of(pvc), {"status": status}, ns,
                                                       subresource="status"))

    async def _reclaim(self, pv_name: str) -> None:
        """A bound PV whose claim is gone is Released, then deleted (Delete policy) with its directory."""
        pv = self.volumes.get(None, pv_name)
        if pv is None:
            return
        if is_deleting(pv):
            if "kubernetes.io/pv-protection" in (pv["metadata"].get("finalizers") or []):
                finalizers = [f for f in pv["metadata"]["finalizers"] if f != "kubernetes.io/pv-protection"]
                await self.client.patch("persistentvolumes", pv_name, {"metadata": {"finalizers": finalizers or None}})
            return
        ref = pv.get("spec", {}).get("claimRef") or {}
        if not ref.get("uid") or (pv.get("status") or {}).get("phase") != "Bound":
            return
        claim = self.claims.get(ref.get("namespace", ""), ref.get("name", ""))
        if claim is not None and uid_of(claim) == ref.get("uid"):
            return
        if pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            path = (pv["spec"].get("hostPath") or {}).get("path")
            root = volumes_dir(self.ctx.settings)
            if (pv["spec"].get("csi") or {}).get("driver") == NETWORK_DISK:
                path = str(root / pv_name)
            if path and Path(path).parent == root:  # only ever remove directories we provisioned
                shutil.rmtree(path, ignore_errors=True)
            await self.client.delete("persistentvolumes", pv_name)
        else:
            self.volumes.upsert(await self.client.patch("persistentvolumes", pv_name,
                                                        {"status": {"phase": "Released"}}, subresource="status"))
