"""Where a coding-agent CLI runs: a bubblewrap sandbox that cannot read the benchmark's files.

The sandbox starts from an *empty* root and mounts only what a CLI needs: the system directories
read-only (``/usr``, ``/etc`` and the ``/bin``-style links), a fresh ``/tmp``, ``/proc`` and
``/dev``, the attempt's work directory read-write (it holds the fresh HOME), and the few extra
paths the CLI's own installation needs, read-only. Everything else — the SREGym checkout, the
results directory around the work directory, ``$SREGYM_HOME`` with the cluster's admin
credentials, the user's real home — simply does not exist inside. Paths that would expose a
protected location get that location masked by an empty directory.

The network is shared by default (the CLI must reach its model provider and the MCP server on
127.0.0.1); ``network="none"`` unshares it for fully local checks. The agent's reach into the
cluster is bounded by its restricted kubeconfig, not by the network.

Without a usable ``bwrap`` the CLI runs as a plain subprocess with a scrubbed environment and
its HOME in the work directory, and a warning says the benchmark's files are readable.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs
import structlog

log = structlog.get_logger()

#: System locations mounted read-only when they exist (symlinks such as /bin -> usr/bin are recreated).
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")


@functools.cache
def bwrap_path() -> str | None:
    """The ``bwrap`` binary if it exists and can build a namespace here (containers often forbid it)."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run([path, *_system_mounts()[0], "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
                                "--die-with-parent", "/bin/sh", "-c", "true"], capture_output=True, timeout=20)
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


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


@attrs.frozen(kw_only=True)
class Sandbox:
    """How to wrap one command.

    :param workdir: mounted read-write at the same path; the command starts there.
    :param read_only: extra paths mounted read-only at the same path (a CLI's install directory).
    :param protected: paths that must stay unreadable; where one lies under a mounted directory it
        is masked (an empty tmpfs, or /dev/null for a file).
    :param network: ``"host"`` (shared) or ``"none"``.
    :param use_bwrap: ``None`` = when available, ``False`` = never (plain subprocess).
    """

    workdir: Path
    read_only: tuple[Path, ...] = attrs.field(default=(), converter=lambda ps: tuple(Path(p) for p in ps))
    protected: tuple[Path, ...] = attrs.field(default=(), converter=lambda ps: tuple(Path(p) for p in ps))
    network: str = attrs.field(default="host", validator=attrs.validators.in_(("host", "none")))
    use_bwrap: bool | None = None

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

    def wrap(self, argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """``(argv, env)`` to hand to the process spawner."""
        bwrap = self.bwrap
        if bwrap is None:
            return list(argv), dict(env)
        args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try"]
        if self.network == "none":
            args.append("--unshare-net")
        system, mounted = _system_mounts()
        args += system
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        protected = [p.resolve() for p in self.protected]
        extras = self.mounts()
        # extras inside a protected path (a single binary in the checkout) go on top of its mask, below
        within = [p for p in extras if any(_inside(p, guarded) for guarded in protected)]
        for path in extras:
            if path not in within:
                args += ["--ro-bind", str(path), str(path)]
                mounted.append(path)
        # a protected path under anything mounted (say a checkout in /opt) is masked by an empty one
        for path in protected:
            if any(_inside(path, m) for m in mounted) and path.exists():
                args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        for path in within:
            args += ["--ro-bind", str(path), str(path)]
        # the work directory last, so it shows even when it lies inside a masked path
        workdir = self.workdir.resolve()
        args += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir), "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return [*args, "--", *argv], {}
