"""Which mechanism a node fault runs by (issue 36): the node's probe in the shared vocabulary, the
choice of the strongest one that can run a rule (and why each stronger one did not), and which
pods start under the seccomp filter (supervise records, the plan from installed problems)."""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest
from sregym_cluster_embedded.apiserver import admin_faults
from sregym_cluster_embedded.apiserver.admin_faults import FaultHooks
from sregym_cluster_embedded.apiserver.errors import ApiError
from sregym_cluster_embedded.node import mechanisms, supervision_plan

from sregym_core.compat import ENVIRONMENTS
from sregym_core.mechanisms import MECHANISMS


class Store:
    """The API store as FaultHooks reads it: objects per resource."""

    def __init__(self, **objects: list[dict]) -> None:
        self.objects = objects

    def list_nocopy(self, resource: str, namespace: str | None = None) -> list[dict]:
        return [o for o in self.objects.get(resource, [])
                if namespace is None or o["metadata"].get("namespace") == namespace]


def pod(name: str, labels: dict, ip: str = "10.0.0.5", namespace: str = "shop") -> dict:
    return {"metadata": {"uid": f"uid-{name}", "name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": "node-1"}, "status": {"podIP": ip, "phase": "Running"}}


DB = {"metadata": {"name": "db", "namespace": "shop"}, "spec": {"selector": {"matchLabels": {"app": "db"}}}}


def test_the_probe_names_every_mechanism_it_knows_with_a_reason_when_unavailable() -> None:
    probe = mechanisms.host_mechanisms()
    assert set(probe) <= set(MECHANISMS) and {"bpf-lsm", "bpf-fmod-ret", "bpf-cgroup", "seccomp-supervisor",
                                              "ld-preload-shim"} <= set(probe)
    for name, entry in probe.items():
        assert isinstance(entry["available"], bool), name
        assert entry["available"] or entry["reason"], name


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's answer to BPF tracing programs needs root")
def test_on_this_machine_kind_lsm_and_fmod_ret_are_refused_and_the_catalog_says_what_runs() -> None:
    probe = mechanisms.host_mechanisms()
    if probe["bpf-lsm"]["available"] or "EPERM" not in probe["bpf-lsm"]["reason"]:
        pytest.skip(f"not the CI's VM kind: {probe['bpf-lsm']}")
    # the kernel's own refusal is the reason, before any verifier log
    assert "EPERM" in probe["bpf-fmod-ret"]["reason"]
    # docs/compatibility.md's first environment is what this probe answers here
    offered = {name for name, entry in probe.items() if entry["available"]}
    if os.environ.get("SREGYM_SYSCALL_SUPERVISOR", "") in ("0", "off"):
        offered.add("seccomp-supervisor")
    assert offered == set(next(iter(ENVIRONMENTS.values())))


def test_the_btf_lookup_finds_kernel_functions() -> None:
    if not mechanisms.VMLINUX_BTF.exists():
        pytest.skip("no kernel BTF")
    assert isinstance(mechanisms._btf_func_id(mechanisms.LSM_HOOK), int)
    assert mechanisms._btf_func_id("sregym_no_such_function") is None


def test_supervise_records_choose_the_pods_and_the_calls_of_their_filters(tmp_path: Path) -> None:
    store = Store(**{"deployments.apps": [DB]})
    hooks = FaultHooks(store, types.SimpleNamespace(state_dir=str(tmp_path)), None, None)
    hooks.supervise["plan-0"] = {"id": "plan-0", "namespace": "shop", "kind": "Deployment", "name": "db",
                                 "calls": ["fsync"], "labels": {}}
    hooks.supervise["by-labels"] = {"id": "by-labels", "namespace": "shop", "labels": {"tier": "data"},
                                    "calls": ["read"]}
    assert hooks.supervised_calls(pod("db-1", {"app": "db"})) == {"fsync"}
    assert hooks.supervised_calls(pod("db-2", {"app": "db", "tier": "data"})) == {"fsync", "read"}
    assert hooks.supervised_calls(pod("web-1", {"app": "web"})) == set()  # no filter: it pays nothing
    assert hooks.supervised_calls(pod("db-1", {"app": "db"}, namespace="other")) == set()
    store.objects["deployments.apps"] = []  # the workload is gone: its record matches nothing
    assert hooks.supervised_calls(pod("db-1", {"app": "db"})) == set()


class Covering:
    """The supervisor client as the fault hooks ask it: which pods' filters name which calls."""

    def __init__(self, covered: dict[str, set[str]]) -> None:
        self.covered = covered

    def covers(self, uid: str, call: str) -> bool:
        return call in self.covered.get(uid, set())


def _hooks(tmp_path: Path, monkeypatch, covered: dict[str, set[str]]) -> FaultHooks:
    store = Store(pods=[pod("db-1", {"app": "db"}), pod("web-1", {"app": "web"}, ip="10.0.0.6")])
    hooks = FaultHooks(store, types.SimpleNamespace(state_dir=str(tmp_path)), None, None)
    hooks.shim_path = tmp_path / "shim.so"
    hooks.seccomp = Covering(covered)
    monkeypatch.setattr(hooks, "bpf_available", lambda: (True, ""))
    monkeypatch.setattr(hooks, "render", lambda: None)
    monkeypatch.setattr(hooks, "mechanisms", lambda: {
        "bpf-lsm": {"available": False, "reason": "the kernel refused (EPERM)"},
        "bpf-fmod-ret": {"available": False, "reason": "the kernel refused (EPERM)"}})
    return hooks


def test_the_strongest_mechanism_that_reaches_the_pods_runs_and_the_record_says_why_not_the_others(
        tmp_path: Path, monkeypatch) -> None:
    order = ["bpf-lsm", "bpf-fmod-ret", "seccomp-supervisor", "ld-preload-shim"]
    hooks = _hooks(tmp_path, monkeypatch, {"uid-db-1": {"fsync"}})
    record = hooks.put_shim("f1", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["fsync"], "errno": "EIO",
                                   "mechanisms": order})
    assert record["mechanism"] == "seccomp-supervisor"
    assert set(record["passed_over"]) == {"bpf-lsm", "bpf-fmod-ret"} and "EPERM" in record["passed_over"]["bpf-lsm"]
    # web-1 did not start under a filter naming fsync: the shim runs, and the record says why
    record = hooks.put_shim("f2", {"namespace": "shop", "labels": {"app": "web"}, "calls": ["fsync"], "errno": "EIO",
                                   "mechanisms": order})
    assert record["mechanism"] == "ld-preload-shim"
    assert "web-1 did not start under a filter naming fsync" in record["passed_over"]["seccomp-supervisor"]
    # a filter naming fsync does not cover read
    record = hooks.put_shim("f3", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["read"], "errno": "EIO",
                                   "mechanisms": order})
    assert record["mechanism"] == "ld-preload-shim"
    record = hooks.put_shim("f4", {"namespace": "shop", "labels": {"app": "web"}, "calls": ["connect"],
                                   "errno": "ECONNREFUSED", "mechanisms": ["bpf-cgroup", "ld-preload-shim"]})
    assert record["mechanism"] == "bpf-cgroup" and record["passed_over"] == {}


def test_a_named_mechanism_that_cannot_run_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    hooks = _hooks(tmp_path, monkeypatch, {})
    with pytest.raises(ApiError) as info:
        hooks.put_shim("f1", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["connect"],
                              "mechanism": "seccomp-supervisor"})
    assert info.value.code == 422 and "seccomp-supervisor runs one of fsync" in str(info.value)
    assert hooks.put_shim("f2", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["socket"],
                                 "mechanisms": ["bpf-cgroup"]})["mechanism"] == "bpf-cgroup"
    monkeypatch.setattr(hooks, "bpf_available", lambda: (False, "needs root"))
    with pytest.raises(ApiError) as info:
        hooks.put_shim("f3", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["socket"]})
    assert info.value.code == 503 and "bpf-cgroup: needs root" in str(info.value)
    # the names records used before the shared vocabulary still work
    hooks.seccomp = Covering({"uid-db-1": {"fsync"}})
    assert hooks.put_shim("f4", {"namespace": "shop", "labels": {"app": "db"}, "calls": ["fsync"],
                                 "mechanism": "seccomp"})["mechanism"] == "seccomp-supervisor"
    assert admin_faults.ALIASES["cgroup-bpf"] == "bpf-cgroup"


def test_the_plan_names_the_targets_of_installed_problems_that_may_need_the_supervisor() -> None:
    from sregym_core.plugins import process_host

    host = process_host()
    plan = supervision_plan.plan(host)
    uses = [(p.id, f) for p in host.get_problems().values() for f in p.faults
            if "seccomp-supervisor" in str(host.get_faults()[f.fault].mechanisms)]
    if not uses:
        pytest.skip("no installed problem has a fault that may run through the supervisor")
    # hotel-syscall-fail-fsync-postgres-reservation: fsync of postgres-reservation
    entry = next(e for e in plan if e["name"] == "postgres-reservation")
    assert entry["calls"] == ["fsync"] and entry["namespace"] == "hotel-reservation"
    assert "hotel-syscall-fail-fsync-postgres-reservation" in entry["problems"]
    # only those targets: no other component of the app gets a filter
    assert all(any(p in dict(uses) for p in e["problems"]) for e in plan)
