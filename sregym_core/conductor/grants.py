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
import re
import time
from typing import Any

import structlog

from ..grant_rules import (  # noqa: F401  (what a problem file may grant lives in the contract; kept importable here)
    ADMISSION,
    BENCHMARK_NAMESPACE,
    GRANTABLE,
    VERBS,
    check_grant,
    resolve,
)
from ..types import AgentGrant
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

GRANT_LABEL = "sregym.io/agent-grant"
HIDDEN_LABELS = ("sregym.io/hidden", "sregym.dev/hidden")
#: what the API server itself changes on every write
_SERVER_FIELDS = ("resourceVersion", "generation", "managedFields", "creationTimestamp", "uid")
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _object_path(grant: AgentGrant) -> str:
    base = f"/apis/{grant.group}/v1" if grant.group else "/api/v1"
    ns = f"/namespaces/{grant.namespace}" if grant.namespace else ""
    return f"{base}{ns}/{grant.resource}/{grant.name}"


def _role_name(account: str, index: int) -> str:
    return f"{account}-grant-{index}"


def grant_extra(kube: Kube, account: str, grants: tuple[AgentGrant, ...] | list[AgentGrant],
                app_namespace: str) -> None:
    """Give ``account`` (a ServiceAccount in the benchmark namespace) the problem's extra rights."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": BENCHMARK_NAMESPACE}]
    for index, grant in enumerate(grants):
        grant = resolve(grant, app_namespace)
        problem = check_grant(grant)
        if problem:
            raise ValueError(problem)
        if grant.namespace:
            labels = (kube.get(f"/api/v1/namespaces/{grant.namespace}").get("metadata") or {}).get("labels") or {}
            if any(labels.get(k) == "true" for k in HIDDEN_LABELS):
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
        try:
            kube.request("DELETE", path)
        except ApiStatusError as exc:
            if exc.code != 404:
                raise


def _replace(kube: Kube, collection: str, obj: dict) -> None:
    try:
        kube.request("POST", collection, body=obj)
    except ApiStatusError as exc:
        if exc.code != 409:
            raise
        current = kube.get(f"{collection}/{obj['metadata']['name']}")
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        kube.request("PUT", f"{collection}/{obj['metadata']['name']}", body=obj)


# --------------------------------------------------------------------------- what may change


def _split(path: str) -> list[str]:
    return [p for p in re.split(r"\.|(\[\*\])", path) if p]


def _masked(obj: Any, parts: list[str]) -> Any:
    """``obj`` with the field at ``parts`` removed (``[*]``: in every item of a list)."""
    if not parts:
        return None
    head, rest = parts[0], parts[1:]
    if head == "[*]":
        return [_masked(item, rest) for item in obj] if isinstance(obj, list) else obj
    if not isinstance(obj, dict) or head not in obj:
        return obj
    out = dict(obj)
    if rest:
        out[head] = _masked(obj[head], rest)
    else:
        out.pop(head)
    return out


def _values(obj: Any, parts: list[str]) -> list[Any]:
    if not parts:
        return [obj]
    head, rest = parts[0], parts[1:]
    if head == "[*]":
        return [v for item in obj for v in _values(item, rest)] if isinstance(obj, list) else []
    if not isinstance(obj, dict) or head not in obj:
        return [None]
    return _values(obj[head], rest)


def _lines(text: Any) -> list[str]:
    """A text's meaningful lines: comments and blank lines dropped, whitespace collapsed."""
    out = []
    for line in str(text or "").splitlines():
        line = " ".join(line.split("#", 1)[0].split())
        if line:
            out.append(line)
    return out


def _only_removed(before: Any, after: Any) -> bool:
    """Whether ``after``'s lines are ``before``'s with some lines deleted (order kept, none added)."""
    remaining = iter(_lines(before))
    return all(any(line == old for old in remaining) for line in _lines(after))


def _comparable(obj: dict, grant: AgentGrant) -> dict:
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(_LAST_APPLIED, None)
    meta["annotations"] = annotations or None
    obj.pop("status", None)
    for path in grant.may_change:
        obj = _masked(obj, _split(path))
    return obj


def violations(before: dict | None, after: dict | None, grant: AgentGrant) -> list[str]:
    """How ``after`` changed ``before`` beyond what ``grant`` allows (empty: within the grant)."""
    if before is None:
        return []
    if after is None:
        return [f"{grant.resource}/{grant.name} was deleted"]
    found = []
    if _comparable(before, grant) != _comparable(after, grant):
        found.append(f"{grant.resource}/{grant.name} changed outside {sorted(grant.may_change)}")
    for path, mode in grant.may_change.items():
        if mode != "remove-lines":
            continue
        olds, news = _values(before, _split(path)), _values(after, _split(path))
        if len(olds) != len(news) or not all(_only_removed(o, n) for o, n in zip(olds, news, strict=True)):
            found.append(f"{grant.resource}/{grant.name}: {path} gained lines (only deleting lines is allowed)")
    return found


class GrantGuard:
    """Watches the granted objects while the agent works; undoes and records changes beyond the grant."""

    def __init__(self, kube: Kube, grants: tuple[AgentGrant, ...] | list[AgentGrant], app_namespace: str, *,
                 interval: float = 0.5) -> None:
        self.kube = kube
        self.grants = [resolve(g, app_namespace) for g in grants]
        self.interval = interval
        self.snapshots: list[dict | None] = []
        self.recorded: list[dict[str, Any]] = []
        self._task: asyncio.Task | None = None

    def _read(self, grant: AgentGrant) -> dict | None:
        try:
            return self.kube.get(_object_path(grant))
        except ApiStatusError as exc:
            if exc.code == 404:
                return None
            raise

    async def start(self) -> None:
        """Snapshot the granted objects (as the fault left them) and start watching."""
        if not self.grants:
            return
        await asyncio.to_thread(self.snapshot)
        self._task = asyncio.create_task(self._watch())

    def snapshot(self) -> None:
        """Remember the granted objects as they are now: the baseline the grant's limits apply to."""
        self.snapshots = [self._read(g) for g in self.grants]

    def check(self) -> list[dict[str, Any]]:
        """Compare each granted object with its snapshot once; restore and record what is beyond the grant."""
        for grant, before in zip(self.grants, self.snapshots, strict=True):
            after = self._read(grant)
            found = violations(before, after, grant)
            if not found:
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
                self.kube.request("POST", _object_path(grant).rsplit("/", 1)[0], body=body)
            else:
                meta["resourceVersion"] = after["metadata"]["resourceVersion"]
                self.kube.request("PUT", _object_path(grant), body=body)
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
        return self.recorded
