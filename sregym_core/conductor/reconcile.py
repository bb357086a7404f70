"""Baseline snapshots and reconciliation: put the app back exactly as it was after deploy.

Generic over the Kubernetes API (so it works on any cluster): objects the agent or a fault deleted
are recreated, changed ones are put back (same uid, a plain PUT), and objects that appeared since
the baseline are deleted, pods and ReplicaSets included. An object a controller owns is left to
its controller only while that owner exists (and, for a pod, while the pod matches the owner's
selector): a pod the agent created with a forged or dangling owner reference goes too.

Endpoints and EndpointSlices are routes into the app (a service proxy forwards to what they name), so
only the controllers' own stay: those of a baseline Service (the controllers rewrite what anyone else
writes there). Any other one goes, whatever Service or owner it names, and a baseline Service without
a selector gets its baseline Endpoints back (issue #34: an Endpoints object whose Service the reset
deleted survived into later runs).

A controller's object is its own only if the controller could have made it (issue #34, round 3): a
pod whose containers are not its owner's template (a pod the agent built and had a ReplicaSet adopt)
and a ReplicaSet that is not its baseline Deployment's template (one planted with a Deployment's
labels, or a revision the agent rolled) go, and their controllers make their own again. Finalizers
the baseline did not have are taken off before anything is deleted and from what stays: a finalizer
no controller removes would keep a deleted object, and the namespace, terminating forever.

What a pod read as it was made or as its containers started stays with it (env vars from a Secret, a config file read
once), so the snapshot also records every ConfigMap's, Secret's and ServiceAccount's resourceVersion and every pod's
restart counts: a controller's pod made (or whose containers started again) since then, which reads one written since
then, even one put back as it was, is deleted and made again by its controller from what the reset put back (red-team
round 14, finding 1: a pod made while its Secret held the database owner's credentials kept them through every later
reset). Pods that ran through the attempt stay, so a reset restarts only what the attempt restarted. ServiceAccount
``default`` is the cluster's but is put back like any other object, never deleted (finding 8).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import structlog

from ..errors import DeployError
from ..faultkit.weakening import limits_and_requests
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

#: (collection path template, kind) of what reconciliation restores, in dependency order.
RECONCILED: tuple[tuple[str, str], ...] = (
    ("/api/v1/namespaces/{ns}/configmaps", "ConfigMap"),
    ("/api/v1/namespaces/{ns}/secrets", "Secret"),
    ("/api/v1/namespaces/{ns}/serviceaccounts", "ServiceAccount"),
    ("/api/v1/namespaces/{ns}/persistentvolumeclaims", "PersistentVolumeClaim"),
    ("/api/v1/namespaces/{ns}/resourcequotas", "ResourceQuota"),
    ("/api/v1/namespaces/{ns}/limitranges", "LimitRange"),
    ("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies", "NetworkPolicy"),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", "Role"),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", "RoleBinding"),
    ("/api/v1/namespaces/{ns}/services", "Service"),
    ("/apis/apps/v1/namespaces/{ns}/deployments", "Deployment"),
    ("/apis/apps/v1/namespaces/{ns}/statefulsets", "StatefulSet"),
    ("/apis/apps/v1/namespaces/{ns}/daemonsets", "DaemonSet"),
    ("/apis/batch/v1/namespaces/{ns}/jobs", "Job"),
    ("/apis/batch/v1/namespaces/{ns}/cronjobs", "CronJob"),
    ("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    ("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", "PodDisruptionBudget"),
    ("/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses", "Ingress"),
    ("/apis/apps/v1/namespaces/{ns}/replicasets", "ReplicaSet"),
    ("/apis/apps/v1/namespaces/{ns}/controllerrevisions", "ControllerRevision"),
    ("/api/v1/namespaces/{ns}/replicationcontrollers", "ReplicationController"),
    ("/api/v1/namespaces/{ns}/endpoints", "Endpoints"),
    ("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", "EndpointSlice"),
    ("/api/v1/namespaces/{ns}/pods", "Pod"),
)
#: who writes EndpointSlices for a Service: the slice controller (selector) and its mirror (no selector)
SLICE_MANAGERS = frozenset({"endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"})
#: Kinds whose live state drifts by itself (controllers write them): extras are deleted and missing
#: ones recreated, but a changed one is not put back.
EXTRAS_ONLY = frozenset({"ReplicaSet", "ControllerRevision", "ReplicationController", "Endpoints", "EndpointSlice",
                         "Pod"})

#: Objects the cluster itself creates in every namespace; never reconciled.
SYSTEM_NAMES = {("ConfigMap", "kube-root-ca.crt")}
#: Objects the cluster creates in every namespace but an agent may change: put back to the baseline's like any
#: other, never deleted (red-team round 14, finding 8: ``imagePullSecrets`` and ``automountServiceAccountToken`` set
#: on ServiceAccount ``default`` outlived every reset).
CLUSTER_OWNED = {("ServiceAccount", "default")}
#: Fields whose drift matters, per kind (the rest is status or server bookkeeping); the last three a ServiceAccount's.
COMPARED = ("spec", "data", "stringData", "binaryData", "immutable", "rules", "roleRef", "subjects",
            "imagePullSecrets", "automountServiceAccountToken", "secrets")
#: What a pod reads when it is made or its containers start, and keeps: env and files from ConfigMaps and Secrets,
#: and what admission copies from its ServiceAccount (red-team round 14, finding 1).
SOURCES = ("ConfigMap", "Secret", "ServiceAccount")
#: who makes a pod again when it is deleted
POD_CONTROLLERS = frozenset({"ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job"})


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object we restore: spec/data plus labels and annotations."""
    meta = obj.get("metadata", {})
    kept = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    kept["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "finalizers") if k in meta}
    return kept


def _comparable(obj: dict[str, Any]) -> Any:
    meta = obj.get("metadata", {})
    return ({k: obj.get(k) for k in COMPARED}, meta.get("labels") or {}, sorted(meta.get("finalizers") or ()),
            _owner_uids(obj),
            {k: v for k, v in (meta.get("annotations") or {}).items()
             if not k.startswith(("deployment.kubernetes.io/", "kubectl.kubernetes.io/last-applied"))})


class Baseline:
    """The app's state right after deploy."""

    def __init__(self, kube: Kube, namespaces: tuple[str, ...]) -> None:
        self.kube, self.namespaces = kube, namespaces
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.workloads: list[dict[str, Any]] = []
        #: what is reconciled: the built-in kinds and the cluster's namespaced custom resources
        self.kinds: tuple[tuple[str, str], ...] = RECONCILED
        #: (kind, namespace, name) -> (uid, resourceVersion) of every ConfigMap, Secret and ServiceAccount at the
        #: snapshot, and (namespace, pod uid) -> restart count per container of every pod then (None: no snapshot
        #: taken, nothing to tell an attempt's pods by)
        self.versions: dict[tuple[str, str, str], tuple[Any, Any]] | None = None
        self.pods: dict[tuple[str, str], dict[tuple[str, str], int]] | None = None
        #: the cluster's own objects of each namespace (``kube-root-ca.crt``) as they were: never deleted, put back
        self.system: dict[tuple[str, str, str], dict[str, Any]] = {}

    def take(self) -> Baseline:
        self.objects, self.system = {}, {}
        self.kinds = reconciled_kinds(self.kube)
        versions: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        pods: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
        for ns in self.namespaces:
            for template, kind in self.kinds:
                for item in self._list(template.format(ns=ns), kind):
                    name = item["metadata"]["name"]
                    if kind in SOURCES:
                        versions[(kind, ns, name)] = _version(item)
                    elif kind == "Pod":
                        pods[(ns, item["metadata"].get("uid", ""))] = _restarts(item)
                    if (kind, name) in SYSTEM_NAMES:
                        self.system[(kind, ns, name)] = item
                        continue
                    if _owned(item):
                        continue
                    self.objects[(kind, ns, name)] = item
        self.versions, self.pods = versions, pods
        self.workloads = self.kube.workloads(self.namespaces)
        return self

    def _list(self, path: str, kind: str) -> list[dict[str, Any]]:
        try:
            return self.kube.list_items(path, kind)
        except ApiStatusError as exc:
            if exc.code in (404, 405):
                return []
            raise

    def reconcile(self) -> list[str]:
        """Undo every drift; return what was done (for the record)."""
        actions: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for ns in self.namespaces:
            listed = [(template.format(ns=ns), kind, self._list(template.format(ns=ns), kind))
                      for template, kind in self.kinds]
            owners = {item["metadata"].get("uid"): item for _c, _k, items in listed for item in items}
            # the baseline's Services, not the live ones: a Service the agent added is deleted below
            services = {name: bool((obj.get("spec") or {}).get("selector"))
                        for (kind, n, name), obj in self.objects.items() if kind == "Service" and n == ns}
            if self._disown(ns, listed, actions):  # before anything is deleted: the collector would follow
                listed = [(template.format(ns=ns), kind, self._list(template.format(ns=ns), kind))
                          for template, kind in self.kinds]
            written = self._written(ns, listed)
            for collection, kind, items in listed:
                for item in items:
                    name = item["metadata"]["name"]
                    key = (kind, ns, name)
                    if (kind, name) in SYSTEM_NAMES:
                        self._restore_system(collection, key, item, actions)
                        seen.add(key)
                        continue
                    if kind in ("Endpoints", "EndpointSlice"):
                        foreign = _foreign_route(kind, item, services)
                        if foreign:
                            self._delete(collection, name)
                            actions.append(f"deleted {kind} {ns}/{name} ({foreign})")
                            continue
                        seen.add(key)
                        if kind == "EndpointSlice" or services.get(name):
                            continue  # a controller's, for a baseline Service
                        wanted = self.objects.get(key)
                        if wanted is not None and item.get("subsets") != wanted.get("subsets"):
                            self._put_back(collection, wanted, item)
                            actions.append(f"restored {kind} {ns}/{name}")
                        continue
                    if _owned(item) and key not in self.objects:  # a baseline object given an owner is put back below
                        orphan = _orphan_reason(item, owners, self.objects)
                        if not orphan and kind == "Pod":
                            orphan = self._stale_reason(ns, item, written)
                        if orphan:
                            self._unhold(collection, item, None)
                            self._delete(collection, name, item)
                            actions.append(f"deleted {kind} {ns}/{name} ({orphan})")
                        elif self._unhold(collection, item, None):
                            actions.append(f"took the agent's finalizers off {kind} {ns}/{name}")
                        continue
                    seen.add(key)
                    wanted = self.objects.get(key)
                    if wanted is None and (kind, name) in CLUSTER_OWNED:
                        continue  # missing from the snapshot (not made yet then): the cluster's, never deleted
                    if wanted is None:
                        self._unhold(collection, item, None)
                        self._delete(collection, name, item)
                        actions.append(f"deleted {kind} {ns}/{name} (not in the baseline)")
                    elif kind in EXTRAS_ONLY:
                        if self._unhold(collection, item, wanted):
                            actions.append(f"took the agent's finalizers off {kind} {ns}/{name}")
                        continue
                    elif item["metadata"].get("uid") != wanted["metadata"].get("uid") or _comparable(item) != _comparable(wanted):
                        self._put_back(collection, wanted, item)
                        actions.append(f"restored {kind} {ns}/{name}")
        actions += cut_long_graces(self.kube, self.namespaces)
        for ns in self.namespaces:
            # the last attempt's Events (its fault's, its agent's) are no part of the app's post-deploy state
            try:
                cleared = self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/events")
                if isinstance(cleared, dict) and cleared.get("items"):
                    actions.append(f"cleared {len(cleared['items'])} Events of {ns}")
            except ApiStatusError as exc:
                if exc.code not in (404, 405):
                    raise
        for key, wanted in self.system.items():
            if key not in seen:  # deleted: the cluster's publisher makes it again too; whichever is first
                collection = next(t for t, k in self.kinds if k == key[0]).format(ns=key[1])
                self._restore_system(collection, key, None, actions)
        for key, wanted in self.objects.items():
            if key in seen:
                continue
            kind, ns, name = key
            collection = next(t for t, k in self.kinds if k == kind).format(ns=ns)
            try:
                self.kube.request("POST", collection, body=_strip(wanted))
                actions.append(f"recreated {kind} {ns}/{name}")
            except ApiStatusError as exc:
                actions.append(f"could not recreate {kind} {ns}/{name}: {exc}")
        return actions

    def _disown(self, ns: str, listed: list[tuple[str, str, list[dict[str, Any]]]], actions: list[str]) -> bool:
        """Put back every baseline object of ``ns`` given an owner it did not have; True when there was one. Done first:
        the reset deletes the objects the agent made, and the garbage collector would then delete whatever they own
        (red-team round 15, finding 3: a ConfigMap, then a whole Deployment, gone after the reset)."""
        done = False
        for collection, kind, items in listed:
            for item in items:
                wanted = self.objects.get((kind, ns, item["metadata"]["name"]))
                if wanted is None or _owner_uids(item) == _owner_uids(wanted):
                    continue
                self._put_back(collection, wanted, item)
                actions.append(f"took the owners the agent added off {kind} {ns}/{item['metadata']['name']}")
                done = True
        return done

    def _restore_system(self, collection: str, key: tuple[str, str, str], item: dict[str, Any] | None,
                        actions: list[str]) -> None:
        """Put a cluster-made object (``kube-root-ca.crt``) back as it was at the snapshot: one changed (another CA, made
        immutable so that nothing can write it again) is deleted and made again from the snapshot (red-team round 15,
        finding 2: a planted CA outlived every reset and became the next attempts' baseline). A deleted one is made
        again; the cluster's publisher may be first (409, fine)."""
        wanted = self.system.get(key)
        if wanted is None or (item is not None and item.get("data") == wanted.get("data")
                              and bool(item.get("immutable")) == bool(wanted.get("immutable"))):
            return
        kind, ns, name = key
        if item is not None:
            self._delete(collection, name)
        body = _strip(wanted)
        for attempt in range(20):
            try:
                self.kube.request("POST", collection, body=body)
                break
            except ApiStatusError as exc:
                if exc.code != 409:
                    raise
                try:
                    live = self.kube.get(f"{collection}/{name}")
                except ApiStatusError as gone:
                    if gone.code != 404:
                        raise
                    continue
                if live.get("data") == wanted.get("data") and not (live.get("metadata") or {}).get("deletionTimestamp"):
                    break  # the publisher made it again, as it was
                time.sleep(0.25)  # still being deleted
        actions.append(f"{'restored' if item is not None else 'recreated'} {kind} {ns}/{name} (the cluster's own)")

    def _written(self, ns: str, listed: list[tuple[str, str, list[dict[str, Any]]]]) -> set[tuple[str, str]]:
        """The ConfigMaps, Secrets and ServiceAccounts of ``ns`` written since the snapshot, as (kind, name): changed
        (even if their content is back: a new resourceVersion), deleted, made again or new."""
        if self.versions is None:
            return set()
        live = {(kind, item["metadata"]["name"]): _version(item)
                for _c, kind, items in listed if kind in SOURCES for item in items}
        recorded = {(kind, name): version for (kind, n, name), version in self.versions.items() if n == ns}
        return {key for key in live.keys() | recorded.keys() if live.get(key) != recorded.get(key)}

    def _stale_reason(self, ns: str, pod: dict[str, Any], written: set[tuple[str, str]]) -> str | None:
        """Why a controller's pod must be made again though it is its controller's: it was made, or one of its
        containers started again, since the snapshot, while something it read then had been written (issue #34,
        red-team round 14, finding 1: a Secret swapped, the pod deleted, the Secret put back: the new pod kept the
        swapped credentials, which env vars are read at the container's start, through every later reset). Its
        controller makes it again from what the reset has put back. None: nothing it reads was written, or it runs
        as it ran at the snapshot, or no controller of ours would make it again."""
        if not written or self.pods is None:
            return None
        meta = pod.get("metadata") or {}
        ref: dict[str, Any] = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), {})
        if ref.get("kind") not in POD_CONTROLLERS or meta.get("deletionTimestamp"):
            return None
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return None  # runs nothing any more
        before = self.pods.get((ns, meta.get("uid", "")))
        if before is None:
            read, when = _reads(pod.get("spec") or {}), "made during the attempt"
        else:
            restarted = [c for c, count in _restarts(pod).items() if count > before.get(c, 0)]
            if not restarted:
                return None
            # a container started again reads its env and files again; admission (the ServiceAccount's) is not rerun
            read, when = _reads(pod.get("spec") or {}, admission=False), "its containers started again during the attempt"
        hit = sorted(read & written)
        if not hit:
            return None
        return f"{when} while {', '.join(f'{k} {n}' for k, n in hit)} it reads had been written: it may hold what " \
               "was there then"

    def _unhold(self, collection: str, item: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
        """Take off the finalizers ``wanted`` (the baseline's object) did not have, but the cluster's
        own; True when there were some. What the put-back PUT would drop anyway is dropped here for
        the objects it leaves alone (controllers' objects, and those about to be deleted)."""
        kept = ((wanted or {}).get("metadata") or {}).get("finalizers") or ()
        return _drop_finalizers(self.kube, collection, item, keep=kept)

    def _put_back(self, collection: str, wanted: dict[str, Any], current: dict[str, Any]) -> None:
        # a controller may update the object (its status) between our read and write: on a 409
        # conflict read it again and retry, as kubectl apply would
        for attempt in range(5):
            try:
                self._put_once(collection, wanted, current)
                return
            except ApiStatusError as exc:
                if exc.code != 409 or attempt == 4:
                    raise
                current = self.kube.get(f"{collection}/{wanted['metadata']['name']}")

    def _put_once(self, collection: str, wanted: dict[str, Any], current: dict[str, Any]) -> None:
        body = _strip(wanted)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        kind = wanted.get("kind")
        if kind == "Service":  # clusterIP is immutable: keep the live one
            body.setdefault("spec", {})["clusterIP"] = current.get("spec", {}).get("clusterIP")
            body["spec"]["clusterIPs"] = current.get("spec", {}).get("clusterIPs")
        try:
            self.kube.request("PUT", f"{collection}/{wanted['metadata']['name']}", body=body)
        except ApiStatusError as exc:
            if exc.code == 422:  # an immutable field changed (e.g. a selector): replace the object
                self._delete(collection, wanted["metadata"]["name"])
                self.kube.request("POST", collection, body=_strip(wanted))
            else:
                raise

    def _delete(self, collection: str, name: str, item: dict[str, Any] | None = None) -> None:
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if item is not None and _long_grace(item):
            body["gracePeriodSeconds"] = 0  # a day-long grace would hold the reset, and the namespace (round 16)
        try:
            self.kube.request("DELETE", f"{collection}/{name}", body=body)
        except ApiStatusError as exc:
            if exc.code != 404:
                raise


def _owner_uids(item: dict[str, Any]) -> list[Any]:
    return [r.get("uid") for r in (item.get("metadata") or {}).get("ownerReferences") or ()]


def _version(item: dict[str, Any]) -> tuple[Any, Any]:
    meta = item.get("metadata") or {}
    return meta.get("uid"), meta.get("resourceVersion")


def _restarts(pod: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Per container of a pod, (group, name) -> how many times it started again."""
    status = pod.get("status") or {}
    return {(group, c.get("name", "")): int(c.get("restartCount") or 0)
            for group, key in (("init", "initContainerStatuses"), ("main", "containerStatuses"))
            for c in status.get(key) or ()}


def _reads(pod_spec: dict[str, Any], *, admission: bool = True) -> set[tuple[str, str]]:
    """What a pod reads as it is made and as its containers start, as (kind, name): the ConfigMaps and Secrets of its
    env (``valueFrom``, ``envFrom``) and volumes (projected ones included), and, at admission, its ServiceAccount (whose
    ``automountServiceAccountToken`` and ``imagePullSecrets`` shape the pod)."""
    read: set[tuple[str, str]] = set()
    for group in ("initContainers", "containers"):
        for container in pod_spec.get(group) or ():
            for env in container.get("env") or ():
                source = env.get("valueFrom") or {}
                for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                    if (source.get(key) or {}).get("name"):
                        read.add((kind, source[key]["name"]))
            for env in container.get("envFrom") or ():
                for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                    if (env.get(key) or {}).get("name"):
                        read.add((kind, env[key]["name"]))
    for volume in pod_spec.get("volumes") or ():
        if (volume.get("secret") or {}).get("secretName"):
            read.add(("Secret", volume["secret"]["secretName"]))
        if (volume.get("configMap") or {}).get("name"):
            read.add(("ConfigMap", volume["configMap"]["name"]))
        for source in (volume.get("projected") or {}).get("sources") or ():
            for key, kind in (("secret", "Secret"), ("configMap", "ConfigMap")):
                if (source.get(key) or {}).get("name"):
                    read.add((kind, source[key]["name"]))
    if admission:
        read.add(("ServiceAccount", pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount") or "default"))
    return read


def _foreign_route(kind: str, item: dict[str, Any], services: dict[str, bool]) -> str | None:
    """Why an Endpoints/EndpointSlice object is not a controller's route to a baseline Service (None:
    it is, or it is the baseline's own Endpoints of a Service without a selector)."""
    labels = item["metadata"].get("labels") or {}
    if kind == "EndpointSlice":
        if labels.get("kubernetes.io/service-name") not in services:
            return "it routes to no Service of the baseline"
        if labels.get("endpointslice.kubernetes.io/managed-by") not in SLICE_MANAGERS:
            return "not written by the EndpointSlice controllers"
        return None
    if item["metadata"]["name"] not in services:
        return "its Service is not in the baseline"
    return None


def reconciled_kinds(kube: Kube) -> tuple[tuple[str, str], ...]:
    """What the reset reconciles and the teardown releases: the built-in kinds and the cluster's namespaced custom
    resources (:func:`_with_custom_kinds`), each as (collection template, kind)."""
    try:
        definitions = kube.list_items("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "CustomResourceDefinition")
    except ApiStatusError as exc:
        if exc.code not in (404, 405):
            raise
        definitions = []
    return _with_custom_kinds(definitions)


def _with_custom_kinds(definitions: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The reconciled kinds with the cluster's namespaced custom resources among them, before the workloads (an
    operator derives its workloads from them): a field an agent adds to a custom resource (a DatastoreCluster's
    ``runAsGroup: 0``) would otherwise outlive its attempt (red-team round 12, finding 3), and a custom object it
    creates in the app's namespace would stay."""
    custom = []
    for crd in definitions:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or () if v.get("served")]
        stored = next((v for v in versions if v.get("storage")), versions[0] if versions else None)
        if spec.get("scope") != "Namespaced" or not stored or not names.get("plural") or not names.get("kind"):
            continue
        if names["kind"] in _RECONCILED_KINDS:
            continue  # a custom kind named like a built-in one is left alone rather than mistaken for it
        custom.append((f"/apis/{spec.get('group')}/{stored['name']}/namespaces/{{ns}}/{names['plural']}", names["kind"]))
    first_workload = next(i for i, (_t, kind) in enumerate(RECONCILED) if kind == "Deployment")
    return (*RECONCILED[:first_workload], *sorted(custom), *RECONCILED[first_workload:])


def _owned(item: dict[str, Any]) -> bool:
    """Objects a controller owns (ReplicaSet pods, Job pods...) are their controller's to reconcile."""
    return any(ref.get("controller") for ref in item.get("metadata", {}).get("ownerReferences") or [])


_RECONCILED_KINDS = frozenset(kind for _t, kind in RECONCILED)


#: what each kind's controller makes and owns as its controller (ownerReferences with controller: true)
CONTROLS: dict[str, frozenset[str]] = {
    "Deployment": frozenset({"ReplicaSet"}),
    "ReplicaSet": frozenset({"Pod"}),
    "ReplicationController": frozenset({"Pod"}),
    "StatefulSet": frozenset({"Pod", "ControllerRevision", "PersistentVolumeClaim"}),
    "DaemonSet": frozenset({"Pod", "ControllerRevision"}),
    "Job": frozenset({"Pod"}),
    "CronJob": frozenset({"Job"}),
    "Service": frozenset({"Endpoints", "EndpointSlice"}),
}
#: finalizers the cluster's own controllers put on objects of these kinds, and remove themselves
SYSTEM_FINALIZERS = {"PersistentVolumeClaim": {"kubernetes.io/pvc-protection"},
                     "Pod": {"batch.kubernetes.io/job-tracking"},
                     "Job": {"batch.kubernetes.io/job-tracking"}}
GC_FINALIZERS = frozenset({"foregroundDeletion", "orphan"})


def _system_finalizer(kind: str, finalizer: str) -> bool:
    return finalizer in GC_FINALIZERS or finalizer in SYSTEM_FINALIZERS.get(kind, ())


def _containers(pod_spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a pod runs, as its template says it: per container (init ones first), the fields a
    controller copies from the template and nobody defaults."""
    out = []
    for group in ("initContainers", "containers"):
        for c in pod_spec.get(group) or ():
            out.append((group, c.get("name"), c.get("image"), c.get("command"), c.get("args"), c.get("env")))
    return out


def _resources(pod_spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Per container, its limits and requests as quantities with the API server's default filled in
    (:func:`~sregym_core.faultkit.weakening.limits_and_requests`), so a pod and its template compare equal unless
    something else set them."""
    out = []
    for group in ("initContainers", "containers"):
        for c in pod_spec.get(group) or ():
            limits, requests = limits_and_requests(c.get("resources"))
            out.append((group, c.get("name"), sorted(limits.items()), sorted(requests.items())))
    return out


def _orphan_reason(item: dict[str, Any], owners: dict[str, dict[str, Any]],
                   baseline: dict[tuple[str, str, str], dict[str, Any]] | None = None) -> str | None:
    """Why an object claiming a controller is not really its controller's, or None when it is.

    Only owners of kinds listed here can be checked (an operator's custom resource is trusted)."""
    ref = next(r for r in item["metadata"]["ownerReferences"] if r.get("controller"))
    if ref.get("kind") not in _RECONCILED_KINDS:
        return None
    owner = owners.get(ref.get("uid"))
    if owner is None or owner.get("kind") != ref.get("kind"):
        return f"its owner {ref.get('kind')} {ref.get('name')} does not exist"
    kind = item.get("kind", "Pod")
    namespace = item["metadata"].get("namespace") or owner["metadata"].get("namespace", "")
    if kind not in CONTROLS.get(ref["kind"], ()):
        # a ConfigMap, a RoleBinding or a Deployment "controlled by" a Deployment: no controller makes
        # that, so the reference is forged to shelter the object from the reset (issue #34, round 3)
        return f"no {ref['kind']} controls a {kind}: its owner reference is forged"
    if kind == "Pod" and "template" in owner.get("spec", {}):
        selector = owner["spec"].get("selector") or {}
        wanted = selector.get("matchLabels", selector) if isinstance(selector, dict) else {}
        if not selector.get("matchExpressions") and isinstance(wanted, dict):
            labels = item["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in wanted.items() if isinstance(v, str)):
                return f"it does not match the selector of {ref.get('kind')} {ref.get('name')}"
        template = (owner["spec"].get("template") or {}).get("spec")
        if template is not None and _containers(item.get("spec") or {}) != _containers(template):
            return f"it does not run the template of {ref.get('kind')} {ref.get('name')} (not made by it)"
        no_limit_range = not any(k == "LimitRange" and n == namespace for k, n, _name in (baseline or {}))
        if template is not None and no_limit_range and _resources(item.get("spec") or {}) != _resources(template):
            # made by its controller while a LimitRange the agent created was there, which defaulted its resources
            # (issue #34, round 13: a 50m CPU limit outlived the LimitRange by 32 minutes and five graded attempts)
            return f"its resources are not its template's ({ref.get('kind')} {ref.get('name')}): admitted under a " \
                   "LimitRange that is gone"
    if kind == "PersistentVolumeClaim" and ref.get("kind") == "StatefulSet":
        # a StatefulSet makes claims only from its volumeClaimTemplates, named <template>-<set>-<ordinal>
        # (issue #34, round 4: a claim "owned" by a set without templates outlived every reset)
        name, set_name = item["metadata"].get("name", ""), owner["metadata"].get("name", "")
        templates = [(t.get("metadata") or {}).get("name") for t in owner.get("spec", {}).get("volumeClaimTemplates") or ()]
        ordinals = [int(m.group(1)) for t in templates if t
                    and (m := re.fullmatch(rf"{re.escape(t)}-{re.escape(set_name)}-(\d+)", name))]
        if not ordinals:
            return f"it is not a claim of the volume claim templates of StatefulSet {set_name}"
        stateful = baseline.get(("StatefulSet", namespace, set_name)) if baseline is not None else None
        replicas = (stateful or {}).get("spec", {}).get("replicas")
        if isinstance(replicas, int) and ordinals[0] >= replicas:
            # the baseline never ran that pod: the claim is left from a scale-up the reset undoes
            return f"StatefulSet {set_name} runs {replicas} replica(s) in the baseline: no pod claims it"
    if kind == "ReplicaSet" and ref.get("kind") == "Deployment" and baseline is not None:
        deployment = baseline.get(("Deployment", namespace, ref.get("name", "")))
        mine = ((item.get("spec") or {}).get("template") or {}).get("spec") or {}
        if deployment is not None and _containers(mine) != _containers(deployment["spec"]["template"].get("spec") or {}):
            return f"its template is not the baseline template of Deployment {ref.get('name')}"
    return None


def _drop_finalizers(kube: Kube, collection: str, item: dict[str, Any], keep: Any = ()) -> bool:
    """Take every finalizer off ``item`` but those in ``keep`` and the cluster's own; True when there
    were others to take off (an object already gone counts as done)."""
    present = list(item.get("metadata", {}).get("finalizers") or ())
    remaining = [f for f in present if f in keep or _system_finalizer(item.get("kind", ""), f)]
    if remaining == present:
        return False
    try:
        kube.request("PATCH", f"{collection}/{item['metadata']['name']}",
                     body={"metadata": {"finalizers": remaining or None}},
                     content_type="application/merge-patch+json")
    except ApiStatusError as exc:
        if exc.code != 404:
            raise
    return True


#: the longest a pod the reset deletes, or finds terminating, may take to stop: a pod may ask for any grace period
#: (a day) and a process may ignore SIGTERM, so the reset would wait for it and a namespace could not go (red-team
#: round 16, finding 1: every later deploy of the app on the kept cluster failed for a day)
RESET_GRACE_S = 30


def _long_grace(pod: dict[str, Any]) -> bool:
    """Is ``pod`` (a listed object: any kind) a pod terminating, or that would terminate, over more than
    :data:`RESET_GRACE_S`?"""
    if pod.get("kind") != "Pod":
        return False
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    asked = meta.get("deletionGracePeriodSeconds") if meta.get("deletionTimestamp") else spec.get("terminationGracePeriodSeconds")
    return isinstance(asked, int) and asked > RESET_GRACE_S


def cut_long_graces(kube: Kube, namespaces: tuple[str, ...]) -> list[str]:
    """Delete at once (grace 0) every pod of ``namespaces`` that is terminating, or would terminate, over a grace
    period longer than :data:`RESET_GRACE_S`. Only called where the pods are going anyway (the reset, the app's removal)."""
    cut = []
    for ns in namespaces:
        try:
            pods = kube.list_items(f"/api/v1/namespaces/{ns}/pods", "Pod")
        except ApiStatusError:
            continue
        for pod in pods:
            if not (pod["metadata"].get("deletionTimestamp") and _long_grace(pod)):
                continue
            try:
                kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                             body={"propagationPolicy": "Background", "gracePeriodSeconds": 0})
                cut.append(f"deleted Pod {ns}/{pod['metadata']['name']} at once (it asked for "
                           f"{pod['metadata'].get('deletionGracePeriodSeconds')} s to stop)")
            except ApiStatusError as exc:
                if exc.code != 404:
                    raise
    return cut


def release_finalizers(kube: Kube, namespaces: tuple[str, ...]) -> list[str]:
    """Take off every finalizer but the cluster's own from the objects of ``namespaces`` (before the
    namespaces are deleted: no controller of ours will ever remove an agent's), custom resources included (an
    agent's finalizer on a DatastoreCluster would otherwise hold its namespace in Terminating)."""
    released = []
    kinds = reconciled_kinds(kube)
    for ns in namespaces:
        for template, kind in kinds:
            collection = template.format(ns=ns)
            try:
                items = kube.list_items(collection, kind)
            except ApiStatusError:
                continue
            for item in items:
                if _drop_finalizers(kube, collection, {**item, "kind": kind}):
                    released.append(f"{kind} {ns}/{item['metadata']['name']}")
    if released:
        log.info("finalizers_released", objects=released)
    return released


def pods_not_ready(kube: Kube, namespaces: tuple[str, ...]) -> list[str]:
    """Pods that are not Ready (ignoring finished job pods), described for error messages."""
    waiting = []
    for ns in namespaces:
        for pod in kube.list_items(f"/api/v1/namespaces/{ns}/pods", "Pod"):
            phase = pod.get("status", {}).get("phase")
            if phase == "Succeeded":
                continue
            if pod["metadata"].get("deletionTimestamp"):
                waiting.append(f"{ns}/{pod['metadata']['name']} (terminating)")
                continue
            conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
            if conditions.get("Ready") != "True":
                reasons = [s.get("state", {}).get("waiting", {}).get("reason") for s in pod.get("status", {}).get("containerStatuses", [])]
                reason = next((r for r in reasons if r), phase or "Pending")
                waiting.append(f"{ns}/{pod['metadata']['name']} ({reason})")
    return waiting


def replicated_workloads(kube: Kube, namespaces: tuple[str, ...]):
    """Every Deployment and StatefulSet in ``namespaces``, as ``(kind, namespace, object)``."""
    for ns in namespaces:
        for kind, path in (("Deployment", f"/apis/apps/v1/namespaces/{ns}/deployments"),
                           ("StatefulSet", f"/apis/apps/v1/namespaces/{ns}/statefulsets")):
            for obj in kube.list_items(path, kind):
                yield kind, ns, obj


def workloads_settled(kube: Kube, namespaces: tuple[str, ...]) -> list[str]:
    """Deployments/StatefulSets whose ready replicas differ from spec."""
    pending = []
    for kind, ns, obj in replicated_workloads(kube, namespaces):
        want = obj.get("spec", {}).get("replicas", 1)
        ready = obj.get("status", {}).get("readyReplicas", 0) or 0
        if ready < want:
            pending.append(f"{kind} {ns}/{obj['metadata']['name']} {ready}/{want} ready")
    return pending


def workload_generations(kube: Kube, namespaces: tuple[str, ...]) -> dict[tuple[str, str, str], int]:
    """Every Deployment's and StatefulSet's spec generation (empty: none there): an apply or a scale
    that changes one bumps it."""
    return {(kind, ns, obj["metadata"]["name"]): int(obj["metadata"].get("generation") or 0)
            for kind, ns, obj in replicated_workloads(kube, namespaces)}


async def wait_ready(kube: Kube, namespaces: tuple[str, ...], timeout: float, *, what: str = "the app",
                     cut_graces: bool = False) -> float:
    """Wait until every pod is Ready and every workload has its replicas; return seconds waited. ``cut_graces`` (the
    reset's wait): a pod found terminating over a grace period longer than :data:`RESET_GRACE_S` goes at once, as the
    reset's own deletions do (red-team round 16: the repaired template's pods, made with a 599 s grace and a preStop
    hook that sleeps, held the reset's wait once the put-back template replaced them)."""
    started = time.monotonic()
    last: list[str] = []
    while time.monotonic() - started < timeout:
        last = await asyncio.to_thread(lambda: workloads_settled(kube, namespaces) + pods_not_ready(kube, namespaces))
        if not last:
            return time.monotonic() - started
        if cut_graces and any(item.endswith("(terminating)") for item in last):  # listed again only then
            await asyncio.to_thread(cut_long_graces, kube, namespaces)
        await asyncio.sleep(0.5)
    raise DeployError(f"{what} did not become ready within {timeout:g} s",
                      hints=tuple(f"not ready: {item}" for item in last[:10]))


#: waiting reasons a pod never leaves without a change of its spec (the image cannot be had)
IMAGE_STUCK = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})


def stuck_on_images(kube: Kube, namespaces: tuple[str, ...]) -> bool:
    """Whether the app cannot converge without another change: every pod that is not Ready waits for
    an image it cannot pull (at least one does), and every Deployment's and StatefulSet's controller
    has seen its latest spec (a rollout just asked for has not been judged yet)."""
    for _kind, _ns, obj in replicated_workloads(kube, namespaces):
        if (obj.get("status") or {}).get("observedGeneration", 0) < (obj.get("metadata") or {}).get("generation", 0):
            return False
    stuck = 0
    for ns in namespaces:
        for pod in kube.list_items(f"/api/v1/namespaces/{ns}/pods", "Pod"):
            status = pod.get("status") or {}
            if status.get("phase") == "Succeeded":
                continue
            if {c["type"]: c["status"] for c in status.get("conditions") or []}.get("Ready") == "True":
                continue
            if pod["metadata"].get("deletionTimestamp"):
                return False
            reasons = {((s.get("state") or {}).get("waiting") or {}).get("reason")
                       for s in status.get("containerStatuses") or []}
            if not reasons & IMAGE_STUCK:
                return False
            stuck += 1
    return stuck > 0


async def wait_converged(kube: Kube, namespaces: tuple[str, ...], timeout: float, *, confirm_s: float = 2.0) -> bool:
    """Wait until the app is ready (True), or until it is plainly stuck on images it cannot pull, seen so
    for ``confirm_s`` (False: waiting longer would change nothing), or ``timeout`` (False)."""
    started = time.monotonic()
    stuck_since: float | None = None
    while time.monotonic() - started < timeout:
        pending = await asyncio.to_thread(lambda: workloads_settled(kube, namespaces) + pods_not_ready(kube, namespaces))
        if not pending:
            return True
        if await asyncio.to_thread(stuck_on_images, kube, namespaces):
            stuck_since = stuck_since if stuck_since is not None else time.monotonic()
            if time.monotonic() - stuck_since >= confirm_s:
                return False
        else:
            stuck_since = None
        await asyncio.sleep(0.5)
    return False
