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
