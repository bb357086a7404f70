"""FleetCast's fault primitives: a broken DatastoreCluster, or a broken operator.

Upstream's six operator problems break a ``TidbCluster`` or the TiDB operator; these break our
DatastoreCluster (:mod:`crd`) or its operator (:mod:`datastore_operator`) the same ways:

* ``datastore-replicas-overload``: ``spec.replicas`` far beyond what the nodes hold. The operator
  scales the StatefulSet; pods start one by one (OrderedReady) until one cannot be scheduled
  (``Insufficient cpu``) and stays Pending, and the resource reports ``Scaling``.
* ``datastore-missing-storage-class``: ``spec.storageClassName`` names no StorageClass. The claim
  templates of a StatefulSet cannot change, so the operator re-provisions (new StatefulSet, new
  claims); the claims stay Pending (``ProvisioningFailed``), so do the pods, and the app loses
  its datastore. The resource reports ``Failed`` / ``StorageClassNotFound``.
* ``datastore-invalid-toleration``, ``datastore-invalid-run-as-user``,
  ``datastore-invalid-update-strategy``: a value the resource's schema accepts (as upstream's does)
  and Kubernetes refuses on the StatefulSet (an unknown toleration effect, a negative uid, an
  unknown update strategy type). The API server answers 422; the operator cannot apply the spec and
  reports ``Failed`` / ``StatefulSetRejected`` with the server's message and a Warning Event. The
  running pods keep serving: nothing a user sees until the datastore needs a change.
* ``operator-image-typo``: a typo in the operator Deployment's image repository. Its pod cannot
  pull (the Deployment recreates, so the old operator is gone) and no DatastoreCluster change is
  reconciled.

Each fault is present while the broken value is there *and* its effect shows on the live system
(the resource's status, the pods), whoever set that value; each reference fix edits the resource
or the operator back and waits until the operator reports the datastore Running.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from sregym_core.errors import FaultError, PermanentFaultError
from sregym_core.faultkit import kube, schema, weakening
from sregym_core.faultkit.functions import function_fault
from sregym_core.types import FaultSpec, TargetSelector

from .manifests import DATASTORE_SPEC, OPERATOR_IMAGE
from .crd import HASH_ANNOTATION
from .topology import CRD_NAME, GROUP, KIND, OPERATOR

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

RESOURCE = f"{CRD_NAME}"  # kubectl's fully qualified resource name: never ambiguous with another group's
VALID_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
VALID_STRATEGIES = ("RollingUpdate", "OnDelete")
UID_MAX = 2147483647
#: how long inject waits for the symptom, and a reference fix for the datastore to be Running again
SHOW_TIMEOUT_S = 120.0
HEAL_TIMEOUT_S = 180.0
#: how long the operator may take to write a StatefulSet's spec hash back (it resyncs every 4 s; a loaded machine)
RECONCILE_PROBE_S = 60.0


# ------------------------------------------------------------------ the resource


def resource(ctx: FaultContext, target: Target) -> dict[str, Any]:
    obj = kube.get(ctx, RESOURCE, target.component.name, missing_ok=True)
    if obj is None:
        raise PermanentFaultError(f"{KIND} {ctx.namespace}/{target.component.name} does not exist",
                                  hints=("is fleetcast deployed?",))
    return obj


def _patch_spec(ctx: FaultContext, target: Target, spec: dict[str, Any]) -> None:
    kube.patch(ctx, RESOURCE, target.component.name, {"spec": spec})


def _reconciled(obj: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Reconciled"), {})


def _rejected(obj: dict[str, Any]) -> bool:
    """The operator reports that Kubernetes refused the StatefulSet it derived from this spec."""
    cond = _reconciled(obj)
    return cond.get("status") == "False" and cond.get("reason") == "StatefulSetRejected"


def _running(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    return (status.get("phase") == "Running" and status.get("observedGeneration") == obj["metadata"].get("generation")
            and _reconciled(obj).get("status") == "True")


def _wait(ctx: FaultContext, check: Callable[[], bool], what: str, timeout: float) -> None:
    if not kube.wait_until(check, timeout=timeout, interval=1.0):
        raise FaultError(f"{what} did not happen within {timeout:.0f}s",
                         hints=(f"kubectl describe {RESOURCE} -n {ctx.namespace}", f"kubectl logs deploy/{OPERATOR}"))


def _wait_running(ctx: FaultContext, target: Target) -> None:
    _wait(ctx, lambda: _running(resource(ctx, target)), f"{KIND} {target.component.name} Running", HEAL_TIMEOUT_S)


# ------------------------------------------------------------------ field faults on the resource

#: fault name -> (field, shipped value, is the value broken?, how the symptom shows, broken default)
FieldCheck = Callable[[Any], bool]


def _bad_effect(tolerations: Any) -> bool:
    return any(isinstance(t, dict) and t.get("effect") not in (None, "", *VALID_EFFECTS) for t in tolerations or [])


def _bad_uid(context: Any) -> bool:
    return any(isinstance(v, int) and not 0 <= v <= UID_MAX for k, v in (context or {}).items()
               if k in ("runAsUser", "runAsGroup", "fsGroup"))


def _bad_strategy(value: Any) -> bool:
    return value not in VALID_STRATEGIES


def _unschedulable_pods(ctx: FaultContext, target: Target) -> list[str]:
    """The cluster's pods the scheduler could not place (Pending, PodScheduled=False), not those
    merely starting."""
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l",
                                  f"app.kubernetes.io/name={target.component.name}", "-o", "json"))["items"]
    return [p["metadata"]["name"] for p in pods if (p.get("status") or {}).get("phase") == "Pending" and any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in (p.get("status") or {}).get("conditions") or [])]


def _storage_class_exists(ctx: FaultContext, name: str) -> bool:
    return bool(ctx.kubectl("get", "storageclass", name, "--ignore-not-found", "-o", "name").strip())


# each: inject's new spec from the shipped one and params; is the live spec broken; has it shown
def _overload(spec: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return {"replicas": int(params["replicas"])}


def _overload_broken(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    want = (obj.get("spec") or {}).get("replicas") or 0
    return isinstance(want, int) and want > DATASTORE_SPEC["replicas"] and \
        int((obj.get("status") or {}).get("readyReplicas") or 0) < want


def _overload_shown(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    return bool(_unschedulable_pods(ctx, target))


def _storage(spec: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return {"storageClassName": str(params["storage_class"])}


def _storage_broken(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    name = (obj.get("spec") or {}).get("storageClassName")
    return bool(name) and not _storage_class_exists(ctx, str(name))


def _storage_shown(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    claims = json.loads(ctx.kubectl("get", "pvc", "-n", ctx.namespace, "-l",
                                    f"app.kubernetes.io/name={target.component.name}", "-o", "json"))["items"]
    pending = [c for c in claims if (c.get("status") or {}).get("phase") == "Pending"
               and (c.get("spec") or {}).get("storageClassName") == (obj.get("spec") or {}).get("storageClassName")]
    return bool(pending) or _reconciled(obj).get("reason") == "StorageClassNotFound"


def _toleration(spec: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    tolerations = json.loads(json.dumps(spec.get("tolerations") or [{"key": f"{GROUP}/datastore", "operator": "Exists"}]))
    tolerations[0]["effect"] = str(params["effect"])
    return {"tolerations": tolerations}


def _toleration_broken(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    return _bad_effect((obj.get("spec") or {}).get("tolerations"))


def _toleration_weakened(obj: dict[str, Any]) -> bool:
    """The shipped toleration gone (deleted, or replaced by one of another key): not putting the deployed one back
    (red-team rounds 10 and 11: it passed on nodes that happen to carry no taint, and breaks on any node that does)."""
    return not _shipped_tolerations_kept((obj.get("spec") or {}).get("tolerations"))


def _shipped_tolerations_kept(tolerations: Any) -> bool:
    have = {(t.get("key"), t.get("operator")) for t in tolerations or [] if isinstance(t, dict)}
    return all((t.get("key"), t.get("operator")) in have for t in DATASTORE_SPEC.get("tolerations") or [])


def _run_as(spec: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return {"securityContext": {**(spec.get("securityContext") or {}), "runAsUser": int(params["run_as_user"])}}


def _run_as_broken(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    return _bad_uid((obj.get("spec") or {}).get("securityContext"))


def _run_as_weakened(obj: dict[str, Any]) -> bool:
    """Root where the datastore was shipped to run as a non-root user: a weaker configuration, not the repair (red-team
    round 10: it passed, then broke the data files' ownership)."""
    return _root_where_shipped_non_root((obj.get("spec") or {}).get("securityContext"))


def _root_where_shipped_non_root(context: Any) -> bool:
    """A root uid or gid set where the shipped context does not set that root id (red-team round 12: a repaired uid with
    ``runAsGroup: 0`` added ran the datastore in the root group)."""
    shipped = DATASTORE_SPEC.get("securityContext") or {}
    return any(isinstance((context or {}).get(k), int) and (context or {}).get(k) == 0 and shipped.get(k) != 0
               for k in ("runAsUser", "runAsGroup", "fsGroup"))


def _strategy(spec: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return {"updateStrategy": str(params["strategy"])}


def _strategy_broken(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    return _bad_strategy((obj.get("spec") or {}).get("updateStrategy", "RollingUpdate"))


def _strategy_weakened(obj: dict[str, Any]) -> bool:
    """Another valid strategy than the shipped one (red-team round 12: ``OnDelete`` passed; the datastore's pods then
    never roll to a new spec by themselves): not putting the deployed strategy back."""
    return (obj.get("spec") or {}).get("updateStrategy", "RollingUpdate") != DATASTORE_SPEC.get("updateStrategy", "RollingUpdate")


def _rejected_shown(ctx: FaultContext, target: Target, obj: dict[str, Any]) -> bool:
    return _rejected(obj)


def weaker_elsewhere(spec: Mapping[str, Any], field: str) -> list[str]:
    """The DatastoreCluster's other fields left weaker than shipped while ``field`` was repaired (red-team round 13,
    finding 3: the memory limit or the anti-affinity removed beside a repaired update strategy passed every oracle): a
    shipped field gone or emptied, fewer replicas, resources weaker (:mod:`sregym_core.faultkit.weakening`), a
    security setting of the root user or group where the shipped one is not."""
    found = []
    for key, shipped in DATASTORE_SPEC.items():
        if key == field:
            continue
        live = spec.get(key)
        if shipped and not live:
            found.append(f"{key} removed")
        elif key == "replicas" and isinstance(live, int) and live < shipped:
            found.append(f"replicas {live} < {shipped}")
        elif key == "resources":
            why = weakening.resources_weaker(live, shipped)
            if why:
                found.append(f"resources: {why}")
        elif key == "securityContext" and isinstance(live, Mapping) and _root_where_shipped_non_root(live):
            found.append("securityContext: a root user or group where the shipped one is not")
    return found


class FieldFault:
    """A DatastoreCluster spec field set to a broken value (see the module's list)."""

    def __init__(self, field: str, mutate: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]],
                 broken: Callable[[FaultContext, Target, dict[str, Any]], bool],
                 shown: Callable[[FaultContext, Target, dict[str, Any]], bool],
                 weakened: Callable[[dict[str, Any]], bool] | None = None):
        # ``weakened``: a value the API server takes but that is not the deployed one's equal (root for a non-root uid, the
        # shipped toleration gone): no symptom shows, and still the fault is not repaired
        self.field, self.mutate, self.broken, self.shown, self.weakened = field, mutate, broken, shown, weakened

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        obj = resource(ctx, target)
        spec = obj.get("spec") or {}
        kube.save(ctx, "original", {self.field: spec.get(self.field, DATASTORE_SPEC.get(self.field))})
        change = self.mutate(spec, params)
        ctx.state["broken"] = change
        _patch_spec(ctx, target, change)
        # the fault is injected once its effect shows (the operator has acted on it)
        _wait(ctx, lambda: self.is_present(ctx, target, params), f"the effect of {self.field}={change[self.field]!r}",
                  SHOW_TIMEOUT_S)

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
        obj = kube.get(ctx, RESOURCE, target.component.name, missing_ok=True)
        if obj is None:
            return False
        broken = self.broken(ctx, target, obj)
        if not broken and self.weakened is not None and self.weakened(obj):
            return True  # a valid value that is not the deployed one's equal: no symptom, and not repaired either
        if not broken and weaker_elsewhere(obj.get("spec") or {}, self.field):
            return True  # the broken field repaired while another was given away: not the repair either
        return broken and self.shown(ctx, target, obj)

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        """What an SRE does from what the cluster shows: the field back to the value every other
        part of the app was deployed with (the shipped DatastoreCluster), then wait for Running."""
        _patch_spec(ctx, target, {self.field: DATASTORE_SPEC[self.field]})
        _wait_running(ctx, target)

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        original = (ctx.state.get("original") or {}).get(self.field, DATASTORE_SPEC[self.field])
        _patch_spec(ctx, target, {self.field: original})
        _wait_running(ctx, target)

    def values(self, target: Target, params: dict, state: dict) -> dict[str, Any]:
        after = (state.get("broken") or self.mutate(dict(DATASTORE_SPEC), params))[self.field]
        before = (state.get("original") or {}).get(self.field, DATASTORE_SPEC[self.field])
        return {"resource": f"{KIND}/{target.component.name}", "field": f"spec.{self.field}",
                "before": before, "after": after, "operator": OPERATOR}


# ------------------------------------------------------------------ the operator's image


def typo_image(image: str) -> str:
    """The image with a typo in its repository name (``fleetcast-operator`` -> ``fleetcast-operater``)."""
    repo, _, tag = image.rpartition(":")
    name = repo.rsplit("/", 1)[-1]
    swapped = name[:-2] + name[-1] + name[-2] if len(name) > 2 else name + "x"
    if name.endswith("operator"):
        swapped = name[: -len("operator")] + "operater"
    return f"{repo[: len(repo) - len(name)]}{swapped}:{tag}"


def _operator_container(obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    index = kube.container_index(obj, "operator")
    return index, kube.pod_spec(obj)["containers"][index]


def _operator_ready(ctx: FaultContext, target: Target) -> bool:
    """A Ready pod of the operator Deployment runs the shipped image with the image's own command."""
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", f"app.kubernetes.io/name={OPERATOR}",
                                  "-o", "json"))["items"]
    for pod in pods:
        containers = (pod.get("spec") or {}).get("containers") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])
        if ready and not pod["metadata"].get("deletionTimestamp") and any(
                c.get("image") == OPERATOR_IMAGE and not c.get("command") for c in containers):
            return True
    return False


def _operator_shipped(obj: dict[str, Any]) -> bool:
    _index, container = _operator_container(obj)
    return container.get("image") == OPERATOR_IMAGE and not container.get("command")


def image_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    index, container = _operator_container(obj)
    path = f"/spec/template/spec/containers/{index}/image"
    wrong = str(params.get("image") or typo_image(container["image"]))
    kube.save(ctx, "originals", {path: container["image"]})
    ctx.state["ops"] = [{"op": "replace", "path": path, "value": wrong}]
    kube.patch(ctx, target.component.kind, target.component.name, ctx.state["ops"], type="json")
    _wait(ctx, lambda: image_is_present(ctx, target, params), "the operator's pod gone", SHOW_TIMEOUT_S)


def image_is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return True  # no operator at all: nothing reconciles the resource
    if not _operator_shipped(obj):
        return True
    return not (_operator_ready(ctx, target) and operator_reconciles(ctx))


def _owned_statefulsets(ctx: FaultContext) -> list[dict[str, Any]]:
    items = json.loads(ctx.kubectl("get", "statefulsets", "-n", ctx.namespace, "-o", "json"))["items"]
    return [s for s in items if any(o.get("kind") == KIND for o in s["metadata"].get("ownerReferences") or ())]


def operator_reconciles(ctx: FaultContext) -> bool:
    """Whether the operator acts on what it is there to watch: the spec hash it writes on each DatastoreCluster's
    StatefulSet, taken off, is back within :data:`RECONCILE_PROBE_S`. A Ready operator on the right image that
    watches a namespace it may not read (or none) reconciles nothing, which is the fault's own symptom (red-team
    round 19, finding 3: its pod answered /healthz and every other oracle passed). Taking the annotation off changes
    no pod (the template stays); when the operator does not put it back, the probe does."""
    pointer = "/metadata/annotations/" + HASH_ANNOTATION.replace("~", "~0").replace("/", "~1")
    owned = _owned_statefulsets(ctx)
    if not owned:
        return False  # the operator makes a StatefulSet for the shipped resource: none at all is none made
    for sts in owned:
        name = sts["metadata"]["name"]
        value = (sts["metadata"].get("annotations") or {}).get(HASH_ANNOTATION)
        if value is None:
            return False  # the operator has not written it (or not since someone took it off)
        try:
            kube.patch(ctx, "statefulset", name, [{"op": "test", "path": pointer, "value": value},
                                                  {"op": "remove", "path": pointer}], type="json")
        except FaultError:
            return False  # changed or gone between the read and the patch: ask again at the next check

        def written_back() -> bool:
            now = kube.get(ctx, "statefulset", name, missing_ok=True)
            return now is not None and HASH_ANNOTATION in (now["metadata"].get("annotations") or {})

        if not kube.wait_until(written_back, timeout=RECONCILE_PROBE_S, interval=1.0):
            kube.patch(ctx, "statefulset", name, {"metadata": {"annotations": {HASH_ANNOTATION: value}}})
            return False
    return True


def image_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """The operator's image back to the one the app ships (``sregym/fleetcast-operator:<tag>``)."""
    obj = kube.workload(ctx, target)
    index, _container = _operator_container(obj)
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "replace", "path": f"/spec/template/spec/containers/{index}/image", "value": OPERATOR_IMAGE}],
               type="json")
    _wait(ctx, lambda: _operator_ready(ctx, target), "the operator Ready again", HEAL_TIMEOUT_S)


def shipped_operator_container() -> dict[str, Any]:
    """The operator's container as the app ships it (manifests/10-operator.yaml)."""
    from .manifests import operator_objects

    deployment = next(o for o in operator_objects() if o["kind"] == "Deployment")
    return json.loads(json.dumps(deployment["spec"]["template"]["spec"]["containers"][0]))


def image_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """The whole operator container back as shipped (an agent may have changed more than the image:
    a stub's command and args), with the image the harness saved."""
    obj = kube.workload(ctx, target)
    index, _container = _operator_container(obj)
    path = f"/spec/template/spec/containers/{index}/image"
    container = shipped_operator_container()
    container["image"] = (ctx.state.get("originals") or {}).get(path, OPERATOR_IMAGE)
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "replace", "path": f"/spec/template/spec/containers/{index}", "value": container}], type="json")
    _wait(ctx, lambda: _operator_ready(ctx, target), "the operator Ready again", HEAL_TIMEOUT_S)


# ------------------------------------------------------------------ the specs

CR_SELECTOR = TargetSelector(kinds=("StatefulSet",), requires=("knob:datastore-cluster",))
CR_VOCABULARY = ("datastorecluster", "datastore cluster", "custom resource", "the CR", "cr spec", "orbit-db resource")
CR_KEYWORDS = ("DatastoreCluster", "custom resource", "operator", "orbit-db")


def _cr_fault(name: str, summary: str, field: str, mutate: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]],
              broken: Callable[[FaultContext, Target, dict[str, Any]], bool],
              shown: Callable[[FaultContext, Target, dict[str, Any]], bool], *, mechanism: str, prose: str,
              params: dict[str, Any], symptoms: tuple[str, ...], vocabulary: tuple[str, ...],
              keywords: tuple[str, ...], recreates: tuple[str, ...] = (),
              weakened: Callable[[dict[str, Any]], bool] | None = None) -> FaultSpec:
    impl = FieldFault(field, mutate, broken, shown, weakened)
    return function_fault(name=name, summary=summary, layer="k8s", selector=CR_SELECTOR, params_schema=schema(**params),
                          inject=impl.inject, is_present=impl.is_present, recover=impl.recover,
                          reference_fix=impl.reference_fix, resource_kind=KIND, mechanism=mechanism, symptoms=symptoms,
                          keywords=(*CR_KEYWORDS, *keywords), values=impl.values, prose=prose,
                          vocabulary=(*CR_VOCABULARY, *vocabulary), recreates=recreates)


def faults() -> list[FaultSpec]:
    image = function_fault(
        name="operator-image-typo", summary="a typo in the operator Deployment's image repository",
        layer="k8s", selector=TargetSelector(kinds=("Deployment",), requires=("knob:operator",)),
        params_schema=schema(image={"type": "string", "default": ""}),
        inject=image_inject, is_present=image_is_present, recover=image_recover, reference_fix=image_fix,
        resource_kind="Deployment",
        mechanism="the operator Deployment's container image has a typo in its repository name, so its pod cannot "
                  "pull the image and no DatastoreCluster change is reconciled",
        symptoms=("ErrImagePull", "ImagePullBackOff", "DatastoreCluster changes not reconciled"),
        keywords=("image", "typo", "ImagePullBackOff", "operator"),
        values=lambda target, params, state: {
            "deployment": target.component.name, "before": (state.get("originals") or {}) and
            next(iter(state["originals"].values())) or OPERATOR_IMAGE,
            "after": (state.get("ops") or [{}])[0].get("value") or typo_image(OPERATOR_IMAGE)},
        vocabulary=("image typo", "typo in the image", "misspelled image", "wrong image", "image name",
                    "ImagePullBackOff", "ErrImagePull", "operator image", "cannot pull"),
        prose="The operator Deployment {deployment} was changed to the image {after} (a typo of {before}): its pod "
              "stays in ImagePullBackOff, so no DatastoreCluster change is reconciled. Setting the image back to "
              "{before} fixes it.")
    # the ground truth names the unreconciled changes too; the fault's record lists the pull errors alone
    image = attrs.evolve(image, symptoms=("ErrImagePull", "ImagePullBackOff"))
    return [
        _cr_fault("datastore-replicas-overload", "a DatastoreCluster asks for far more replicas than the nodes hold",
                  "replicas", _overload, _overload_broken, _overload_shown,
                  mechanism="the DatastoreCluster's spec.replicas was raised far beyond what the cluster can schedule; "
                            "the operator scales the StatefulSet and its next pod stays Pending (Insufficient cpu)",
                  prose="The {resource} custom resource's {field} was set from {before} to {after}; the operator "
                        "{operator} scaled the StatefulSet {component} accordingly, pods start one by one until one "
                        "cannot be scheduled and stays Pending. Setting {field} back to {before} fixes it.",
                  params={"replicas": {"type": "integer", "minimum": 13, "default": 100000}},
                  symptoms=("pods Pending", "Insufficient cpu", "DatastoreCluster phase Scaling"),
                  vocabulary=("replicas", "too many replicas", "replica count", "100000", "scaled", "overload",
                              "Insufficient cpu", "Pending"),
                  keywords=("replicas", "Pending")),
        _cr_fault("datastore-missing-storage-class", "a DatastoreCluster names a StorageClass that does not exist",
                  "storageClassName", _storage, _storage_broken, _storage_shown,
                  mechanism="the DatastoreCluster's spec.storageClassName names a StorageClass that does not exist; "
                            "the operator re-provisions the StatefulSet and its PersistentVolumeClaims stay Pending",
                  prose="The {resource} custom resource's {field} was changed from {before} to {after}, a "
                        "StorageClass that does not exist. The operator {operator} re-created the StatefulSet "
                        "{component}; its PersistentVolumeClaims stay Pending (ProvisioningFailed), so do its pods, and "
                        "the app loses its datastore. Setting {field} back to {before} fixes it.",
                  params={"storage_class": {"type": "string", "default": "fast-ssd"}},
                  symptoms=("PersistentVolumeClaims Pending", "ProvisioningFailed", "pods Pending", "503 errors"),
                  vocabulary=("storage class", "storageclass", "storageClassName", "does not exist", "not found",
                              "nonexistent storage", "missing storage class", "pvc pending", "ProvisioningFailed"),
                  keywords=("storageClassName", "StorageClass", "PersistentVolumeClaim"),
                  recreates=("StatefulSet/{component}", "PersistentVolumeClaim/data-{component}-*")),
        _cr_fault("datastore-invalid-toleration", "a DatastoreCluster toleration has an effect Kubernetes does not know",
                  "tolerations", _toleration, _toleration_broken, _rejected_shown,
                  mechanism="a toleration in the DatastoreCluster's spec has an invalid effect; the API server refuses "
                            "the StatefulSet the operator derives from it (422 Unsupported value), so the spec is not applied",
                  prose="The {resource} custom resource's {field} got an invalid toleration effect ({after}); the "
                        "API server refuses the StatefulSet {component} the operator {operator} writes from it "
                        "(Unsupported value: supported values NoSchedule, PreferNoSchedule, NoExecute), so the "
                        "resource is Failed with reason StatefulSetRejected. Setting {field} back to {before} fixes it.",
                  params={"effect": {"type": "string", "default": "NoScheduling"}},
                  symptoms=("DatastoreCluster phase Failed", "StatefulSetRejected", "Warning events"),
                  vocabulary=("toleration", "tolerations", "effect", "invalid effect", "toleration effect",
                              "unsupported value", "NoSchedule", "StatefulSetRejected", "rejected"),
                  keywords=("toleration", "effect"), weakened=_toleration_weakened),
        _cr_fault("datastore-invalid-run-as-user", "a DatastoreCluster's securityContext.runAsUser is negative",
                  "securityContext", _run_as, _run_as_broken, _rejected_shown,
                  mechanism="the DatastoreCluster's spec.securityContext.runAsUser is negative; the API server refuses "
                            "the StatefulSet the operator derives from it (422, must be between 0 and 2147483647)",
                  prose="The {resource} custom resource's {field} was changed from {before} to {after}: a negative "
                        "runAsUser. The API server refuses the StatefulSet {component} the operator {operator} writes "
                        "(must be between 0 and 2147483647), so the resource is Failed with reason "
                        "StatefulSetRejected. Setting runAsUser back to 999 fixes it.",
                  params={"run_as_user": {"type": "integer", "maximum": -1, "default": -1}},
                  symptoms=("DatastoreCluster phase Failed", "StatefulSetRejected", "Warning events"),
                  vocabulary=("runAsUser", "run as user", "securityContext", "security context", "negative uid",
                              "uid -1", "-1", "must be between 0", "StatefulSetRejected", "rejected"),
                  keywords=("runAsUser", "securityContext"), weakened=_run_as_weakened),
        _cr_fault("datastore-invalid-update-strategy",
                  "a DatastoreCluster asks for a StatefulSet update strategy that does not exist",
                  "updateStrategy", _strategy, _strategy_broken, _rejected_shown,
                  mechanism="the DatastoreCluster's spec.updateStrategy is not a StatefulSet update strategy type; the "
                            "API server refuses the StatefulSet the operator derives from it (must be 'RollingUpdate' or 'OnDelete')",
                  prose="The {resource} custom resource's {field} was changed from {before} to {after}, which is not "
                        "a StatefulSet update strategy. The API server refuses the StatefulSet {component} the "
                        "operator {operator} writes (must be 'RollingUpdate' or 'OnDelete'), so the resource is Failed "
                        "with reason StatefulSetRejected. Setting {field} back to {before} fixes it.",
                  params={"strategy": {"type": "string", "default": "Rolling"}},
                  symptoms=("DatastoreCluster phase Failed", "StatefulSetRejected", "Warning events"),
                  vocabulary=("update strategy", "updateStrategy", "strategy type", "invalid strategy", "RollingUpdate",
                              "OnDelete", "StatefulSetRejected", "rejected"),
                  keywords=("updateStrategy", "RollingUpdate"), weakened=_strategy_weakened),
        image,
    ]
