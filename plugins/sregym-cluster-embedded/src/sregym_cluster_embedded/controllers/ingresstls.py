"""The ingress controller reads exactly the TLS Secrets that Ingresses name, nothing else.

ingress-nginx's chart lets its ServiceAccount read every Secret of the cluster. Here that token
would be a key to everything (the hidden namespaces' Secrets, the grader's CA key) for anyone who
gets hold of it, so the addon's ClusterRole holds no Secret rights at all (``ingress.addon``) and
this controller keeps, in each namespace whose Ingresses name TLS Secrets, a Role ``ingress-nginx-tls``
granting ``get`` on those Secrets by name (``resourceNames``) and a RoleBinding of it to the
controller's ServiceAccount. A namespace without such Ingresses has neither; a Role or binding
deleted or edited by someone else is put back.
"""

from __future__ import annotations

import os

from ..ingress.addon import NAMESPACE as INGRESS_NAMESPACE
from .base import Controller, Key
from .util import Obj, is_deleting

NAME = "ingress-nginx-tls"
SERVICE_ACCOUNT = "ingress-nginx"
RBAC = "rbac.authorization.k8s.io"
LABELS = {"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "tls-access"}


def tls_secret_names(ingresses: list[Obj]) -> list[str]:
    """The Secrets the live Ingresses of one namespace name under ``spec.tls``."""
    names = {tls.get("secretName") for ing in ingresses if not is_deleting(ing)
             for tls in (ing.get("spec") or {}).get("tls") or [] if isinstance(tls, dict)}
    return sorted(n for n in names if isinstance(n, str) and n)


def wanted_role(namespace: str, names: list[str]) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": names}]}


def wanted_binding(namespace: str) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": INGRESS_NAMESPACE}]}


def _essence(ref: object) -> tuple:
    """What a roleRef or subject names (the API server defaults ``apiGroup``, so that is left out)."""
    ref = ref if isinstance(ref, dict) else {}
    return ref.get("kind"), ref.get("name"), ref.get("namespace")


class IngressTlsAccessController(Controller):
    name = "ingresstls"
    component = "controllermanager"

    def setup(self) -> None:
        self.enabled = os.environ.get("SREGYM_EMBEDDED_INGRESS", "1") != "0"
        by_namespace = lambda _e, obj, _o: self.enqueue((obj["metadata"].get("namespace", ""), ""))  # noqa: E731

        def ours(_e: str, obj: Obj, _o: Obj | None) -> None:
            if obj["metadata"].get("name") == NAME:
                by_namespace(_e, obj, _o)

        self.ingresses = self.watch("ingresses.networking.k8s.io", by_namespace)
        self.roles = self.watch(f"roles.{RBAC}", ours)
        self.bindings = self.watch(f"rolebindings.{RBAC}", ours)

    async def reconcile(self, key: Key) -> None:
        namespace = key[0]
        if not self.enabled or not namespace:
            return
        names = tls_secret_names(self.ingresses.list(namespace))
        role, binding = self.roles.get(namespace, NAME), self.bindings.get(namespace, NAME)
        if not names:
            for resource, current in ((f"rolebindings.{RBAC}", binding), (f"roles.{RBAC}", role)):
                if current is not None and (current["metadata"].get("labels") or {}) == LABELS:
                    await self.client.delete(resource, NAME, namespace)
            return
        want = wanted_role(namespace, names)
        if role is None:
            await self.client.create(f"roles.{RBAC}", want, namespace)
        elif role.get("rules") != want["rules"]:
            await self.client.patch(f"roles.{RBAC}", NAME, {"rules": want["rules"]}, namespace)
        want_binding = wanted_binding(namespace)
        if binding is not None and (_essence(binding.get("roleRef")) != _essence(want_binding["roleRef"])
                                    or [_essence(s) for s in binding.get("subjects") or []]
                                    != [_essence(s) for s in want_binding["subjects"]]):
            await self.client.delete(f"rolebindings.{RBAC}", NAME, namespace)  # roleRef is immutable
            binding = None
        if binding is None:
            await self.client.create(f"rolebindings.{RBAC}", want_binding, namespace)
