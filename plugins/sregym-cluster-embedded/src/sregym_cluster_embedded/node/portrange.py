"""A pod's ``net.ipv4.ip_local_port_range``, enforced by the kernel for that pod's processes only.

On a real node the sysctl is per network namespace: the runtime writes it into the pod's own
namespace, and the kernel picks each outgoing connection's source port from that range. Pods here
share the host's network namespace, where the sysctl is global (writing it would change every
process on the machine), so the node does what the kernel would do for the pod, at the pod's
``connect()``:

Every process of an app pod runs in the pod's own cgroup v2 directory (``pod-<uid>``, see
``PodWorker.net_preexec``). A ``cgroup/connect4`` program, linked at the cgroup v2 root as the
kernel syscall faults are (``node/bpffault.py`` says why there), looks the calling task's cgroup
id up in a map of ranges. On a hit, for a socket the application has not bound to a port itself,
it binds the socket with ``bpf_bind()`` to a port of the range (a non-zero port: the kernel checks
it is free, TIME_WAIT included, and reserves it, as ``bind()`` does), trying each port of the range
from a random start. When every port is taken it fails the ``connect()`` with
``bpf_set_retval(-EADDRNOTAVAIL)``: the process sees the kernel's own "Cannot assign requested
address", whatever it is written in (static binaries, Go, Java), and nothing inside the pod holds
the range. TCP and UDP ``connect()`` both go through it (UDP ports are their own space, as in the
kernel).

Where it differs from the kernel's own port choice, on purpose and stated:

* ``bind()`` semantics: a port holds one socket at a time (TIME_WAIT included) unless both
  sockets set ``SO_REUSEADDR`` (gRPC's client sockets do), whatever the destination. The kernel's
  ``connect()`` may give one local port to connections to *different* destinations whatever the
  options, so a pod keeping long-lived connections without ``SO_REUSEADDR`` to more services than
  it has ports fails here sooner than in its own namespace; connections to one destination (and
  TIME_WAIT off loopback, where the kernel does not reuse it by default) behave alike;
* the socket is bound to the pod's IP (or the address the application bound), so the connection
  leaves from the pod's address, as from a real pod's; replicas each get the whole range;
* at most :data:`MAX_ATTEMPTS` ports of a wider range are tried per ``connect()``;
* ``bind()`` to port 0 and unconnected UDP ``sendmsg()`` still take the host's range (the kernel
  lets a program bind only at connect);
* IPv6: pods have none here (the network guard refuses ``connect6``).

The guard's own verdict runs first; a ``connect()`` it (or a fault) already refused is left alone
(``bpf_get_retval``), so a refused call never takes a port. The program is written here as BPF
instructions and loaded through the ``bpf`` system call, as the guard's is: no compiler needed.
Nothing is pinned: the links go with the last descriptor (this process ending, a crash included).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import struct
from pathlib import Path

from ..network.netguard import (
    _bpf,
    _insn,
    cgroup2_root,
    cgroup_id,
    map_delete,
    map_update,
    probe_cgroup_programs,
)
from ..network.netguard import _load as load_program

__all__ = ["MAX_ATTEMPTS", "MECHANISM", "PortRanges", "cgroup_id", "entry", "probe", "program"]

MAP_CREATE, PROG_LOAD, LINK_CREATE = 0, 5, 28
MAP_HASH = 1
PROG_CGROUP_SOCK_ADDR, INET4_CONNECT = 18, 10
FN_MAP_LOOKUP, FN_PRANDOM, FN_BIND, FN_CGROUP_ID, FN_GET_RETVAL, FN_SET_RETVAL = 1, 7, 64, 80, 186, 187
#: offsets in ``struct bpf_sock_addr`` (the context) and ``struct bpf_sock`` (its ``sk``)
CTX_SK, SK_SRC_IP4, SK_SRC_PORT = 64, 24, 44
#: ports tried per connect(): a whole range up to this size
MAX_ATTEMPTS = 256
MAX_PODS = 1024
MECHANISM = ("cgroup-bpf: a cgroup/connect4 program binds the pod's sockets to a port of its range with "
             "bpf_bind() and fails connect() with EADDRNOTAVAIL (bpf_set_retval) when none is free")


class _Asm:
    """Instructions with named jump targets (a jump's offset counts the 8-byte slots after it)."""

    def __init__(self) -> None:
        self.slots: list[bytes | tuple] = []
        self.labels: dict[str, int] = {}

    def __call__(self, *insns: bytes) -> None:
        for insn in insns:
            self.slots += [insn[i:i + 8] for i in range(0, len(insn), 8)]

    def jump(self, code: int, label: str, *, dst: int = 0, src: int = 0, imm: int = 0) -> None:
        self.slots.append((code, dst, src, imm, label))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.slots)

    def assemble(self) -> bytes:
        out = b""
        for at, slot in enumerate(self.slots):
            if isinstance(slot, tuple):
                code, dst, src, imm, label = slot
                slot = _insn(code, dst=dst, src=src, off=self.labels[label] - at - 1, imm=imm)
            out += slot
        return out


def program(map_fd: int, attempts: int = MAX_ATTEMPTS) -> bytes:
    """The connect4 program. Map value: ``u32 low, u32 count, u32 pod_ip (network order), u32 0``."""
    a = _Asm()
    a(_insn(0xBF, dst=6, src=1),  # r6 = ctx
      _insn(0x85, imm=FN_CGROUP_ID),  # r0 = the calling task's cgroup v2 id
      _insn(0x7B, dst=10, src=0, off=-8),  # *(u64 *)(fp - 8) = r0
      _insn(0x18, dst=1, src=1, imm=map_fd), _insn(0, imm=0),  # r1 = map
      _insn(0xBF, dst=2, src=10), _insn(0x07, dst=2, imm=-8),  # r2 = fp - 8
      _insn(0x85, imm=FN_MAP_LOOKUP))
    a.jump(0x15, "allow", dst=0, imm=0)  # not a pod with a range
    a(_insn(0xBF, dst=7, src=0),  # r7 = entry
      _insn(0x85, imm=FN_GET_RETVAL))
    a.jump(0x55, "allow", dst=0, imm=0)  # already refused (the guard, a fault): take no port
    a(_insn(0x79, dst=1, src=6, off=CTX_SK))  # r1 = ctx->sk
    a.jump(0x15, "allow", dst=1, imm=0)
    a(_insn(0x61, dst=2, src=1, off=SK_SRC_PORT))  # r2 = sk->src_port
    a.jump(0x55, "allow", dst=2, imm=0)  # the application bound a port itself: the range is not asked
    a(_insn(0x61, dst=9, src=1, off=SK_SRC_IP4))  # r9 = the address the socket is bound to (0: none)
    a.jump(0x55, "have_ip", dst=9, imm=0)
    a(_insn(0x61, dst=9, src=7, off=8))  # r9 = the pod's IP
    a.label("have_ip")
    # struct sockaddr_in at fp - 24: family, port (set per attempt), address, 8 zero bytes
    a(_insn(0x7A, dst=10, off=-16, imm=0),
      _insn(0x63, dst=10, src=9, off=-20),
      _insn(0x6A, dst=10, off=-24, imm=socket.AF_INET),
      _insn(0x61, dst=8, src=7, off=4),  # r8 = count
      _insn(0x85, imm=FN_PRANDOM),
      _insn(0xBF, dst=9, src=0), _insn(0x9F, dst=9, src=8))  # r9 = start = random % count
    for attempt in range(attempts):
        if attempt:
            a.jump(0xB5, "exhausted", dst=8, imm=attempt)  # if count <= attempt: every port was tried
        a(_insn(0xBF, dst=2, src=9), _insn(0x07, dst=2, imm=attempt))  # r2 = start + attempt
        a.jump(0xAD, f"in_range{attempt}", dst=2, src=8)  # if r2 < count
        a(_insn(0x1F, dst=2, src=8))  # r2 -= count (wrap around)
        a.label(f"in_range{attempt}")
        a(_insn(0x61, dst=1, src=7, off=0), _insn(0x0F, dst=2, src=1),  # r2 += low
          _insn(0xDC, dst=2, imm=16),  # to network order
          _insn(0x6B, dst=10, src=2, off=-22),  # sin_port
          _insn(0xBF, dst=1, src=6), _insn(0xBF, dst=2, src=10), _insn(0x07, dst=2, imm=-24),
          _insn(0xB7, dst=3, imm=16), _insn(0x85, imm=FN_BIND))
        a.jump(0x15, "allow", dst=0, imm=0)  # bound: the kernel's connect() keeps that port
    a.label("exhausted")
    a(_insn(0xB7, dst=1, imm=-errno.EADDRNOTAVAIL), _insn(0x85, imm=FN_SET_RETVAL),
      _insn(0xB7, dst=0, imm=0), _insn(0x95))
    a.label("allow")
    a(_insn(0xB7, dst=0, imm=1), _insn(0x95))
    return a.assemble()


def entry(low: int, high: int, pod_ip: str) -> bytes:
    """The map value for a pod with range ``low``..``high`` (both included) and address ``pod_ip``."""
    ip = socket.inet_aton(pod_ip) if pod_ip else b"\0\0\0\0"
    return struct.pack("<II", low, high - low + 1) + ip + b"\0\0\0\0"


def _new_map() -> int:
    return _bpf(MAP_CREATE, struct.pack("<IIIII", MAP_HASH, 8, 16, MAX_PODS, 0))


def _load(map_fd: int) -> int:
    """Load the program without a verifier log (its log of a few thousand instructions overflows
    any small buffer, which the kernel reports as ENOSPC); a refusal is loaded again for the log."""
    insns = program(map_fd)
    code = ctypes.create_string_buffer(insns, len(insns))
    license_ = ctypes.create_string_buffer(b"GPL")
    attr = struct.pack("<IIQQIIQII16sII", PROG_CGROUP_SOCK_ADDR, len(insns) // 8, ctypes.addressof(code),
                       ctypes.addressof(license_), 0, 0, 0, 0, 0, b"sregym_portrng", 0, INET4_CONNECT)
    try:
        return _bpf(PROG_LOAD, attr)
    except OSError:
        return load_program(insns, INET4_CONNECT, PROG_CGROUP_SOCK_ADDR, name=b"sregym_portrng")


_PROBED: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(available, reason): whether this kernel loads the program (root, cgroup v2, bpf_bind at
    connect, bpf_get/set_retval). Cached per process."""
    global _PROBED

    def load(fds: list[int]) -> None:
        fds.append(_new_map())
        fds.append(_load(fds[0]))

    if _PROBED is None:
        _PROBED = probe_cgroup_programs(load, root_reason="needs root (a BPF program on the pods' cgroups)",
                                        refused="the cgroup/connect4 program")
    return _PROBED


class PortRanges:
    """The map (cgroup id -> range) and, while it holds any pod, the program linked at the cgroup
    v2 root."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cgroup2_root()
        self.map_fd = -1
        self.prog_fd = -1
        self.link_fd = -1
        self.entries: dict[int, bytes] = {}

    @property
    def attached(self) -> bool:
        return self.link_fd >= 0

    def add(self, cgroup_id: int, low: int, high: int, pod_ip: str) -> None:
        if self.map_fd < 0:
            self.map_fd = _new_map()
        value = entry(low, high, pod_ip)
        map_update(self.map_fd, struct.pack("<Q", cgroup_id), value)
        self.entries[cgroup_id] = value
        if self.link_fd < 0:
            self._attach()

    def remove(self, cgroup_id: int) -> None:
        if cgroup_id not in self.entries:
            return
        map_delete(self.map_fd, struct.pack("<Q", cgroup_id))
        del self.entries[cgroup_id]
        if not self.entries:
            self.close()  # no pod has a range: no program on every connect() of the machine

    def _attach(self) -> None:
        if self.root is None:
            raise OSError("no cgroup v2 hierarchy is mounted")
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.prog_fd = _load(self.map_fd)
            self.link_fd = _bpf(LINK_CREATE, struct.pack("<IIII", self.prog_fd, root_fd, INET4_CONNECT, 0))
        except OSError:
            self._unlink()
            raise
        finally:
            os.close(root_fd)

    def _unlink(self) -> None:
        for fd in (self.link_fd, self.prog_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.link_fd = self.prog_fd = -1

    def close(self) -> None:
        """Detach (closing the link detaches it) and free the map."""
        self._unlink()
        if self.map_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.map_fd)
        self.map_fd = -1
        self.entries = {}
