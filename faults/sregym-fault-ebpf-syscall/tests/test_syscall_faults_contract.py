"""Static contract checks of the syscall faults (live tests: sregym-fault-node's e2e module)."""

from __future__ import annotations

import errno

import sregym_fault_ebpf_syscall.plugin
from sregym_fault_ebpf_syscall.syscalls import FAULTS, _errno_number

from sregym_core.testing.contracts import FaultContract


class TestSyscallFaults(FaultContract):
    plugin = sregym_fault_ebpf_syscall.plugin
    live_only = {name: "it preloads a syscall shim into running processes (node hooks)" for name in (
        "latent-sector-error", "syscall-fail")}


def test_default_errno_per_syscall():
    assert _errno_number({"syscall": "fsync", "errno": ""}) == errno.EIO
    assert _errno_number({"syscall": "connect", "errno": ""}) == errno.ECONNREFUSED
    assert _errno_number({"syscall": "write", "errno": "ENOSPC"}) == errno.ENOSPC


def test_capabilities_keep_them_off_real_clusters():
    for fault in FAULTS:
        assert fault.needs({"any", "real"}) == {"embedded", "node-agent"}
        # the LD_PRELOAD shim is none of their mechanisms, so they do not need it
        assert not fault.needs({"any", "embedded", "node-agent", "snapshot"})


def test_no_shim_among_their_mechanisms():
    # a shim misses static binaries and its rules travel with the process (issue 36)
    for fault in FAULTS:
        assert fault.mechanisms and all("ld-preload-shim" not in names for names in fault.mechanisms.values())
    assert FAULTS[1].mechanisms["open"] == ("bpf-lsm", "seccomp-supervisor")


def test_no_mechanism_reaching_the_target_is_a_permanent_error_with_the_nodes_reasons(monkeypatch):
    from types import SimpleNamespace

    import pytest
    from sregym_fault_ebpf_syscall import syscalls

    from sregym_core.errors import PermanentFaultError, TemporaryFaultError

    def refuse(ctx, method, hook_id, **spec):
        raise TemporaryFaultError("node fault hook node_fault: no mechanism can run this rule here "
                                  "(seccomp-supervisor: pods db-1 did not start under a filter naming open)")
    monkeypatch.setattr(syscalls.hooks, "call", refuse)
    monkeypatch.setattr(syscalls.hooks, "selector_labels", lambda ctx, target: {"app": "db"})
    ctx = SimpleNamespace(namespace="ns", state={})
    target = SimpleNamespace(component=SimpleNamespace(pvcs=()))
    with pytest.raises(PermanentFaultError) as info:
        syscalls.syscall_inject(ctx, target, {"syscall": "open", "errno": "", "rate": 1.0, "port": 0})
    assert "did not start under a filter naming open" in str(info.value)


def test_latent_sector_error_asks_the_layer_for_sticky_reads_of_the_relation_files(monkeypatch):
    # the database's largest relation files in both views (the layer matches host paths, the shim
    # the pods'), sticky, the layer over every datastore's volume, and all of them restarted
    from types import SimpleNamespace

    from sregym_fault_dm_dust import badblocks
    from sregym_fault_ebpf_syscall import syscalls

    calls: list = []
    neighbours = [{"namespace": "ns", "claim": "other-data"}]
    monkeypatch.setattr(syscalls.hooks, "claims", lambda ctx, target: ["data"])
    monkeypatch.setattr(syscalls.hooks, "selector_labels", lambda ctx, target: {"app": "pg"})
    monkeypatch.setattr(syscalls.hooks, "neighbour_volumes", lambda ctx, target: neighbours)
    monkeypatch.setattr(syscalls.hooks, "restart_datastores", lambda ctx, target: calls.append("restart"))
    monkeypatch.setattr(syscalls.hooks, "call", lambda ctx, method, hook_id, **spec: calls.append(spec) or
                        {"mechanism": "fuse-badblocks", "pvs": ["pv-1"]})
    monkeypatch.setattr(badblocks, "relation_files", lambda ctx, target, limit, indexes: [
        ("/var/lib/pg/data/base/5/16390", "users"), ("/var/lib/pg/data/base/5/16396", "users_pkey")][:limit])
    monkeypatch.setattr(badblocks, "_host_and_mount", lambda ctx, target, claim: ("/srv/pv-1", "/var/lib/pg"))
    ctx = SimpleNamespace(namespace="ns", state={})
    target = SimpleNamespace(component=SimpleNamespace(has_role=lambda role: role == "db:postgres"))
    syscalls.lse_inject(ctx, target, {"rate": 0.3, "restart": True})
    spec = calls[0]
    assert spec["paths"] == ["/var/lib/pg/data/base/5/16390", "/srv/pv-1/data/base/5/16390",
                             "/var/lib/pg/data/base/5/16396", "/srv/pv-1/data/base/5/16396"]
    assert spec["whole_volume"] is False and spec["sticky"] is True and spec["rate"] == 0.3
    assert spec["mechanisms"] == ["bpf-lsm", "bpf-fmod-ret", "fuse-badblocks"]  # no shim (issue 36)
    assert spec["fuse_install"] is True and spec["cover"] == neighbours and calls[-1] == "restart"
    assert ctx.state["relations"] == ["users", "users_pkey"] and ctx.state["fault_mechanism"] == "fuse-badblocks"
