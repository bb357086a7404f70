"""Extra agent rights a problem declares (``agent_access``), for fixes that lie in the cluster itself.

Some faults live outside the app's namespace: a webhook configuration's caBundle, the Corefile in
``kube-system/coredns``. A problem names the objects its fix touches; for one attempt the agent's
identity gets exactly those verbs on exactly those objects (RBAC ``resourceNames``), and loses them
when the attempt ends (:func:`revoke_grants`, also called by the stale-identity sweep).

RBAC cannot limit *what* in an object changes, and a webhook configuration or the cluster DNS
is a powerful lever (point a webhook at your own server for the hidden namespaces' objects,
rewrite the workload generator's names to a stub). So each grant also names the fields that may
change (``may_change``), and :class:`GrantGuard` watches the granted objects while the agent works:
any other change is undone at once and recorded, and a recorded violation fails the mitigation.
``remove-lines`` lets a text field (the Corefile) only lose lines, never gain one.

Works through the Kubernetes API alone, so it is the same on the embedded cluster and on a real one.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import attrs
import structlog

from ..clusters import is_hidden_namespace
from ..grant_rules import (  # noqa: F401  (what a problem file may grant lives in the contract; kept importable here)
    ADMISSION,
    BENCHMARK_NAMESPACE,
    GRANTABLE,
    GRANTS_CONFIGMAP,
    VERBS,
    _SERVER_FIELDS,
    check_grant,
    collection_path,
    grants_configmap,
    object_path,
    resolve,
    violations,
)
from ..types import AgentGrant
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

GRANT_LABEL = "sregym.io/agent-grant"


def _role_name(account: str, index: int) -> str:
    return f"{account}-grant-{index}"


def grant_extra(kube: Kube, account: str, grants: tuple[AgentGrant, ...] | list[AgentGrant],
                app_namespace: str, *, held: tuple[AgentGrant, ...] | list[AgentGrant] = ()) -> None:
    """Give ``account`` (a ServiceAccount in the benchmark namespace) the problem's extra rights, and the
    ``held`` ones every attempt holds alike (skipped where their namespace is not on this cluster)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": BENCHMARK_NAMESPACE}]
    optional = len(grants)
    for index, grant in enumerate([*grants, *held]):
        grant = resolve(grant, app_namespace)
        problem = check_grant(grant)
        if problem:
            raise ValueError(problem)
        if grant.namespace:
            try:
                namespace = kube.get(f"/api/v1/namespaces/{grant.namespace}")
            except ApiStatusError as exc:
                if exc.code == 404 and index >= optional:
                    continue
                raise
            labels = (namespace.get("metadata") or {}).get("labels") or {}
            if is_hidden_namespace(labels):
                raise ValueError(f"namespace {grant.namespace} is hidden from the agent and is never granted")
        name = _role_name(account, index)
        meta = {"name": name, "labels": {GRANT_LABEL: account}}
        rule = {"apiGroups": [grant.group], "resources": [grant.resource], "resourceNames": [grant.name],
                "verbs": list(grant.verbs)}
        # a ClusterRole holds the rule either way; a RoleBinding confines a namespaced one to its namespace
        _replace(kube, f"{rbac}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                "metadata": meta, "rules": [rule]})
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "subjects": subject, "metadata": meta,
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}}
        if grant.namespace:
            _replace(kube, f"{rbac}/namespaces/{grant.namespace}/rolebindings", {**binding, "kind": "RoleBinding"})
        else:
            _replace(kube, f"{rbac}/clusterrolebindings", {**binding, "kind": "ClusterRoleBinding"})


def revoke_grants(kube: Kube, account: str) -> None:
    """Remove every extra right of ``account`` (found by label, so a crashed attempt's go too)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    selector = f"{GRANT_LABEL}={account}"
    paths = [f"{rbac}/clusterrolebindings/{b['metadata']['name']}"
             for b in kube.list_items(f"{rbac}/clusterrolebindings", "ClusterRoleBinding", labelSelector=selector)]
    paths += [f"{rbac}/namespaces/{b['metadata']['namespace']}/rolebindings/{b['metadata']['name']}"
              for b in kube.list_items(f"{rbac}/rolebindings", "RoleBinding", labelSelector=selector)]
    paths += [f"{rbac}/clusterroles/{r['metadata']['name']}"
              for r in kube.list_items(f"{rbac}/clusterroles", "ClusterRole", labelSelector=selector)]
    for path in paths:
        kube.delete(path)


def _replace(kube: Kube, collection: str, obj: dict) -> None:
    try:
        kube.request("POST", collection, body=obj)
    except ApiStatusError as exc:
        if exc.code != 409:
            raise
        current = kube.get(f"{collection}/{obj['metadata']['name']}")
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        kube.request("PUT", f"{collection}/{obj['metadata']['name']}", body=obj)


class GrantGuard:
    """Watches the granted objects while the agent works; undoes and records changes beyond the grant."""

    def __init__(self, kube: Kube | None, grants: tuple[AgentGrant, ...] | list[AgentGrant], app_namespace: str, *,
                 held: tuple[AgentGrant, ...] | list[AgentGrant] = (), interval: float = 0.5) -> None:
        self._kube = kube  # None for a problem that grants nothing: such a guard never reads the cluster
        #: what the agent may change for its fix, then what it holds only so that every attempt holds the
        #: same rights (see grant_rules.uniform_grants): a change of those may be made, fails the mitigation
        #: while it stands and is undone when the attempt ends
        self.grants = [resolve(g, app_namespace) for g in grants] + [resolve(g, app_namespace) for g in held]
        self._first_held = len(self.grants) - len(held)
        self.interval = interval
        self.snapshots: list[dict | None] = []
        self.recorded: list[dict[str, Any]] = []
        self._task: asyncio.Task | None = None

    @property
    def kube(self) -> Kube:
        if self._kube is None:
            raise RuntimeError("this GrantGuard has no grants and no cluster client to check them with")
        return self._kube

    def _read(self, grant: AgentGrant) -> dict | None:
        return self.kube.find(object_path(grant))

    async def start(self) -> None:
        """Snapshot the granted objects (as the fault left them) and start watching."""
        if not self.grants:
            return
        await asyncio.to_thread(self.snapshot)
        await asyncio.to_thread(self.publish, True)
        self._task = asyncio.create_task(self._watch())

    def publish(self, active: bool) -> None:
        """Leave the grants where a cluster that checks them at admission reads them (the embedded
        API server refuses a write beyond them before it is stored), or take them away."""
        ns, name = GRANTS_CONFIGMAP
        try:
            if active:
                _replace(self.kube, f"/api/v1/namespaces/{ns}/configmaps", grants_configmap(self.grants))
            else:
                self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/{name}")
        except ApiStatusError as exc:  # the guard below still undoes and records what passes
            if not (exc.code == 404 and not active):
                log.warning("agent_grants_not_published", error=str(exc))

    def snapshot(self) -> None:
        """Remember the granted objects as they are now: the baseline the grant's limits apply to."""
        self.snapshots = [self._read(g) for g in self.grants]

    def check(self) -> list[dict[str, Any]]:
        """Compare each granted object with its snapshot once; restore and record what is beyond the grant."""
        for grant, before in zip(self.grants, self.snapshots, strict=True):
            after = self._read(grant)
            found = violations(before, after, grant)
            if not found or before is None:  # a grant on an object that was not there never finds any
                continue
            self.recorded.append({"object": f"{grant.resource}/{grant.name}", "namespace": grant.namespace,
                                  "violations": found, "at": time.time()})
            log.warning("agent_grant_violation", object=f"{grant.resource}/{grant.name}", violations=found)
            self._restore(grant, before, after)
        return self.recorded

    def _restore(self, grant: AgentGrant, before: dict, after: dict | None) -> None:
        body = copy.deepcopy(before)
        meta = body["metadata"]
        for key in _SERVER_FIELDS:
            meta.pop(key, None)
        try:
            if after is None:
                self.kube.request("POST", collection_path(grant), body=body)
            else:
                meta["resourceVersion"] = after["metadata"]["resourceVersion"]
                self.kube.request("PUT", object_path(grant), body=body)
        except ApiStatusError as exc:  # a concurrent write: the next round sees it and restores again
            log.warning("agent_grant_restore_failed", object=f"{grant.resource}/{grant.name}", error=str(exc))

    async def _watch(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.check)
            except Exception as exc:  # keep watching through a transient API error
                log.warning("agent_grant_check_failed", error=str(exc))
            await asyncio.sleep(self.interval)

    async def stop(self) -> list[dict[str, Any]]:
        """Stop watching after one last check; the violations recorded over the attempt."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
            await asyncio.to_thread(self.check)
            await asyncio.to_thread(self.restore_held)
            await asyncio.to_thread(self.publish, False)
        return self.recorded

    def _held_differences(self) -> list[tuple[AgentGrant, dict, dict | None]]:
        """(grant, snapshot, now) of each held object that differs from its snapshot in any way."""
        out = []
        for grant, before in zip(self.grants[self._first_held:], self.snapshots[self._first_held:], strict=True):
            after = self._read(grant)
            if before is not None and violations(before, after, attrs.evolve(grant, may_change={})):
                out.append((grant, before, after))
        return out

    def held_changes(self) -> list[dict[str, Any]]:
        """The held objects (the ones this problem's fix does not involve) that differ from their snapshot now."""
        return [{"object": f"{grant.resource}/{grant.name}", "namespace": grant.namespace,
                 "violations": [f"{grant.resource}/{grant.name} was changed, and this problem's fix does not involve it"]}
                for grant, _before, _after in self._held_differences()]

    def restore_held(self) -> None:
        """Put back the held objects the agent changed (within what it may write)."""
        for grant, before, after in self._held_differences():
            self._restore(grant, before, after)
