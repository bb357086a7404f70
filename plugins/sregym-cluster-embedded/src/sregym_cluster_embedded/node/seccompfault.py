"""File syscall faults decided outside the process: a seccomp user-notification supervisor.

The node agent installs, in a container's main process just before it starts, a seccomp filter
that hands the syscalls of the chosen operations (``fsync``: fsync/fdatasync; ``read``: read,
pread64, readv, preadv; ``write``: write, pwrite64, writev, pwritev; ``open``: open, creat,
openat, openat2) to a supervisor (``SECCOMP_RET_USER_NOTIF``) and lets every other syscall through
untouched. The filter cannot be added to a running process, so it is there from the start,
dormant: while no fault is armed the supervisor answers "continue" and the kernel runs the call as
usual. With a fault armed the supervisor (``seccompsup.py``, its own process, so the API server's
work never delays a call) fails the pod's calls with the errno at the rate, on files under the
given paths: the process meets the kernel's own error, static binaries included, and nothing in
the pod holds the rule.

For ``open`` the path is an argument in the caller's memory, which the supervisor reads
(``/proc/<pid>/mem``) while the call waits. Another thread of the caller could change it after
that read (time of check, time of use): the supervisor only ever decides to fail the call or to
let the kernel run it as the caller asked, and never opens anything on the caller's behalf, so
the race can only make the caller's own open fail or escape the fault, never reach a file the
caller could not open itself.

What a dormant filter costs is one round trip per filtered call (8 µs at the median), and on a
loaded host almost all of it is the supervisor's wake-up: an ordinary process waits its turn behind
every runnable one (``benchmarks/bench_syscall_faults.py``: initdb's 993 fsyncs took 17 s instead of
10-11 s at a load average of ~200; with six busy loops beside the caller, an fsync's p99 was 26 ms
with the supervisor at nice -10, 2.1 ms real-time). So (1) the supervisor runs as a real-time (SCHED_FIFO) process where the
node may do that (root), and is woken ahead of ordinary work; (2) the filter names only the
operations a fault may need for that pod; (3) only pods that may need it get one (``mode``):

* ``problems`` (the default): the targets of installed problems whose faults run through the
  supervisor (``node/supervision_plan.py``), plus pods matching ``supervise`` records put
  through the fault hooks before the pods start;
* ``all`` (``SREGYM_SYSCALL_SUPERVISOR=1``): every app container, for ``fsync``;
* ``off`` (``SREGYM_SYSCALL_SUPERVISOR=0``).

A rule for a pod without a filter covering the operation runs another way (the fault hooks ask
:meth:`SupervisorClient.covers`). ``kubectl exec`` processes are not under the filter (they are
not the container's processes). The listener of each container goes to the supervisor over a
socket pair (SCM_RIGHTS). The node agent keeps a copy of each (dropped once the container's
processes are gone): if the supervisor dies, the filtered calls wait (a listener still open)
until the fault hooks' next pass (0.5 s) starts it again and hands it every listener, instead of
failing with ENOSYS for good.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import platform
import select
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long

#: architecture -> (AUDIT_ARCH, seccomp syscall number, {name: number} of the calls a filter may name)
_ARCH = {
    "x86_64": (0xC000003E, 317, {"fsync": 74, "fdatasync": 75, "read": 0, "pread64": 17, "readv": 19, "preadv": 295,
                                 "write": 1, "pwrite64": 18, "writev": 20, "pwritev": 296,
                                 "open": 2, "creat": 85, "openat": 257, "openat2": 437}),
    # aarch64 has no open or creat: its C libraries open through openat
    "aarch64": (0xC00000B7, 277, {"fsync": 82, "fdatasync": 83, "read": 63, "pread64": 67, "readv": 65, "preadv": 69,
                                  "write": 64, "pwrite64": 68, "writev": 66, "pwritev": 70,
                                  "openat": 56, "openat2": 437}),
}
SECCOMP_SET_MODE_FILTER, FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
#: keep speculative store bypass as it was: by default the kernel turns its mitigation (SSBD) on for
#: every process under a seccomp filter, which slows all of its code, filtered call or not
FILTER_FLAG_SPEC_ALLOW = 1 << 2
RET_ALLOW, RET_USER_NOTIF = 0x7FFF0000, 0x7FC00000
PR_SET_NO_NEW_PRIVS = 38
SUPERVISOR = Path(__file__).with_name("seccompsup.py")
#: listeners the id table has room for (one u64 each): far more containers than a node runs
ID_SLOTS = 4096
#: the operations a rule may name, and the syscalls each covers
CALLS = {"fsync": ("fsync", "fdatasync"), "read": ("read", "pread64", "readv", "preadv"),
         "write": ("write", "pwrite64", "writev", "pwritev"), "open": ("open", "creat", "openat", "openat2")}
#: the opening syscalls: which argument is the directory descriptor (None: the caller's working
#: directory) and which the path, a pointer into the caller's memory the supervisor reads
PATH_ARGS = {"open": (None, 0), "creat": (None, 0), "openat": (0, 1), "openat2": (0, 1)}
MECHANISM = ("seccomp-supervisor: a filter installed at container start hands the call to a supervisor outside the "
             "pod (user notification)")
#: the mechanism's name in sregym_core.mechanisms
NAME = "seccomp-supervisor"


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, 0, 0, k)


def _jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def syscall_numbers(calls: Iterable[str]) -> dict[int, str]:
    """This architecture's syscall number -> operation, for the operations ``calls``."""
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return {}
    return {spec[2][name]: call for call in calls for name in CALLS.get(call, ()) if name in spec[2]}


def path_arguments() -> dict[int, tuple[int | None, int]]:
    """This architecture's opening syscall number -> (directory descriptor argument, path argument)."""
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return {}
    return {spec[2][name]: where for name, where in PATH_ARGS.items() if name in spec[2]}


def filter_program(calls: Iterable[str] = ("fsync",)) -> bytes | None:
    """The classic BPF filter: this architecture's syscalls of ``calls`` notify, everything else
    runs (a handful of comparisons on the syscall number: the cost of a call the filter does not
    name)."""
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return None
    audit_arch, _nr, _calls = spec
    numbers = sorted(syscall_numbers(calls))
    if not numbers:
        return None
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    code = [_stmt(ld_w_abs, 4)]  # A = seccomp_data.arch
    code.append(_jump(jeq_k, audit_arch, 0, len(numbers) + 1))  # another ABI: allow
    code.append(_stmt(ld_w_abs, 0))  # A = seccomp_data.nr
    for index, number in enumerate(numbers):
        code.append(_jump(jeq_k, number, len(numbers) - index, 0))  # -> notify
    code.append(_stmt(ret_k, RET_ALLOW))
    code.append(_stmt(ret_k, RET_USER_NOTIF))
    return b"".join(code)


def install(send_fd: int, calls: Iterable[str] = ("fsync",)) -> None:
    """In a container's forked child, before exec: load the filter for ``calls`` and send its
    listener over ``send_fd``. Failing here must not keep the container from starting: it just has
    no filter."""
    program = filter_program(calls)
    spec = _ARCH.get(platform.machine())
    if program is None or spec is None:
        return
    if os.geteuid() != 0:  # without CAP_SYS_ADMIN the kernel wants no_new_privs first
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    insns = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("<HxxxxxxQ", len(program) // 8, ctypes.addressof(insns))
    fprog_buf = ctypes.create_string_buffer(fprog, len(fprog))
    listener = _libc.syscall(spec[1], SECCOMP_SET_MODE_FILTER, FILTER_FLAG_NEW_LISTENER | FILTER_FLAG_SPEC_ALLOW,
                             fprog_buf)
    if listener < 0:  # a kernel without the flag (before 4.17)
        listener = _libc.syscall(spec[1], SECCOMP_SET_MODE_FILTER, FILTER_FLAG_NEW_LISTENER, fprog_buf)
    if listener < 0:
        return
    try:
        sender = socket.socket(fileno=send_fd)
        try:
            socket.send_fds(sender, [b"l"], [int(listener)])
        finally:
            sender.detach()
    finally:
        os.close(int(listener))


def install_uniform() -> None:
    """In a container's forked child: a filter that lets every call through, no listener. Every app
    container then runs under a seccomp filter, as pods with the RuntimeDefault profile do, so
    ``Seccomp:`` in /proc/<pid>/status does not single out the pods a fault may target."""
    spec = _ARCH.get(platform.machine())
    if spec is None or os.geteuid() != 0:
        return  # without root it would need no_new_privs, which would change what the pod's setuid programs do
    program = _stmt(0x06, RET_ALLOW)
    insns = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("<HxxxxxxQ", 1, ctypes.addressof(insns))
    fprog_buf = ctypes.create_string_buffer(fprog, len(fprog))
    if _libc.syscall(spec[1], SECCOMP_SET_MODE_FILTER, FILTER_FLAG_SPEC_ALLOW, fprog_buf) < 0:
        _libc.syscall(spec[1], SECCOMP_SET_MODE_FILTER, 0, fprog_buf)


def receive_listener(sock: socket.socket) -> int | None:
    """The listener a child sent before it exec'd (None when it could not install the filter)."""
    sock.setblocking(False)
    try:
        _data, fds, _flags, _addr = socket.recv_fds(sock, 16, 1)
    except OSError:
        return None
    return fds[0] if fds else None


ENABLE_ENV = "SREGYM_SYSCALL_SUPERVISOR"


def mode() -> str:
    """``problems`` (default), ``all`` (``SREGYM_SYSCALL_SUPERVISOR=1``) or ``off`` (``=0``)."""
    value = os.environ.get(ENABLE_ENV, "").strip().lower()
    if value in ("1", "all", "true", "yes"):
        return "all"
    if value in ("0", "off", "false", "no"):
        return "off"
    return "problems"


def enabled() -> bool:
    return mode() != "off"


def unavailable_reason() -> str:
    if not enabled():
        return f"off ({ENABLE_ENV}=0 in the cluster's environment)"
    return probe()[1] or "no node agents"


_PROBED: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(available, reason): whether a child can install the filter and hand its listener over."""
    global _PROBED
    if _PROBED is not None:
        return _PROBED
    if filter_program() is None:
        _PROBED = (False, f"no seccomp filter for architecture {platform.machine()}")
        return _PROBED
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        child_fd = child.fileno()
        subprocess.run(["true"], preexec_fn=lambda: install(child_fd), timeout=30, check=False)  # noqa: PLW1509
        listener = receive_listener(parent)
        if listener is None:
            _PROBED = (False, "the kernel refused a seccomp filter with a user-notification listener")
        else:
            os.close(listener)
            _PROBED = (True, "")
    except (OSError, subprocess.SubprocessError) as exc:
        _PROBED = (False, f"seccomp probe failed: {exc}")
    finally:
        parent.close()
        child.close()
    return _PROBED


def _supervisor_preexec() -> None:
    """Dies with the node agent; as root, a real-time process: every filtered call of a pod waits
    for its answer, and on a loaded host an ordinary process's wake-up is the whole cost. It only
    runs when woken by a filtered call and does a few system calls per answer (the kernel's
    real-time throttling still leaves 5 % of each CPU to everything else)."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.geteuid() == 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except (OSError, AttributeError):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, -10)


class SupervisorClient:
    """The node agent's side: starts the supervisor, hands it listeners and rules, and says which
    operations a starting pod's filter names (``select(pod)``: () for none, no filter)."""

    def __init__(self, select: Callable[[dict], Iterable[str]] | None = None) -> None:
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.rules: dict[str, list] = {}
        self.select = select
        #: our copy of every live listener: fd -> (pod uid, the operations its filter names)
        self.listeners: dict[int, tuple[str, tuple[str, ...]]] = {}
        #: the id table the supervisor writes each received call's id into, one slot per listener, so a
        #: supervisor started again can answer a call the dead one left waiting (seccompsup.py)
        self.ids_fd = -1
        self.slots: dict[int, int] = {}  # listener fd -> slot

    def filter_calls(self, pod: dict) -> tuple[str, ...]:
        """The operations the filter of ``pod``'s containers names (() for no filter)."""
        try:
            calls = ("fsync",) if self.select is None else tuple(c for c in CALLS if c in set(self.select(pod)))
        except Exception:  # noqa: BLE001 - a bad record must not keep a container from starting
            log.exception("choosing the seccomp filter of a pod failed; it starts without one")
            return ()
        return calls if filter_program(calls) is not None else ()

    def covers(self, pod_uid: str, call: str) -> bool:
        """Whether every live container filter of the pod names ``call`` (and it has one)."""
        ops = [calls for uid, calls in self.listeners.values() if uid == pod_uid]
        return bool(ops) and all(call in calls for calls in ops)

    def _ensure(self) -> socket.socket:
        if self.proc is not None and self.proc.poll() is None and self.sock is not None:
            return self.sock
        again = self.sock is not None
        if self.sock is not None:
            log.warning("the seccomp supervisor exited (%s); starting it again", self.proc and self.proc.returncode)
            self.sock.close()
        if self.ids_fd < 0:
            self.ids_fd = os.memfd_create("sregym-seccomp-ids", os.MFD_CLOEXEC)
            os.ftruncate(self.ids_fd, ID_SLOTS * 8)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(  # noqa: PLW1509 - the preexec only sets the death signal and priority
                [sys.executable, "-I", str(SUPERVISOR), str(theirs.fileno()), str(self.ids_fd)],
                pass_fds=(theirs.fileno(), self.ids_fd),
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_supervisor_preexec)
        finally:
            theirs.close()
        self.sock = ours
        self._send({"syscalls": {str(nr): call for nr, call in syscall_numbers(CALLS).items()},
                    "path_args": {str(nr): list(where) for nr, where in path_arguments().items()}})
        if self.rules:
            self._send({"rules": self.rules})
        for fd, (uid, _calls) in list(self.listeners.items()):
            self._send({"add": uid, "slot": self._slot(fd), "rescue": again}, [fd])
        return ours

    def _slot(self, listener: int) -> int | None:
        """The listener's slot in the id table (None when all are taken: no rescue for it)."""
        if listener not in self.slots:
            used = set(self.slots.values())
            slot = next((i for i in range(ID_SLOTS) if i not in used), None)
            if slot is None:
                return None
            os.pwrite(self.ids_fd, bytes(8), slot * 8)  # a slot used before holds another listener's id
            self.slots[listener] = slot
        return self.slots[listener]

    def _send(self, message: dict, fds: list[int] | None = None) -> None:
        sock = self._ensure()
        socket.send_fds(sock, [json.dumps(message).encode()], fds or [])

    def add(self, listener: int, pod_uid: str, calls: Iterable[str] = ("fsync",)) -> None:
        """Hand a container's listener over (keeping a copy until its processes are gone)."""
        try:
            sock = self._ensure()  # a supervisor started here gets the listeners known before this one
            self.listeners[listener] = (pod_uid, tuple(calls))
            socket.send_fds(sock, [json.dumps({"add": pod_uid, "slot": self._slot(listener)}).encode()], [listener])
        except OSError:
            self.listeners[listener] = (pod_uid, tuple(calls))  # the next start hands it over
            log.exception("handing a seccomp listener to the supervisor failed")

    def check(self) -> None:
        """Drop the copies of listeners whose processes have all exited; start the supervisor
        again if it died (it gets every listener and the rules)."""
        if self.listeners:
            poller = select.poll()
            for fd in self.listeners:
                poller.register(fd, select.POLLHUP)
            for fd, events in poller.poll(0):
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    self.listeners.pop(fd, None)
                    self.slots.pop(fd, None)
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if self.proc is not None and self.proc.poll() is not None:
            try:
                self._ensure()
            except OSError:
                log.exception("starting the seccomp supervisor again failed")

    def set_rules(self, rules: dict[str, list]) -> None:
        """``{pod uid: [[errno, rate, [path prefixes], [operations]], ...]}`` (no operations: fsync);
        sent only when it changed."""
        if rules == self.rules:
            return
        self.rules = rules
        try:
            self._send({"rules": rules})
        except OSError:
            log.exception("sending rules to the seccomp supervisor failed")

    def close(self) -> None:
        for fd in self.listeners:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.listeners.clear()
        self.slots.clear()
        if self.ids_fd >= 0:
            os.close(self.ids_fd)
            self.ids_fd = -1
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            self.proc = None
