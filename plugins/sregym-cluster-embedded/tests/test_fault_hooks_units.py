"""FaultHooks' view of the pods a rule reaches, while the store lags behind the node agent."""

from __future__ import annotations

import copy
import types

from sregym_cluster_embedded.apiserver.admin_faults import FaultHooks


class Store:
    """The API store as FaultHooks reads it (a list of pods); the test edits it."""

    def __init__(self) -> None:
        self.pods: list[dict] = []

    def list_nocopy(self, resource: str, namespace: str | None = None) -> list[dict]:
        assert resource == "pods"
        return self.pods


def pod(uid: str, ip: str | None = None) -> dict:
    status = {"podIP": ip} if ip else {}
    return {"metadata": {"uid": uid, "name": uid, "namespace": "default"}, "spec": {"nodeName": "node-1"},
            "status": status}


def test_a_starting_pod_counts_with_its_ip_until_the_store_has_it(tmp_path) -> None:
    store = Store()
    hooks = FaultHooks(store, types.SimpleNamespace(state_dir=str(tmp_path)), None, None)
    hooks.shim["armed"] = {}  # a rule exists: the start hook renders
    started = pod("a", "10.0.0.7")
    store.pods = [pod("a")]  # the store has the pod, not yet its IP
    hooks.pod_starting(started)
    # every periodic render until the status update lands still sees the IP
    for _ in range(3):
        assert [p["status"].get("podIP") for p in hooks._pods()] == ["10.0.0.7"]
    store.pods = [copy.deepcopy(started)]
    assert [p["status"].get("podIP") for p in hooks._pods()] == ["10.0.0.7"]
    assert hooks._starting == {}  # the store caught up: nothing held any more


def test_a_pod_deleted_while_starting_is_forgotten(tmp_path, monkeypatch) -> None:
    import sregym_cluster_embedded.apiserver.admin_faults as admin_faults

    store = Store()
    hooks = FaultHooks(store, types.SimpleNamespace(state_dir=str(tmp_path)), None, None)
    hooks.shim["armed"] = {}
    hooks.pod_starting(pod("gone", "10.0.0.9"))
    assert hooks._pods() == []  # not in the store: no rule reaches it
    monkeypatch.setattr(admin_faults, "STARTING_TTL_S", 0.0)
    hooks._pods()
    assert hooks._starting == {}
