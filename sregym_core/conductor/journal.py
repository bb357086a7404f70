"""What an attempt may change outside the app's namespace, written down before it starts (issue #34).

The granted cluster objects (CoreDNS's and kube-proxy's configuration, the kubelet drop-ins, the
Calico objects, a webhook configuration) are changed by faults and may be changed by the agent; a
normal attempt puts them back when it ends (the faults' recover, the grant guard's last look). A
conductor that dies in between (killed, the machine rebooted) left them changed, and the next attempt
took the cluster as it found it: its guard compared with its own snapshot, so it neither flagged nor
restored them (red-team round 8). So before an attempt injects anything it writes a journal into the
benchmark's hidden namespace: every granted object as it is, and the standing objects it creates.
A normal end deletes the journal. An attempt that finds a journal knows the one before it died: it puts
each recorded object back as it was, removes the standing objects that one created, and only then
writes its own. Changes made between attempts (an operator upgrading CoreDNS) are never undone: only
what a dead attempt had recorded before it began.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import structlog

from ..grant_rules import BENCHMARK_NAMESPACE, _SERVER_FIELDS, object_path, resolve
from ..types import AgentGrant
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

JOURNAL = (BENCHMARK_NAMESPACE, "sregym-attempt-journal")
_COLLECTION = f"/api/v1/namespaces/{JOURNAL[0]}/configmaps"


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as it can be written back: no server-set metadata, no status."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    obj.pop("status", None)
    return obj


def _read(kube: Kube, path: str) -> dict[str, Any] | None:
    try:
        return kube.get(path)
    except ApiStatusError as exc:
        if exc.code == 404:
            return None
        raise


def _journal_body(objects: dict[str, dict[str, Any]], created: list[str], attempt_id: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": JOURNAL[1], "namespace": JOURNAL[0]},
            "data": {"attempt": attempt_id, "objects": json.dumps(objects, sort_keys=True),
                     "created": json.dumps(created)}}


def recover_dead_attempt(kube: Kube) -> list[str]:
    """Undo what an attempt that died left in the granted objects; the paths put back or removed."""
    journal = _read(kube, f"{_COLLECTION}/{JOURNAL[1]}")
    if journal is None:
        return []
    data = journal.get("data") or {}
    try:
        objects = json.loads(data.get("objects") or "{}")
        created = json.loads(data.get("created") or "[]")
    except ValueError:
        objects, created = {}, []
    mended: list[str] = []
    for path, before in objects.items():
        now = _read(kube, path)
        if now is None or _bare(now) == before:
            continue
        body = copy.deepcopy(before)
        body.setdefault("metadata", {})["resourceVersion"] = now["metadata"]["resourceVersion"]
        try:
            kube.request("PUT", path, body)
            mended.append(path)
        except ApiStatusError as exc:
            log.warning("journal_restore_failed", path=path, error=str(exc))
    for path in created:
        try:
            kube.request("DELETE", path)
            mended.append(path)
        except ApiStatusError as exc:
            if exc.code != 404:
                log.warning("journal_remove_failed", path=path, error=str(exc))
    log.warning("dead_attempt_recovered", attempt=data.get("attempt"), mended=mended)
    close(kube)
    return mended


def open_journal(kube: Kube, grants: list[AgentGrant] | tuple[AgentGrant, ...], app_namespace: str,
                 attempt_id: str) -> dict[str, dict[str, Any]]:
    """Write this attempt's journal (after recovering a dead one's): each granted object as it is now."""
    recover_dead_attempt(kube)
    objects: dict[str, dict[str, Any]] = {}
    for grant in grants:
        path = object_path(resolve(grant, app_namespace))
        now = _read(kube, path)
        if now is not None:
            objects[path] = _bare(now)
    _write(kube, _journal_body(objects, [], attempt_id))
    return objects


def note_created(kube: Kube, objects: dict[str, dict[str, Any]], created: list[str], attempt_id: str) -> None:
    """Add the standing objects this attempt created (a dead attempt's are removed by the next one)."""
    _write(kube, _journal_body(objects, created, attempt_id))


def close(kube: Kube) -> None:
    """The attempt ended normally (or a dead one's journal was acted on): no journal."""
    try:
        kube.request("DELETE", f"{_COLLECTION}/{JOURNAL[1]}")
    except ApiStatusError as exc:
        if exc.code != 404:
            log.warning("journal_not_closed", error=str(exc))


def _write(kube: Kube, body: dict[str, Any]) -> None:
    current = _read(kube, f"{_COLLECTION}/{JOURNAL[1]}")
    if current is None:
        kube.request("POST", _COLLECTION, body)
        return
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    kube.request("PUT", f"{_COLLECTION}/{JOURNAL[1]}", body)
