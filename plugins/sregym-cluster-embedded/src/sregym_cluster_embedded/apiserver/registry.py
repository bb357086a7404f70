"""The resource registry: every kind the server serves, with discovery metadata.

A :class:`ResourceType` is one (group, version, plural). Built-in kinds come from the table below;
custom resources are added and removed as CustomResourceDefinitions come and go.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from .errors import ApiError

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list")
CREATE_ONLY = ("create",)


@attrs.frozen(kw_only=True)
class Subresource:
    name: str
    kind: str
    group: str = ""
    version: str = ""
    verbs: tuple[str, ...] = ("get", "patch", "update")


@attrs.frozen(kw_only=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    #: where objects are stored; resources served in two groups (events) share one storage key
    storage: str = ""
    #: the CRD this type comes from (None for built-ins)
    crd: dict[str, Any] | None = attrs.field(default=None, eq=False, hash=False)

    @property
    def key(self) -> str:
        """The contract's resource name: ``pods`` or ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_key(self) -> str:
        return self.storage or self.key

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    @property
    def has_status(self) -> bool:
        return self.subresource("status") is not None


def _status() -> Subresource:
    return Subresource(name="status", kind="")


def _scale() -> Subresource:
    return Subresource(name="scale", kind="Scale", group="autoscaling", version="v1")


def _rt(group: str, version: str, kind: str, plural: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    subs = tuple(kw.pop("subs", ()))
    return ResourceType(
        group=group, version=version, kind=kind, plural=plural, namespaced=namespaced, subresources=subs, **kw
    )


def _builtin_types() -> list[ResourceType]:
    st, sc = _status(), _scale()
    pod_subs = (
        Subresource(name="attach", kind="PodAttachOptions", verbs=("create", "get")),
        Subresource(name="binding", kind="Binding", verbs=("create",)),
        Subresource(name="ephemeralcontainers", kind="Pod"),
        Subresource(name="eviction", kind="Eviction", group="policy", version="v1", verbs=("create",)),
        Subresource(name="exec", kind="PodExecOptions", verbs=("create", "get")),
        Subresource(name="log", kind="Pod", verbs=("get",)),
        Subresource(name="portforward", kind="PodPortForwardOptions", verbs=("create", "get")),
        Subresource(name="proxy", kind="PodProxyOptions", verbs=("create", "delete", "get", "patch", "update")),
        Subresource(name="resize", kind="Pod"),
        st,
    )
    all_ = ("all",)
    review = ("create",)
    return [
        # core/v1
        _rt("", "v1", "Namespace", "namespaces", False, short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            subs=(Subresource(name="finalize", kind="Namespace", verbs=("update",)), st)),
        _rt("", "v1", "Node", "nodes", False, short_names=("no",),
            subs=(Subresource(name="proxy", kind="NodeProxyOptions", verbs=("create", "delete", "get")), st)),
        _rt("", "v1", "Pod", "pods", short_names=("po",), categories=all_, subs=pod_subs),
        _rt("", "v1", "Service", "services", short_names=("svc",), categories=all_,
            verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
            subs=(Subresource(name="proxy", kind="ServiceProxyOptions", verbs=("create", "delete", "get")), st)),
        _rt("", "v1", "Endpoints", "endpoints", short_names=("ep",), singular="endpoints"),
        _rt("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
        _rt("", "v1", "Secret", "secrets"),
        _rt("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",),
            subs=(Subresource(name="token", kind="TokenRequest", group="authentication.k8s.io",
                              version="v1", verbs=("create",)),)),
        _rt("", "v1", "Event", "events", short_names=("ev",)),
        _rt("", "v1", "PersistentVolume", "persistentvolumes", False, short_names=("pv",), subs=(st,)),
        _rt("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short_names=("pvc",), subs=(st,)),
        _rt("", "v1", "ResourceQuota", "resourcequotas", short_names=("quota",), subs=(st,)),
        _rt("", "v1", "LimitRange", "limitranges", short_names=("limits",)),
        _rt("", "v1", "ReplicationController", "replicationcontrollers", short_names=("rc",),
            categories=all_, subs=(sc, st)),
        _rt("", "v1", "PodTemplate", "podtemplates"),
        _rt("", "v1", "Binding", "bindings", verbs=CREATE_ONLY),
        _rt("", "v1", "ComponentStatus", "componentstatuses", False, short_names=("cs",), verbs=READ_VERBS),
        # apps/v1
        _rt("apps", "v1", "Deployment", "deployments", short_names=("deploy",), categories=all_, subs=(sc, st)),
        _rt("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",), categories=all_, subs=(sc, st)),
        _rt("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",), categories=all_, subs=(sc, st)),
        _rt("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",), categories=all_, subs=(st,)),
        _rt("apps", "v1", "ControllerRevision", "controllerrevisions"),
        # batch/v1
        _rt("batch", "v1", "Job", "jobs", categories=all_, subs=(st,)),
        _rt("batch", "v1", "CronJob", "cronjobs", short_names=("cj",), categories=all_, subs=(st,)),
        # autoscaling/v2
        _rt("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short_names=("hpa",),
            categories=all_, subs=(st,)),
        # networking, policy, scheduling, coordination, discovery, storage
        _rt("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short_names=("netpol",)),
        _rt("networking.k8s.io", "v1", "Ingress", "ingresses", short_names=("ing",), subs=(st,)),
        _rt("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
        _rt("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short_names=("pdb",), subs=(st,)),
        _rt("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)),
        _rt("coordination.k8s.io", "v1", "Lease", "leases"),
        _rt("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
        _rt("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",)),
        _rt("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", False, subs=(st,)),
        _rt("events.k8s.io", "v1", "Event", "events", short_names=("ev",), storage="events"),
        # rbac
        _rt("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        _rt("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        _rt("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
        _rt("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
        # extension points
        _rt("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
            short_names=("crd", "crds"), subs=(st,)),
        _rt("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations", False),
        _rt("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations", False),
        # reviews (create-only, never stored)
        _rt("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
            verbs=review),
        _rt("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
            verbs=review),
        _rt("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, verbs=review),
        _rt("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
            verbs=review),
        _rt("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=review),
        _rt("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=review),
        # metrics (computed, never stored)
        _rt("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", verbs=READ_VERBS),
        _rt("metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", False, verbs=READ_VERBS),
    ]


#: resources whose objects are computed or are one-shot reviews: never stored
VIRTUAL = {
    "bindings",
    "componentstatuses",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "subjectaccessreviews.authorization.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectreviews.authentication.k8s.io",
    "tokenreviews.authentication.k8s.io",
    "pods.metrics.k8s.io",
    "nodes.metrics.k8s.io",
}

#: the order groups appear in discovery (as a real server orders them)
GROUP_ORDER = [
    "", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
    "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io",
    "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "flowcontrol.apiserver.k8s.io",
    "metrics.k8s.io",
]


class Registry:
    """Lookup of resource types by path, key, kind and short name."""

    def __init__(self) -> None:
        self._types: list[ResourceType] = []
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_key: dict[str, ResourceType] = {}
        for rt in _builtin_types():
            self.add(rt)
        self.generation = 0  # bumped on every change, so discovery caches can be invalidated

    # -- mutation -------------------------------------------------------------------------------
    def add(self, rt: ResourceType) -> None:
        self.remove(rt.group, rt.version, rt.plural)
        self._types.append(rt)
        self._by_path[(rt.group, rt.version, rt.plural)] = rt
        # the first (preferred) version wins the contract key
        self._by_key.setdefault(rt.key, rt)
        self.generation = getattr(self, "generation", 0) + 1

    def remove(self, group: str, version: str, plural: str) -> None:
        rt = self._by_path.pop((group, version, plural), None)
        if rt is None:
            return
        self._types.remove(rt)
        if self._by_key.get(rt.key) is rt:
            del self._by_key[rt.key]
            for other in self._types:
                if other.key == rt.key:
                    self._by_key[rt.key] = other
                    break
        self.generation += 1

    def set_crd_types(self, crd: dict[str, Any]) -> list[ResourceType]:
        """(Re)register the resource types a CRD defines; returns them."""
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        names = spec.get("names") or {}
        plural = names.get("plural", "")
        for rt in [t for t in self._types if t.crd is not None and t.group == group and t.plural == plural]:
            self.remove(rt.group, rt.version, rt.plural)
        added = []
        versions = sorted(spec.get("versions") or [], key=lambda v: not v.get("storage", False))
        for ver in versions:
            if not ver.get("served", True):
                continue
            subs_spec = ver.get("subresources") or {}
            subs = []
            if "status" in subs_spec:
                subs.append(_status())
            if "scale" in subs_spec:
                subs.append(_scale())
            rt = ResourceType(
                group=group, version=ver["name"], kind=names.get("kind", ""), plural=plural,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular", "") or names.get("kind", "").lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=tuple(subs), storage=f"{plural}.{group}", crd=crd,
            )
            self.add(rt)
            added.append(rt)
        return added

    def remove_crd_types(self, group: str, plural: str) -> None:
        for rt in [t for t in self._types if t.crd is not None and t.group == group and t.plural == plural]:
            self.remove(rt.group, rt.version, rt.plural)

    # -- lookup ---------------------------------------------------------------------------------
    def types(self) -> list[ResourceType]:
        return list(self._types)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_key(self, key: str) -> ResourceType:
        rt = self._by_key.get(key)
        if rt is None:
            # accept "plural.version.group" and kind-ish spellings used by callers
            raise ApiError(404, f'the server doesn\'t have a resource type "{key}"', "NotFound")
        return rt

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._types:
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def group_versions(self) -> dict[str, list[str]]:
        """Group name -> served versions, preferred first, in discovery order."""
        out: dict[str, list[str]] = {}
        for rt in self._types:
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._types if rt.group == group and rt.version == version]

    def storage_types(self) -> Iterable[ResourceType]:
        seen = set()
        for rt in self._types:
            if rt.key in VIRTUAL or rt.storage_key in seen:
                continue
            seen.add(rt.storage_key)
            yield rt
