"""Shared by the network guard's tests: connect from inside a pod's cgroup, as its processes do."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

#: run in a child that joined the cgroup: each target's connect() outcome, "open" or "errno N"
CONNECT = """
import json, socket, sys
out = {}
for owner, target in json.loads(sys.argv[1]).items():
    host, port = target.rsplit(":", 1)
    with socket.socket() as s:
        try:
            s.connect((host, int(port)))
            out[owner] = "open"
        except OSError as exc:
            out[owner] = f"errno {exc.errno}"
print(json.dumps(out))
"""


class Items:
    """What the guard reads from an informer's store: ``.list()`` of objects."""

    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def list(self) -> list[dict]:
        return self.items


def connects_from(cgroup: Path, targets: dict[str, str]) -> dict[str, str]:
    """{name: "open" | "errno N"} for each ``host:port`` of ``targets``, connected from a process in ``cgroup``
    (the guard's cgroup programs judge a caller by the cgroup it runs in)."""
    procs = str(cgroup / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as handle:
            handle.write("0")
    result = subprocess.run([sys.executable, "-c", CONNECT, json.dumps(targets)], preexec_fn=join,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@contextlib.contextmanager
def listening(addresses: dict[str, str]) -> Iterator[dict[str, str]]:
    """A listener on a free port of each address: yields {name: "ip:port"}, closes them afterwards."""
    listeners: list[socket.socket] = []
    try:
        targets = {}
        for owner, ip in addresses.items():
            listener = socket.socket()
            listeners.append(listener)
            listener.bind((ip, 0))
            listener.listen()
            targets[owner] = f"{ip}:{listener.getsockname()[1]}"
        yield targets
    finally:
        for listener in listeners:
            listener.close()


def release(guard) -> None:
    """Close a test's guard and remove its pod cgroups: the first close releases the programs, the
    second removes the guard's cgroup once its pods' are gone."""
    guard.close()
    for path in guard.cgroup.glob("pod-*"):
        path.rmdir()
    guard.close()
