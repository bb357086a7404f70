"""Static contract checks of the syscall faults (live tests: sregym-fault-node's e2e module)."""

from __future__ import annotations

import errno

import sregym_fault_ebpf_syscall.plugin
from sregym_fault_ebpf_syscall.syscalls import FAULTS, _errno_number

from sregym_core.testing.contracts import FaultContract


class TestSyscallFaults(FaultContract):
    plugin = sregym_fault_ebpf_syscall.plugin
    live_only = {name: "it needs a cluster's kernel mechanisms (node hooks or the DaemonSet loader)" for name in (
        "latent-sector-error", "syscall-fail")}


def test_default_errno_per_syscall():
    assert _errno_number({"syscall": "fsync", "errno": ""}) == errno.EIO
    assert _errno_number({"syscall": "connect", "errno": ""}) == errno.ECONNREFUSED
    assert _errno_number({"syscall": "write", "errno": "ENOSPC"}) == errno.ENOSPC


def test_capabilities_latent_sector_errors_need_the_node_agent_syscall_fail_runs_anywhere():
    lse, syscall_fail = FAULTS
    assert lse.needs({"any", "real"}) == {"embedded", "node-agent"}
    # the LD_PRELOAD shim is none of their mechanisms, so they do not need it
    assert not lse.needs({"any", "embedded", "node-agent", "snapshot"})
    # connect/socket run through the DaemonSet loader on a real cluster; the cluster's mechanism
    # probe (not a capability) says which operations run where
    assert not syscall_fail.needs({"any", "real"})
    assert syscall_fail.mechanisms["connect"] == ("bpf-cgroup", "bpf-daemonset")


class NodeHooks:
    """A cluster handle with the node fault hooks (what the embedded one offers), for unit tests."""

    def __init__(self, call) -> None:
        self.node_fault = call

    def network_fault(self, fault_id, **spec): ...
    def fault_status(self, kind, fault_id): ...
    def clear_fault(self, kind, fault_id): ...
    def stop_node(self, node): ...
    def start_node(self, node): ...
    def node_agents(self): ...
    def disk_fill(self, fault_id, **spec): ...
    def faults(self): ...


def test_no_shim_among_their_mechanisms():
    # a shim misses static binaries and its rules travel with the process (issue 36)
    for fault in FAULTS:
        assert fault.mechanisms and all("ld-preload-shim" not in names for names in fault.mechanisms.values())
    assert FAULTS[1].mechanisms["open"] == ("bpf-lsm", "seccomp-supervisor")


def _node_that_refuses(monkeypatch, refusals: int):
    """Node hooks whose node_fault refuses ``refusals`` times (pods without the filter), then accepts."""
    from types import SimpleNamespace

    from sregym_fault_ebpf_syscall import syscalls

    from sregym_core.errors import TemporaryFaultError

    calls: list[tuple] = []

    def call(ctx, method, hook_id, **spec):
        calls.append((method, hook_id, spec))
        if method == "node_fault" and sum(1 for c in calls if c[0] == "node_fault") <= refusals:
            raise TemporaryFaultError("node fault hook node_fault: no mechanism can run this rule here "
                                      "(seccomp-supervisor: pods db-1 did not start under a filter naming open)")
        return {"mechanism": "seccomp-supervisor", "targets": {"db-2": ["10.0.0.2"]}} if method == "node_fault" else {}
    monkeypatch.setattr(syscalls.hooks, "call", call)
    monkeypatch.setattr(syscalls.hooks, "selector_labels", lambda ctx, target: {"app": "db"})
    monkeypatch.setattr(syscalls.hooks, "restart_pods", lambda ctx, target: calls.append(("restart_pods", "", {})))
    ctx = SimpleNamespace(namespace="ns", state={}, cluster=NodeHooks(call))
    target = SimpleNamespace(component=SimpleNamespace(pvcs=()))
    return syscalls, ctx, target, calls


def test_a_target_whose_pods_run_without_the_filter_is_restarted_under_it(monkeypatch):
    # an ad hoc pair (no installed problem names the target): red-team round 7 met the refusal here
    syscalls, ctx, target, calls = _node_that_refuses(monkeypatch, refusals=1)
    syscalls.syscall_inject(ctx, target, {"syscall": "open", "errno": "", "rate": 1.0, "port": 0})
    assert [c[0] for c in calls] == ["node_fault", "supervise", "restart_pods", "node_fault"]
    supervise = calls[1][2]
    assert supervise == {"namespace": "ns", "labels": {"app": "db"}, "calls": ["open"]}
    assert ctx.state["restarted_under_filter"] and ctx.state["pods"] == ["10.0.0.2"]


def test_no_mechanism_reaching_the_target_is_a_permanent_error_with_the_nodes_reasons(monkeypatch):
    import pytest

    from sregym_core.errors import PermanentFaultError

    syscalls, ctx, target, calls = _node_that_refuses(monkeypatch, refusals=2)  # still refused once restarted
    with pytest.raises(PermanentFaultError) as info:
        syscalls.syscall_inject(ctx, target, {"syscall": "open", "errno": "", "rate": 1.0, "port": 0})
    assert "did not start under a filter naming open" in str(info.value)


def test_without_node_hooks_only_connect_and_socket_run_through_the_daemonset_loader(monkeypatch):
    from types import SimpleNamespace

    import pytest
    from sregym_fault_ebpf_syscall import daemonset, syscalls

    from sregym_core.errors import PermanentFaultError

    probe = {"bpf-cgroup": {"available": False, "reason": "no SREGym node agent"},
             "bpf-daemonset": {"available": True, "operations": ["connect", "socket"]}}
    cluster = SimpleNamespace(fault_mechanisms=lambda: probe)
    armed = []
    monkeypatch.setattr(daemonset, "arm", lambda ctx, target, **rule: armed.append(rule) or {"daemonset": "d"})
    target = SimpleNamespace(component=SimpleNamespace(pvcs=()))
    ctx = SimpleNamespace(namespace="ns", state={}, cluster=cluster)
    syscalls.syscall_inject(ctx, target, {"syscall": "connect", "errno": "", "rate": 0.5, "port": 8080})
    assert armed == [{"call": "connect", "errno": errno.ECONNREFUSED, "rate": 0.5, "port": 8080}]
    assert ctx.state["fault_mechanism"] == "bpf-daemonset"
    assert ctx.state["passed_over"] == {"bpf-cgroup": "no SREGym node agent"}
    ctx = SimpleNamespace(namespace="ns", state={}, cluster=cluster)
    with pytest.raises(PermanentFaultError) as info:
        syscalls.syscall_inject(ctx, target, {"syscall": "fsync", "errno": "", "rate": 1.0, "port": 0})
    assert "syscall-fail fsync cannot run on this cluster" in str(info.value)


def test_the_daemonset_is_privileged_mounts_only_the_cgroup_tree_and_lives_in_a_hidden_namespace():
    from sregym_fault_ebpf_syscall import daemonset

    from sregym_core.clusters import is_hidden_namespace

    ns = daemonset.namespace_manifest()
    assert is_hidden_namespace(ns["metadata"]["labels"])
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    spec = daemonset.daemon_set("sregym-bpf-x", image="python:3.12-slim")["spec"]["template"]["spec"]
    assert [v.get("hostPath", {}).get("path") for v in spec["volumes"] if "hostPath" in v] == ["/sys/fs/cgroup"]
    assert not spec.get("hostPID") and not spec.get("hostNetwork") and spec["automountServiceAccountToken"] is False
    container = spec["containers"][0]
    assert container["securityContext"]["privileged"] is True
    assert all(m["readOnly"] for m in container["volumeMounts"])
    # the rule (errno, rate) is in the ConfigMap of the hidden namespace, with the loader
    cm = daemonset.config_map("sregym-bpf-x", {"call": "connect", "errno": 111, "rate": 0.3, "port": 0, "pods": []})
    assert cm["metadata"]["namespace"] == daemonset.NAMESPACE and '"errno": 111' in cm["data"]["rule.json"]
    assert "def main" in cm["data"]["bpfloader.py"]


def test_latent_sector_error_asks_the_layer_for_sticky_reads_of_the_relation_files(monkeypatch):
    # the database's largest relation files in both views (the layer matches host paths, the shim
    # the pods'), sticky, the layer over every datastore's volume, and all of them restarted
    from types import SimpleNamespace

    from sregym_fault_dm_dust import badblocks
    from sregym_fault_ebpf_syscall import syscalls
    from sregym_fault_node.testing import two_datastores

    calls: list = []
    # one listing of every datastore's pods serves the claims, the files' views, the cover and the restart
    target, _listed, neighbours = two_datastores(monkeypatch, calls, ("db:postgres",))
    monkeypatch.setattr(syscalls.hooks, "call", lambda ctx, method, hook_id, **spec: calls.append(spec) or
                        {"mechanism": "fuse-badblocks", "pvs": ["pv-1"]})
    monkeypatch.setattr(badblocks, "relation_files", lambda ctx, target, limit, indexes, pods: [
        ("/var/lib/pg/data/base/5/16390", "users"), ("/var/lib/pg/data/base/5/16396", "users_pkey")][:limit])
    monkeypatch.setattr(badblocks, "_host_and_mount", lambda ctx, target, claim, pods, listed: ("/srv/pv-1", "/var/lib/pg"))
    ctx = SimpleNamespace(namespace="ns", state={})
    syscalls.lse_inject(ctx, target, {"rate": 0.3, "restart": True})
    assert calls.count("list") == 1
    spec = calls[1]
    assert spec["paths"] == ["/var/lib/pg/data/base/5/16390", "/srv/pv-1/data/base/5/16390",
                             "/var/lib/pg/data/base/5/16396", "/srv/pv-1/data/base/5/16396"]
    assert spec["whole_volume"] is False and spec["sticky"] is True and spec["rate"] == 0.3
    assert spec["mechanisms"] == ["bpf-lsm", "bpf-fmod-ret", "fuse-badblocks"]  # no shim (issue 36)
    assert spec["fuse_install"] is True and spec["cover"] == neighbours and calls[-1] == ("restart", True, False)
    assert ctx.state["relations"] == ["users", "users_pkey"] and ctx.state["fault_mechanism"] == "fuse-badblocks"
