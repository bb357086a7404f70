"""The seccomp supervisor process: answers the pods' filtered syscalls (see seccompfault.py).

Run as ``python seccompsup.py <control fd>`` by the node agent, standard library only (it is run
by path, so importing it loads nothing else). The control socket (SOCK_SEQPACKET) carries JSON
messages from the node agent:

* ``{"syscalls": {"<number>": "<operation>"}, "path_args": {"<number>": [dirfd arg, path arg]}}``:
  what each filtered syscall number is (fsync, read, write or open), first, and for the opening
  calls where their path is (the directory descriptor argument is null for open/creat: the
  caller's working directory);
* ``{"add": "<pod uid>", "slot": n}`` with one descriptor (SCM_RIGHTS): a container's seccomp
  listener and its slot in the id table; with ``"rescue": true`` it was a dead supervisor's (below);
* ``{"rules": {"<pod uid>": [[errno, rate, [path prefixes], [operations]], ...]}}``: the faults now.

For each notification (a filtered syscall of a pod's process, e.g. ``fsync(fd)``) it fails the
call with the first matching rule's errno at its rate (a rule matches the call's operation, and
with prefixes when the descriptor's path starts with one; read and write rules only ever fail
calls on files, never on pipes or sockets), otherwise lets the kernel run it unchanged. The
decision, the rate and the errno stay here, outside every pod. A listener goes away when the last
process under its filter has exited (POLLHUP).

A supervisor that dies (killed, a crash) may leave one call received and not answered, and the
kernel keeps such a call waiting as long as the listener is open (the node agent keeps a copy):
the caller would hang for good. So, right after each receive, the notification's id goes into the
listener's slot of a table the node agent shares (a memfd, ``argv[2]``); a supervisor started again
answers "continue" to that id and the next few of each listener it is handed back (ids follow one
another per filter; the kernel refuses the answer for an id not waiting, and one not yet received
is received as usual), so the waiting call runs. The only call still lost is one received in the
instant between the receive and the write of its id.

An opening call names its file by a path in the caller's memory: the supervisor reads it from
``/proc/<pid>/mem`` (a relative one joined to the caller's working directory or directory
descriptor, ``..`` folded, symbolic links not followed) and matches it as above. It never opens
the file itself, it only answers "fail" or "continue"; a caller that rewrites the path between
that read and the kernel's (another thread) can only fail or spare its own call. A path it
cannot read (the caller died, the memory is gone) lets the call run.

Answering is the cost every filtered call pays while nothing is armed, so the dormant path does
the least: receive, one table lookup, send "continue" from a buffer made once.
"""

from __future__ import annotations

import ctypes
import json
import mmap
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


PATH_MAX = 4096
AT_FDCWD = -100


def _read_string(pid: int, address: int) -> str | None:
    """The NUL-terminated string at ``address`` in process ``pid`` (read a page at a time: a read
    running into an unmapped page fails as a whole), None when it cannot be read."""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        out = b""
        while len(out) < PATH_MAX:
            at = address + len(out)
            chunk = os.pread(fd, 4096 - at % 4096, at)
            if not chunk:
                return None
            end = chunk.find(b"\0")
            if end >= 0:
                return (out + chunk[:end]).decode(errors="surrogateescape")
            out += chunk
        return None
    except (OSError, OverflowError, ValueError):
        return None
    finally:
        os.close(fd)


def _opened_path(pid: int, args: tuple[int, ...], where: list) -> str:
    """The absolute path an opening call names ("" when it cannot be told)."""
    dir_arg, path_arg = where
    path = _read_string(pid, args[path_arg])
    if not path:
        return ""
    if not path.startswith("/"):
        dirfd = AT_FDCWD if dir_arg is None else ctypes.c_int32(args[dir_arg] & 0xFFFFFFFF).value
        try:
            base = os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}")
        except OSError:
            return ""
        path = base.rstrip("/") + "/" + path
    return os.path.normpath(path).replace("//", "/", 1)


def _is_file(path: str) -> bool:
    """A path in the file system (not ``pipe:[..]``, ``socket:[..]``, a terminal or /proc)."""
    return path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/"))


#: how many ids after the one a slot holds a supervisor started again answers (see above)
RESCUE_SPAN = 4


class Supervisor:
    def __init__(self, control: socket.socket, ids: mmap.mmap | None = None) -> None:
        self.control = control
        self.ids = ids  # the id table: one u64 per slot, the last id received on that listener
        self.slots: dict[int, int] = {}  # listener fd -> its slot
        self.listeners: dict[int, str] = {}  # listener fd -> pod uid
        self.rules: dict[str, list] = {}
        self.syscalls: dict[int, str] = {}
        self.path_args: dict[int, list] = {}
        self.poll = select.poll()
        self.poll.register(control.fileno(), select.POLLIN)
        self.notif = ctypes.create_string_buffer(NOTIF_SIZE)
        self.notif_addr = ctypes.addressof(self.notif)
        self.response = ctypes.create_string_buffer(RESP_SIZE)

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
                slot = message.get("slot")
                if isinstance(slot, int) and self.ids is not None and 0 <= slot < len(self.ids) // 8:
                    self.slots[fd] = slot
                    if message.get("rescue"):
                        self.rescue(fd, slot)
                self.poll.register(fd, select.POLLIN)
                _libc.ioctl(fd, IOCTL_SET_FLAGS, ctypes.c_void_p(FD_SYNC_WAKE_UP))
        if "syscalls" in message:
            self.syscalls = {int(nr): call for nr, call in message["syscalls"].items()}
            self.path_args = {int(nr): where for nr, where in (message.get("path_args") or {}).items()}
        if "rules" in message:
            self.rules = message["rules"]
        return True

    def rescue(self, listener: int, slot: int) -> None:
        """Let run a call a dead supervisor received on ``listener`` and never answered."""
        assert self.ids is not None
        last = struct.unpack_from("<Q", self.ids, slot * 8)[0]
        if not last:
            return  # the dead one received nothing on it
        for offset in range(RESCUE_SPAN):
            struct.pack_into("<QqiI", self.response, 0, (last + offset) & 0xFFFFFFFFFFFFFFFF, 0, 0, FLAG_CONTINUE)
            _libc.ioctl(listener, IOCTL_SEND, self.response)  # ENOENT/EINPROGRESS: that id was not waiting

    def answer(self, listener: int) -> None:
        ctypes.memset(self.notif_addr, 0, NOTIF_SIZE)
        if _libc.ioctl(listener, IOCTL_RECV, self.notif_addr) != 0:
            return  # the caller died meanwhile (ENOENT)
        notif_id, pid, _flags, nr, _arch, _ip = struct.unpack_from("<QIIiIQ", self.notif, 0)
        slot = self.slots.get(listener)
        if slot is not None and self.ids is not None:
            struct.pack_into("<Q", self.ids, slot * 8, notif_id)
        error = 0
        rules = self.rules.get(self.listeners.get(listener, ""))
        if rules:  # armed for this pod: the dormant path skips all of this
            error = self._decide(rules, pid, nr, struct.unpack_from("<6Q", self.notif, 32))
            if error:
                # the path was read from /proc while the call waited: still the same call?
                ident = ctypes.c_uint64(notif_id)
                if _libc.ioctl(listener, IOCTL_ID_VALID, ctypes.byref(ident)) != 0:
                    return
        struct.pack_into("<QqiI", self.response, 0, notif_id, 0, error, 0 if error else FLAG_CONTINUE)
        _libc.ioctl(listener, IOCTL_SEND, self.response)

    def _decide(self, rules: list, pid: int, nr: int, args: tuple[int, ...]) -> int:
        """-errno of the first rule matching the call (drawn at its rate), else 0."""
        call = self.syscalls.get(nr, "fsync")
        path: str | None = None
        for rule in rules:
            errno_value, rate, prefixes = rule[0], rule[1], rule[2]
            calls = rule[3] if len(rule) > 3 else ["fsync"]
            if call not in calls:
                continue
            if path is None:
                if call == "open":
                    path = _opened_path(pid, args, self.path_args[nr]) if nr in self.path_args else ""
                else:
                    path = _path(pid, int(args[0]) & 0xFFFFFFFF) if (prefixes or call != "fsync") else ""
            if call != "fsync" and not _is_file(path):
                continue  # a read or write fault never fails a pipe, a socket or a terminal
            if prefixes and not _under(path, prefixes):
                continue
            return -int(errno_value) if random.random() < rate else 0
        return 0

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
                    self.slots.pop(fd, None)
                    os.close(fd)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    ids = mmap.mmap(int(sys.argv[2]), 0) if len(sys.argv) > 2 else None
    Supervisor(control, ids).run()


if __name__ == "__main__":
    main()
