"""Can a pod open a connection to an address? The probe the isolation tests run inside pods.

The tests ``kubectl exec`` :data:`CONNECT_SCRIPT` with the pod's own Python and read its answer with
:func:`reach`: one line per target, ``open`` (connected), ``answered``/``closed`` (connected, and a
``GET`` was sent with ``--get=PATH``) or ``refused <errno>`` (the network guard or nothing listening).
"""

from __future__ import annotations

CONNECT_SCRIPT = """
import socket, sys
targets = sys.argv[1:]
request = None
if targets and targets[0].startswith("--get="):
    request = ("GET %s HTTP/1.0\\r\\n\\r\\n" % targets.pop(0)[len("--get="):]).encode()
for target in targets:
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, int(port)))
        if request is None:
            print(target, "open")
        else:
            s.sendall(request)
            print(target, "answered" if s.recv(64) else "closed")
    except OSError as exc:
        print(target, "refused", exc.errno)
    finally:
        s.close()
"""


def connect_args(python: str, *targets: str, get: str | None = None) -> list[str]:
    """The command (after ``kubectl exec POD --``) that tries each ``host:port`` target."""
    return [python, "-c", CONNECT_SCRIPT, *([f"--get={get}"] if get else []), *targets]


def reach(stdout: str) -> dict[str, str]:
    """``{target: "open" | "answered" | "closed" | "refused"}`` from the script's output."""
    seen = {}
    for line in stdout.splitlines():
        words = line.split()
        if len(words) >= 2:
            seen[words[0]] = words[1]
    return seen
