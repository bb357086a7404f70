"""Where the kubectl tool runs kubectl: a bubblewrap sandbox that holds nothing of the host.

Inside there is only the kubectl binary and the agent's kubeconfig (both read-only), a private
tmpfs for kubectl's cache and working directory, a minimal ``/dev`` and the name-resolution files
of ``/etc`` (a real cluster's server may be a host name). Every namespace is new except the
network (kubectl must reach the API server, on 127.0.0.1 for the embedded cluster), the user is
an unprivileged uid of a new user namespace, and every capability is dropped. So whatever the
agent passes (``--from-file=/etc/shadow``, ``-f /root/x``, ``--profile-output=/etc/cron.d/x``),
kubectl can neither read nor write a file of the machine running the benchmark.

When bubblewrap cannot build a sandbox here (not installed, user namespaces forbidden), the tool
falls back to running kubectl directly from an empty private directory and refuses every flag that
names a local file instead; :data:`FALLBACK_WARNING` states what that does not enforce.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import structlog

log = structlog.get_logger()

#: Paths of the sandbox's own layout (what kubectl sees); they say nothing about the attempt.
KUBECTL = "/usr/local/bin/kubectl"
KUBECONFIG = "/home/agent/.kube/config"
HOME = "/home/agent"
CACHE = "/tmp/kube-cache"
SANDBOX_UID = 65534

#: Read-only files for name resolution and TLS roots; none carries a secret.
ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl/certs")

FALLBACK_WARNING = ("bubblewrap is not usable here: kubectl runs as the conductor's user from an empty private "
                    "directory, and flags naming local files are refused instead of sandboxed; a kubectl bug or "
                    "a flag not known to the filter could still touch the conductor's files")


@functools.cache
def bwrap_usable(kubectl: str) -> str | None:
    """The ``bwrap`` binary when it can run ``kubectl`` in the sandbox here, else None."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run(sandboxed_argv(path, kubectl, Path(os.devnull), ["version", "--client"]),
                               capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if probe.returncode != 0:
        log.warning("kubectl_sandbox_unusable", stderr=probe.stderr.decode(errors="replace")[:300])
        return None
    return path


def _namespaces() -> list[str]:
    return ["--die-with-parent", "--new-session", "--unshare-all", "--share-net", "--unshare-user",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL"]


def sandboxed_argv(bwrap: str, kubectl: str, kubeconfig: Path, args: Sequence[str]) -> list[str]:
    """The bwrap command line that runs ``kubectl args`` with ``kubeconfig`` and nothing else."""
    argv = [bwrap, *_namespaces(), "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
            "--dir", HOME, "--ro-bind", str(Path(kubectl).resolve()), KUBECTL,
            "--ro-bind", str(Path(kubeconfig).resolve()), KUBECONFIG]
    for path in ETC_FILES:
        argv += ["--ro-bind-try", path, path]
    argv += ["--chdir", "/tmp", "--clearenv", "--setenv", "HOME", HOME, "--setenv", "KUBECONFIG", KUBECONFIG,
             "--setenv", "PATH", "/nonexistent",  # no kubectl plugins, no credential helpers, no external diff
             "--", KUBECTL, "--cache-dir", CACHE, *args]
    return argv
