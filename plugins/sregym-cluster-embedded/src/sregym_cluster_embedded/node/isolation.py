"""Pods as a boundary: per container a root filesystem, PID/UTS/IPC namespaces, a non-root uid,
the container runtime's capability set and no new privileges (root only).

What a container sees (built in the forked child, before exec, then ``pivot_root`` into it):

* the image's files: the host's ``/usr``, ``/lib*``, ``/bin``, ``/sbin`` read-only; ``/etc`` as an
  overlay (the host's is the read-only lower layer, writes land in the container's own layer) with
  every file a non-root user could not read on the host masked (``/etc/shadow`` becomes a shadow
  file with every account locked); the interpreter and the read-only package directories the
  image's command needs (never the rest of the checkout: no tests, problem files, results,
  ``SREGYM_HOME`` or kubeconfigs), the preloaded shims;
* the pod's volumes at their mount paths, private ``/tmp``, ``/run``, ``/var``, ``/root``;
* a minimal ``/dev`` (null, zero, full, random, urandom, tty, its own ``pts``, ``shm``), a read-only
  ``/sys``, and its own ``/proc``, which the container's PID 1 (``podinit``) mounts in the new PID
  namespace (only the container's processes, the runtime's masked and read-only paths).

The command runs as ``securityContext.runAsUser`` / the image's user / 65534 (nobody), with the
runtime's default capabilities minus NET_RAW and MKNOD (pods share the host's network namespace
and there is no device cgroup) and PR_SET_NO_NEW_PRIVS. ``kubectl exec`` joins the same namespaces
and runs as the same user through ``podinit exec``.

Without root this cannot be done (no mount or PID namespaces for us): the node agent then runs
pods as before and says so (see ``NodeSet.isolation_warning``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import os
import platform
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ContainerConfigError
from .mountns import bind_volume, contained

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x04000000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
MNT_DETACH = 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}.get(platform.machine(), 155)
_libc.syscall.restype = ctypes.c_long

INIT_PATH = "/.sregym/init"  # where podinit sits in every container (as docker-init does)
BIN_PATH = "/.sregym/bin"  # the image's named programs (first on $PATH)
DEFAULT_UID = 65534
#: the images' own system directories, read-only
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")

CAPABILITIES = {
    "CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
    "SETUID": 7, "SETPCAP": 8, "LINUX_IMMUTABLE": 9, "NET_BIND_SERVICE": 10, "NET_BROADCAST": 11,
    "NET_ADMIN": 12, "NET_RAW": 13, "IPC_LOCK": 14, "IPC_OWNER": 15, "SYS_MODULE": 16, "SYS_RAWIO": 17,
    "SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_PACCT": 20, "SYS_ADMIN": 21, "SYS_BOOT": 22, "SYS_NICE": 23,
    "SYS_RESOURCE": 24, "SYS_TIME": 25, "SYS_TTY_CONFIG": 26, "MKNOD": 27, "LEASE": 28, "AUDIT_WRITE": 29,
    "AUDIT_CONTROL": 30, "SETFCAP": 31, "MAC_OVERRIDE": 32, "MAC_ADMIN": 33, "SYSLOG": 34, "WAKE_ALARM": 35,
    "BLOCK_SUSPEND": 36, "AUDIT_READ": 37, "PERFMON": 38, "BPF": 39, "CHECKPOINT_RESTORE": 40,
}
#: containerd's default set
RUNTIME_DEFAULT = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID", "SETFCAP",
                   "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE")
#: what a container gets unless it adds more: the default set without the two that reach beyond the
#: pod here (raw sockets on the shared host network namespace; device nodes without a device cgroup)
NODE_DEFAULT = tuple(c for c in RUNTIME_DEFAULT if c not in ("NET_RAW", "MKNOD"))


def _mask(names) -> int:
    return sum(1 << CAPABILITIES[n] for n in names)


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    caps: int = _mask(NODE_DEFAULT)

    def init_args(self, mode: str) -> list[str]:
        groups = ",".join(str(g) for g in self.groups) or "-"
        return [INIT_PATH, mode, str(self.uid), str(self.gid), groups, format(self.caps, "x"), "--"]

    @property
    def home(self) -> str:
        if self.uid == 0:
            return "/root"
        try:
            return pwd.getpwuid(self.uid).pw_dir
        except KeyError:
            return "/"


def _own_caps() -> int:
    """The node agent's own effective capabilities: all a privileged container can be given (a host
    may lack some, e.g. CAP_SYS_RESOURCE on the CI's VM; asking for more fails the container)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16) & _mask(CAPABILITIES)
    except (OSError, ValueError):
        pass
    return _mask(NODE_DEFAULT)


def identity(pod: dict, container: dict, image_user: int | None, *, benchmark_own: bool = False) -> Identity:
    """uid/gid/groups/capabilities for a container, as the kubelet and runtime derive them.

    ``benchmark_own``: the pod is in one of the benchmark's hidden namespaces (its own machinery,
    which no agent identity can create pods in). There, and only there, ``privileged: true`` gets
    every capability, as on a real node: the fault loader DaemonSet (``bpf-daemonset``) needs
    them to load BPF programs on the host's cgroups. Anywhere else the node grants no host
    privilege, whatever the pod asks (Pod Security admission refuses it first)."""
    pod_sc = pod.get("spec", {}).get("securityContext") or {}
    sc = {**pod_sc, **(container.get("securityContext") or {})}
    uid = sc.get("runAsUser")
    uid = int(uid if uid is not None else (image_user if image_user is not None else DEFAULT_UID))
    if sc.get("runAsNonRoot") and uid == 0:
        meta = pod.get("metadata", {})
        raise ContainerConfigError(
            f'container has runAsNonRoot and image will run as root (pod: "{meta.get("name")}_'
            f'{meta.get("namespace")}({meta.get("uid")})", container: {container.get("name")})')
    gid = sc.get("runAsGroup")
    if gid is None:
        try:
            gid = pwd.getpwuid(uid).pw_gid
        except KeyError:
            gid = 0
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or []]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    if benchmark_own and sc.get("privileged") is True:
        return Identity(uid=uid, gid=int(gid), groups=tuple(dict.fromkeys(groups)), caps=_own_caps())
    caps = set(NODE_DEFAULT)
    wanted = sc.get("capabilities") or {}
    drops = {str(c).upper().removeprefix("CAP_") for c in wanted.get("drop") or []}
    caps = set() if "ALL" in drops else caps - drops
    # adds only from the runtime's default set: the embedded node never grants host privileges
    caps |= {c for c in (str(c).upper().removeprefix("CAP_") for c in wanted.get("add") or [])
             if c in RUNTIME_DEFAULT}
    return Identity(uid=uid, gid=int(gid), groups=tuple(dict.fromkeys(groups)), caps=_mask(caps))


# ---------------------------------------------------------------- podinit and the host's /etc


def build_init(shared_dir: Path) -> Path | None:
    """The compiled podinit (cached by source hash), or None without a C compiler."""
    source = Path(__file__).with_name("podinit.c").read_bytes()
    target = shared_dir / f"podinit-{hashlib.sha256(source).hexdigest()[:12]}"
    if target.exists():
        return target
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    shared_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    result = subprocess.run([gcc, "-O2", "-o", str(tmp), str(Path(__file__).with_name("podinit.c"))],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        return None
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


@functools.lru_cache(maxsize=1)
def etc_masks() -> tuple[tuple[str, bool], ...]:
    """(path, is_dir) under /etc that a non-root user cannot read on the host: hidden in pods."""
    out: list[tuple[str, bool]] = []
    for top, dirs, files in os.walk("/etc"):
        for name in list(dirs):
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if (mode & 0o005) != 0o005 and not os.path.islink(path):
                out.append((path, True))
                dirs.remove(name)
        for name in files:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.islink(path) and not (st.st_mode & 0o004):
                out.append((path, False))
    return tuple(out)


def locked_accounts(kind: str) -> str:
    """A harmless /etc/shadow (or gshadow): every account of the host, locked, no hash."""
    source = "/etc/passwd" if kind == "shadow" else "/etc/group"
    lines = []
    try:
        with open(source) as handle:
            for line in handle:
                name = line.split(":", 1)[0].strip()
                if name:
                    lines.append(f"{name}:*:19000:0:99999:7:::" if kind == "shadow" else f"{name}:*::")
    except OSError:
        pass
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the mount plan


@dataclass
class Mount:
    source: str
    target: str  # path inside the container
    kind: str  # "bind" | "ro" | "overlay" | "tmpfs" | "sysfs" | "devpts"
    is_dir: bool = True
    data: str = ""
    volume: bool = False  # a pod volume's directory or file: bound through mountns.safe_source


@dataclass
class Sandbox:
    """The root filesystem and namespaces of one container; ``enter`` runs in the forked child."""

    fsroot: str
    mounts: list[Mount] = field(default_factory=list)
    hostname: str = ""

    def enter(self, cwd: str) -> None:
        if _libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        root = self.fsroot
        _mount(root, root, None, MS_BIND)
        for m in self.mounts:
            target = contained(root, m.target)  # symlinks resolved inside the container, never the host
            if not os.path.lexists(target):
                if m.is_dir:
                    os.makedirs(target, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "a").close()  # noqa: SIM115 - an empty mountpoint file
            if m.kind == "overlay":
                _mount("overlay", target, "overlay", MS_NOSUID, m.data)
            elif m.kind in ("tmpfs", "sysfs", "devpts"):
                flags = MS_NOSUID | MS_NOEXEC | (MS_RDONLY if m.kind == "sysfs" else 0)
                flags |= 0 if m.kind == "devpts" else MS_NODEV  # pty nodes must open
                _mount(m.kind, target, m.kind, flags, m.data or None)
            else:
                bind_flags = MS_BIND | (MS_REC if m.kind == "bind" else 0)
                if m.volume:
                    bind_volume(m.source, target, bind_flags)
                else:
                    _mount(m.source, target, None, bind_flags)
                flags = MS_REMOUNT | MS_BIND | MS_NOSUID
                flags |= MS_NOEXEC if m.kind == "dev" else MS_NODEV
                flags |= MS_RDONLY if m.kind == "ro" else 0
                _mount(None, target, None, flags)
        for link, target in DEV_LINKS:
            with contextlib.suppress(OSError):
                os.symlink(target, root + link)
        if self.hostname:
            name = self.hostname.encode()[:64]
            _libc.sethostname(name, len(name))
        os.chdir(root)
        if _libc.syscall(_SYS_PIVOT_ROOT, b".", b".") != 0:
            raise OSError(ctypes.get_errno(), "pivot_root")
        if _libc.umount2(b".", MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), "umount old root")
        os.chdir("/")
        os.chdir(cwd if os.path.isdir(cwd) else "/")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(source.encode() if source else None, target.encode(), fstype.encode() if fstype else None,
                   flags, data.encode() if data else None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


DEV_LINKS = (("/dev/ptmx", "pts/ptmx"), ("/dev/fd", "/proc/self/fd"), ("/dev/stdin", "/proc/self/fd/0"),
             ("/dev/stdout", "/proc/self/fd/1"), ("/dev/stderr", "/proc/self/fd/2"))
_TIOCSPTLCK, _TIOCGPTPEER = 0x40045431, 0x5441


def open_pty(pid: int) -> tuple[int, int]:
    """(master, slave) of a new pseudo-terminal in a running container's own /dev/pts (so ``tty``
    inside names it), opened from the host through the container's root."""
    import fcntl
    import struct
    master = os.open(f"/proc/{pid}/root/dev/pts/ptmx", os.O_RDWR | os.O_NOCTTY)
    try:
        fcntl.ioctl(master, _TIOCSPTLCK, struct.pack("i", 0))
        slave = fcntl.ioctl(master, _TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        os.close(master)
        raise
    return master, slave


NAMESPACES = (("mnt", CLONE_NEWNS), ("uts", CLONE_NEWUTS), ("ipc", CLONE_NEWIPC), ("pid_for_children", CLONE_NEWPID))


def open_namespaces(pid: int) -> list[tuple[int, int]]:
    """(fd, type) of a running container's namespaces, from its relay process (``podinit run``)."""
    fds = []
    try:
        for name, kind in NAMESPACES:
            fds.append((os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY), kind))
    except OSError:
        for fd, _ in fds:
            os.close(fd)
        raise
    return fds


async def open_namespaces_once_ready(pid: int, alive: Callable[[], bool], wait: float = 10.0) -> list[tuple[int, int]]:
    """:func:`open_namespaces`, waiting while the relay lives but has not forked the container's
    PID 1 yet: until it has, ``pid_for_children`` does not open (ENOENT). A postStart hook runs that
    early; on a loaded machine the window once lasted long enough to fail the hook, whose failure
    kills the container."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return open_namespaces(pid)
        except FileNotFoundError:
            if not alive() or time.monotonic() >= deadline:
                raise
        await asyncio.sleep(0.02)


def join(fds: list[tuple[int, int]], cwd: str) -> None:
    """In an exec'd child: enter the container's namespaces (the next child is in its PID namespace)."""
    for fd, kind in fds:
        if _libc.setns(fd, kind) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    os.chdir("/")
    os.chdir(cwd if os.path.isdir(cwd) else "/")


class Planner:
    """Builds a container's :class:`Sandbox` from its volumes, image paths and env (in the parent)."""

    def __init__(self, init_binary: Path, shared: Path) -> None:
        self.init_binary = str(init_binary)
        self.shared = shared
        shared.mkdir(parents=True, exist_ok=True)
        self.empty_dir = shared / "empty"
        self.empty_dir.mkdir(exist_ok=True)
        self.empty_dir.chmod(0o555)
        self.empty_file = shared / "empty-file"
        self.empty_file.touch(exist_ok=True)
        self.empty_file.chmod(0o444)
        self.shadow: dict[str, str] = {}
        for kind in ("shadow", "gshadow"):
            path = shared / f"locked-{kind}"
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(locked_accounts(kind))
            tmp.chmod(0o444)
            tmp.replace(path)  # other clusters may be reading it
            self.shadow[kind] = str(path)
        self.runtime_paths = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)} | {sys.prefix})

    def plan(self, *, container_root: Path, volumes: dict[str, str], readonly: set[str], files: dict[str, str],
             image_paths: list[str], hostname: str, ro_binds: dict[str, str] | None = None) -> Sandbox:
        fsroot = container_root / "fsroot"
        shutil.rmtree(fsroot, ignore_errors=True)
        fsroot.mkdir(parents=True)
        fsroot.chmod(0o755)
        rootfs = container_root / "rootfs"
        layers = container_root / "layers"
        mounts: list[Mount] = []
        # the image's system directories, as the host lays them out (merged /usr: symlinks)
        for name in SYSTEM_DIRS:
            host = "/" + name
            if os.path.islink(host):
                os.symlink(os.readlink(host), fsroot / name)
            elif os.path.isdir(host):
                mounts.append(Mount(host, host, "ro"))
        upper, work = layers / "etc-upper", layers / "etc-work"
        for d in (upper, work):
            d.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount("overlay", "/etc", "overlay", data=f"lowerdir=/etc,upperdir={upper},workdir={work}"))
        for path, is_dir in etc_masks():
            name = os.path.basename(path)
            source = self.shadow[name.rstrip("-")] if name.rstrip("-") in self.shadow else (
                str(self.empty_dir) if is_dir else str(self.empty_file))
            mounts.append(Mount(source, path, "ro", is_dir=is_dir))
        # the writable parts of the image: private per container
        for name, mode in (("tmp", 0o1777), ("run", 0o755), ("var", 0o755), ("root", 0o755), ("var/tmp", 0o1777)):
            writable = rootfs / name
            writable.mkdir(parents=True, exist_ok=True)
            writable.chmod(mode)
        (rootfs / "var" / "lib").mkdir(exist_ok=True)
        if not os.path.lexists(rootfs / "var" / "run"):
            os.symlink("../run", rootfs / "var" / "run")
        for name in ("tmp", "run", "var", "root"):
            mounts.append(Mount(str(rootfs / name), "/" + name, "bind"))
        mounts += [Mount("tmpfs", "/dev", "tmpfs", data="mode=755,size=64k"),
                   Mount("devpts", "/dev/pts", "devpts", data="newinstance,ptmxmode=0666,mode=620"),
                   Mount("tmpfs", "/dev/shm", "tmpfs", data="mode=1777,size=256m")]
        for dev in ("null", "zero", "full", "random", "urandom", "tty"):
            mounts.append(Mount("/dev/" + dev, "/dev/" + dev, "dev", is_dir=False))
        mounts.append(Mount("sysfs", "/sys", "sysfs"))
        (fsroot / "proc").mkdir()
        mounts.append(Mount(self.init_binary, INIT_PATH, "ro", is_dir=False))
        # the interpreter and packages the image's command runs from, read-only
        bound: list[str] = []
        for path in [*self.runtime_paths, *image_paths]:
            real = os.path.realpath(path) if os.path.islink(path) and not os.path.isdir(path) else path
            if not os.path.exists(real) or any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound) \
                    or real.startswith(("/usr/", "/etc/", "/bin/", "/sbin/", "/lib")):
                continue
            bound.append(real)
            mounts.append(Mount(real, real, "ro", is_dir=os.path.isdir(real)))
            for hidden in ("problems", "tests"):  # never the ground truth or the benchmark's tests
                inner = os.path.join(real, hidden)
                if os.path.isdir(inner):
                    mounts.append(Mount(str(self.empty_dir), inner, "ro"))
        for path, host in files.items():
            mounts.append(Mount(host, path, "ro", is_dir=False))
        for path, host in (ro_binds or {}).items():
            mounts.append(Mount(host, path, "ro", is_dir=os.path.isdir(host)))
        for path, host in volumes.items():
            mounts.append(Mount(host, path, "ro" if path in readonly else "bind", is_dir=os.path.isdir(host),
                                volume=True))
        # parents before children; stable otherwise (volumes after image paths at the same depth)
        order = {id(m): i for i, m in enumerate(mounts)}
        mounts.sort(key=lambda m: (m.target.rstrip("/").count("/"), order[id(m)]))
        _check_mountpoints(fsroot, mounts)
        return Sandbox(fsroot=str(fsroot), mounts=mounts, hostname=hostname)


def _check_mountpoints(fsroot: Path, mounts: list[Mount]) -> None:
    """A mountpoint that would have to be created inside a read-only system directory cannot be:
    that directory becomes an overlay (the container's own writable layer) instead."""
    readonly_system = {m.target: m for m in mounts if m.kind == "ro" and m.target.strip("/") in SYSTEM_DIRS}
    for m in mounts:
        top = "/" + m.target.strip("/").split("/")[0]
        if top in readonly_system and m.target != top and not os.path.lexists(m.target):
            sys_mount = readonly_system.pop(top)
            upper = fsroot.parent / "layers" / f"{top.strip('/')}-upper"
            work = fsroot.parent / "layers" / f"{top.strip('/')}-work"
            upper.mkdir(parents=True, exist_ok=True)
            work.mkdir(parents=True, exist_ok=True)
            sys_mount.kind = "overlay"
            sys_mount.data = f"lowerdir={top},upperdir={upper},workdir={work}"


def works(planner: Planner, state_dir: Path) -> bool:
    """Whether a container can really be started isolated here (probed once per cluster)."""
    probe = Path(state_dir) / "isolation-probe"
    try:
        volume = probe / "volume"
        volume.mkdir(parents=True, exist_ok=True)
        (volume / "ok").write_text("ok\n")
        sandbox = planner.plan(container_root=probe / "c", volumes={"/probe/deep": str(volume)}, readonly=set(),
                               files={}, image_paths=[], hostname="probe")
        argv = [*Identity(uid=DEFAULT_UID, gid=DEFAULT_UID).init_args("run"), "/bin/sh", "-c",
                "cat /probe/deep/ok; id -u; grep -q ':[*]:19000:' /etc/shadow && echo masked"]
        result = subprocess.run(argv, capture_output=True, timeout=15, preexec_fn=lambda: sandbox.enter("/"))
        return result.stdout.split() == [b"ok", str(DEFAULT_UID).encode(), b"masked"]
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def available() -> bool:
    """Root, a kernel with mount and PID namespaces, and not turned off ($SREGYM_POD_ISOLATION=0)."""
    return (os.geteuid() == 0 and os.environ.get("SREGYM_POD_ISOLATION", "1") != "0"
            and os.path.exists("/proc/self/ns/pid"))
