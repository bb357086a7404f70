"""The DatastoreCluster operator: ``python -m sregym_app_fleetcast.datastore_operator``.

Written with kopf. Every change of a DatastoreCluster (kopf's handlers), and a resync of every
resource every few seconds (a thread of ours: a container edited under the operator is put back,
level-triggered as real operators are; a replica count set by someone else is left alone for a
minute, as a volume copy stopping the pods needs, then put back; a spec change applies at once), runs one
:func:`reconcile`: it writes the headless and client Services, the PodDisruptionBudget and the
StatefulSet (volume claims from its templates) that :mod:`crd` derives from the resource, then the
resource's ``status`` (phase, readyReplicas, conditions with reasons). When Kubernetes refuses an
object or the storage class is missing, the reason goes on the resource as a condition and as a
Warning Event, since that is where whoever owns the resource looks.

A new storage class or size cannot be patched into a StatefulSet (its claim templates are
immutable), so the operator re-provisions: it deletes the StatefulSet and the claims of the old
class, waits until their pods are gone, and creates both afresh (the app re-seeds its catalogue).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import os
import threading
from typing import Any

from . import crd
from .topology import GROUP, NAMESPACE, OPERATOR, OPERATOR_HEALTH_PORT, PLURAL, VERSION

#: how often every resource is reconciled even when nothing changed on it
RESYNC_S = float(os.environ.get("RESYNC_S", "4"))
log = logging.getLogger("datastore-operator")
_lock = threading.Lock()  # one reconcile at a time: the change handlers and the resync timer share state
_clients: dict[str, Any] = {}


def _api() -> tuple[Any, Any, Any, Any]:
    """(core, apps, policy, custom objects) clients, from the pod's service account (or a kubeconfig)."""
    if not _clients:
        from kubernetes import client, config
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        _clients.update(core=client.CoreV1Api(), apps=client.AppsV1Api(), policy=client.PolicyV1Api(),
                        custom=client.CustomObjectsApi(), storage=client.StorageV1Api())
    return _clients["core"], _clients["apps"], _clients["policy"], _clients["custom"]


def _read(call: Any, *args: Any) -> dict[str, Any] | None:
    """The object as the API's JSON (camelCase), or None when it does not exist."""
    from kubernetes.client.exceptions import ApiException
    try:
        return json.loads(call(*args, _preload_content=False).data)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def api_message(exc: Any) -> str:
    """The API server's own message of a refused request (its Status), else the exception text."""
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Refused(Exception):
    """Kubernetes refused an object the operator wrote (its message says why)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _apply_service(core: Any, body: dict[str, Any]) -> None:
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    existing = _read(core.read_namespaced_service, name, ns)
    if existing is None:
        core.create_namespaced_service(ns, body)
    elif existing["spec"].get("selector") != body["spec"]["selector"] or \
            [p.get("port") for p in existing["spec"].get("ports") or []] != [p["port"] for p in body["spec"]["ports"]]:
        core.patch_namespaced_service(name, ns, {"spec": {"selector": body["spec"]["selector"],
                                                          "ports": body["spec"]["ports"]}})


def _apply_pdb(policy: Any, body: dict[str, Any]) -> None:
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    if _read(policy.read_namespaced_pod_disruption_budget, name, ns) is None:
        policy.create_namespaced_pod_disruption_budget(ns, body)


def _storage_problem(spec: dict[str, Any]) -> str:
    """Why the claims cannot be provisioned ('' when the storage class exists)."""
    name = spec.get("storageClassName")
    if not name:
        return ""
    from kubernetes.client.exceptions import ApiException
    try:
        _clients["storage"].read_storage_class(name)
    except ApiException as exc:
        if exc.status == 404:
            return f'storageclass.storage.k8s.io "{name}" not found'
        return ""
    return ""


def _old_parts_remain(core: Any, cr: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Delete claims of another class than ``desired`` asks for; True while they or old pods remain."""
    ns, name = cr["metadata"]["namespace"], cr["metadata"]["name"]
    label = ",".join(f"{k}={v}" for k, v in crd.selector(name).items())
    pods = json.loads(core.list_namespaced_pod(ns, label_selector=label, _preload_content=False).data)["items"]
    want = desired["spec"]["volumeClaimTemplates"][0]["spec"]
    stale = []
    claims = json.loads(core.list_namespaced_persistent_volume_claim(ns, label_selector=label,
                                                                      _preload_content=False).data)["items"]
    for claim in claims:
        have = claim.get("spec") or {}
        size = ((have.get("resources") or {}).get("requests") or {}).get("storage")
        if have.get("storageClassName") != want["storageClassName"] or size != want["resources"]["requests"]["storage"]:
            stale.append(claim)
            if not claim["metadata"].get("deletionTimestamp"):
                core.delete_namespaced_persistent_volume_claim(claim["metadata"]["name"], ns)
    return bool(pods and stale) or any(p["metadata"].get("deletionTimestamp") for p in pods) or bool(stale)


#: how long a replica count someone else set is left alone before the spec's is put back: a volume
#: copy stops the pods for seconds (the conductor's snapshot), a scale to zero left behind is undone
SCALE_GRACE_S = float(os.environ.get("SCALE_GRACE_S", "60"))
_scaled_since: dict[str, float] = {}


def _rescale_due(key: str, current: Any, wanted: Any, now: float | None = None) -> bool:
    """True once the StatefulSet's replica count has differed from the spec's for SCALE_GRACE_S."""
    import time

    now = time.monotonic() if now is None else now
    if current == wanted:
        _scaled_since.pop(key, None)
        return False
    since = _scaled_since.setdefault(key, now)
    return now - since >= SCALE_GRACE_S


def _apply_statefulset(apps: Any, core: Any, cr: dict[str, Any], desired: dict[str, Any]) -> str:
    """Create or update the StatefulSet; returns what was done. Raises :class:`Refused`."""
    from kubernetes.client.exceptions import ApiException
    ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
    existing = _read(apps.read_namespaced_stateful_set, name, ns)
    try:
        if existing is not None and crd.claim_classes_differ(existing, desired):
            apps.delete_namespaced_stateful_set(name, ns, propagation_policy="Background")
            _old_parts_remain(core, cr, desired)
            return "reprovisioning"
        if existing is None:
            if _old_parts_remain(core, cr, desired):
                return "reprovisioning"
            apps.create_namespaced_stateful_set(ns, desired)
            return "created"
        changed, edited = crd.spec_changed(existing, desired), crd.hand_edited(existing, desired)
        rescale = _rescale_due(f"{ns}/{name}", (existing.get("spec") or {}).get("replicas"), desired["spec"]["replicas"])
        if not changed and not edited and not rescale:
            return "unchanged"
        body = copy.deepcopy(desired)
        body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        if not changed and not rescale:  # put the containers back, leave a recent scale alone for now
            body["spec"]["replicas"] = (existing.get("spec") or {}).get("replicas", desired["spec"]["replicas"])
        apps.replace_namespaced_stateful_set(name, ns, body)
        return "updated" if changed else "restored"
    except ApiException as exc:
        if exc.status in (400, 403, 409, 422):
            raise Refused("StatefulSetRejected", f"StatefulSet {name}: {api_message(exc)}") from None
        raise


def _condition(kind: str, ok: bool, reason: str, message: str, old: list[dict[str, Any]]) -> dict[str, Any]:
    status = "True" if ok else "False"
    before = next((c for c in old if c.get("type") == kind), {})
    since = before.get("lastTransitionTime") if before.get("status") == status else _now()
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since or _now()}


def status_for(cr: dict[str, Any], sts: dict[str, Any] | None, refused: Refused | None, storage: str,
               action: str) -> dict[str, Any]:
    """The resource's status from what the reconcile saw (pure: unit-tested)."""
    spec, old = crd.spec_of(cr), ((cr.get("status") or {}).get("conditions") or [])
    want = int(spec["replicas"]) if isinstance(spec["replicas"], int) else 0
    ready = int(((sts or {}).get("status") or {}).get("readyReplicas") or 0)
    current = int(((sts or {}).get("status") or {}).get("replicas") or 0)
    if refused is not None:
        reconciled = _condition("Reconciled", False, refused.reason, refused.message, old)
    elif storage:
        reconciled = _condition("Reconciled", False, "StorageClassNotFound",
                                f"volume claims of {cr['metadata']['name']} cannot be provisioned: {storage}", old)
    elif action == "reprovisioning":
        reconciled = _condition("Reconciled", False, "Reprovisioning",
                                "the storage class or size changed: re-creating the StatefulSet and its claims", old)
    else:
        reconciled = _condition("Reconciled", True, "Synced", "the StatefulSet, Services and PodDisruptionBudget "
                                                              "match the spec", old)
    available = sts is not None and ready >= want and current == want  # not while scaling either way
    ready_cond = _condition("Ready", available, "AllReplicasReady" if available else "ReplicasNotReady",
                            f"{ready}/{want} replicas ready", old)
    if refused is not None or storage:
        phase = "Failed"
    elif action == "reprovisioning":
        phase = "Reprovisioning"
    elif available:
        phase = "Running"
    elif current != want or ready < want:
        phase = "Scaling" if sts is not None and ready > 0 else "Pending"
    else:
        phase = "Pending"
    return {"phase": phase, "replicas": want, "readyReplicas": ready,
            "observedGeneration": cr["metadata"].get("generation", 0), "conditions": [reconciled, ready_cond]}


def reconcile(cr: dict[str, Any], post_event: Any = None) -> dict[str, Any]:
    """One pass over one DatastoreCluster; returns the status it wrote."""
    core, apps, policy, custom = _api()
    ns, name = cr["metadata"]["namespace"], cr["metadata"]["name"]
    desired = crd.statefulset(cr)
    refused: Refused | None = None
    action = "unchanged"
    from kubernetes.client.exceptions import ApiException
    try:
        for svc in crd.services(cr):
            _apply_service(core, svc)
        _apply_pdb(policy, crd.disruption_budget(cr))
    except ApiException as exc:
        refused = Refused("ObjectRejected", api_message(exc))
    storage = _storage_problem(crd.spec_of(cr))
    if refused is None:
        try:
            action = _apply_statefulset(apps, core, cr, desired)
        except Refused as exc:
            refused = exc
    if action != "unchanged":
        log.info("%s/%s: StatefulSet %s", ns, name, action)
    sts = _read(apps.read_namespaced_stateful_set, name, ns)
    status = status_for(cr, sts, refused, storage, action)
    old = {c["type"]: c for c in (cr.get("status") or {}).get("conditions") or []}
    new = status["conditions"][0]
    if post_event and new["status"] == "False" and (old.get("Reconciled") or {}).get("message") != new["message"]:
        post_event("Warning", new["reason"], new["message"])
    if post_event and new["status"] == "True" and (old.get("Reconciled") or {}).get("status") == "False":
        post_event("Normal", "Reconciled", new["message"])
    if (cr.get("status") or {}) != status:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, ns, PLURAL, name, {"status": status})
    return status


def post_event(cr: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """A core/v1 Event on the resource (what ``kubectl describe`` shows under Events)."""
    core = _api()[0]
    meta, now = cr["metadata"], _now()
    core.create_namespaced_event(meta["namespace"], {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {"apiVersion": f"{GROUP}/{VERSION}", "kind": cr.get("kind", "DatastoreCluster"),
                           "name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid", "")},
        "reason": reason, "message": message[:1000], "type": kind, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now, "source": {"component": OPERATOR},
        "reportingComponent": OPERATOR, "reportingInstance": os.environ.get("HOSTNAME", OPERATOR)})
    log.log(logging.WARNING if kind == "Warning" else logging.INFO, "%s/%s %s: %s", meta["namespace"], meta["name"],
            reason, message)


def reconcile_safely(cr: dict[str, Any]) -> None:
    """One reconcile under the lock; an error is logged (the next change or resync tries again)."""
    with _lock:
        try:
            reconcile(cr, lambda kind, reason, message: post_event(cr, kind, reason, message))
        except Exception as exc:  # noqa: BLE001 - the operator keeps running whatever one pass met
            log.error("%s/%s: reconcile failed: %s", cr["metadata"].get("namespace"), cr["metadata"].get("name"), exc)


def resync_forever(namespaces: list[str], stop: threading.Event) -> None:
    """Level-triggered: every RESYNC_S, reconcile every DatastoreCluster as it is now (a StatefulSet
    edited under the operator is put back, a status follows its pods). A thread of its own, not a kopf
    timer: kopf holds a finalizer on every resource with a timer, and a resource whose operator is
    gone (a broken image, a deleted namespace) could then never be deleted."""
    custom = _api()[3]
    while not stop.wait(RESYNC_S):
        for ns in namespaces:
            try:
                items = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL).get("items") or []
            except Exception as exc:  # noqa: BLE001 - the API may be briefly away; try on the next tick
                log.warning("listing %s in %s failed: %s", PLURAL, ns, exc)
                continue
            for cr in items:
                if not cr["metadata"].get("deletionTimestamp"):
                    reconcile_safely(cr)


def register() -> None:
    """The kopf handlers: every change of a DatastoreCluster, and each one at start."""
    import kopf

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # our own Events say what matters; no "Handler succeeded" noise
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)

    @kopf.on.resume(GROUP, VERSION, PLURAL)
    @kopf.on.create(GROUP, VERSION, PLURAL)
    @kopf.on.update(GROUP, VERSION, PLURAL)
    def changed(body: Any, **_: Any) -> None:
        reconcile_safely(json.loads(json.dumps(dict(body))))  # kopf's Body view as plain JSON


def main() -> int:
    import asyncio

    import kopf
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # the kubelet's probes and a "Timer succeeded" every few seconds would drown what the operator did
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    register()
    namespaces = [n for n in os.environ.get("WATCH_NAMESPACES", NAMESPACE).split(",") if n]
    stop = threading.Event()
    threading.Thread(target=resync_forever, args=(namespaces, stop), name="resync", daemon=True).start()
    asyncio.run(kopf.operator(standalone=True, namespaces=namespaces, clusterwide=False,
                              liveness_endpoint=f"http://0.0.0.0:{os.environ.get('HEALTH_PORT', OPERATOR_HEALTH_PORT)}/healthz"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
