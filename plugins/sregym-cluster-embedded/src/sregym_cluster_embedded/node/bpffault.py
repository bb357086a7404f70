"""Kernel syscall faults keyed on a pod's cgroup: ``connect()`` (or ``socket()`` of an IPv4/IPv6
socket) fails with an errno at a rate.

Every process of an app pod runs in the pod's own cgroup v2 directory (``pod-<uid>`` under the
network guard's cgroup, see ``PodWorker.net_preexec``). A ``cgroup/connect4`` and a
``cgroup/connect6`` program look the calling process's cgroup id up in a hash map; on a hit (and a
matching destination port, 0 = any) they draw a random number, and below the entry's threshold
fail the call with ``bpf_set_retval(-errno)``: the process sees the kernel's own error, whatever it
is written in (a static binary, Go, Java), and nothing in the pod holds the rate or the errno (they
live in the map, in the kernel). ``socket()`` works the same way with a ``cgroup/sock_create``
program (``BPF_CGROUP_INET_SOCK_CREATE``: inet sockets only, so local UNIX sockets still open).

The guard's program sits on the guard's cgroup without ``BPF_F_ALLOW_MULTI``, so the kernel lets
no program attach below it; these attach at the cgroup v2 root through ``BPF_LINK_CREATE`` (links
are multi-attach, and the guard's own verdict still runs first). Any other process's connect()
costs one map miss while a fault is armed. Links go away with the last descriptor: on recover
(the map empties, the links close) and when this process ends, a crash included; nothing is
pinned. The programs are written here as BPF instructions and loaded through the ``bpf`` system
call, as the network guard's are: no compiler needed.

:func:`probe` says whether this kernel accepts them (it loads one, attaches nothing) and why not.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from ..network.netguard import _bpf, _insn, cgroup2_root, map_delete, map_update, probe_cgroup_programs
from ..network.netguard import _load as load_program
from ..network.netguard import cgroup_id as cgroup_id  # the node agent and the admin API ask it here

MAP_CREATE, PROG_LOAD, LINK_CREATE = 0, 5, 28
MAP_HASH = 1
PROG_CGROUP_SOCK, PROG_CGROUP_SOCK_ADDR = 9, 18
INET_SOCK_CREATE, INET4_CONNECT, INET6_CONNECT = 2, 10, 11
FN_MAP_LOOKUP, FN_PRANDOM, FN_CGROUP_ID, FN_SET_RETVAL = 1, 7, 80, 187
MAX_TARGETS = 1024
#: what ``describe`` records as the mechanism that ran
MECHANISM = {
    "connect": "cgroup-bpf: cgroup/connect4 + cgroup/connect6 programs with bpf_set_retval, rate and errno in a map",
    "socket": "cgroup-bpf: a cgroup/sock_create program with bpf_set_retval, rate and errno in a map",
}
#: call -> (program type, attach types)
ATTACH = {"connect": (PROG_CGROUP_SOCK_ADDR, (INET4_CONNECT, INET6_CONNECT)),
          "socket": (PROG_CGROUP_SOCK, (INET_SOCK_CREATE,))}


@dataclass(frozen=True)
class ConnectFault:
    """What one pod cgroup meets: fail connect() (to ``port``, 0 = any) with ``errno`` at ``rate``."""

    errno: int
    rate: float
    port: int = 0

    def value(self) -> bytes:
        threshold = min(int(self.rate * 2**32), 2**32 - 1)
        return struct.pack("<IIII", threshold, self.errno, socket.htons(self.port) if self.port else 0, 0)


def program(map_fd: int, *, port_check: bool = True) -> bytes:
    """The connect4/connect6 program (the same code: ``user_port`` is at offset 24 in both); without
    ``port_check``, the sock_create program (its context has no port; entries carry none)."""
    head = [
        _insn(0xBF, dst=6, src=1),  # r6 = ctx
        _insn(0x85, imm=FN_CGROUP_ID),  # r0 = the calling task's cgroup v2 id
        _insn(0x7B, dst=10, src=0, off=-8),  # *(u64 *)(fp - 8) = r0
        _insn(0x18, dst=1, src=1, imm=map_fd), _insn(0, imm=0),  # r1 = map
        _insn(0xBF, dst=2, src=10), _insn(0x07, dst=2, imm=-8),  # r2 = fp - 8
        _insn(0x85, imm=FN_MAP_LOOKUP),
    ]
    fail = [
        _insn(0x61, dst=1, src=7, off=4),  # r1 = entry->errno
        _insn(0x87, dst=1),  # r1 = -r1
        _insn(0x85, imm=FN_SET_RETVAL),
        _insn(0xB7, dst=0, imm=0), _insn(0x95),  # return 0 (the call fails with the retval)
    ]
    decide = [
        _insn(0xBF, dst=7, src=0),  # r7 = entry
        _insn(0x61, dst=8, src=7, off=8),  # r8 = entry->port (network order, 0 = any)
        _insn(0x15, dst=8, off=2, imm=0),  # if r8 == 0 skip the port check
        _insn(0x61, dst=9, src=6, off=24),  # r9 = ctx->user_port
        None,  # if r9 != r8 goto allow (offset patched below)
        _insn(0x85, imm=FN_PRANDOM),  # r0 = a random u32
        _insn(0x61, dst=1, src=7, off=0),  # r1 = entry->threshold
        None,  # if r0 >= r1 goto allow
    ]
    allow = [_insn(0xB7, dst=0, imm=1), _insn(0x95)]
    # every slot is 8 bytes; a jump's offset counts the slots after it
    if not port_check:
        decide = [decide[0], _insn(0x85, imm=FN_PRANDOM), decide[6], None]
    else:
        port_jump = decide.index(None)
        decide[port_jump] = _insn(0x5D, dst=9, src=8, off=len(decide) - port_jump - 1 + len(fail))
    after_lookup = len(decide) + len(fail)
    code = head + [_insn(0x15, dst=0, off=after_lookup, imm=0)]  # if r0 == 0 goto allow
    decide[-1] = _insn(0x3D, dst=0, src=1, off=len(fail))  # if r0 >= threshold (unsigned) goto allow
    return b"".join(code + _patched(decide) + fail + allow)


def _patched(slots: list[bytes | None]) -> list[bytes]:
    """The instructions once every placeholder jump (None) has its offset; one left over is a bug here."""
    done = [insn for insn in slots if insn is not None]
    if len(done) != len(slots):
        raise ValueError("a placeholder jump of the BPF program was left unpatched")
    return done


def _load(insns: bytes, attach_type: int, prog_type: int = PROG_CGROUP_SOCK_ADDR) -> int:
    return load_program(insns, attach_type, prog_type, name=b"sregym_connfail")


def _new_map() -> int:
    return _bpf(MAP_CREATE, struct.pack("<IIIII", MAP_HASH, 8, 16, MAX_TARGETS, 0))


_PROBED: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(available, reason): whether this kernel loads the programs (root, BPF, cgroup v2,
    bpf_set_retval). Cached per process: the kernel does not change under us."""
    global _PROBED

    def load(fds: list[int]) -> None:
        fds.append(_new_map())
        fds.append(_load(program(fds[0]), INET4_CONNECT))
        fds.append(_load(program(fds[0], port_check=False), INET_SOCK_CREATE, PROG_CGROUP_SOCK))

    if _PROBED is None:
        _PROBED = probe_cgroup_programs(load, root_reason="needs root (BPF programs on cgroups)",
                                        refused="a cgroup socket program")
    return _PROBED


class CgroupConnectFaults:
    """The map and, while any entry exists, the programs linked at the cgroup v2 root, for one
    call (``connect``, or ``socket``)."""

    def __init__(self, root: Path | None = None, call: str = "connect") -> None:
        self.call = call
        self.root = root or cgroup2_root()
        self.map_fd = -1
        self.prog_fds: list[int] = []
        self.link_fds: list[int] = []
        self.entries: dict[int, bytes] = {}

    @property
    def attached(self) -> bool:
        return bool(self.link_fds)

    def set(self, faults: dict[int, ConnectFault]) -> None:
        """Make the map hold exactly ``faults`` (cgroup id -> fault); link the programs on the
        first entry, unlink and unload them when none is left."""
        wanted = {cid: fault.value() for cid, fault in faults.items()}
        if not wanted:
            self.close()
            return
        if self.map_fd < 0:
            self.map_fd = _new_map()
        for cid in [c for c in self.entries if c not in wanted]:
            map_delete(self.map_fd, struct.pack("<Q", cid))
            del self.entries[cid]
        for cid, value in wanted.items():
            if self.entries.get(cid) == value:
                continue
            map_update(self.map_fd, struct.pack("<Q", cid), value)
            self.entries[cid] = value
        if not self.link_fds:
            self._attach()

    def _attach(self) -> None:
        if self.root is None:
            raise OSError("no cgroup v2 hierarchy is mounted")
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            prog_type, attach_types = ATTACH[self.call]
            for attach_type in attach_types:
                prog = _load(program(self.map_fd, port_check=self.call == "connect"), attach_type, prog_type)
                self.prog_fds.append(prog)
                self.link_fds.append(_bpf(LINK_CREATE, struct.pack("<IIII", prog, root_fd, attach_type, 0)))
        except OSError:
            self._unlink()
            raise
        finally:
            os.close(root_fd)

    def _unlink(self) -> None:
        for fd in [*self.link_fds, *self.prog_fds]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.link_fds, self.prog_fds = [], []

    def close(self) -> None:
        """Detach (closing the links detaches them) and free the map."""
        self._unlink()
        if self.map_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.map_fd)
        self.map_fd = -1
        self.entries = {}


