"""Where app pods may connect, enforced by the kernel (root, cgroup v2): the benchmark's hidden
namespaces (workload generator, observability) answer only when they are the ones calling.

Pods share the host's network namespace here, so neither the source address (any 127/8 address
is local) nor the service proxy (a process can dial a pod IP directly) can tell who is calling.
The kernel can: every process of a pod in an ordinary namespace runs in one cgroup v2 directory
per cluster, and a ``cgroup/connect4`` BPF program attached there (also ``sendmsg4`` for
unconnected UDP, ``connect6``/``sendmsg6`` refusing IPv6, which pods do not have) decides each
``connect()`` from a table the network keeps current:

* a hidden namespace's pod IPs and Service IPs: refused (EPERM), except Service ports annotated
  ``sregym.io/app-reachable-ports`` (trace ingestion);
* the cluster's pod and Service ranges and the nodes' addresses: allowed;
* anything else (the host's own 127.0.0.1 listeners, other clusters, any address outside the
  machine): refused.

Pods of hidden namespaces, the service proxy and the node agent are outside that cgroup: the
workload generator still calls the app and Prometheus still scrapes it. The program is written
here as BPF instructions (a dozen), loaded through the ``bpf`` system call: no compiler needed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import logging
import os
import platform
import socket
import struct
from pathlib import Path
from typing import Any

from sregym_core.clusters import is_hidden_namespace

log = logging.getLogger(__name__)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long
_SYS_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280}.get(platform.machine(), 321)
MAP_CREATE, MAP_UPDATE, MAP_DELETE, MAP_NEXT_KEY, PROG_LOAD, PROG_ATTACH = 0, 2, 3, 4, 5, 8
MAP_HASH = 1
PROG_CGROUP_SOCK_ADDR = 18
INET4_CONNECT, INET6_CONNECT, UDP4_SENDMSG, UDP6_SENDMSG = 10, 11, 14, 15
REACHABLE_ANNOTATION = "sregym.io/app-reachable-ports"
PREFIX16 = 0x10000  # the "port" of a /16 range entry (no real port is that large)
ALLOW, DENY = 1, 0
MAX_ENTRIES = 8192


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, 128)
    result = _libc.syscall(_SYS_BPF, cmd, buf, 128)
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"bpf({cmd}): {os.strerror(errno)}")
    return result


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def _lookup(map_fd: int, port_imm: int | None) -> bytes:
    """key = (ip already at fp-8, port) → r0 = value pointer (or 0)."""
    out = b""
    if port_imm is not None:
        out += _insn(0x62, dst=10, off=-4, imm=port_imm)  # *(u32 *)(fp - 4) = port
    out += _insn(0x18, dst=1, src=1, imm=map_fd) + _insn(0, imm=0)  # r1 = map (ld_imm64, pseudo map fd)
    out += _insn(0xBF, dst=2, src=10) + _insn(0x07, dst=2, imm=-8)  # r2 = fp - 8
    out += _insn(0x85, imm=1)  # call map_lookup_elem
    return out


def program(map_fd: int, *, ipv4: bool) -> bytes:
    """The verdict program: (ip, port) entry, else (ip, any port), else the ip's /16, else DENY."""
    if not ipv4:
        return _insn(0xB7, dst=0, imm=DENY) + _insn(0x95)
    # r0 = *(u32 *)r0 & 1; exit (the verifier wants a verdict it can see is 0 or 1)
    found = _insn(0x61, dst=0, src=0, off=0) + _insn(0x57, dst=0, imm=1) + _insn(0x95)
    code = [
        _insn(0xBF, dst=6, src=1),  # r6 = ctx
        _insn(0x61, dst=7, src=6, off=4),  # r7 = ctx->user_ip4
        _insn(0x61, dst=8, src=6, off=24),  # r8 = ctx->user_port
        _insn(0x63, dst=10, src=7, off=-8),  # *(u32 *)(fp - 8) = ip
        _insn(0x63, dst=10, src=8, off=-4),  # *(u32 *)(fp - 4) = port
        # a UDP connect() to 0.0.0.0 sends nothing: glibc's getaddrinfo does it to rank addresses
        # (refusing it makes servers pick IPv6, which pods do not have)
        _insn(0x61, dst=9, src=6, off=32),  # r9 = ctx->type
        _insn(0x55, dst=9, off=3, imm=socket.SOCK_DGRAM),  # if r9 != SOCK_DGRAM skip 3
        _insn(0x55, dst=7, off=2, imm=0),  # if ip != 0.0.0.0 skip 2
        _insn(0xB7, dst=0, imm=ALLOW), _insn(0x95),
    ]
    body = b"".join(code)
    for step, (port, mask) in enumerate(((None, False), (0, False), (PREFIX16, True))):
        part = b""
        if mask:  # the ip's first two octets (network order: the low 16 bits on little endian)
            part += _insn(0xBF, dst=9, src=7) + _insn(0x54, dst=9, imm=0xFFFF) + _insn(0x63, dst=10, src=9, off=-8)
        part += _lookup(map_fd, port)
        body += part + _insn(0x15, dst=0, off=len(found) // 8, imm=0) + found  # if r0 == 0 skip
        del step
    body += _insn(0xB7, dst=0, imm=DENY) + _insn(0x95)
    return body


def _load(insns: bytes, attach_type: int, prog_type: int = PROG_CGROUP_SOCK_ADDR, name: bytes = b"sregym_reach") -> int:
    """Load a cgroup program (the guard's, or a node fault's); a refusal carries the verifier's log."""
    license_ = ctypes.create_string_buffer(b"GPL")
    code = ctypes.create_string_buffer(insns, len(insns))
    log_buf = ctypes.create_string_buffer(8192)
    attr = struct.pack("<IIQQIIQII16sII", prog_type, len(insns) // 8, ctypes.addressof(code),
                       ctypes.addressof(license_), 1, len(log_buf), ctypes.addressof(log_buf), 0, 0,
                       name, 0, attach_type)
    try:
        return _bpf(PROG_LOAD, attr)
    except OSError as exc:
        detail = log_buf.value.decode(errors="replace").strip()[-500:]
        raise OSError(exc.errno, f"{exc.strerror}{': ' + detail if detail else ''}") from None


def key(ip: str, port: int) -> bytes:
    """The table key for ``ip:port`` (port 0: every port; PREFIX16: the ip's /16)."""
    raw = socket.inet_aton(ip)
    if port == PREFIX16:
        raw = raw[:2] + b"\0\0"
        return raw + struct.pack("<I", PREFIX16)
    return raw + struct.pack("<I", socket.htons(port) if port else 0)


def cgroup2_root() -> Path | None:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


class NetGuard:
    """The cgroup, programs and table of one cluster; ``update`` replaces the table's contents."""

    def __init__(self, state_dir: Path) -> None:
        root = cgroup2_root()
        if root is None:
            raise OSError("no cgroup v2 hierarchy mounted")
        instance = hashlib.sha1(str(Path(state_dir).resolve()).encode()).hexdigest()[:8]
        self.cgroup = root / f"sregym-net-{instance}"
        if self.cgroup.exists():  # left by a daemon that died: empty, it goes (with its programs)
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()
        if self.cgroup.exists():  # its pods still run: never share their table
            self.cgroup = root / f"sregym-net-{instance}-{os.getpid()}"
        self.cgroup.mkdir()
        self.procs = str(self.cgroup / "cgroup.procs")
        attr = struct.pack("<IIIII", MAP_HASH, 8, 4, MAX_ENTRIES, 0)
        self.map_fd = _bpf(MAP_CREATE, attr)
        self.prog_fds: list[int] = []
        self.entries: dict[bytes, int] = {}
        cg_fd = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for attach_type, ipv4 in ((INET4_CONNECT, True), (UDP4_SENDMSG, True), (INET6_CONNECT, False),
                                      (UDP6_SENDMSG, False)):
                fd = _load(program(self.map_fd, ipv4=ipv4), attach_type)
                self.prog_fds.append(fd)
                _bpf(PROG_ATTACH, struct.pack("<IIII", cg_fd, fd, attach_type, 0))
        finally:
            os.close(cg_fd)

    def join(self) -> None:
        """In a pod's forked child, before exec: this process (and its children) join the cgroup."""
        with open(self.procs, "w") as handle:
            handle.write("0")

    def update(self, entries: dict[bytes, int]) -> None:
        for old in [k for k in self.entries if k not in entries]:
            kbuf = ctypes.create_string_buffer(old, 8)
            with contextlib.suppress(OSError):
                _bpf(MAP_DELETE, struct.pack("<IIQ", self.map_fd, 0, ctypes.addressof(kbuf)))
        for k, verdict in entries.items():
            if self.entries.get(k) == verdict:
                continue
            kbuf = ctypes.create_string_buffer(k, 8)
            vbuf = ctypes.create_string_buffer(struct.pack("<I", verdict), 4)
            _bpf(MAP_UPDATE, struct.pack("<IIQQQ", self.map_fd, 0, ctypes.addressof(kbuf), ctypes.addressof(vbuf), 0))
        self.entries = dict(entries)

    def close(self) -> None:
        """Release the programs and the table; the directory goes once no process is left in it
        (the node agents call this again after stopping their pods)."""
        if self.map_fd >= 0:
            for fd in [*self.prog_fds, self.map_fd]:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.prog_fds, self.map_fd = [], -1
        with contextlib.suppress(OSError):
            self.cgroup.rmdir()


def table(view: Any, settings: Any) -> dict[bytes, int]:
    """The verdicts for the cluster as it is now (see the module docstring)."""
    entries: dict[bytes, int] = {}
    for prefix in (getattr(settings, "pod_cidr_prefix", None), getattr(settings, "service_cidr_prefix", None)):
        if prefix:
            entries[key(f"{prefix}.0.0", PREFIX16)] = ALLOW
    for ip in view.node_ips():
        with contextlib.suppress(OSError):
            entries[key(ip, 0)] = ALLOW
    hidden = {ns["metadata"]["name"] for ns in view.namespaces.list() if is_hidden_namespace(ns["metadata"].get("labels"))}
    for pod in view.pods.list():
        ip = (pod.get("status") or {}).get("podIP")
        if ip and pod["metadata"].get("namespace") in hidden and not (pod.get("spec") or {}).get("hostNetwork"):
            with contextlib.suppress(OSError):
                entries[key(ip, 0)] = DENY
    for svc in view.services.list():
        if svc["metadata"].get("namespace") not in hidden:
            continue
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            continue
        with contextlib.suppress(OSError):
            entries[key(ip, 0)] = DENY
            reachable = (svc["metadata"].get("annotations") or {}).get(REACHABLE_ANNOTATION, "")
            for port in filter(None, (p.strip() for p in reachable.split(","))):
                if port.isdigit():
                    entries[key(ip, int(port))] = ALLOW
    return entries


def start(state_dir: Path) -> tuple[NetGuard | None, str]:
    """The cluster's guard, or None and why not (not root, no cgroup v2, the kernel refused)."""
    if os.geteuid() != 0:
        return None, "not root"
    if os.environ.get("SREGYM_POD_ISOLATION", "1") == "0":
        return None, "turned off"
    try:
        return NetGuard(state_dir), ""
    except OSError as exc:
        return None, str(exc)
