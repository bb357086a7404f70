"""Turning a container spec plus an image recipe into a process: argv, env, cwd, programs."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from .images import Recipe, container_argv, python_executable
from .pathmap import PathMap

HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class ExecNotFound(Exception):
    """The container's executable does not exist (the runtime's StartError)."""


@dataclass
class ProcessContext:
    """Everything needed to start a process "inside" a container: the main one or an exec."""

    env: dict[str, str]
    cwd: str
    pathmap: PathMap
    programs: dict[str, str]
    root: Path
    user: int | None = None
    group: int | None = None
    extra_preexec: list = field(default_factory=list)

    def argv(self, argv: list[str]) -> list[str]:
        """Rewrite paths and resolve the program like the runtime resolves it in the image."""
        if not argv:
            raise ExecNotFound("no command specified")
        args = [self.pathmap.rewrite(a) for a in argv[1:]]
        program = resolve_program(argv[0], self.programs, self.pathmap, self.env.get("PATH", HOST_PATH))
        if program is None:
            raise ExecNotFound(
                f'exec: "{argv[0]}": executable file not found in $PATH' if "/" not in argv[0]
                else f'exec: "{argv[0]}": stat {argv[0]}: no such file or directory')
        if program.endswith(".py"):
            return [python_executable(), program, *args]
        return [program, *args]

    def preexec(self, group_preexec=None):
        hooks = [group_preexec] if group_preexec else []
        hooks += self.extra_preexec

        def run() -> None:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            for hook in hooks:
                hook()
        return run


def resolve_program(name: str, programs: dict[str, str], pathmap: PathMap, path_env: str) -> str | None:
    if name in programs:
        return programs[name]
    if "/" in name:
        mapped = pathmap.host(name)
        if mapped != name and os.path.exists(mapped):
            return mapped
        base = os.path.basename(name)
        if base in programs:
            return programs[base]
        return name if os.path.exists(name) else None
    return shutil.which(name, path=path_env)


def make_bin_dir(root: Path, programs: dict[str, str]) -> Path:
    """A directory of the image's named programs, first on $PATH so scripts find them too."""
    bin_dir = root / ".sregym-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    py = python_executable()
    for name, target in programs.items():
        if "/" in name:
            continue
        link = bin_dir / name
        if link.exists() or link.is_symlink():
            continue
        if target.endswith(".py"):
            link.write_text(f'#!/bin/sh\nexec "{py}" "{target}" "$@"\n')
            link.chmod(0o755)
        else:
            link.symlink_to(target)
    return bin_dir


def build_context(*, pod: dict, container: dict, recipe: Recipe, env: dict[str, str], container_root: Path,
                  mounts: dict[str, str], extra_env: dict[str, str], run_root: Path | None = None) -> ProcessContext:
    """Container root, private dirs, path map, env and working directory for one container.

    Private ``/run`` and ``/var/run`` directories go under the short ``run_root`` instead of the
    deep container root: they hold UNIX sockets, whose paths must fit in 107 bytes."""
    rootfs = container_root / "rootfs"
    mapping: dict[str, str] = {}
    for private in recipe.private_dirs:
        real = rootfs / private.lstrip("/")
        if run_root is not None and private.startswith(("/run/", "/var/run/")):
            real = run_root / private.lstrip("/")
        real.mkdir(parents=True, exist_ok=True)
        real.chmod(0o777)
        mapping[private] = str(real)
    mapping.update(mounts)  # volume mounts shadow the image's own directories
    pathmap = PathMap(mapping)
    programs = dict(recipe.programs)
    bin_dir = make_bin_dir(container_root, programs)
    home = rootfs / "root"
    home.mkdir(parents=True, exist_ok=True)
    full_env = {
        "PATH": f"{bin_dir}:{HOST_PATH}",
        "HOSTNAME": pod["metadata"].get("name", ""),
        "HOME": str(home),
        **dict(recipe.env),
        **env,
    }
    full_env = {k: pathmap.rewrite(str(v)) for k, v in full_env.items()}
    full_env.update(extra_env)
    full_env["SREGYM_ROOT"] = str(rootfs)
    full_env["SREGYM_MOUNTS"] = json.dumps(mapping)
    workdir = container.get("workingDir") or recipe.workdir
    if workdir:
        cwd = pathmap.host(workdir)
        if cwd == workdir:  # not a mount or private dir: the image's own directory
            cwd = str(rootfs / workdir.lstrip("/"))
        Path(cwd).mkdir(parents=True, exist_ok=True)
    else:
        cwd = str(rootfs)
    security = {**(pod.get("spec", {}).get("securityContext") or {}), **(container.get("securityContext") or {})}
    user = security.get("runAsUser") if os.geteuid() == 0 else None
    group = security.get("runAsGroup") if os.geteuid() == 0 else None
    return ProcessContext(env=full_env, cwd=cwd, pathmap=pathmap, programs=programs, root=rootfs,
                          user=user, group=group)


def command_argv(recipe: Recipe, container: dict, env: dict[str, str]) -> list[str]:
    """ENTRYPOINT/CMD merged with command/args, then ``$(VAR)`` expanded."""
    from .envs import expand
    argv = container_argv(recipe, container.get("command"), container.get("args"))
    return [expand(str(a), env) for a in argv]
