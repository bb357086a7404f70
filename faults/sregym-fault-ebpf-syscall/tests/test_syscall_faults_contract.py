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
        assert fault.needs({"any", "real"}) == {"embedded", "ld-preload"}
        assert not fault.needs({"any", "embedded", "node-agent", "snapshot", "ld-preload"})


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
    assert spec["mechanisms"] == ["bpf-lsm", "bpf-fmod-ret", "fuse-badblocks", "ld-preload-shim"]
    assert spec["fuse_install"] is True and spec["cover"] == neighbours and calls[-1] == "restart"
    assert ctx.state["relations"] == ["users", "users_pkey"] and ctx.state["fault_mechanism"] == "fuse-badblocks"
