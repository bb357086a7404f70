"""hooks.group_pods: every datastore's live pods from one kubectl call (what restart_datastores
and the disk faults' cover poll), matched by each workload's selector as ``kubectl -l`` would."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from sregym_fault_node import hooks

from sregym_core.errors import PermanentFaultError


def _pod(name: str, labels: dict, *, claim: str = "", deleting: bool = False) -> dict:
    meta = {"name": name, "uid": f"uid-{name}", "labels": labels,
            **({"deletionTimestamp": "2026-11-29T00:00:00Z"} if deleting else {})}
    volumes = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    return {"kind": "Pod", "metadata": meta, "spec": {"volumes": volumes}}


def _sts(name: str, labels: dict) -> dict:
    return {"kind": "StatefulSet", "metadata": {"name": name}, "spec": {"selector": {"matchLabels": labels}}}


ITEMS = [_sts("pg", {"app": "pg"}), _sts("redis", {"app": "redis", "tier": "db"}),
         _pod("pg-0", {"app": "pg"}, claim="pg-data"), _pod("pg-old", {"app": "pg"}, deleting=True),
         _pod("redis-0", {"app": "redis", "tier": "db"}, claim="redis-data"), _pod("redis-x", {"app": "redis"})]
VOLUMES = [{"kind": "PersistentVolumeClaim", "metadata": {"name": "pg-data"}, "spec": {"volumeName": "pv-1"}},
           {"kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": {"hostPath": {"path": "/srv/pv-1"}}}]


def _ctx(calls: list) -> SimpleNamespace:
    def kubectl(*args, **_kw):
        calls.append(args)
        return json.dumps({"items": ITEMS + VOLUMES})
    return SimpleNamespace(namespace="ns", kubectl=kubectl)


def _target(name: str, kind: str = "StatefulSet") -> SimpleNamespace:
    return SimpleNamespace(component=SimpleNamespace(name=name, kind=kind))


def test_one_call_gives_every_members_live_pods_by_its_selector() -> None:
    calls: list = []
    got = hooks.group_pods(_ctx(calls), [_target("pg"), _target("redis")])
    assert len(calls) == 1
    assert [p["metadata"]["name"] for p in got["pg"]] == ["pg-0"]  # the terminating one is not live
    assert [p["metadata"]["name"] for p in got["redis"]] == ["redis-0"]  # every selector label must match
    assert hooks.claims_of(got["pg"] + got["redis"]) == ["pg-data", "redis-data"]


def test_a_missing_workload_is_a_clear_error() -> None:
    with pytest.raises(PermanentFaultError, match="StatefulSet ns/mongo does not exist"):
        hooks.group_pods(_ctx([]), [_target("mongo")])


def test_the_same_call_gives_the_selectors_claims_and_volumes_inject_needs() -> None:
    # a disk fault's inject reads the target's labels and its volume's host path from the listing:
    # no kubectl call per datastore, claim or volume (issue 36: inject under 2 s)
    calls: list = []
    ctx = _ctx(calls)
    got = hooks.group_pods(ctx, [_target("pg"), _target("redis")])
    assert hooks.labels_of(ctx, _target("pg"), got) == {"app": "pg"}
    assert got.bound == {"pg-data": "pv-1"} and got.host_paths == {"pv-1": "/srv/pv-1"}
    assert len(calls) == 1 and "persistentvolumes" in calls[0][1]
