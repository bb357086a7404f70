"""What an attempt may change outside the app's namespace, written down before it starts (issue #34).

The granted cluster objects (CoreDNS's and kube-proxy's configuration, the kubelet drop-ins, the
Calico objects, a webhook configuration) are changed by faults and may be changed by the agent; a
normal attempt puts them back when it ends (the faults' recover, the grant guard's last look). A
conductor that dies in between (killed, the machine rebooted) left them changed, and the next attempt
took the cluster as it found it: its guard compared with its own snapshot, so it neither flagged nor
restored them (red-team round 8). So before an attempt injects anything it writes a journal into the
benchmark's hidden namespace: every granted object as it is, and the standing objects it creates.
An attempt that finds an open journal knows the one before it died: it puts each recorded object back as
it was, removes the standing objects that one created, and only then writes its own.

A normal end *seals* the journal: each granted object as it is once everything was put back, with its
resourceVersion. A write the ended attempt's identity sent but the API server stored later (a body held
back past the revocation: red-team round 9; kube-apiserver authorizes from the headers and gives a
request up to a minute) moves that version: the next attempt, starting within LATE_WRITE_WINDOW_S of the
seal, puts such an object back. A change found later than that, or made between runs (an operator
upgrading CoreDNS), is left alone.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import structlog

from ..grant_rules import BENCHMARK_NAMESPACE, _SERVER_FIELDS, object_path, resolve
from ..types import AgentGrant
from .agent_access import ensure_benchmark_namespace
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

JOURNAL = (BENCHMARK_NAMESPACE, "sregym-attempt-journal")
#: how long after a sealed attempt a change of its granted objects is taken for one of its late writes
LATE_WRITE_WINDOW_S = 600.0
_COLLECTION = f"/api/v1/namespaces/{JOURNAL[0]}/configmaps"


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as it can be written back: no server-set metadata, no status."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    obj.pop("status", None)
    return obj


def _journal_body(objects: dict[str, dict[str, Any]], created: list[str], attempt_id: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": JOURNAL[1], "namespace": JOURNAL[0]},
            "data": {"attempt": attempt_id, "objects": json.dumps(objects, sort_keys=True),
                     "created": json.dumps(created)}}


def mend_leftovers(kube: Kube) -> list[str]:
    """Undo what the attempt before left in the granted objects (see the module's docstring); the paths put
    back or removed."""
    journal = kube.find(f"{_COLLECTION}/{JOURNAL[1]}")
    if journal is None:
        return []
    data = journal.get("data") or {}
    try:
        objects = json.loads(data.get("objects") or "{}")
        created = json.loads(data.get("created") or "[]")
        versions = json.loads(data.get("versions") or "{}")
        sealed_at = float(data["sealed_at"]) if "sealed_at" in data else None
    except (ValueError, TypeError):
        objects, created, versions, sealed_at = {}, [], {}, None
    if sealed_at is not None and time.time() - sealed_at > LATE_WRITE_WINDOW_S:
        objects = {}  # long after the attempt: whoever changed them since, it was not a late write of its
    mended: list[str] = []
    for path, before in objects.items():
        now = kube.find(path)
        if now is None or _bare(now) == before:
            continue
        if sealed_at is not None and (now.get("metadata") or {}).get("resourceVersion") == versions.get(path):
            continue  # not written since the seal (a field only the server sets may read differently)
        body = copy.deepcopy(before)
        body.setdefault("metadata", {})["resourceVersion"] = now["metadata"]["resourceVersion"]
        try:
            kube.request("PUT", path, body)
            mended.append(path)
        except ApiStatusError as exc:
            log.warning("journal_restore_failed", path=path, error=str(exc))
    for path in created:
        try:
            if kube.delete(path):
                mended.append(path)
        except ApiStatusError as exc:
            log.warning("journal_remove_failed", path=path, error=str(exc))
    if mended:
        log.warning("late_writes_undone" if sealed_at is not None else "dead_attempt_recovered",
                    attempt=data.get("attempt"), mended=mended)
    close(kube)
    return mended


def _current(kube: Kube, grants: list[AgentGrant] | tuple[AgentGrant, ...],
             app_namespace: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each granted object that exists, as it can be written back, and its resourceVersion."""
    objects: dict[str, dict[str, Any]] = {}
    versions: dict[str, str] = {}
    for grant in grants:
        path = object_path(resolve(grant, app_namespace))
        now = kube.find(path)
        if now is not None:
            objects[path] = _bare(now)
            versions[path] = str((now.get("metadata") or {}).get("resourceVersion", ""))
    return objects, versions


def open_journal(kube: Kube, grants: list[AgentGrant] | tuple[AgentGrant, ...], app_namespace: str,
                 attempt_id: str) -> dict[str, dict[str, Any]]:
    """Write this attempt's journal (after mending the last one's leftovers): each granted object as it is now. The
    hidden namespace it lives in is made here: the attempt's identity, which used to make it first, comes only after
    the injection (red-team round 21, finding 4)."""
    ensure_benchmark_namespace(kube)
    mend_leftovers(kube)
    objects, _versions = _current(kube, grants, app_namespace)
    _write(kube, _journal_body(objects, [], attempt_id))
    return objects


def seal(kube: Kube, grants: list[AgentGrant] | tuple[AgentGrant, ...], app_namespace: str,
         attempt_id: str) -> None:
    """The attempt ended with everything put back: record the granted objects as they are now, for the next
    attempt to undo a late write of this one's."""
    objects, versions = _current(kube, grants, app_namespace)
    body = _journal_body(objects, [], attempt_id)
    body["data"].update(versions=json.dumps(versions, sort_keys=True), sealed_at=repr(time.time()))
    _write(kube, body)


def note_created(kube: Kube, objects: dict[str, dict[str, Any]], created: list[str], attempt_id: str) -> None:
    """Add the standing objects this attempt created (a dead attempt's are removed by the next one)."""
    _write(kube, _journal_body(objects, created, attempt_id))


def close(kube: Kube) -> None:
    """No journal (the last one was acted on, or no attempt is to follow on this cluster)."""
    try:
        kube.delete(f"{_COLLECTION}/{JOURNAL[1]}")
    except ApiStatusError as exc:
        log.warning("journal_not_closed", error=str(exc))


def _write(kube: Kube, body: dict[str, Any]) -> None:
    current = kube.find(f"{_COLLECTION}/{JOURNAL[1]}")
    if current is None:
        kube.request("POST", _COLLECTION, body)
        return
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    kube.request("PUT", f"{_COLLECTION}/{JOURNAL[1]}", body)
