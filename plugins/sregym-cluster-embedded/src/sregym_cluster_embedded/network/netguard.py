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
* an app's pod IPs and Service IPs (namespaces labelled ``sregym.io/app``, which the conductor sets
  at deploy): allowed to pods of the same app and of namespaces no app owns (the ingress controller,
  kube-system), refused (EPERM) to every other caller. The caller is the calling task's cgroup: each
  pod's processes run in its own ``pod-<uid>`` directory under the guard's, which a second table
  maps to the pod's app (registered by the node agent before the pod's first process starts);
* the cluster's pod and Service ranges and the nodes' addresses: allowed;
* while some nodes have no pod routes to others (Calico's BGP sessions, bgp.py), an app's pod IP
  entry also names its node's island and every caller its own node's: a pod's ``connect()`` to a
  pod of an island other than its own fails with EHOSTUNREACH (the island is 0, no constraint,
  for Service IPs, host-network pods and whenever all nodes route to each other);
* anything else (the host's own 127.0.0.1 listeners, other clusters, any address outside the
  machine): refused.

Pods of hidden namespaces, the service proxy and the node agent are outside that cgroup: the
workload generator still calls the app and Prometheus still scrapes it. The program is written
here as BPF instructions (a few dozen), loaded through the ``bpf`` system call: no compiler needed.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sregym_core.clusters import app_group, is_hidden_namespace

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
#: callers' table: a pod of no app's namespace reaches every app (the ingress controller, kube-system)
CALLER_ANY = 1
#: the first app group's number; a destination entry this large names the app that owns the address
FIRST_GROUP = 2
FN_GET_CURRENT_CGROUP_ID = 80
FN_SET_RETVAL = 187
#: an entry's and a caller's value: the app group (or verdict) in the low 16 bits, the routing
#: island of the pod's node above them (0: reaches every node)
ISLAND_SHIFT = 16
GROUP_MASK = (1 << ISLAND_SHIFT) - 1
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


def _verdict(callers_fd: int, unreachable: bool = True) -> bytes:
    """r0 points at the entry found: a verdict (0/1), or the app group owning the address, which
    only the same app's callers (and those of no app) may reach. The caller's group comes from the
    callers' table by the calling task's cgroup id; a cgroup it does not know is refused. Above
    the group both values carry their node's routing island: when both are set and differ, there
    is no route (EHOSTUNREACH through ``bpf_set_retval`` when ``unreachable``, else EPERM)."""
    no_route = ([_insn(0xB7, dst=1, imm=-113),  # r1 = -EHOSTUNREACH
                 _insn(0x85, imm=FN_SET_RETVAL)] if unreachable else []) + [_insn(0xB7, dst=0, imm=DENY), _insn(0x95)]
    groups = [
        _insn(0x15, dst=0, off=3, imm=CALLER_ANY),  # a pod of no app: allow
        _insn(0x1D, dst=0, src=7, off=2),  # the same app: allow
        _insn(0xB7, dst=0, imm=DENY), _insn(0x95),
        _insn(0xB7, dst=0, imm=ALLOW), _insn(0x95),
    ]
    ask_caller = b"".join([
        _insn(0x85, imm=FN_GET_CURRENT_CGROUP_ID),  # r0 = the caller's cgroup id
        _insn(0x7B, dst=10, src=0, off=-16),  # *(u64 *)(fp - 16) = r0
        _insn(0x18, dst=1, src=1, imm=callers_fd), _insn(0, imm=0),  # r1 = callers' map
        _insn(0xBF, dst=2, src=10), _insn(0x07, dst=2, imm=-16),  # r2 = fp - 16
        _insn(0x85, imm=1),  # call map_lookup_elem
        _insn(0x15, dst=0, off=10 + len(no_route) + 2, imm=0),  # unknown cgroup: the groups' deny
        _insn(0x61, dst=0, src=0, off=0),  # r0 = the caller's value
        _insn(0xBF, dst=8, src=0), _insn(0x77, dst=8, imm=ISLAND_SHIFT),  # r8 = the caller's island
        _insn(0x57, dst=0, imm=GROUP_MASK),  # r0 = the caller's group
        _insn(0xBF, dst=9, src=7), _insn(0x77, dst=9, imm=ISLAND_SHIFT),  # r9 = the address's island
        _insn(0x57, dst=7, imm=GROUP_MASK),  # r7 = the address's group
        _insn(0x15, dst=9, off=2 + len(no_route), imm=0),  # no island on the address: by group
        _insn(0x15, dst=8, off=1 + len(no_route), imm=0),  # no island on the caller: by group
        _insn(0x1D, dst=9, src=8, off=len(no_route)),  # the same island: by group
        *no_route,
        *groups,
    ])
    return b"".join([
        _insn(0x61, dst=7, src=0, off=0),  # r7 = the entry (the ip is no longer needed)
        _insn(0x25, dst=7, off=3, imm=ALLOW),  # an app group: ask who calls
        # r0 = r7 & 1; exit (the verifier wants a verdict it can see is 0 or 1)
        _insn(0xBF, dst=0, src=7), _insn(0x57, dst=0, imm=1), _insn(0x95),
    ]) + ask_caller


def program(map_fd: int, *, ipv4: bool, callers_fd: int = -1, unreachable: bool = True) -> bytes:
    """The verdict program: (ip, port) entry, else (ip, any port), else the ip's /16, else DENY;
    an entry naming an app group is then decided by the caller's group and island (``_verdict``)."""
    if not ipv4:
        return _insn(0xB7, dst=0, imm=DENY) + _insn(0x95)
    found = _verdict(callers_fd, unreachable)
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


def probe_cgroup_programs(load: Callable[[list[int]], None], *, root_reason: str, refused: str) -> tuple[bool, str]:
    """(available, reason): whether this kernel loads the cgroup programs ``load`` opens (it appends
    each descriptor to the list it is given; all are closed again), as root with cgroup v2."""
    if os.geteuid() != 0:
        return False, root_reason
    if cgroup2_root() is None:
        return False, "no cgroup v2 hierarchy is mounted"
    fds: list[int] = []
    try:
        load(fds)
        return True, ""
    except OSError as exc:
        return False, f"the kernel refused {refused}: {exc.strerror or exc}"
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


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
        #: pod cgroup id (u64) -> the pod's app group, or CALLER_ANY
        self.callers_fd = _bpf(MAP_CREATE, attr)
        self.groups = AppGroups()
        self.prog_fds: list[int] = []
        self.entries: dict[bytes, int] = {}
        self.callers: dict[bytes, int] = {}
        cg_fd = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for attach_type, ipv4 in ((INET4_CONNECT, True), (UDP4_SENDMSG, True), (INET6_CONNECT, False),
                                      (UDP6_SENDMSG, False)):
                try:
                    fd = _load(program(self.map_fd, ipv4=ipv4, callers_fd=self.callers_fd), attach_type)
                except OSError:  # a kernel without bpf_set_retval here (before 5.18): EPERM then
                    fd = _load(program(self.map_fd, ipv4=ipv4, callers_fd=self.callers_fd, unreachable=False),
                               attach_type)
                self.prog_fds.append(fd)
                _bpf(PROG_ATTACH, struct.pack("<IIII", cg_fd, fd, attach_type, 0))
        finally:
            os.close(cg_fd)

    def join(self) -> None:
        """In a pod's forked child, before exec: this process (and its children) join the cgroup."""
        with open(self.procs, "w") as handle:
            handle.write("0")

    def admit(self, pod_cgroup: Path, namespace_labels: dict[str, str] | None, island: int = 0) -> None:
        """Before a pod's first process starts (node agent): its cgroup calls as its namespace's app
        (from its node's routing island: 0 until the next refresh says, no constraint)."""
        cgroup_id = _cgroup_id(pod_cgroup)
        if cgroup_id is not None and self.map_fd >= 0:
            now = {**self.callers, cgroup_id: caller_group(namespace_labels, self.groups) | (island << ISLAND_SHIFT)}
            _sync(self.callers_fd, self.callers, now)
            self.callers = now

    def refresh(self, view: Any, settings: Any, routes: Any = None) -> None:
        """Both tables as the cluster is now (``routes``: bgp.Routes, the pod routes between nodes)."""
        self.update(table(view, settings, self.groups, routes),
                    callers(view, self.cgroup, self.groups, self.callers, routes))

    def update(self, entries: dict[bytes, int], callers_: dict[bytes, int] | None = None) -> None:
        _sync(self.map_fd, self.entries, entries)
        self.entries = dict(entries)
        if callers_ is not None:
            _sync(self.callers_fd, self.callers, callers_)
            self.callers = dict(callers_)

    def close(self) -> None:
        """Release the programs and the table; the directory goes once no process is left in it
        (the node agents call this again after stopping their pods)."""
        if self.map_fd >= 0:
            for fd in [*self.prog_fds, self.map_fd, self.callers_fd]:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.prog_fds, self.map_fd, self.callers_fd = [], -1, -1
        with contextlib.suppress(OSError):
            self.cgroup.rmdir()


def map_update(map_fd: int, key: bytes, value: bytes) -> None:
    """Write one element of a BPF map (``key`` and ``value`` exactly the map's sizes)."""
    kbuf = ctypes.create_string_buffer(key, len(key))
    vbuf = ctypes.create_string_buffer(value, len(value))
    _bpf(MAP_UPDATE, struct.pack("<IIQQQ", map_fd, 0, ctypes.addressof(kbuf), ctypes.addressof(vbuf), 0))


def map_delete(map_fd: int, key: bytes) -> None:
    """Delete one element of a BPF map; one already gone is no error."""
    kbuf = ctypes.create_string_buffer(key, len(key))
    with contextlib.suppress(OSError):
        _bpf(MAP_DELETE, struct.pack("<IIQ", map_fd, 0, ctypes.addressof(kbuf)))


def _sync(map_fd: int, old: dict[bytes, int], new: dict[bytes, int]) -> None:
    """Make the kernel map hold ``new`` (it holds ``old``): delete what went, write what changed."""
    for gone in [k for k in old if k not in new]:
        map_delete(map_fd, gone)
    for k, value in new.items():
        if old.get(k) != value:
            map_update(map_fd, k, struct.pack("<I", value))


class AppGroups:
    """A small number per app group name (FIRST_GROUP and up), the same for the guard's life."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        return self.ids.setdefault(name, FIRST_GROUP + len(self.ids))


def caller_group(namespace_labels: dict[str, str] | None, groups: AppGroups) -> int:
    """What the callers' table says of a pod of a namespace with these labels."""
    name = app_group(namespace_labels)
    return groups.id(name) if name else CALLER_ANY


def cgroup_id(path: Path) -> int | None:
    """A cgroup v2 directory's id (its inode number in cgroupfs), or None when it is gone."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _cgroup_id(path: Path) -> bytes | None:
    """The callers' table key of a cgroup v2 directory: its id, as the kernel's u64."""
    found = cgroup_id(path)
    return None if found is None else struct.pack("<Q", found)


def islands_of(routes: Any) -> dict[str, int]:
    """Node -> routing island while some nodes lack routes to others; empty (no constraint) when
    every node reaches every other or nothing says (bgp.Routes)."""
    if routes is None or not routes.partitioned():
        return {}
    return {node: island & GROUP_MASK for node, island in routes.islands().items()}


def pod_island(pod: dict, islands: dict[str, int]) -> int:
    """The routing island a pod's traffic takes: its node's; 0 for a host-network pod."""
    spec = pod.get("spec") or {}
    return 0 if spec.get("hostNetwork") else islands.get(spec.get("nodeName") or "", 0)


def callers(view: Any, guard_cgroup: Path, groups: AppGroups, known: dict[bytes, int],
            routes: Any = None) -> dict[bytes, int]:
    """The callers' table: every pod cgroup under the guard's, as its pod's namespace (and, while
    routes are partitioned, its node) says; a cgroup whose pod the view does not hold yet keeps
    what the node agent registered (``admit``)."""
    labels = {ns["metadata"]["name"]: ns["metadata"].get("labels") for ns in view.namespaces.list()}
    islands = islands_of(routes)
    namespace_of = {pod["metadata"].get("uid"): pod["metadata"].get("namespace") for pod in view.pods.list()}
    island_of = {pod["metadata"].get("uid"): pod_island(pod, islands) for pod in view.pods.list()}
    out: dict[bytes, int] = {}
    with contextlib.suppress(OSError):
        for directory in guard_cgroup.glob("pod-*"):
            cgroup_id = _cgroup_id(directory)
            if cgroup_id is None:
                continue
            uid = directory.name[len("pod-"):]
            namespace = namespace_of.get(uid)
            if namespace is not None and namespace in labels:
                out[cgroup_id] = caller_group(labels[namespace], groups) | (island_of.get(uid, 0) << ISLAND_SHIFT)
            elif cgroup_id in known:
                out[cgroup_id] = known[cgroup_id]
    return out


def table(view: Any, settings: Any, groups: AppGroups | None = None, routes: Any = None) -> dict[bytes, int]:
    """The verdicts for the cluster as it is now (see the module docstring)."""
    groups = groups or AppGroups()
    islands = islands_of(routes)
    entries: dict[bytes, int] = {}
    for prefix in (getattr(settings, "pod_cidr_prefix", None), getattr(settings, "service_cidr_prefix", None)):
        if prefix:
            entries[key(f"{prefix}.0.0", PREFIX16)] = ALLOW
    for ip in view.node_ips():
        with contextlib.suppress(OSError):
            entries[key(ip, 0)] = ALLOW
    hidden: set[str] = set()
    owner: dict[str, int] = {}  # namespace -> its app group's number
    for ns in view.namespaces.list():
        labels = ns["metadata"].get("labels")
        if is_hidden_namespace(labels):
            hidden.add(ns["metadata"]["name"])
        elif app_group(labels):
            owner[ns["metadata"]["name"]] = caller_group(labels, groups)

    def verdict(namespace: str | None) -> int | None:
        return DENY if namespace in hidden else owner.get(namespace or "")

    for pod in view.pods.list():
        ip = (pod.get("status") or {}).get("podIP")
        value = verdict(pod["metadata"].get("namespace"))
        if ip and value is not None and not (pod.get("spec") or {}).get("hostNetwork"):
            if value >= FIRST_GROUP:  # an app's pod: reached only from its node's island
                value |= pod_island(pod, islands) << ISLAND_SHIFT
            with contextlib.suppress(OSError):
                entries[key(ip, 0)] = value
    for svc in view.services.list():
        value = verdict(svc["metadata"].get("namespace"))
        ip = (svc.get("spec") or {}).get("clusterIP")
        if value is None or not ip or ip == "None":
            continue
        with contextlib.suppress(OSError):
            entries[key(ip, 0)] = value
            if value == DENY:  # a hidden Service: but for the ports it declares reachable
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
