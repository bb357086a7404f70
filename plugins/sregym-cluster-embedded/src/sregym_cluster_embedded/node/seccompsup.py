"""The seccomp supervisor process: answers the pods' filtered syscalls (see seccompfault.py).

Run as ``python seccompsup.py <control fd>`` by the node agent, standard library only (it is run
by path, so importing it loads nothing else). The control socket (SOCK_SEQPACKET) carries JSON
messages from the node agent:

* ``{"add": "<pod uid>"}`` with one descriptor (SCM_RIGHTS): a container's seccomp listener;
* ``{"rules": {"<pod uid>": [[errno, rate, [path prefixes]], ...]}}``: the faults now.

For each notification (a filtered syscall of a pod's process, e.g. ``fsync(fd)``) it fails the
call with the first matching rule's errno at its rate (a rule with prefixes matches when the
descriptor's path starts with one), otherwise lets the kernel run it unchanged. The decision, the
rate and the errno stay here, outside every pod. A listener goes away when the last process
under its filter has exited (POLLHUP).
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import select
import socket
import struct
import sys

NOTIF_SIZE, RESP_SIZE = 80, 24
IOCTL_RECV = 0xC0502100  # SECCOMP_IOCTL_NOTIF_RECV: _IOWR('!', 0, struct seccomp_notif)
IOCTL_SEND = 0xC0182101  # SECCOMP_IOCTL_NOTIF_SEND: _IOWR('!', 1, struct seccomp_notif_resp)
IOCTL_ID_VALID = 0x40082102  # SECCOMP_IOCTL_NOTIF_ID_VALID: _IOW('!', 2, __u64)
IOCTL_SET_FLAGS = 0x40082104  # SECCOMP_IOCTL_NOTIF_SET_FLAGS: _IOW('!', 4, __u64)
FD_SYNC_WAKE_UP = 1  # the caller hands its CPU straight to us and back (Linux 6.6+; else ignored)
FLAG_CONTINUE = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]


def _path(pid: int, fd: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ""


def _under(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


class Supervisor:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.listeners: dict[int, str] = {}  # listener fd -> pod uid
        self.rules: dict[str, list] = {}
        self.poll = select.poll()
        self.poll.register(control.fileno(), select.POLLIN)
        self.notif = ctypes.create_string_buffer(NOTIF_SIZE)

    def control_message(self) -> bool:
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.control, 1 << 20, 4)
        except OSError:
            return False
        if not data:
            return False  # the node agent is gone
        message = json.loads(data)
        if "add" in message:
            for fd in fds:
                self.listeners[fd] = message["add"]
                self.poll.register(fd, select.POLLIN)
                _libc.ioctl(fd, IOCTL_SET_FLAGS, ctypes.c_void_p(FD_SYNC_WAKE_UP))
        if "rules" in message:
            self.rules = message["rules"]
        return True

    def answer(self, listener: int) -> None:
        ctypes.memset(self.notif, 0, NOTIF_SIZE)
        if _libc.ioctl(listener, IOCTL_RECV, self.notif) != 0:
            return  # the caller died meanwhile (ENOENT)
        notif_id, pid, _flags, _nr, _arch, _ip = struct.unpack_from("<QIIiIQ", self.notif, 0)
        args = struct.unpack_from("<6Q", self.notif, 32)
        error = 0
        for errno_value, rate, prefixes in self.rules.get(self.listeners.get(listener, ""), ()):
            if prefixes and not _under(_path(pid, int(args[0])), prefixes):
                continue
            if random.random() < rate:
                error = -int(errno_value)
            break
        if error:
            # the path was read from /proc while the call waited: still the same call?
            ident = ctypes.c_uint64(notif_id)
            if _libc.ioctl(listener, IOCTL_ID_VALID, ctypes.byref(ident)) != 0:
                return
        response = ctypes.create_string_buffer(struct.pack("<QqiI", notif_id, 0, error, 0 if error else FLAG_CONTINUE))
        _libc.ioctl(listener, IOCTL_SEND, response)

    def run(self) -> None:
        while True:
            for fd, events in self.poll.poll():
                if fd == self.control.fileno():
                    if not self.control_message():
                        return
                elif events & select.POLLIN:
                    self.answer(fd)
                elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    self.poll.unregister(fd)
                    self.listeners.pop(fd, None)
                    os.close(fd)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    Supervisor(control).run()


if __name__ == "__main__":
    main()
