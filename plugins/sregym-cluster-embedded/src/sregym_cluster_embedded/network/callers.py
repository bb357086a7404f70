"""Which pod opened a connection to a Service: the caller's node, for the node's own proxy rules.

Pods share the host's network namespace, so a pod's connection to a Service IP leaves from
127.0.0.1 and its source address says nothing about the caller (netguard.py). The kernel knows
which process holds the socket: the client end of the connection is the line of ``/proc/net/tcp``
whose local and remote addresses mirror the proxy's accepted socket, its inode is held by one
process, and the node agents know which pod each process belongs to (its cgroup's pids). That
search reads /proc (a few milliseconds), so the proxy asks only while some node's rules differ
(a buggy kube-proxy build, kubeproxy.py): with sound rules everywhere nothing is looked up.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterable

#: (node, namespace, pids) of every pod the node agents run
PodProcesses = Callable[[], Iterable[tuple[str, str, list[int]]]]


def _hex(ip: str, port: int) -> str:
    """An IPv4 address and port as /proc/net/tcp prints them (``0100007F:89A2``)."""
    return f"{int.from_bytes(socket.inet_aton(ip), 'little'):08X}:{port:04X}"


def socket_inode(local: tuple[str, int], remote: tuple[str, int], table: str = "/proc/net/tcp") -> int | None:
    """The inode of the TCP socket bound to ``local`` and connected to ``remote``."""
    want_local, want_remote = _hex(*local), _hex(*remote)
    try:
        with open(table) as handle:
            next(handle, None)
            for line in handle:
                parts = line.split()
                if len(parts) > 9 and parts[1] == want_local and parts[2] == want_remote:
                    return int(parts[9]) or None
    except (OSError, ValueError):
        return None
    return None


def holder(inode: int, processes: Iterable[tuple[str, str, list[int]]]) -> tuple[str, str] | None:
    """(node, namespace) of the pod whose process holds socket ``inode``."""
    link = f"socket:[{inode}]"
    for node, namespace, pids in processes:
        for pid in pids:
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                            return node, namespace
    return None


def locate(client: tuple[str, int], service: tuple[str, int],
           processes: Iterable[tuple[str, str, list[int]]]) -> tuple[str, str] | None:
    """(node, namespace) of the pod that opened the connection ``client`` → ``service`` (None: not
    a pod's, e.g. the host's own processes, or not found). Blocking: call it in a thread."""
    inode = socket_inode(client, service)
    return holder(inode, processes) if inode else None


__all__ = ["PodProcesses", "holder", "locate", "socket_inode"]
