"""Test helpers for faults built on the node hooks (the disk faults of sregym-fault-dm-dust and
sregym-fault-ebpf-syscall): an app of two datastores as ``hooks.group_pods`` lists them, so a unit
test drives a fault's inject without a cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from . import hooks


def two_datastores(monkeypatch: Any, calls: list, target_roles: tuple[str, ...] = ()) -> tuple[Any, dict, list]:
    """Patch the hooks for a target datastore ``pg`` (claim ``data``) beside ``redis`` (claim ``other-data``):
    one listing serves both (``calls`` gets ``"list"``), the restart is recorded as ``("restart", the listing
    was passed, wait)``. Returns the target, the listing and the cover inject should ask for."""
    target = SimpleNamespace(component=SimpleNamespace(name="pg", has_role=lambda role: role in target_roles))
    other = SimpleNamespace(component=SimpleNamespace(name="redis"))

    def mounting(claim: str) -> dict:
        return {"spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}}

    listed = {"pg": [mounting("data")], "redis": [mounting("other-data")]}

    def group_pods(ctx: Any, group: list) -> dict:
        calls.append("list")
        return listed

    monkeypatch.setattr(hooks, "datastores", lambda ctx, t: [target, other])
    monkeypatch.setattr(hooks, "group_pods", group_pods)
    monkeypatch.setattr(hooks, "selector_labels", lambda ctx, target: {"app": "pg"})
    # the restart does not wait for PostgreSQL: the rule is on the node before the pods are deleted
    monkeypatch.setattr(hooks, "restart_datastores",
                        lambda ctx, target, current, wait: calls.append(("restart", current is listed, wait)))
    return target, listed, [{"namespace": "ns", "claim": "other-data"}]
