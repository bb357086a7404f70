"""Where a coding-agent CLI runs: a bubblewrap sandbox that cannot read the benchmark's files.

The sandbox starts from an *empty* root and mounts only what a CLI needs: the system directories
read-only (``/usr``, ``/etc`` and the ``/bin``-style links), a fresh ``/tmp``, ``/proc`` and
``/dev``, the attempt's work directory read-write (it holds the fresh HOME), and the few extra
paths the CLI's own installation needs, read-only. Everything else — the SREGym checkout, the
results directory around the work directory, ``$SREGYM_HOME`` with the cluster's admin
credentials, the user's real home — simply does not exist inside. Paths that would expose a
protected location get that location masked by an empty directory.

The CLI is never root: it runs as uid 1000 of a new user namespace with every capability
dropped, so it cannot remount a read-only bind, create device nodes or mount anything. When the
conductor itself is root, bubblewrap is started as the unprivileged host user :data:`HOST_UID`
(``setpriv``), because a user namespace made by root maps the sandbox user onto host root, which
owns (and so could read) every root-only file of the mounted system directories. That user must
then be able to reach every directory it binds (:func:`reachable`), and the work directory is
given to it.

The network: ``network="isolated"`` (what the CLI agent uses) gives the sandbox a network namespace
of its own with only loopback, and a :class:`~.netrelay.NetworkRelay` stands in for the few
endpoints it may reach (the agent API, the MCP server, the cluster's API server, and the model
provider through an allowlisting ``CONNECT`` proxy): the command runs under the relay's forwarder,
which listens on those endpoints' own addresses inside. ``"none"`` is loopback only, nothing
forwarded; ``"host"`` shares the host's network (every listener on the host is then reachable).

Without a usable ``bwrap`` the CLI runs as a plain subprocess with a scrubbed environment and
its HOME in the work directory, and a warning says the benchmark's files are readable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog
from sregym_core.errors import AgentError

log = structlog.get_logger()

#: System locations mounted read-only when they exist (symlinks such as /bin -> usr/bin are recreated).
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
#: Sandbox network modes (see the module docstring).
NETWORKS = ("isolated", "host", "none")
#: Proxy variables of the host, dropped in an isolated sandbox (the relay sets its own).
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy",
             "no_proxy")
#: The CLI's uid and gid inside its user namespace.
SANDBOX_UID = 1000
#: The host user bubblewrap runs as when the conductor is root (nobody).
HOST_UID = 65534


def _dropping() -> bool:
    """Whether bubblewrap must first leave root (see the module docstring)."""
    return os.geteuid() == 0


def _setpriv() -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, f"--reuid={HOST_UID}", f"--regid={HOST_UID}", "--clear-groups", "--"]


def _user_args() -> list[str]:
    # no nested user namespace either: no way back to a root of its own inside
    return ["--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--cap-drop", "ALL"]


@functools.cache
def bwrap_path() -> str | None:
    """The ``bwrap`` binary if it exists and can build a namespace here (containers often forbid it)."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    prefix = []
    if _dropping():
        prefix = _setpriv()
        if not prefix:
            log.warning("bwrap_unusable", stderr="running as root and setpriv (util-linux) is missing")
            return None
    try:
        probe = subprocess.run([*prefix, path, *_user_args(), *_system_mounts()[0], "--proc", "/proc", "--dev", "/dev",
                                "--unshare-pid", "--die-with-parent", "/bin/sh", "-c", "true"],
                               capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if probe.returncode != 0:
        log.warning("bwrap_unusable", stderr=probe.stderr.decode(errors="replace")[:300])
        return None
    return path


def _system_mounts() -> tuple[list[str], list[Path]]:
    """bwrap arguments for the read-only system directories, and the directories they mount."""
    args: list[str] = []
    mounted: list[Path] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
            mounted.append(path.resolve())
    return args, mounted


def protected_paths(extra: Iterable[str | os.PathLike[str]] = ()) -> tuple[Path, ...]:
    """The benchmark's own files: the SREGym checkout or install, ``$SREGYM_HOME`` and ``extra``."""
    import sregym_core

    found = [Path(sregym_core.__file__).resolve().parent.parent]
    found.append(Path(os.environ.get("SREGYM_HOME") or Path.home() / ".sregym").resolve())
    found += [Path(p).resolve() for p in extra]
    return tuple(dict.fromkeys(found))


def _system_python() -> str:
    """The system's python3 (under a mounted system directory), which runs the forwarder inside."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise SandboxError("the isolated sandbox network needs a system python3 (/usr/bin/python3) to run its forwarder",
                       hints=("install python3 from the system's packages, or set the agent's network setting to host",))


#: sets RLIMIT_FSIZE (argv[1] bytes) and runs the rest: no file the CLI writes, or extends with truncate, grows past
#: it (the kernel answers EFBIG/SIGXFSZ); red-team round 20, finding 2: a 1 GiB sparse file, copied back in full
_FILE_LIMIT = ("import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
               "os.execvp(sys.argv[2], sys.argv[2:])")


def with_file_size_limit(argv: Sequence[str], max_bytes: int) -> list[str]:
    """``argv`` run under a file size limit of ``max_bytes`` (inherited by everything it starts, through bwrap)."""
    return [sys.executable, "-c", _FILE_LIMIT, str(int(max_bytes)), *argv]


@functools.cache
def bwrap_sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bwrap takes ``--size`` for a tmpfs (0.7 and later); older ones leave /tmp unbounded."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in done.stdout + done.stderr


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


@attrs.frozen(kw_only=True)
class Sandbox:
    """How to wrap one command.

    :param workdir: mounted read-write at the same path; the command starts there.
    :param read_only: extra paths mounted read-only at the same path (a CLI's install directory).
    :param protected: paths that must stay unreadable; where one lies under a mounted directory it
        is masked (an empty tmpfs, or /dev/null for a file).
    :param network: ``"isolated"`` (own namespace, only ``relay``'s endpoints), ``"host"`` (shared)
        or ``"none"`` (own namespace, nothing forwarded).
    :param relay: the started :class:`~.netrelay.NetworkRelay` for ``"isolated"``.
    :param use_bwrap: ``None`` = when available, ``False`` = never (plain subprocess).
    :param tmp_bytes: the size of the sandbox's own /tmp (memory), where bwrap can bound it.
    """

    workdir: Path
    read_only: tuple[Path, ...] = attrs.field(default=(), converter=lambda ps: tuple(Path(p) for p in ps))
    protected: tuple[Path, ...] = attrs.field(default=(), converter=lambda ps: tuple(Path(p) for p in ps))
    network: str = attrs.field(default="host", validator=attrs.validators.in_(NETWORKS))
    relay: Any = None
    use_bwrap: bool | None = None
    tmp_bytes: int = 512 * 1024 * 1024

    def __attrs_post_init__(self) -> None:
        if self.network == "isolated" and self.relay is None:
            raise SandboxError("an isolated sandbox network needs its relay (the endpoints it may reach)")

    @property
    def bwrap(self) -> str | None:
        if self.use_bwrap is False:
            return None
        return bwrap_path()

    @property
    def isolated(self) -> bool:
        return self.bwrap is not None

    def mounts(self) -> list[Path]:
        """The read-only extras that exist, resolved."""
        return [p.resolve() for p in self.read_only if p.resolve().exists()]

    @property
    def drops_root(self) -> bool:
        """Whether the sandbox runs as :data:`HOST_UID` (the conductor is root)."""
        return self.isolated and _dropping()

    def wrap(self, argv: Sequence[str], env: Mapping[str, str]) -> Wrapped:
        """``(argv, env)`` to hand to the process spawner."""
        bwrap = self.bwrap
        if bwrap is None:
            return Wrapped(list(argv), dict(env))
        dropping = _dropping()
        prefix = _setpriv() if dropping else []
        args = [*prefix, bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", *_user_args()]
        if self.network in ("none", "isolated"):
            args.append("--unshare-net")  # a fresh namespace: loopback only, no route to the host
        system, mounted = _system_mounts()
        args += system
        args += ["--proc", "/proc", "--dev", "/dev"]
        if bwrap_sizes_tmpfs(bwrap):  # /tmp is memory: bounded, as the work directory is on disk
            args += ["--size", str(self.tmp_bytes)]
        args += ["--tmpfs", "/tmp"]
        protected = [p.resolve() for p in self.protected]
        extras = self.mounts()

        def bind(flag: str, path: Path) -> list[str]:
            if dropping and not reachable(path, HOST_UID):
                raise SandboxError(f"{path} cannot be mounted in the sandbox: user {HOST_UID} (nobody), which runs "
                                   "the sandbox for a root conductor, cannot reach it",
                                   hints=("install the CLI where every user can read it (say /usr/local), or run "
                                          "the benchmark as a non-root user",))
            return [flag, str(path), str(path)]

        # extras inside a protected path (a single binary in the checkout) go on top of its mask, below
        within = [p for p in extras if any(_inside(p, guarded) for guarded in protected)]
        for path in extras:
            if path not in within:
                args += bind("--ro-bind", path)
                mounted.append(path)
        # a protected path under anything mounted (say a checkout in /opt) is masked by an empty one
        for path in protected:
            if any(_inside(path, m) for m in mounted) and path.exists():
                args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        for path in within:
            args += bind("--ro-bind", path)
        # the work directory last, so it shows even when it lies inside a masked path
        workdir = self.workdir.resolve()
        if dropping:
            _give(workdir, HOST_UID)
        # the root itself (a tmpfs of bwrap's) read-only: writable are only the work directory and /tmp
        args += bind("--bind", workdir)
        env = dict(env)
        if self.network == "isolated":
            # the relay's sockets and the forwarder, read-only over the writable work directory
            relay_dir = Path(self.relay.directory).resolve()
            args += bind("--ro-bind", relay_dir)
            argv = [_system_python(), str(self.relay.script), str(self.relay.spec), "--", *argv]
            for name in PROXY_ENV:  # the host's proxies are not reachable from in here
                env.pop(name, None)
            env.update(self.relay.env())
        args += ["--remount-ro", "/", "--chdir", str(workdir), "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return Wrapped([*args, "--", *argv], {})


@attrs.define
class Wrapped:
    """A sandboxed command: its argv and environment (``argv, env = sandbox.wrap(...)`` works)."""

    argv: list[str]
    env: dict[str, str]

    def __iter__(self):
        return iter((self.argv, self.env))


class SandboxError(AgentError):
    """The sandbox cannot be built as asked."""


def reachable(path: Path, uid: int) -> bool:
    """Whether ``uid`` (not root, in no group of note) can walk to ``path`` and read it."""
    path = Path(path)
    for parent in [*reversed(path.parents), path]:
        try:
            info = parent.stat()
        except OSError:
            return False
        if info.st_uid == uid:
            continue
        needed = 0o001 if parent != path else (0o005 if parent.is_dir() else 0o004)
        if info.st_mode & needed != needed:
            return False
    return True


def _give(directory: Path, uid: int) -> None:
    """Hand the work directory (and everything in it) to the sandbox's host user."""
    os.chown(directory, uid, uid)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
