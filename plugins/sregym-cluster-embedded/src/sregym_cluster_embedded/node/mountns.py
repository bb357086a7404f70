"""Exact container paths with a private mount namespace (root only; see pathmap.py otherwise).

Each container gets a root directory ``fsroot`` under its sandbox. In the child, between fork and
exec, we ``unshare(CLONE_NEWNS)``, make every mount private (nothing propagates to the host), bind
the host's top-level directories into ``fsroot`` at the same names, bind each volume and private
directory at its exact ``mountPath``, bind the pod's ``/etc/hosts`` and ``/etc/resolv.conf``, then
``chroot(fsroot)``. So ``/var/lib/postgresql/data`` or ``/etc/app/app.conf`` are the real paths,
while every host path (binaries, the venv, the state dir) stays visible where it was.

A mountpoint missing on the host is not created on the host: under a new top-level name it is a
directory of ``fsroot`` itself; deeper (``/etc/app``) it is made in the overlay's upper layer.
Only under the top-level directory holding the state dir (bound, not overlaid) is it made on the host. ``kubectl exec`` joins the namespace with ``setns`` and the same chroot.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_BIND, MS_REC, MS_PRIVATE = 1, 4096, 16384, 1 << 18
SKIP_TOP_LEVEL = {"lost+found", "boot", "media", "mnt", "old_root"}


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    result = _libc.mount(source.encode() if source else None, target.encode(),
                         fstype.encode() if fstype else None, flags, data.encode() if data else None)
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def available() -> bool:
    """Mount namespaces need root (CAP_SYS_ADMIN); $SREGYM_NODE_MOUNTNS=0 turns them off."""
    return os.geteuid() == 0 and os.environ.get("SREGYM_NODE_MOUNTNS", "1") != "0" and os.path.exists("/proc/self/ns/mnt")


def _submount_roots() -> set[str]:
    """Top-level names under which the host has further mounts (those need recursive binds)."""
    roots = set()
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                target = line.split()[4]
                parts = target.strip("/").split("/")
                if len(parts) >= 2 or (parts[0] and target != "/"):
                    roots.add(parts[0])
    except OSError:
        pass
    return roots


def essential_paths(state_dir: Path) -> list[str]:
    """Host paths the runtime itself needs inside a container: system dirs, this Python and
    package, the state dir (shim, volumes)."""
    import sys
    paths = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc/ld.so.cache", "/proc", "/dev", "/sys",
             sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
             os.path.dirname(os.path.realpath(sys.executable)), str(Path(__file__).resolve().parent),
             str(Path(state_dir).resolve())}
    return sorted(paths)


def shadows(container_paths: list[str], essential: list[str]) -> str | None:
    """The first container path that would hide an essential host path, if any."""
    for path in container_paths:
        inside = resolve_in_root(path).rstrip("/") or "/"
        for needed in essential:
            if needed == inside or needed.startswith(inside + "/") or inside == "/":
                return path
    return None


def contained(root: str, path: str) -> str:
    """``root + path`` with every symlink on the way resolved as inside ``root`` (an absolute link
    target starts again at ``root``), so no container path can name a host directory."""
    out = ""
    parts = [p for p in path.split("/") if p]
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            out = out.rsplit("/", 1)[0]
            continue
        if name == ".":
            continue
        candidate = f"{out}/{name}"
        real = root + candidate
        if os.path.islink(real) and hops < 40:
            hops += 1
            link = os.readlink(real)
            parts = [p for p in link.split("/") if p] + parts
            if link.startswith("/"):
                out = ""
            continue
        out = candidate
    return root + (out or "/")


def safe_source(path: str) -> int:
    """An ``O_PATH`` descriptor of ``path``, opened from ``/`` one component at a time without following a symlink:
    what a volume mount binds (through ``/proc/self/fd/N``), so the path checked in the parent is the one mounted
    even if a pod's process swaps a component for a symlink in between (CVE-2021-25741). OSError (ELOOP) when a
    component is a symlink."""
    import errno
    import stat

    fd = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        for part in [p for p in path.split("/") if p]:
            nxt = os.open(part, os.O_PATH | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(errno.ELOOP, f"a symlink in a volume's path: {path}")
        return fd
    except BaseException:
        os.close(fd)
        raise


def bind_volume(source: str, target: str, flags: int) -> None:
    """Bind volume directory or file ``source`` at ``target`` through :func:`safe_source`."""
    fd = safe_source(source)
    try:
        _mount(f"/proc/self/fd/{fd}", target, None, flags)
    finally:
        os.close(fd)


def resolve_in_root(path: str) -> str:
    """``path`` with symlinks resolved as the container sees them (the host's layout)."""
    return contained("", path)


class MountPlan:
    """The mounts of one container, computed in the parent; ``enter`` runs in the child.

    Top-level host directories are overlays (the host directory is the read-only lower layer,
    writes land in the container's own upper layer, so a container cannot change the host's
    /etc or /usr), except those holding further mounts (/proc, /sys, /dev ...) and the one
    holding the state dir, which are bound as they are."""

    def __init__(self, fsroot: Path, layers: Path, mounts: dict[str, str], files: dict[str, str]) -> None:
        self.fsroot = str(fsroot)
        fsroot.mkdir(parents=True, exist_ok=True)
        fsroot.chmod(0o755)
        recursive = _submount_roots()
        state_top = self.fsroot.strip("/").split("/")[0]
        self.top: list[tuple[str, str, str, str]] = []  # (name, "overlay"|"bind"|"rbind", upper, work)
        for entry in sorted(os.listdir("/")):
            if entry in SKIP_TOP_LEVEL:
                continue
            host = os.path.join("/", entry)
            target = os.path.join(self.fsroot, entry)
            if os.path.islink(host):
                if not os.path.lexists(target):
                    os.symlink(os.readlink(host), target)
                continue
            if not os.path.isdir(host):
                continue
            os.makedirs(target, exist_ok=True)
            if entry in recursive:
                self.top.append((entry, "rbind", "", ""))
            elif entry == state_top:
                self.top.append((entry, "bind", "", ""))
            else:
                upper, work = layers / "upper" / entry, layers / "work" / entry
                upper.mkdir(parents=True, exist_ok=True)
                work.mkdir(parents=True, exist_ok=True)
                self.top.append((entry, "overlay", str(upper), str(work)))
        # the directory holding the state dir first, so later binds are not copied into it
        self.top.sort(key=lambda item: item[0] != state_top)
        modes = {name: mode for name, mode, _, _ in self.top}
        self.binds: list[tuple[str, str, bool]] = []  # (host source, container path, is_dir)
        self.volume_sources = set(mounts.values())  # bound through safe_source
        for container_path, host_path in sorted({**mounts, **files}.items(), key=lambda kv: kv[0].count("/")):
            inside = resolve_in_root(container_path)
            is_dir = os.path.isdir(host_path)
            first = inside.strip("/").split("/")[0]
            self.binds.append((host_path, inside, is_dir))
            if os.path.lexists(inside) or modes.get(first) == "overlay":
                continue  # exists, or enter() makes it in the overlay's upper layer
            if inside.count("/") == 1 or first not in modes:  # a new top-level name: inside fsroot
                mountpoint = Path(self.fsroot + inside)
            else:  # under a directory bound as it is: the mountpoint has to exist on the host
                mountpoint = Path(inside)
            if is_dir:
                mountpoint.mkdir(parents=True, exist_ok=True)
            else:
                mountpoint.parent.mkdir(parents=True, exist_ok=True)
                mountpoint.touch(exist_ok=True)

    def enter(self, cwd: str) -> None:
        """In the child: new mount namespace, the plan's mounts, chroot, chdir."""
        if _libc.unshare(CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        for name, mode, upper, work in self.top:
            target = f"{self.fsroot}/{name}"
            if mode == "overlay":
                try:
                    _mount("overlay", target, "overlay", 0, f"lowerdir=/{name},upperdir={upper},workdir={work}")
                    continue
                except OSError:
                    pass  # e.g. the state dir sits on a filesystem overlayfs cannot use as upper
            _mount("/" + name, target, None, MS_BIND | (MS_REC if mode == "rbind" else 0))
        for source, inside, is_dir in self.binds:
            target = self.fsroot + inside
            if not os.path.lexists(target):
                if is_dir:
                    os.makedirs(target, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "a").close()  # noqa: SIM115 - an empty mountpoint file
            if source in self.volume_sources:
                bind_volume(source, target, MS_BIND | MS_REC)
            else:
                _mount(source, target, None, MS_BIND | MS_REC)
        os.chroot(self.fsroot)
        os.chdir(cwd if os.path.isdir(cwd) else "/")


def join(ns_fd: int, fsroot: str, cwd: str) -> None:
    """In an exec'd child: join a running container's mount namespace and root."""
    if _libc.setns(ns_fd, CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNS) failed")
    os.chroot(fsroot)
    os.chdir(cwd if os.path.isdir(cwd) else "/")


def works(state_dir: Path) -> bool:
    """Whether a container can really be started in a mount namespace here (probed once)."""
    if not available():
        return False
    import shutil
    import subprocess
    probe = Path(state_dir) / "mountns-probe"
    try:
        volume = probe / "volume"
        volume.mkdir(parents=True, exist_ok=True)
        (volume / "ok").write_text("ok")
        plan = MountPlan(probe / "fsroot", probe / "layers", {"/sregym-probe/deep": str(volume)}, {})
        result = subprocess.run(["/bin/cat", "/sregym-probe/deep/ok"], capture_output=True, timeout=10,
                                preexec_fn=lambda: plan.enter("/"))
        return result.stdout == b"ok"
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)
