"""Namespace lifecycle: default objects in every namespace, and deletion of a namespace's contents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Controller, Key
from .util import Obj, is_deleting, name_of
from .writes import api_error_code

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ROOT_CA = "kube-root-ca.crt"
# what a namespace holds, deleted roughly in dependency order when the API server cannot tell us more
FALLBACK_RESOURCES = (
    "deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps", "cronjobs.batch", "jobs.batch",
    "horizontalpodautoscalers.autoscaling", "poddisruptionbudgets.policy", "pods", "services", "endpoints",
    "endpointslices.discovery.k8s.io", "persistentvolumeclaims", "configmaps", "secrets", "serviceaccounts",
    "networkpolicies.networking.k8s.io", "ingresses.networking.k8s.io", "resourcequotas", "limitranges",
    "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io", "leases.coordination.k8s.io",
    "controllerrevisions.apps", "events",
)


def namespaced_resources(client: Any) -> list[str]:
    """Every namespaced, deletable resource the API serves (custom resources included)."""
    registry = getattr(getattr(client, "core", None), "registry", None)
    if registry is None:
        return list(FALLBACK_RESOURCES)
    out = []
    for rt in registry.storage_types():
        if not rt.namespaced or "delete" not in (getattr(rt, "verbs", None) or ("delete",)):
            continue
        out.append(rt.key)
    order = {r: i for i, r in enumerate(FALLBACK_RESOURCES)}
    return sorted(out, key=lambda r: order.get(r, len(order) - 1))


def root_ca(settings: Any) -> str:
    state_dir = getattr(settings, "state_dir", None)
    for candidate in (Path(state_dir) / "ca.crt", Path(state_dir) / "pki" / "ca.crt", Path(state_dir) / "tls" / "ca.crt") \
            if state_dir else ():
        try:
            return candidate.read_text()
        except OSError:
            continue
    return ""


class NamespaceController(Controller):
    name = "namespace"
    component = "namespace-controller"

    def setup(self) -> None:
        self.namespaces = self.watch("namespaces", lambda _e, ns, _o: self.enqueue(("", name_of(ns))))
        self.configmaps = self.watch("configmaps", lambda _e, cm, _o: self._cm(cm))
        self.accounts = self.watch("serviceaccounts", lambda _e, sa, _o: self._cm(sa))

    def _cm(self, obj: Obj) -> None:
        if name_of(obj) in (ROOT_CA, "default"):
            self.enqueue(("", obj["metadata"].get("namespace", "")))

    async def reconcile(self, key: Key) -> None:
        name = key[1]
        ns = self.namespaces.get(None, name)
        if ns is None:
            if name in DEFAULT_NAMESPACES:
                await self._create("namespaces", {"metadata": {"name": name}}, None)
            return
        if is_deleting(ns) or (ns.get("status") or {}).get("phase") == "Terminating":
            await self._terminate(ns)
            return
        if self.accounts.get(name, "default") is None:
            await self._create("serviceaccounts", {"metadata": {"name": "default"}}, name)
        if self.configmaps.get(name, ROOT_CA) is None:
            cm = {"metadata": {"name": ROOT_CA, "annotations": {
                "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver "
                                             "when using internal endpoints such as the internal service IP or "
                                             "kubernetes.default.svc. No other usage is guaranteed across "
                                             "distributions of Kubernetes clusters."}},
                  "data": {"ca.crt": root_ca(self.ctx.settings)}}
            await self._create("configmaps", cm, name)

    async def _create(self, resource: str, obj: Obj, namespace: str | None) -> None:
        try:
            created = await self.client.create(resource, obj, namespace)
        except Exception as exc:
            if api_error_code(exc) not in (409, 403, 404):  # exists, or the namespace is going away
                raise
            return
        inf = self.ctx.informers.get(resource)
        if inf:
            inf.upsert(created)

    async def _terminate(self, ns: Obj) -> None:
        name = name_of(ns)
        remaining = 0
        for resource in namespaced_resources(self.client):
            try:
                items = await self.client.list(resource, name)
            except Exception:
                continue
            for item in items:
                remaining += 1
                if is_deleting(item):
                    continue
                try:
                    await self.client.delete(resource, name_of(item), name, propagation="Background")
                except Exception as exc:
                    if api_error_code(exc) != 404:
                        raise
        if remaining:
            self.enqueue(("", name), 0.5)  # graceful pod deletions and finalizers take a moment
            return
        finalizers = [f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]
        body = dict(ns, spec=dict(ns.get("spec") or {}, finalizers=finalizers))
        try:
            await self.client.update("namespaces", body, subresource="finalize")
        except Exception as exc:
            if api_error_code(exc) != 404:
                raise
