"""The node loader of ``bpf-daemonset``: cgroup BPF programs that fail ``connect()`` (or ``socket()``)
of chosen pods, run by a privileged DaemonSet's pod on every node (see ``daemonset.py``).

Run as ``python3 bpfloader.py <rule.json>``, standard library only: the DaemonSet mounts this file
and the rule from a ConfigMap in a hidden namespace into a stock Python image. The rule is
``{"call": "connect" | "socket", "errno": <number>, "rate": <0..1>, "port": <0 = any>,
"pods": [<pod uid>, ...]}``.

What it does, on its own node:

* finds the host's cgroup v2 hierarchy: the ``--cgroup-root`` given (the DaemonSet mounts the
  host's ``/sys/fs/cgroup`` there), its ``unified`` directory on a hybrid host, else a cgroup2
  mount it can see, else it mounts one itself (a privileged container in the host's cgroup
  namespace sees the whole hierarchy);
* creates a hash map (cgroup id -> threshold, errno, port) and loads a ``cgroup/connect4`` and
  ``cgroup/connect6`` program (``cgroup/sock_create`` for ``socket``) that look the calling
  task's cgroup id up and, on a hit, below the rate's threshold, fail the call with
  ``bpf_set_retval(-errno)``; links them at the hierarchy's root (``BPF_LINK_CREATE``: several
  programs may share a cgroup, nothing else on the node is displaced);
* every half second finds the target pods' cgroups by their UID (``pod<uid>``,
  ``kubepods-…-pod<uid with _>.slice``, ``pod-<uid>``) and every cgroup below them (a container's
  own scope), and keeps exactly those in the map; a target pod that is gone drops out.

Nothing is pinned: the map, the programs and the links live as long as this process's descriptors.
When the DaemonSet is deleted (the fault's recover, the run's end) the pod's exit detaches them;
a crash does the same, and the restarted container attaches afresh. The errno and rate live only
in the ConfigMap (hidden namespace) and in the kernel's map, never in a target pod.

It prints one JSON line per change (``{"armed": <cgroups in the map>, ...}``) and keeps
``/tmp/sregym-bpf-ready`` while it has made its first pass (the pod's readiness).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import socket
import struct
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine(), 321)
MAP_CREATE, MAP_UPDATE, MAP_DELETE, PROG_LOAD, LINK_CREATE = 0, 2, 3, 5, 28
MAP_HASH = 1
PROG_CGROUP_SOCK, PROG_CGROUP_SOCK_ADDR = 9, 18
INET_SOCK_CREATE, INET4_CONNECT, INET6_CONNECT = 2, 10, 11
FN_MAP_LOOKUP, FN_PRANDOM, FN_CGROUP_ID, FN_SET_RETVAL = 1, 7, 80, 187
CGROUP2_MAGIC = 0x63677270
#: call -> (program type, attach types)
ATTACH = {"connect": (PROG_CGROUP_SOCK_ADDR, (INET4_CONNECT, INET6_CONNECT)),
          "socket": (PROG_CGROUP_SOCK, (INET_SOCK_CREATE,))}
MAX_ENTRIES = 4096
READY = "/tmp/sregym-bpf-ready"
PRIVATE_MOUNT = "/tmp/sregym-cgroup2"
INTERVAL_S = 0.5


def bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, 128)
    result = _libc.syscall(SYS_BPF, cmd, buf, 128)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf({cmd}): {os.strerror(err)}")
    return int(result)


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(map_fd: int, *, port_check: bool) -> bytes:
    """r0 = cgroup id -> lookup; miss: allow. Hit: (port matches or entry's port 0) and a random
    u32 below the threshold: set_retval(-errno), return 0; else allow (return 1). ``user_port``
    is at offset 24 of both connect contexts; sock_create has no port (its entries carry none)."""
    head = [insn(0xBF, dst=6, src=1),  # r6 = ctx
            insn(0x85, imm=FN_CGROUP_ID),  # r0 = the calling task's cgroup v2 id
            insn(0x7B, dst=10, src=0, off=-8),  # *(u64 *)(fp - 8) = r0
            insn(0x18, dst=1, src=1, imm=map_fd), insn(0, imm=0),  # r1 = map
            insn(0xBF, dst=2, src=10), insn(0x07, dst=2, imm=-8),  # r2 = fp - 8
            insn(0x85, imm=FN_MAP_LOOKUP)]
    fail = [insn(0x61, dst=1, src=7, off=4),  # r1 = entry->errno
            insn(0x87, dst=1),  # r1 = -r1
            insn(0x85, imm=FN_SET_RETVAL),
            insn(0xB7, dst=0, imm=0), insn(0x95)]
    allow = [insn(0xB7, dst=0, imm=1), insn(0x95)]
    draw = [insn(0x85, imm=FN_PRANDOM), insn(0x61, dst=1, src=7, off=0)]  # r0 = random, r1 = threshold
    decide = [insn(0xBF, dst=7, src=0)]  # r7 = entry
    if port_check:
        decide += [insn(0x61, dst=8, src=7, off=8),  # r8 = entry->port (network order, 0 = any)
                   insn(0x15, dst=8, off=2, imm=0),  # if r8 == 0: skip the port check
                   insn(0x61, dst=9, src=6, off=24)]  # r9 = ctx->user_port
        # if r9 != r8: allow (past the draw, its jump and fail)
        decide.append(insn(0x5D, dst=9, src=8, off=len(draw) + 1 + len(fail)))
    decide += draw + [insn(0x3D, dst=0, src=1, off=len(fail))]  # if r0 >= threshold: allow
    code = head + [insn(0x15, dst=0, off=len(decide) + len(fail), imm=0)]  # miss: allow
    return b"".join(code + decide + fail + allow)


def load(insns: bytes, prog_type: int, attach_type: int) -> int:
    license_ = ctypes.create_string_buffer(b"GPL")
    code = ctypes.create_string_buffer(insns, len(insns))
    log_buf = ctypes.create_string_buffer(8192)
    attr = struct.pack("<IIQQIIQII16sII", prog_type, len(insns) // 8, ctypes.addressof(code),
                       ctypes.addressof(license_), 1, len(log_buf), ctypes.addressof(log_buf), 0, 0,
                       b"sregym_dsfault", 0, attach_type)
    try:
        return bpf(PROG_LOAD, attr)
    except OSError as exc:
        detail = log_buf.value.decode(errors="replace").strip()[-300:]
        raise OSError(exc.errno, f"{exc.strerror}{': ' + detail if detail else ''}") from None


def entry(rule: dict) -> bytes:
    threshold = min(int(float(rule["rate"]) * 2**32), 2**32 - 1)
    port = int(rule.get("port") or 0) if rule["call"] == "connect" else 0
    return struct.pack("<IIII", threshold, int(rule["errno"]), socket.htons(port) if port else 0, 0)


# ------------------------------------------------------------------ the host's cgroup v2 hierarchy

def _is_cgroup2(path: str) -> bool:
    buf = ctypes.create_string_buffer(256)  # struct statfs (120 bytes on 64-bit Linux): f_type first
    return _libc.statfs(path.encode(), buf) == 0 and struct.unpack_from("<q", buf, 0)[0] == CGROUP2_MAGIC


def cgroup_root(given: str | None) -> str:
    """The host's cgroup v2 root (see the module docstring for the order); OSError when none."""
    candidates = [given, given and os.path.join(given, "unified")] if given else []
    for line in open("/proc/self/mounts").read().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            candidates.append(parts[1])
    for path in candidates:
        if path and os.path.isdir(path) and _is_cgroup2(path):
            return path
    os.makedirs(PRIVATE_MOUNT, exist_ok=True)
    if _libc.mount(b"none", PRIVATE_MOUNT.encode(), b"cgroup2", 0, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"no cgroup v2 hierarchy is visible and mounting one failed: {os.strerror(err)}")
    return PRIVATE_MOUNT


def pod_cgroups(root: str, uids: list[str]) -> dict[int, str]:
    """cgroup id -> path of every cgroup of the target pods on this node (the pod's and below)."""
    names = {u: (u, u.replace("-", "_")) for u in uids}
    found: dict[int, str] = {}
    for top, dirs, _files in os.walk(root):
        for name in list(dirs):
            if any(n in name for forms in names.values() for n in forms):
                dirs.remove(name)  # everything below it is the pod's: walked here, not again
                pod_dir = os.path.join(top, name)
                for sub, _subdirs, _subfiles in os.walk(pod_dir):
                    try:
                        found[os.stat(sub).st_ino] = sub
                    except OSError:
                        pass  # gone meanwhile
    return found


# ------------------------------------------------------------------ the loop

class Loader:
    def __init__(self, rule: dict, root: str) -> None:
        if rule.get("call") not in ATTACH:
            raise ValueError(f"call must be one of {', '.join(ATTACH)}")
        self.rule, self.root = rule, root
        self.value = entry(rule)
        self.fds: list[int] = []
        self.map_fd = bpf(MAP_CREATE, struct.pack("<IIIII", MAP_HASH, 8, 16, MAX_ENTRIES, 0))
        self.fds.append(self.map_fd)
        self.entries: dict[int, str] = {}
        prog_type, attach_types = ATTACH[rule["call"]]
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for attach_type in attach_types:
                prog = load(program(self.map_fd, port_check=rule["call"] == "connect"), prog_type, attach_type)
                self.fds.append(prog)
                self.fds.append(bpf(LINK_CREATE, struct.pack("<IIII", prog, root_fd, attach_type, 0)))
        finally:
            os.close(root_fd)

    def _key(self, cgroup_id: int) -> ctypes.Array:
        return ctypes.create_string_buffer(struct.pack("<Q", cgroup_id), 8)

    def sync(self) -> bool:
        """Make the map hold exactly the target pods' cgroups here; whether it changed."""
        wanted = pod_cgroups(self.root, list(self.rule.get("pods") or []))
        for cgroup_id in [c for c in self.entries if c not in wanted]:
            key = self._key(cgroup_id)
            try:
                bpf(MAP_DELETE, struct.pack("<IIQ", self.map_fd, 0, ctypes.addressof(key)))
            except OSError:
                pass
            del self.entries[cgroup_id]
        added = [c for c in wanted if c not in self.entries]
        for cgroup_id in added:
            key, value = self._key(cgroup_id), ctypes.create_string_buffer(self.value, 16)
            bpf(MAP_UPDATE, struct.pack("<IIQQQ", self.map_fd, 0, ctypes.addressof(key), ctypes.addressof(value), 0))
            self.entries[cgroup_id] = wanted[cgroup_id]
        return bool(added) or len(wanted) != len(self.entries)

    def close(self) -> None:
        for fd in reversed(self.fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def say(**fields: object) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def main(argv: list[str]) -> int:
    args = list(argv)
    given = None
    if "--cgroup-root" in args:
        at = args.index("--cgroup-root")
        given = args[at + 1]
        del args[at:at + 2]
    with open(args[0]) as handle:
        rule = json.load(handle)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    try:
        root = cgroup_root(given)
        loader = Loader(rule, root)
    except (OSError, ValueError) as exc:
        say(error=str(exc))
        return 2
    say(attached=rule["call"], root=root)
    last = None
    try:
        while not stop:
            loader.sync()
            count = len(loader.entries)
            if count != last:
                say(armed=count, cgroups=sorted(set(loader.entries.values()))[:8])
                last = count
                with open(READY, "w") as ready:
                    ready.write(str(count))
            time.sleep(INTERVAL_S)
    finally:
        loader.close()  # the links go with the descriptors: detached
        try:
            os.unlink(READY)
        except OSError:
            pass
        say(detached=rule["call"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
