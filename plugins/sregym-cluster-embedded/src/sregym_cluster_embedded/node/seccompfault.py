"""File syscall faults decided outside the process: a seccomp user-notification supervisor.

The node agent installs, in every container's main process just before it starts, a seccomp
filter that hands ``fsync`` and ``fdatasync`` to a supervisor (``SECCOMP_RET_USER_NOTIF``) and
lets every other syscall through untouched. The filter cannot be added to a running process, so
it is there from the start, dormant: while no fault is armed the supervisor answers "continue"
and the kernel runs the call as usual (one round trip per fsync). With a fault armed the
supervisor (``seccompsup.py``, its own process, so the API server's work never delays an fsync)
fails the pod's calls with the errno at the rate, on files under the given paths: the process
meets the kernel's own error, static binaries included, and nothing in the pod holds the rule.

It is off unless ``SREGYM_SYSCALL_SUPERVISOR=1`` is in the cluster process's environment: every
fsync of every app container then waits for the supervisor's answer, which on a loaded host is
not free (``benchmarks/bench_syscall_faults.py``; measured here under a load average of ~200:
initdb 10-11 s plain, 17 s under the filter, from its ~1000 fsyncs). Off, ``fsync`` rules run in
the shim.

``kubectl exec`` processes are not under the filter (they are not the container's processes).
The listener of each container goes to the supervisor over a socket pair (SCM_RIGHTS). The node
agent keeps a copy of each (dropped once the container's processes are gone): if the supervisor
dies, the filtered calls wait (a listener still open) until the fault hooks' next pass (0.5 s)
starts it again and hands it every listener, instead of failing with ENOSYS for good.
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
from pathlib import Path

log = logging.getLogger(__name__)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long

#: architecture -> (AUDIT_ARCH, seccomp syscall number, {name: number} of the filtered calls)
_ARCH = {
    "x86_64": (0xC000003E, 317, {"fsync": 74, "fdatasync": 75}),
    "aarch64": (0xC00000B7, 277, {"fsync": 82, "fdatasync": 83}),
}
SECCOMP_SET_MODE_FILTER, FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
RET_ALLOW, RET_USER_NOTIF = 0x7FFF0000, 0x7FC00000
PR_SET_NO_NEW_PRIVS = 38
SUPERVISOR = Path(__file__).with_name("seccompsup.py")
#: the calls a rule may name, and the syscalls each covers
CALLS = {"fsync": ("fsync", "fdatasync")}
MECHANISM = "seccomp user notification: a filter installed at container start hands fsync/fdatasync to a supervisor"


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, 0, 0, k)


def _jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def filter_program() -> bytes | None:
    """The classic BPF filter: this architecture's fsync/fdatasync notify, everything else runs."""
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return None
    audit_arch, _nr, calls = spec
    numbers = list(calls.values())
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    code = [_stmt(ld_w_abs, 4)]  # A = seccomp_data.arch
    code.append(_jump(jeq_k, audit_arch, 0, len(numbers) + 1))  # another ABI: allow
    code.append(_stmt(ld_w_abs, 0))  # A = seccomp_data.nr
    for index, number in enumerate(numbers):
        code.append(_jump(jeq_k, number, len(numbers) - index, 0))  # -> notify
    code.append(_stmt(ret_k, RET_ALLOW))
    code.append(_stmt(ret_k, RET_USER_NOTIF))
    return b"".join(code)


def install(send_fd: int) -> None:
    """In a container's forked child, before exec: load the filter and send its listener over
    ``send_fd``. Failing here must not keep the container from starting: it just has no filter."""
    program = filter_program()
    spec = _ARCH.get(platform.machine())
    if program is None or spec is None:
        return
    if os.geteuid() != 0:  # without CAP_SYS_ADMIN the kernel wants no_new_privs first
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    insns = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("<HxxxxxxQ", len(program) // 8, ctypes.addressof(insns))
    fprog_buf = ctypes.create_string_buffer(fprog, len(fprog))
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


def receive_listener(sock: socket.socket) -> int | None:
    """The listener a child sent before it exec'd (None when it could not install the filter)."""
    sock.setblocking(False)
    try:
        _data, fds, _flags, _addr = socket.recv_fds(sock, 16, 1)
    except OSError:
        return None
    return fds[0] if fds else None


ENABLE_ENV = "SREGYM_SYSCALL_SUPERVISOR"


def enabled() -> bool:
    """Whether the cluster starts its containers under the filter (opt-in: see the docstring)."""
    return os.environ.get(ENABLE_ENV, "") == "1"


def unavailable_reason() -> str:
    if not enabled():
        return (f"off ({ENABLE_ENV}=1 in the cluster's environment turns it on; every container's fsync "
                "then waits for the supervisor)")
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
        subprocess.run(["true"], preexec_fn=lambda: install(child_fd), timeout=30, check=False)
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
    """Dies with the node agent; as root, runs ahead of ordinary work (it only wakes for a filtered
    call, and every fsync of every pod waits for it: on a loaded host its wake-up is the cost)."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, -10)


class SupervisorClient:
    """The node agent's side: starts the supervisor, hands it listeners and rules."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.rules: dict[str, list] = {}
        #: our copy of every live listener (fd -> pod uid), for a supervisor started again
        self.listeners: dict[int, str] = {}

    def _ensure(self) -> socket.socket:
        if self.proc is not None and self.proc.poll() is None and self.sock is not None:
            return self.sock
        if self.sock is not None:
            log.warning("the seccomp supervisor exited (%s); starting it again", self.proc and self.proc.returncode)
            self.sock.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", str(SUPERVISOR), str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_supervisor_preexec)
        finally:
            theirs.close()
        self.sock = ours
        if self.rules:
            self._send({"rules": self.rules})
        for fd, uid in list(self.listeners.items()):
            self._send({"add": uid}, [fd])
        return ours

    def _send(self, message: dict, fds: list[int] | None = None) -> None:
        sock = self._ensure()
        socket.send_fds(sock, [json.dumps(message).encode()], fds or [])

    def add(self, listener: int, pod_uid: str) -> None:
        """Hand a container's listener over (keeping a copy until its processes are gone)."""
        self.listeners[listener] = pod_uid
        try:
            self._send({"add": pod_uid}, [listener])
        except OSError:
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
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if self.proc is not None and self.proc.poll() is not None:
            try:
                self._ensure()
            except OSError:
                log.exception("starting the seccomp supervisor again failed")

    def set_rules(self, rules: dict[str, list]) -> None:
        """``{pod uid: [[errno, rate, [path prefixes]], ...]}``; sent only when it changed."""
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
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
            self.proc = None
