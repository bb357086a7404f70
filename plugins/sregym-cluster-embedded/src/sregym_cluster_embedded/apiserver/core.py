"""The API semantics shared by HTTP requests and the in-process client.

:class:`ApiCore` owns the registry and the store and implements create/get/list/update/patch/delete
with the bookkeeping a real API server does: uid, generation, creationTimestamp, generateName,
optimistic concurrency, dryRun, finalizers and graceful deletion, defaulting, admission, ClusterIP
allocation, CRD registration and the events.k8s.io <-> core/v1 Event conversion.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import admission, defaults, fieldcheck, patching, podsecurity
from .errors import ApiError, already_exists, bad_request, conflict, invalid, not_found
from .registry import VIRTUAL, Registry, ResourceType
from .selectors import ObjectFilter
from .shapes import as_dict
from .store import Obj, Store, clone
from .validation import QuantityProblem, name_problem, object_causes

if TYPE_CHECKING:
    import aiohttp

# kinds whose metadata.generation tracks spec changes (plus every custom resource)
GENERATION_KINDS = {
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler",
    "PodDisruptionBudget", "ReplicationController", "Ingress", "NetworkPolicy", "CustomResourceDefinition",
    "Pod", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
}
# kinds whose status is reset on create (the status subresource owns it)
RESET_STATUS_KINDS = {
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "HorizontalPodAutoscaler",
    "PodDisruptionBudget", "ReplicationController", "Ingress", "Service", "PersistentVolumeClaim",
    "PersistentVolume", "CustomResourceDefinition", "ResourceQuota",
}
# pod spec fields a pod update may change (everything else is immutable)
POD_MUTABLE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
# what ResourceQuota usage is computed from
QUOTA_COUNTED = ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers",
                 "resourcequotas")
DEFAULT_GRACE = 30


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def random_suffix(n: int = 5) -> str:
    return "".join(random.choice(_NAME_CHARS) for _ in range(n))


def _check_new_finalizers(rt: ResourceType, old: Obj, new: Obj) -> None:
    """ValidateObjectMetaUpdate: once an object is being deleted, finalizers may only be removed."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
    if added:
        found = ", ".join(f'"{f}"' for f in added)
        raise invalid(rt.kind, rt.group, old["metadata"]["name"], [(
            "FieldValueForbidden", "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers []string{{{found}}}", "metadata.finalizers")])


def _drop_empty_metadata(meta: Obj) -> None:
    """Empty maps and lists in ObjectMeta are omitted, as Go's omitempty does on a real server."""
    for field in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields"):
        if field in meta and not meta[field]:
            del meta[field]


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class ApiCore:
    """Registry + store + the semantics of each verb."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.registry = Registry()
        self.store = Store()
        self.store.listeners.append(self._on_write)
        self._service_ips: set[str] = set()
        self._quota_pending: set[str] = set()
        self._node_ports: set[int] = set()
        #: the PodRuntime (logs, exec, metrics); set by the node agents when they start
        self.runtime: Any = None
        #: the HTTPS client session webhook calls share (webhooks.py opens it on first use, closes it)
        self._webhook_http: aiohttp.ClientSession | None = None

    # ------------------------------------------------------------------------------------------
    # conversion between the stored form and the version a request asked for
    # ------------------------------------------------------------------------------------------
    def external(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.storage_key == "events" and rt.group == "events.k8s.io":
            return core_event_to_events_v1(obj)
        if obj.get("apiVersion") != rt.api_version:
            out = dict(obj)
            out["apiVersion"] = rt.api_version
            return out
        return obj

    def internal(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.storage_key == "events" and rt.group == "events.k8s.io":
            return events_v1_to_core_event(obj)
        obj["apiVersion"] = rt.api_version
        return obj

    def storage_type(self, rt: ResourceType) -> ResourceType:
        if rt.storage_key != rt.key:
            return self.registry.by_key(rt.storage_key)
        return rt

    # ------------------------------------------------------------------------------------------
    # reads
    # ------------------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.store.get(rt.storage_key, namespace if rt.namespaced else None, name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return self.external(rt, obj)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> tuple[list[Obj], str, str | None, int | None]:
        """(items, list resourceVersion, continue token, remainingItemCount)."""
        flt = ObjectFilter(namespace if rt.namespaced else None, label_selector, field_selector, rt.key)
        start_after: tuple[str, str] | None = None
        list_rv: int | None = None
        if continue_token:
            try:
                tok = json.loads(base64.urlsafe_b64decode(continue_token.encode() + b"=="))
                start_after = (tok["ns"], tok["name"])
                list_rv = int(tok["rv"]) if "rv" in tok else None
            except (ValueError, KeyError, TypeError):
                raise ApiError(400, "continue key is not valid: illegal base64 data", "BadRequest") from None
        scope = namespace if rt.namespaced else None
        if list_rv is None:
            items, rv = self.store.list(rt.storage_key, scope), str(self.store.rv)
        else:
            # every page of a list is the state at the first page's resourceVersion, and says so: a
            # client that watches from a paged list's resourceVersion (kubectl get --watch past 500
            # objects) then misses nothing written while it paged (issue #33). With the current
            # state and resourceVersion on later pages, kubectl saw pages disagree, watched "from
            # now" once it had printed them, and never saw an Event created and deleted meanwhile.
            items, rv = self.store.list_at(rt.storage_key, scope, list_rv), str(list_rv)
        if start_after is not None:
            items = [o for o in items if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > start_after]
        if flt.labels is not None or flt.fields is not None:
            items = [o for o in items if flt(o)]
        cont, remaining = None, None
        if limit and limit > 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            last = items[-1]["metadata"]
            cont = base64.urlsafe_b64encode(
                json.dumps({"ns": last.get("namespace") or "", "name": last["name"], "rv": rv}).encode()
            ).decode().rstrip("=")
        if rt.storage_key != rt.key or (items and items[0].get("apiVersion") != rt.api_version):
            items = [self.external(rt, o) for o in items]
        return items, rv, cont, remaining

    # ------------------------------------------------------------------------------------------
    # create
    # ------------------------------------------------------------------------------------------
    def check_body_kind(self, rt: ResourceType, body: Any, *, allow_empty: bool = False) -> Obj:
        if not isinstance(body, dict):
            raise bad_request(f"Object '{rt.kind}' is invalid: the request body must be a JSON object")
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version is not None and not isinstance(api_version, str) or kind is not None and not isinstance(
            kind, str
        ):
            raise bad_request("apiVersion and kind must be strings")
        if kind and kind != rt.kind:
            raise bad_request(f"the body of the request was for kind {kind!r}, expected {rt.kind!r}")
        if api_version and api_version != rt.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rt.api_version})"
            )
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = meta = {}
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        for field in ("labels", "annotations"):
            value = meta.get(field)
            if value is not None and (
                not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
            ):
                raise bad_request(f"metadata.{field} must be a map of strings")
        for field in ("name", "namespace", "generateName", "resourceVersion"):
            if meta.get(field) is not None and not isinstance(meta[field], str):
                raise bad_request(f"metadata.{field} must be a string")
        body["kind"] = rt.kind
        return body

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
    ) -> Obj:
        if rt.key in VIRTUAL:
            raise ApiError(405, "the server does not allow this method on the requested resource",
                           "MethodNotAllowed")
        obj = self.check_body_kind(rt, clone(body))
        fieldcheck.check_types(rt, obj)
        obj = self.internal(rt, obj)
        srt = self.storage_type(rt)
        meta = obj["metadata"]
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
            self._check_namespace_open(namespace)
        else:
            meta.pop("namespace", None)
            namespace = None
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(rt.kind, rt.group, "", [
                    ("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")])
            for _ in range(50):
                candidate = f"{prefix}{random_suffix()}"
                if self.store.get(srt.storage_key, namespace, candidate) is None:
                    break
            meta["name"] = candidate
        name = meta["name"]
        problem = name_problem(rt.kind, name)
        if problem:
            raise invalid(rt.kind, rt.group, name, [("FieldValueInvalid", f'Invalid value: "{name}": {problem}',
                                                     "metadata.name")])
        existing = self.store.get(srt.storage_key, namespace, name)
        if existing is not None:
            error = already_exists(rt.plural, rt.group, name)
            if existing["metadata"].get("deletionTimestamp"):
                # the name stays taken until the last finalizer is gone (the real server's wording)
                error.message = f"object is being deleted: {error.message}"
            raise error
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_iso()
        if rt.kind in GENERATION_KINDS or rt.crd is not None:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rt.kind in RESET_STATUS_KINDS or (rt.crd is not None and rt.has_status):
            obj.pop("status", None)
        _drop_empty_metadata(meta)
        self._prepare_create(rt, obj)
        if rt.crd is None:
            defaults.apply_defaults(rt.group, rt.version, rt.kind, obj)
            self._validate(rt, obj)
        self._admit_create(rt, obj, dry_run)
        if dry_run:
            return self.external(rt, obj)
        if rt.kind == "Service" and rt.group == "":
            self._commit_service_ips(obj)
        stored = self.store.put(srt.storage_key, obj)
        stored = self._after_create(rt, stored)
        return self.external(rt, stored)

    def _check_namespace_open(self, namespace: str) -> None:
        ns = self.store.get("namespaces", None, namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp") or (ns.get("status") or {}).get("phase") == "Terminating":
            raise ApiError(
                403,
                f"unable to create new content in namespace {namespace} because it is being terminated",
                "Forbidden",
                details={"name": namespace, "kind": "namespaces",
                         "causes": [{"reason": "NamespaceTerminating",
                                     "message": f"namespace {namespace} is being terminated",
                                     "field": "metadata.namespace"}]},
            )

    def _prepare_create(self, rt: ResourceType, obj: Obj) -> None:
        kind = rt.kind if rt.crd is None else ""
        if kind == "Namespace":
            obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
            obj["status"] = {"phase": "Active"}
            labels = obj["metadata"].setdefault("labels", {})
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif kind == "Pod":
            status = as_dict(obj.get("status"))
            obj["status"] = {"phase": "Pending", **{k: v for k, v in status.items() if k == "qosClass"}}
        elif kind == "Secret":
            self._normalize_secret(obj)
        elif kind == "Service":
            self._allocate_service_ips(obj, None)
        elif kind == "PersistentVolumeClaim":
            obj["status"] = {"phase": "Pending"}
        elif kind == "PersistentVolume":
            obj["status"] = {"phase": "Pending"}
        elif kind == "CustomResourceDefinition":
            self._validate_crd(obj)
        elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            self._validate_selector(rt, obj)

    def _validate(self, rt: ResourceType, obj: Obj) -> None:
        """The real server's field validation for the rules agents trip over most (422 Invalid)."""
        try:
            causes = object_causes(rt.kind, obj)
        except QuantityProblem as exc:
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {exc}') from None
        if causes:
            raise invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), causes)

    def _validate_selector(self, rt: ResourceType, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            raise invalid(rt.kind, rt.group, obj["metadata"]["name"], [
                ("FieldValueRequired", "Required value", "spec")])
        if rt.kind == "Job":
            return
        selector = spec.get("selector")
        name = obj["metadata"]["name"]
        if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            raise invalid(rt.kind, rt.group, name, [
                ("FieldValueRequired", "Required value", "spec.selector"),
                ("FieldValueInvalid", "Invalid value: \"null\": field is immutable", "spec.selector")][:1])
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for k, v in (selector.get("matchLabels") or {}).items():
            if template_labels.get(k) != v:
                labels = ",".join(f"{a}={b}" for a, b in sorted(template_labels.items()))
                raise invalid(rt.kind, rt.group, name, [(
                    "FieldValueInvalid",
                    f'Invalid value: map[string]string{{{labels}}}: `selector` does not match template `labels`',
                    "spec.template.metadata.labels")])

    def _normalize_secret(self, obj: Obj) -> None:
        data = obj.get("data") or {}
        if not isinstance(data, dict):
            raise bad_request("Secret.data must be a map of base64 strings")
        for key, value in data.items():
            try:
                base64.b64decode(value or "", validate=True)
            except (ValueError, TypeError):
                raise bad_request(
                    f"illegal base64 data in Secret.data[{key!r}]"
                ) from None
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
        if data:
            obj["data"] = data
        obj.setdefault("type", "Opaque")

    def _validate_crd(self, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        name = obj["metadata"]["name"]
        expected = f"{names.get('plural')}.{spec.get('group')}"
        causes = []
        if not spec.get("group"):
            causes.append(("FieldValueRequired", "Required value", "spec.group"))
        if not names.get("plural") or not names.get("kind"):
            causes.append(("FieldValueRequired", "Required value", "spec.names.plural"))
        for i, ver in enumerate(spec.get("versions") or []):
            if not isinstance(ver, dict) or not isinstance(ver.get("name"), str) or not ver["name"]:
                causes.append(("FieldValueRequired", "Required value", f"spec.versions[{i}].name"))
        if not isinstance(names, dict):
            names = {}
            causes.append(("FieldValueRequired", "Required value", "spec.names"))
        if not spec.get("versions"):
            causes.append(("FieldValueRequired", "Required value: must have exactly one version marked as "
                                                 "storage version", "spec.versions"))
        elif sum(1 for v in spec["versions"] if isinstance(v, dict) and v.get("storage")) != 1:
            causes.append(("FieldValueInvalid", "Invalid value: must have exactly one version marked as storage "
                                                "version", "spec.versions"))
        if not causes and name != expected:
            causes.append(("FieldValueInvalid", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                           "metadata.name"))
        if causes:
            raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, causes)
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
        spec.setdefault("scope", "Namespaced")

    # -- service IPs ----------------------------------------------------------------------------
    def _allocate_service_ips(self, obj: Obj, old: Obj | None) -> None:
        spec = obj.setdefault("spec", {})
        name = obj["metadata"]["name"]
        if old is not None:
            old_ip = (old.get("spec") or {}).get("clusterIP")
            wanted = spec.get("clusterIP")
            if wanted and wanted != old_ip:
                raise invalid("Service", "", name, [(
                    "FieldValueInvalid", f'Invalid value: "{wanted}": field is immutable', "spec.clusterIPs[0]")])
            if old_ip:
                spec["clusterIP"] = old_ip
                spec["clusterIPs"] = [old_ip]
        elif spec.get("type") == "ExternalName":
            spec.pop("clusterIP", None)
        else:
            wanted = spec.get("clusterIP") or ""
            if wanted == "None":
                spec["clusterIPs"] = ["None"]
            elif wanted:
                prefix = self.settings.service_cidr_prefix + "."
                if not wanted.startswith(prefix):
                    raise invalid("Service", "", name, [(
                        "FieldValueInvalid",
                        f'Invalid value: "{wanted}": failed to allocate IP {wanted}: the provided IP ({wanted}) '
                        f"is not in the valid range. The range of valid IPs is {prefix}0.0/16",
                        "spec.clusterIPs")])
                if wanted in self._service_ips:
                    raise invalid("Service", "", name, [(
                        "FieldValueInvalid",
                        f'Invalid value: []string{{"{wanted}"}}: failed to allocate IP {wanted}: provided IP is '
                        "already allocated", "spec.clusterIPs")])
                spec["clusterIPs"] = [wanted]
            else:
                ip = self._next_service_ip()
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            for port in spec.get("ports") or []:
                if isinstance(port, dict) and not port.get("nodePort"):
                    port["nodePort"] = self._next_node_port()

    def _next_service_ip(self) -> str:
        prefix = self.settings.service_cidr_prefix
        for n in range(1, 65534):
            ip = f"{prefix}.{n // 256}.{n % 256}"
            if n % 256 in (0, 255) or ip in self._service_ips:
                continue
            return ip
        raise ApiError(500, "failed to allocate a serviceIP: range is full", "InternalError")

    def _next_node_port(self) -> int:
        for port in range(30000, 32768):
            if port not in self._node_ports:
                self._node_ports.add(port)
                return port
        raise ApiError(422, "failed to allocate a nodePort: range is full", "Invalid")

    def _commit_service_ips(self, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        ip = spec.get("clusterIP")
        if ip and ip != "None":
            self._service_ips.add(ip)
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and port.get("nodePort"):
                self._node_ports.add(port["nodePort"])

    def _on_write(self, key: str, event_type: str, obj: Obj, old: Obj | None) -> None:
        """Keep derived state (service IPs, CRD registrations) in step with the store,
        including after a snapshot restore."""
        if key == "services":
            if old is not None:
                ip = (old.get("spec") or {}).get("clusterIP")
                self._service_ips.discard(ip)
                for port in (old.get("spec") or {}).get("ports") or []:
                    if isinstance(port, dict):
                        self._node_ports.discard(port.get("nodePort"))
            if event_type != "DELETED":
                self._commit_service_ips(obj)
        ns = (obj.get("metadata") or {}).get("namespace")
        if ns and key in QUOTA_COUNTED and (event_type == "DELETED" or key == "resourcequotas") \
                and self.store.count("resourcequotas", ns):
            self._schedule_quota_recount(ns)
        if key == "customresourcedefinitions.apiextensions.k8s.io":
            spec = obj.get("spec") or {}
            if event_type == "DELETED":
                self.registry.remove_crd_types(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            else:
                self.registry.set_crd_types(obj)

    # -- quota usage ----------------------------------------------------------------------------
    def _schedule_quota_recount(self, namespace: str) -> None:
        """Recount quota usage after the current write (as the real quota controller does)."""
        if namespace in self._quota_pending:
            return
        self._quota_pending.add(namespace)
        try:
            asyncio.get_running_loop().call_soon(self._recount_quotas, namespace)
        except RuntimeError:  # no loop (plain unit use): recount right away
            self._recount_quotas(namespace)

    def _recount_quotas(self, namespace: str) -> None:
        self._quota_pending.discard(namespace)
        ns_objects = {key: list(self.store.list(key, namespace)) for key in QUOTA_COUNTED}
        for quota in self.store.list("resourcequotas", namespace):
            # the quota "re-admitting" itself adds nothing and reports what is used now
            updated = admission.check_quota("resourcequotas", clone(quota), [clone(quota)], ns_objects)
            status = (updated or [{}])[0].get("status")
            current = self.store.get("resourcequotas", namespace, quota["metadata"]["name"])
            if current is not None and status and current.get("status") != status:
                new = dict(current, status=status)
                new["metadata"] = dict(current["metadata"])
                self.store.put("resourcequotas", new)

    # -- admission ------------------------------------------------------------------------------
    def namespace_labels(self, namespace: str | None) -> dict[str, str]:
        ns = self.store.get("namespaces", None, namespace) if namespace else None
        return dict(((ns or {}).get("metadata") or {}).get("labels") or {})

    def namespace_annotations(self, namespace: str | None) -> dict[str, str]:
        ns = self.store.get("namespaces", None, namespace) if namespace else None
        return dict(((ns or {}).get("metadata") or {}).get("annotations") or {})

    def enforce_pod_security(self, namespace: str, pod: Obj) -> None:
        """Pod Security admission's enforce mode (podsecurity.py): 403 for a violating pod."""
        message = podsecurity.enforce(self.namespace_labels(namespace), pod, self.namespace_annotations(namespace))
        if message:
            name = (pod.get("metadata") or {}).get("name", "")
            raise ApiError(403, message, "Forbidden", details={"name": name, "kind": "pods"})

    def _admit_create(self, rt: ResourceType, obj: Obj, dry_run: bool) -> None:
        if not rt.namespaced or rt.crd is not None:
            return
        if rt.key == "pods":
            self.enforce_pod_security(obj["metadata"]["namespace"], obj)
        try:
            self._admit(rt, obj, obj["metadata"]["namespace"], dry_run)
        except admission.AdmissionError as exc:
            raise ApiError(exc.code, exc.message, exc.reason) from exc

    def _admit(self, rt: ResourceType, obj: Obj, namespace: str, dry_run: bool) -> None:
        if rt.key == "pods":
            ranges = self.store.list("limitranges", namespace)
            if ranges:
                admission.apply_limit_ranges(obj, [clone(r) for r in ranges])
            # the ServiceAccount admission plugin: in-cluster clients find a token at the usual path
            account = obj.get("spec", {}).get("serviceAccountName") or "default"
            sa = self.store.get("serviceaccounts", namespace, account)
            if sa is not None:
                admission.mount_service_account_token(obj, service_account=clone(sa))
            elif account != "default":
                # ("default" is created with the namespace; a brand-new namespace may race it)
                raise admission.missing_service_account(obj, namespace, account)
            # the Priority plugin: spec.priority is what the scheduler and kubelet eviction read
            admission.apply_priority(obj, [clone(pc) for pc in self.store.list("priorityclasses.scheduling.k8s.io", None)])
        quotas = self.store.list("resourcequotas", namespace)
        if not quotas:
            return
        ns_objects = {
            key: list(self.store.list(key, namespace))
            for key in ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims",
                        "replicationcontrollers", "resourcequotas", rt.storage_key)
        }
        updated = admission.check_quota(rt.plural if not rt.group else rt.key, obj, [clone(q) for q in quotas],
                                        ns_objects)
        if dry_run:
            return
        for quota in updated or []:
            current = self.store.get("resourcequotas", namespace, quota["metadata"]["name"])
            if current is not None and current.get("status") != quota.get("status"):
                new = dict(current)
                new["status"] = quota.get("status")
                new["metadata"] = dict(current["metadata"])
                self.store.put("resourcequotas", new)

    def _after_create(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.key == "namespaces":
            ns = obj["metadata"]["name"]
            if self.store.get("serviceaccounts", ns, "default") is None:
                self.store.put("serviceaccounts", {
                    "apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": ns, "uid": str(uuid.uuid4()),
                                 "creationTimestamp": now_iso()},
                })
        elif rt.key == "customresourcedefinitions.apiextensions.k8s.io":
            # CRDs are served at once: report Established and NamesAccepted like the real server
            new = clone(obj)
            names = new["spec"]["names"]
            stamp = now_iso()
            new["status"] = {
                "acceptedNames": {k: names[k] for k in ("plural", "singular", "kind", "listKind", "shortNames",
                                                        "categories") if k in names},
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": stamp,
                     "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": stamp,
                     "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
                ],
                "storedVersions": [v["name"] for v in new["spec"]["versions"] if v.get("storage")],
            }
            return self.store.put(rt.storage_key, new)
        return obj

    # ------------------------------------------------------------------------------------------
    # update
    # ------------------------------------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        allow_create: bool = False,
    ) -> Obj:
        if rt.key in VIRTUAL:
            raise ApiError(405, "the server does not allow this method on the requested resource",
                           "MethodNotAllowed")
        if subresource == "scale":
            return self._update_scale(rt, namespace, name, body, dry_run=dry_run)
        obj = self.check_body_kind(rt, clone(body))
        if subresource in (None, ""):
            fieldcheck.check_types(rt, obj)
        elif subresource == "status":  # only the status is taken from the body: check only that
            fieldcheck.check_types(rt, {"status": obj.get("status")})
        obj = self.internal(rt, obj)
        srt = self.storage_type(rt)
        meta = obj["metadata"]
        ns = namespace if rt.namespaced else None
        if meta.get("name") and meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if rt.namespaced and meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["name"] = name
        old = self.store.get(srt.storage_key, ns, name)
        if old is None:
            if allow_create and subresource is None:
                meta.pop("resourceVersion", None)
                return self.create(rt, namespace, obj, dry_run=dry_run)
            raise not_found(rt.plural, rt.group, name)
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"].get("resourceVersion"):
            raise conflict(rt.plural, rt.group, name,
                           "the object has been modified; please apply your changes to the latest version and "
                           "try again")
        new = self._merge_for_update(rt, old, obj, subresource)
        _check_new_finalizers(rt, old, new)
        return self._commit_update(rt, srt, old, new, dry_run=dry_run)

    def _merge_for_update(self, rt: ResourceType, old: Obj, obj: Obj, subresource: str | None) -> Obj:
        old_meta = old["metadata"]
        if subresource == "status":
            new = dict(old)
            new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return new
        if subresource == "ephemeralcontainers":
            new = clone(old)
            new.setdefault("spec", {})["ephemeralContainers"] = (obj.get("spec") or {}).get("ephemeralContainers", [])
            self.enforce_pod_security(old_meta.get("namespace", ""), new)  # kubectl debug --profile=sysadmin
            return new
        if subresource == "finalize":
            new = dict(old)
            new["spec"] = dict(old.get("spec") or {}, finalizers=(obj.get("spec") or {}).get("finalizers") or [])
            new["metadata"] = dict(old_meta)
            return new
        if subresource not in (None, ""):
            raise server_not_found_sub(subresource)
        new = obj
        meta = new["metadata"]
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if rt.namespaced:
            meta["namespace"] = old_meta["namespace"]
        if rt.has_status or rt.kind in ("Pod", "Namespace", "Node"):
            # the status subresource owns status: a main-resource update keeps the stored one
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        return new

    def _commit_update(self, rt: ResourceType, srt: ResourceType, old: Obj, new: Obj, *, dry_run: bool) -> Obj:
        kind = rt.kind if rt.crd is None else ""
        name = old["metadata"]["name"]
        if kind == "Secret":
            self._normalize_secret(new)
        elif kind == "Service":
            self._allocate_service_ips(new, old)
        elif kind == "Namespace":
            new["status"] = old.get("status", {"phase": "Active"}) if "status" not in new else new["status"]
        if kind in ("ConfigMap", "Secret") and old.get("immutable"):
            if any(old.get(f) != new.get(f) for f in ("data", "binaryData", "stringData", "immutable")):
                raise invalid(rt.kind, rt.group, name, [(
                    "FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "data")])
        if kind == "Pod" and _spec_part(old) != _spec_part(new):
            self._check_pod_update(old, new)
        if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
            old_sel = (old.get("spec") or {}).get("selector")
            if (new.get("spec") or {}).get("selector") != old_sel:
                raise invalid(rt.kind, rt.group, name, [(
                    "FieldValueInvalid", f"Invalid value: {_go_labelselector(new)}: field is immutable",
                    "spec.selector")])
        if rt.crd is None:
            defaults.apply_defaults(rt.group, rt.version, rt.kind, new)
            if _spec_part(old) != _spec_part(new):
                self._validate(rt, new)
        meta = new["metadata"]
        _drop_empty_metadata(meta)
        if "generation" in meta and _spec_part(old) != _spec_part(new):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        # a no-op update does not bump the resourceVersion (real servers skip the write)
        if _same_except_rv(old, new):
            return self.external(rt, old)
        if dry_run:
            meta["resourceVersion"] = old["metadata"].get("resourceVersion")
            return self.external(rt, new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._waiting_graceful(rt, new):
            if kind != "Namespace" or not (new.get("spec") or {}).get("finalizers"):
                gone = self.store.remove(srt.storage_key, meta.get("namespace"), name)
                return self.external(rt, gone or new)
        stored = self.store.put(srt.storage_key, new)
        return self.external(rt, stored)

    def _waiting_graceful(self, rt: ResourceType, obj: Obj) -> bool:
        """A pod in graceful deletion stays until its kubelet deletes it with grace 0."""
        return rt.key == "pods" and int(obj["metadata"].get("deletionGracePeriodSeconds") or 0) > 0

    def _check_pod_update(self, old: Obj, new: Obj) -> None:
        def strip(spec: Obj) -> Obj:
            spec = clone(spec or {})
            for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                          "ephemeralContainers"):
                spec.pop(field, None)
            for list_name in ("containers", "initContainers"):
                for c in spec.get(list_name) or []:
                    if isinstance(c, dict):
                        c.pop("image", None)
            return spec

        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        # the scheduler's binding sets nodeName once
        if not old_spec.get("nodeName") and new_spec.get("nodeName"):
            old_spec = dict(old_spec, nodeName=new_spec["nodeName"])
        if strip(old_spec) != strip(new_spec):
            raise invalid("Pod", "", old["metadata"]["name"], [("FieldValueForbidden", f"Forbidden: {POD_MUTABLE_MSG}",
                                                                "spec")])

    # -- scale ----------------------------------------------------------------------------------
    def get_scale(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.get(rt, namespace, name)
        return self._scale_of(rt, obj)

    def _scale_paths(self, rt: ResourceType) -> tuple[str, str, str | None]:
        if rt.crd is not None:
            for ver in (rt.crd.get("spec") or {}).get("versions") or []:
                if ver.get("name") == rt.version:
                    sc = (ver.get("subresources") or {}).get("scale") or {}
                    return (sc.get("specReplicasPath", ".spec.replicas"),
                            sc.get("statusReplicasPath", ".status.replicas"), sc.get("labelSelectorPath"))
        return ".spec.replicas", ".status.replicas", None

    def _scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        spec_path, status_path, selector_path = self._scale_paths(rt)
        meta = obj["metadata"]
        selector = ""
        if selector_path:
            selector = _get_path(obj, selector_path) or ""
        else:
            sel = (obj.get("spec") or {}).get("selector")
            if isinstance(sel, dict):
                parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
                for expr in sel.get("matchExpressions") or []:
                    op = expr.get("operator")
                    if op in ("In", "NotIn"):
                        parts.append(f"{expr['key']} {op.lower()} ({','.join(sorted(expr.get('values') or []))})")
                    elif op == "Exists":
                        parts.append(expr["key"])
                    elif op == "DoesNotExist":
                        parts.append(f"!{expr['key']}")
                selector = ",".join(parts)
        scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                      if k in meta}
        status: Obj = {"replicas": int(_get_path(obj, status_path) or 0)}
        if selector:
            status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": int(_get_path(obj, spec_path) or 0)},
            "status": status,
        }

    def _update_scale(self, rt: ResourceType, namespace: str | None, name: str, body: Any, *,
                      dry_run: bool = False) -> Obj:
        if rt.subresource("scale") is None:
            raise server_not_found_sub("scale")
        if not isinstance(body, dict):
            raise bad_request("the request body must be a Scale object")
        old = self.store.get(rt.storage_key, namespace if rt.namespaced else None, name)
        if old is None:
            raise not_found(rt.plural, rt.group, name)
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name,
                           "the object has been modified; please apply your changes to the latest version and "
                           "try again")
        replicas = (body.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid("Scale", "autoscaling", name, [(
                "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                "spec.replicas")])
        new = clone(old)
        spec_path, _, _ = self._scale_paths(rt)
        _set_path(new, spec_path, replicas)
        updated = self._commit_update(rt, rt, old, new, dry_run=dry_run)
        return self._scale_of(rt, updated)

    # ------------------------------------------------------------------------------------------
    # patch
    # ------------------------------------------------------------------------------------------
    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        if rt.key in VIRTUAL:
            raise ApiError(405, "the server does not allow this method on the requested resource",
                           "MethodNotAllowed")
        ns = namespace if rt.namespaced else None
        stored = self.store.get(rt.storage_key, ns, name)
        if subresource == "scale":
            if stored is None:
                raise not_found(rt.plural, rt.group, name)
            current = self._scale_of(rt, stored)
            patched = _apply_patch(current, body, content_type, kind="Scale", group="autoscaling")
            return self._update_scale(rt, namespace, name, patched, dry_run=dry_run)
        if stored is None:
            if content_type == "application/apply-patch+yaml" and subresource is None:
                empty: Obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": name}}
                if rt.namespaced:
                    empty["metadata"]["namespace"] = namespace
                created = _apply_patch(empty, body, content_type, kind=rt.kind, group=rt.group)
                if isinstance(created, dict):
                    created.setdefault("metadata", {})["name"] = name
                return self.create(rt, namespace, created, dry_run=dry_run)
            raise not_found(rt.plural, rt.group, name)
        current = self.external(rt, stored)
        patched = _apply_patch(current, body, content_type, kind=rt.kind, group=rt.group)
        if not isinstance(patched, dict):
            raise bad_request("the patch did not produce an object")
        patched_meta = patched.get("metadata")
        if not isinstance(patched_meta, dict):
            raise bad_request("metadata must be an object")
        if patched_meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({patched_meta.get('name')}) does not match the name on the URL ({name})")
        # a patch only conflicts when it names a resourceVersion itself
        sent_rv = _patch_rv(body, content_type)
        patched_meta["resourceVersion"] = sent_rv or stored["metadata"]["resourceVersion"]
        if content_type == "application/apply-patch+yaml" and subresource is None:
            # server-side apply leaves status alone unless applied to the status subresource
            if "status" in stored:
                patched["status"] = stored["status"]
        patched.setdefault("apiVersion", rt.api_version)
        patched.setdefault("kind", rt.kind)
        return self.update(rt, namespace, name, patched, subresource=subresource, dry_run=dry_run)

    # ------------------------------------------------------------------------------------------
    # delete
    # ------------------------------------------------------------------------------------------
    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: Obj | None = None,
        *,
        dry_run: bool = False,
    ) -> Obj:
        if rt.key in VIRTUAL:
            raise ApiError(405, "the server does not allow this method on the requested resource",
                           "MethodNotAllowed")
        options = options or {}
        ns = namespace if rt.namespaced else None
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            raise not_found(rt.plural, rt.group, name)
        pre = options.get("preconditions") or {}
        if isinstance(pre, dict):
            if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
                raise conflict(rt.plural, rt.group, name,
                               f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                               f"{old['metadata'].get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"].get("resourceVersion"):
                raise conflict(rt.plural, rt.group, name,
                               f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                               f"ResourceVersion in object meta: {old['metadata'].get('resourceVersion')}")
        propagation = options.get("propagationPolicy") or ""
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise bad_request("gracePeriodSeconds must be an integer")
        if dry_run:
            return self.external(rt, old)
        meta = old["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if propagation == "Foreground" and "foregroundDeletion" not in finalizers and rt.key != "namespaces":
            finalizers.append("foregroundDeletion")
        elif propagation == "Orphan" and "orphan" not in finalizers and rt.key != "namespaces":
            finalizers.append("orphan")
        if rt.key == "namespaces":
            return self._delete_namespace(rt, old, finalizers)
        grace_seconds = 0
        if rt.key == "pods":
            grace_seconds = self._pod_grace(old, grace)
        if finalizers or grace_seconds > 0:
            if meta.get("deletionTimestamp"):
                current_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
                if grace_seconds >= current_grace and (finalizers == list(meta.get("finalizers") or [])):
                    return self.external(rt, old)
            new = dict(old)
            new["metadata"] = dict(meta, finalizers=finalizers) if finalizers else dict(meta)
            if not finalizers:
                new["metadata"].pop("finalizers", None)
            when = datetime.now(UTC) + timedelta(seconds=grace_seconds)
            new["metadata"]["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            new["metadata"]["deletionGracePeriodSeconds"] = grace_seconds
            if grace_seconds == 0 and not finalizers:
                gone = self.store.remove(rt.storage_key, ns, name)
                return self.external(rt, gone or new)
            return self.external(rt, self.store.put(rt.storage_key, new))
        gone = self.store.remove(rt.storage_key, ns, name)
        self._after_delete(rt, gone or old)
        return self.external(rt, gone or old)

    def _pod_grace(self, pod: Obj, requested: int | None) -> int:
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        # never-scheduled pods, terminal pods and pods whose node is gone disappear at once
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if self.store.get("nodes", None, spec["nodeName"]) is None:
            return 0
        if requested is not None:
            return max(0, requested)
        value = spec.get("terminationGracePeriodSeconds")
        return int(value) if isinstance(value, int) and value >= 0 else DEFAULT_GRACE

    # (`list` in this class's annotations below is the method ApiCore.list, hence builtins.list)
    def _delete_namespace(self, rt: ResourceType, old: Obj, finalizers: builtins.list[str]) -> Obj:
        name = old["metadata"]["name"]
        if name in ("default", "kube-system", "kube-public"):
            raise ApiError(403, f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                           "Forbidden", details={"name": name, "kind": "namespaces"})
        if old["metadata"].get("deletionTimestamp"):
            return self.external(rt, old)
        new = clone(old)
        new["metadata"]["deletionTimestamp"] = now_iso()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new["status"] = {"phase": "Terminating"}
        return self.external(rt, self.store.put(rt.storage_key, new))

    def _after_delete(self, rt: ResourceType, obj: Obj) -> None:
        if rt.key == "customresourcedefinitions.apiextensions.k8s.io":
            spec = obj.get("spec") or {}
            names = spec.get("names") or {}
            self.store.drop_key(f"{names.get('plural')}.{spec.get('group')}")

    def delete_collection(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                          field_selector: str | None = None, options: Obj | None = None,
                          dry_run: bool = False) -> builtins.list[Obj]:
        items, _, _, _ = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
        out = []
        for obj in list(items):
            meta = obj["metadata"]
            try:
                out.append(self.delete(rt, meta.get("namespace"), meta["name"], options, dry_run=dry_run))
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return out

    # ------------------------------------------------------------------------------------------
    # bootstrap
    # ------------------------------------------------------------------------------------------
    def _api_endpoints(self) -> None:
        """Point the ``kubernetes`` Service at this API server (the real one reconciles these too)."""
        ep, eps = _kubernetes_endpoints(self.settings.api_host, int(self.settings.api_port or 6443))
        for key, obj in (("endpoints", ep), ("endpointslices.discovery.k8s.io", eps)):
            rt = self.registry.by_key(key)
            current = self.store.get(key, "default", "kubernetes")
            if current is None:
                self.create(rt, "default", obj)
            else:
                self.update(rt, "default", "kubernetes", dict(obj, metadata=dict(current["metadata"])))

    def bootstrap(self) -> None:
        """The objects every fresh cluster has."""
        from .rbac import bootstrap_rbac

        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            if self.store.get("namespaces", None, ns) is None:
                self.create(self.registry.by_key("namespaces"), None,
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if self.store.get("services", "default", "kubernetes") is None:
            ip = f"{self.settings.service_cidr_prefix}.0.1"
            self.create(self.registry.by_key("services"), "default", {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"clusterIP": ip, "type": "ClusterIP", "sessionAffinity": "None",
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                    "targetPort": int(self.settings.api_port or 6443)}]},
            })
        self._api_endpoints()
        for name, value in (("system-cluster-critical", 2000000000), ("system-node-critical", 2000001000)):
            if self.store.get("priorityclasses.scheduling.k8s.io", None, name) is None:
                self.create(self.registry.by_key("priorityclasses.scheduling.k8s.io"), None, {
                    "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                    "value": value, "globalDefault": False,
                    "description": "Used for system critical pods that must not be moved from their current node.",
                    "preemptionPolicy": "PreemptLowerPriority",
                })
        if self.store.get("storageclasses.storage.k8s.io", None, "standard") is None:
            self.create(self.registry.by_key("storageclasses.storage.k8s.io"), None, {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "standard",
                             "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "sregym.io/local-path", "reclaimPolicy": "Delete",
                "volumeBindingMode": "WaitForFirstConsumer",
            })
        if self.store.get("storageclasses.storage.k8s.io", None, "standard-rwo") is None:
            # network disks: reachable from every node, attached to one node at a time
            self.create(self.registry.by_key("storageclasses.storage.k8s.io"), None, {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard-rwo"},
                "provisioner": "sregym.io/network-disk", "reclaimPolicy": "Delete",
                "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True,
            })
        bootstrap_rbac(self)


def _kubernetes_endpoints(host: str, port: int) -> tuple[Obj, Obj]:
    """The Endpoints and EndpointSlice of the ``kubernetes`` Service: the API server itself."""
    ep = {"apiVersion": "v1", "kind": "Endpoints",
          "metadata": {"name": "kubernetes", "namespace": "default",
                       "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
          "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
    eps = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "kubernetes", "namespace": "default",
                        # no managed-by label: the EndpointSlice controller must not adopt (and delete) it
                        "labels": {"kubernetes.io/service-name": "kubernetes"}},
           "addressType": "IPv4",
           "endpoints": [{"addresses": [host], "conditions": {"ready": True, "serving": True, "terminating": False}}],
           "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
    return ep, eps


def server_not_found_sub(sub: str) -> ApiError:
    return ApiError(404, "the server could not find the requested resource", "NotFound", details={})


def _get_path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value


def _same_except_rv(a: Obj, b: Obj) -> bool:
    if {k: v for k, v in a.items() if k != "metadata"} != {k: v for k, v in b.items() if k != "metadata"}:
        return False
    ma, mb = a.get("metadata", {}), b.get("metadata", {})
    keys = (set(ma) | set(mb)) - {"resourceVersion", "managedFields"}
    return all(ma.get(k) == mb.get(k) for k in keys)


def _patch_rv(body: bytes, content_type: str) -> str | None:
    if content_type == "application/json-patch+json":
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict):
        rv = (data.get("metadata") or {}).get("resourceVersion") if isinstance(data.get("metadata"), dict) else None
        return rv if isinstance(rv, str) and rv else None
    return None


def _go_labelselector(obj: Obj) -> str:
    sel = (obj.get("spec") or {}).get("selector") or {}
    labels = ", ".join(f'"{k}":"{v}"' for k, v in sorted((sel.get("matchLabels") or {}).items()))
    return f"v1.LabelSelector{{MatchLabels:map[string]string{{{labels}}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}"


# -- events.k8s.io/v1 <-> core/v1 Event ---------------------------------------------------------------
def core_event_to_events_v1(ev: Obj) -> Obj:
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": ev.get("metadata", {})}
    mapping = {"involvedObject": "regarding", "message": "note", "reportingComponent": "reportingController",
               "reportingInstance": "reportingInstance", "reason": "reason", "type": "type",
               "action": "action", "related": "related", "eventTime": "eventTime"}
    for src, dst in mapping.items():
        if ev.get(src) not in (None, ""):
            out[dst] = ev[src]
    if ev.get("series"):
        out["series"] = ev["series"]
    if ev.get("source"):
        out["deprecatedSource"] = ev["source"]
    if ev.get("firstTimestamp"):
        out["deprecatedFirstTimestamp"] = ev["firstTimestamp"]
    if ev.get("lastTimestamp"):
        out["deprecatedLastTimestamp"] = ev["lastTimestamp"]
    if ev.get("count"):
        out["deprecatedCount"] = ev["count"]
    if "eventTime" not in out:
        out["eventTime"] = None
    return out


def events_v1_to_core_event(ev: Obj) -> Obj:
    out: Obj = {"apiVersion": "v1", "kind": "Event", "metadata": ev.get("metadata", {})}
    mapping = {"regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
               "reportingInstance": "reportingInstance", "reason": "reason", "type": "type", "action": "action",
               "related": "related", "eventTime": "eventTime", "series": "series"}
    for src, dst in mapping.items():
        if ev.get(src) not in (None, ""):
            out[dst] = ev[src]
    if ev.get("deprecatedSource"):
        out["source"] = ev["deprecatedSource"]
    if ev.get("deprecatedFirstTimestamp"):
        out["firstTimestamp"] = ev["deprecatedFirstTimestamp"]
    if ev.get("deprecatedLastTimestamp"):
        out["lastTimestamp"] = ev["deprecatedLastTimestamp"]
    if ev.get("deprecatedCount"):
        out["count"] = ev["deprecatedCount"]
    out.setdefault("involvedObject", {})
    return out


def _apply_patch(obj: Obj, body: bytes, content_type: str, *, kind: str, group: str) -> Obj:
    """A PATCH body applied to ``obj``; a patch the server refuses is its Kubernetes ``Status``."""
    try:
        return patching.apply_patch(obj, body, content_type, kind=kind, group=group)
    except patching.PatchError as exc:
        raise ApiError(exc.code, exc.message, exc.reason or None) from exc
