"""Bad blocks for any binary: a FUSE layer over pod volumes, served outside every pod (issue #36).

Where device-mapper is absent (this machine kind has none, so no ``dust`` target), a disk's bad
blocks are made one level up: the node agent mounts, inside a container's own mount namespace, a
FUSE filesystem at the volume's mount path, and ``fusesrv.py`` (a process of the node agent's,
run as root, standard library only) answers it by doing each operation on the volume's host
directory. Reads of the blocks a rule names fail with EIO in the kernel's answer to ``read()``, so
a statically linked program meets them like PostgreSQL does; processes outside the pod (the
host, other pods) read the host directory directly and never do.

How it is put in place, per container start (``container.py``, isolated pods only: the mount is
made as root in the child after the container's root is set up, before podinit drops privileges):

* the parent opens ``/dev/fuse`` (close-on-exec: the pod's programs never hold it) and hands a copy
  to the server at once (SCM_RIGHTS), which waits for the mount;
* the child mounts it at the volume's mount path (``fd=N,rootmode=40000,user_id=0,group_id=0,
  allow_other,default_permissions``: the only options ``/proc/self/mountinfo`` shows, naming no
  block, file or rate); a working directory inside the volume is entered again through the layer
  (the server answers the kernel's INIT on its own; an alarm ends the child should it not);
* once the process runs, the parent closes its copy, so the mount holds the only other reference.

The layer lives exactly as long as the container's mount namespace: when its processes exit the
kernel unmounts it and the server drops the connection; if the node agent dies (crash included)
the server dies with it (PDEATHSIG) and so do the pods. Nothing is mounted on the host.

Which volumes get one (``SREGYM_FUSE_LAYER`` in the cluster's environment): ``faults`` (default)
layers a PersistentVolume only while a ``fuse`` fault record names it, as its volume or one of its
``cover`` volumes (the app's other datastores': the disk faults ask for all of them and restart
them all, so no single pod's mount table names the target), so the datastore pods of a problem
using the fault get it when inject restarts them (a cold start) and keep it, dormant, after
recover until they restart; ``all`` puts a dormant layer on every pod's
PersistentVolumes from the start, so faults arm and disarm without restarting anything (every
read and write of those volumes then goes through the server: see
``benchmarks/bench_fuse_layer.py``); ``off`` never. The rules (which reads fail) are sent to the
server on every fault render and live only in its memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

SERVER = Path(__file__).with_name("fusesrv.py")
ENABLE_ENV = "SREGYM_FUSE_LAYER"
MODES = ("faults", "all", "off")
MECHANISM = ("fuse-badblocks: a FUSE passthrough layer mounted over the volume in the pod's own mount namespace, "
             "served by the node agent; reads of the mapped blocks fail with the errno")
MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
SOURCE = "sregym-volume"
CHDIR_WAIT_S = 30


def mode() -> str:
    value = os.environ.get(ENABLE_ENV, "faults").strip().lower() or "faults"
    return value if value in MODES else "faults"


_PROBED: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(available, reason): root, a FUSE-capable kernel and an openable /dev/fuse."""
    global _PROBED
    if mode() == "off":
        return False, f"off ({ENABLE_ENV}=off in the cluster's environment)"
    if _PROBED is not None:
        return _PROBED
    if os.geteuid() != 0:
        _PROBED = (False, "the node agent is not root: it cannot mount in a pod's namespace")
    else:
        try:
            with open("/proc/filesystems") as handle:
                kernel = any(line.split()[-1:] == ["fuse"] for line in handle)
            if not kernel:
                _PROBED = (False, "the kernel has no FUSE filesystem")
            else:
                os.close(os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC))
                _PROBED = (True, "")
        except OSError as exc:
            _PROBED = (False, f"/dev/fuse cannot be opened: {exc.strerror}")
    return _PROBED


def mount_options(fd: int) -> str:
    """The mount data: the descriptor and ownership the kernel needs, nothing about any fault."""
    return f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions"


def mount(fd: int, target: str, readonly: bool = False) -> None:
    """Mount the layer whose connection is ``fd`` at ``target`` (in the current mount namespace)."""
    flags = MS_NOSUID | MS_NODEV | (MS_RDONLY if readonly else 0)
    if _libc.mount(SOURCE.encode(), target.encode(), b"fuse", flags, mount_options(fd).encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount fuse on {target}: {os.strerror(err)}")


Planned = list[tuple[int, str, str, bool]]  # (fuse fd, container path, host directory, read-only)


def plan_for(worker: Any, pod: dict, spec: dict, context: Any) -> Planned:
    """The layers a container gets (isolated containers only: elsewhere the child switches user
    before our mount could run, or has no namespace of its own to mount in)."""
    layers = getattr(worker.agent.nodes, "fuse_layers", None)
    if layers is None or worker.hidden or getattr(context, "sandbox", None) is None or context.lookup is None:
        return []
    return layers.plan(pod, context.lookup.mounts, worker.readonly_mounts(spec))


def with_layers(preexec: Callable[[], None], layers: Planned) -> Callable[[], None]:
    """The child-side setup, then the layers mounted over their volumes (inside the container's
    root, still root). A layer that cannot be mounted leaves the plain volume: the container starts."""
    mounts = [(fd, target, readonly) for fd, target, _host, readonly in layers]

    def run() -> None:
        preexec()
        mounted = []
        for fd, target, readonly in mounts:
            with contextlib.suppress(OSError):
                mount(fd, target, readonly)
                mounted.append(target.rstrip("/") or "/")
        cwd = os.getcwd()
        if any(cwd == t or cwd.startswith(t + "/") for t in mounted):
            # the working directory was entered before the layer covered it: enter it again
            # through the layer (the server already holds the connection; should it not answer,
            # the alarm ends this child instead of the node agent waiting on it)
            signal.alarm(CHDIR_WAIT_S)
            with contextlib.suppress(OSError):
                os.chdir(cwd)
            signal.alarm(0)
    return run


def hand_over(worker: Any, pod: dict, layers: Planned) -> None:
    """The container's process runs: its layers' connections go to the server (emptying ``layers``)."""
    if layers:
        worker.agent.nodes.fuse_layers.started(pod["metadata"].get("uid", ""), layers)
        layers.clear()


def discard(layers: Planned) -> None:
    """Close the connections of layers never handed over (the container did not start)."""
    for fd, *_ in layers:
        with contextlib.suppress(OSError):
            os.close(fd)
    layers.clear()


def _server_preexec() -> None:
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with the node agent


class FuseLayers:
    """The node agent's side: which volumes get a layer, the server process, the rules."""

    def __init__(self, wanted: Callable[[dict, str], bool] | None = None) -> None:
        #: (pod, host directory of a volume) -> whether the container gets a layer over it
        self.wanted = wanted or (lambda pod, host: False)
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.rules: dict[str, list] = {}
        #: pod uid -> host directories layered in its containers (while the pod exists)
        self.layered: dict[str, set[str]] = {}

    # ------------------------------------------------------------ container start

    def plan(self, pod: dict, mounts: dict[str, str], readonly: set[str]) -> list[tuple[int, str, str, bool]]:
        """(fuse fd, container path, host directory, read-only) for each volume of this container
        that gets a layer; the fds are open in the parent, close-on-exec."""
        out: list[tuple[int, str, str, bool]] = []
        for path, host in sorted(mounts.items()):
            if not os.path.isdir(host):
                continue
            real = os.path.realpath(host)
            try:
                if not self.wanted(pod, real):
                    continue
                fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
            except Exception:  # noqa: BLE001 - a layer must never keep a container from starting
                log.exception("preparing a FUSE layer for %s failed", path)
                continue
            try:
                # the server gets the connection first: it answers the kernel's INIT as soon as
                # the child mounts it, whatever the node agent is doing meanwhile
                self._send({"add": (pod.get("metadata") or {}).get("uid", ""), "root": real}, [os.dup(fd)])
            except OSError:
                log.exception("handing a FUSE layer to its server failed")
                os.close(fd)
                continue
            out.append((fd, path, real, path in readonly or path.rstrip("/") in readonly))
        return out

    def started(self, pod_uid: str, planned: list[tuple[int, str, str, bool]]) -> None:
        """The container's process runs (its layers mounted): close our copies of the connections,
        so an unmount ends them, and remember which volumes of the pod are layered."""
        for fd, _path, host, _ro in planned:
            with contextlib.suppress(OSError):
                os.close(fd)
            self.layered.setdefault(pod_uid, set()).add(host)

    # ------------------------------------------------------------ server

    def _ensure(self) -> socket.socket:
        if self.proc is not None and self.proc.poll() is None and self.sock is not None:
            return self.sock
        if self.sock is not None:
            # its layers' mounts are gone with it (the kernel aborts their connections)
            log.warning("the FUSE layer server exited (%s); starting it again", self.proc and self.proc.returncode)
            self.sock.close()
            self.layered.clear()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", str(SERVER), str(theirs.fileno())],
                                         pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=_server_preexec)
        finally:
            theirs.close()
        self.sock = ours
        if self.rules:
            socket.send_fds(ours, [json.dumps({"rules": self.rules}).encode()], [])
        return ours

    def _send(self, message: dict, fds: list[int] | None = None) -> None:
        sock = self._ensure()
        try:
            socket.send_fds(sock, [json.dumps(message).encode()], fds or [])
        finally:
            for fd in fds or ():
                with contextlib.suppress(OSError):
                    os.close(fd)

    def set_rules(self, rules: dict[str, list], present: set[str] | None = None) -> None:
        """``{pod uid: [rule, ...]}`` (see fusesrv.Rule); sent only when it changed. ``present``:
        the pods that still exist (the others' entries are dropped)."""
        if present is not None:
            for uid in [u for u in self.layered if u not in present]:
                del self.layered[uid]
        if rules == self.rules:
            return
        self.rules = rules
        if self.proc is None and not self.layered:
            return  # no layer yet: the server gets the rules when it starts
        try:
            self._send({"rules": rules})
        except OSError:
            log.exception("sending rules to the FUSE layer server failed")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            self.proc = None
        self.layered.clear()
