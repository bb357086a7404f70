"""Turning a container spec plus an image recipe into a process: argv, env, cwd, programs."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from . import isolation, mountns
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
    pathmap: PathMap  # rewrites arguments (identity when the mount namespace gives exact paths)
    programs: dict[str, str]
    root: Path
    user: int | None = None
    group: int | None = None
    extra_preexec: list = field(default_factory=list)
    lookup: PathMap | None = None  # container path -> host path, to check that a program exists
    plan: mountns.MountPlan | None = None
    sandbox: isolation.Sandbox | None = None  # an isolated container (see isolation.py)
    identity: isolation.Identity | None = None

    @property
    def popen_cwd(self) -> str | None:
        """Where Popen chdirs before preexec: nowhere in a mount namespace (enter() does it)."""
        return None if self.plan is not None or self.sandbox is not None else self.cwd

    def popen_ids(self) -> tuple[int | None, int | None]:
        """user/group for Popen: in a mount namespace the switch happens after entering it
        (isolated: podinit switches, after the namespaces are set up)."""
        return (None, None) if self.plan is not None or self.sandbox is not None else (self.user, self.group)

    def command(self, argv: list[str], *, exec_mode: bool = False) -> list[str]:
        """The argv to start: isolated, behind podinit (the container's init, or an exec's)."""
        resolved = self.argv(argv)
        if self.identity is None:
            return resolved
        return [*self.identity.init_args("exec" if exec_mode else "run"), *resolved]

    def argv(self, argv: list[str]) -> list[str]:
        """Rewrite paths and resolve the program like the runtime resolves it in the image."""
        if not argv:
            raise ExecNotFound("no command specified")
        args = [self.pathmap.rewrite(a) for a in argv[1:]]
        program = resolve_program(argv[0], self.programs, self.lookup or self.pathmap,
                                  self.env.get("PATH", HOST_PATH),
                                  exact=self.plan is not None or self.sandbox is not None)
        if program is None:
            raise ExecNotFound(
                f'exec: "{argv[0]}": executable file not found in $PATH' if "/" not in argv[0]
                else f'exec: "{argv[0]}": stat {argv[0]}: no such file or directory')
        if program.endswith(".py"):
            return [python_executable(), program, *args]
        return [program, *args]

    def preexec(self, group_preexec=None, join_fd: int | None = None, join_fds: list | None = None):
        """The child-side setup: death signal, cgroup, then the mount namespace (entered for the
        main process, joined through ``join_fd`` for an exec) and the user switch. Isolated: the
        container's namespaces are created (or joined through ``join_fds``); podinit switches user."""
        hooks = [group_preexec] if group_preexec else []
        hooks += self.extra_preexec
        plan, cwd, user, group, sandbox = self.plan, self.cwd, self.user, self.group, self.sandbox

        def run() -> None:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            for hook in hooks:
                hook()
            if sandbox is not None:
                if join_fds is not None:
                    isolation.join(join_fds, cwd)
                else:
                    sandbox.enter(cwd)
            elif plan is not None:
                if join_fd is not None:
                    mountns.join(join_fd, plan.fsroot, cwd)
                else:
                    plan.enter(cwd)
                if group is not None:
                    os.setgid(group)
                if user is not None:
                    os.setuid(user)
        return run


def resolve_program(name: str, programs: dict[str, str], pathmap: PathMap, path_env: str,
                    exact: bool = False) -> str | None:
    if name in programs:
        return programs[name]
    if "/" in name:
        mapped = pathmap.host(name)
        if mapped != name and os.path.exists(mapped):
            return name if exact else mapped
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
                  mounts: dict[str, str], extra_env: dict[str, str], run_root: Path | None = None,
                  mount_ns: bool = False, files: dict[str, str] | None = None,
                  planner: isolation.Planner | None = None, readonly: set[str] | None = None,
                  benchmark_own: bool = False) -> ProcessContext:
    """Container root, private dirs, path map, env and working directory for one container.

    Private ``/run`` and ``/var/run`` directories go under the short ``run_root`` instead of the
    deep container root: they hold UNIX sockets, whose paths must fit in 107 bytes."""
    rootfs = container_root / "rootfs"
    if planner is not None:
        mount_ns = True
        # runAsNonRoot refusals first; benchmark_own: a pod of a hidden namespace (isolation.identity)
        identity = isolation.identity(pod, container, recipe.user, benchmark_own=benchmark_own)
    mapping: dict[str, str] = {}
    for private in recipe.private_dirs:
        real = rootfs / private.lstrip("/")
        if run_root is not None and not mount_ns and private.startswith(("/run/", "/var/run/")):
            real = run_root / private.lstrip("/")
        real.mkdir(parents=True, exist_ok=True)
        real.chmod(0o777)
        mapping[private] = str(real)
    mapping.update(mounts)  # volume mounts shadow the image's own directories
    workdir = container.get("workingDir") or recipe.workdir
    visible = (workdir.startswith(("/usr/", "/etc/")) and os.path.isdir(workdir)) if planner is not None and workdir \
        else bool(workdir and os.path.isdir(mountns.resolve_in_root(workdir)))
    if mount_ns and workdir and workdir not in mapping and not visible:
        real = rootfs / workdir.lstrip("/")  # the image would have it: give it one
        real.mkdir(parents=True, exist_ok=True)
        mapping[workdir] = str(real)
    lookup = PathMap(mapping)
    pathmap = PathMap({}) if mount_ns else lookup
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
    full_env.update(with_own_search_path(extra_env, full_env))
    full_env["SREGYM_ROOT"] = str(rootfs)
    full_env["SREGYM_MOUNTS"] = json.dumps({} if mount_ns else mapping)
    if planner is not None:
        full_env["HOME"] = identity.home if "HOME" not in env else full_env["HOME"]
        full_env["SREGYM_ROOT"] = "/"
        full_env["PATH"] = full_env["PATH"].replace(str(bin_dir), isolation.BIN_PATH, 1)
        image_paths = [*recipe.packages, *(t for _, t in recipe.programs)]
        for key in ("LD_PRELOAD", "PYTHONPATH"):
            image_paths += [p for p in re.split("[: ]", extra_env.get(key, "")) if p.startswith("/")]
        sandbox = planner.plan(container_root=container_root, volumes=mapping, readonly=readonly or set(),
                               files=files or {}, image_paths=image_paths,
                               hostname=pod.get("spec", {}).get("hostname") or pod["metadata"].get("name", ""),
                               ro_binds={isolation.BIN_PATH: str(bin_dir)})
        return ProcessContext(env=full_env, cwd=workdir or "/", pathmap=pathmap, programs=programs, root=rootfs,
                              lookup=lookup, sandbox=sandbox, identity=identity)
    security = {**(pod.get("spec", {}).get("securityContext") or {}), **(container.get("securityContext") or {})}
    user = security.get("runAsUser") if os.geteuid() == 0 else None
    group = security.get("runAsGroup") if os.geteuid() == 0 else None
    if mount_ns:
        plan = mountns.MountPlan(container_root / "fsroot", container_root / "layers", mapping, files or {})
        return ProcessContext(env=full_env, cwd=workdir or "/", pathmap=pathmap, programs=programs, root=rootfs,
                              user=user, group=group, lookup=lookup, plan=plan)
    if workdir:
        cwd = pathmap.host(workdir)
        if cwd == workdir:  # not a mount or private dir: the image's own directory
            cwd = str(rootfs / workdir.lstrip("/"))
        Path(cwd).mkdir(parents=True, exist_ok=True)
    else:
        cwd = str(rootfs)
    return ProcessContext(env=full_env, cwd=cwd, pathmap=pathmap, programs=programs, root=rootfs,
                          user=user, group=group, lookup=lookup)


def with_own_search_path(extra_env: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    """``extra_env`` with the image's and the container's own ``PYTHONPATH`` kept after the node's
    entries (the DNS hook, the socket fallback): a process of an image whose ENV names a search path
    (an app installed with ``pip install --target``) finds its package, as on a real node. Only the
    environment: what the pod can see of the host is the image's packages, never these paths."""
    own = env.get("PYTHONPATH", "")
    if not own or not extra_env.get("PYTHONPATH"):
        return extra_env
    node = extra_env["PYTHONPATH"].split(":")
    return {**extra_env, "PYTHONPATH": ":".join([*node, *(p for p in own.split(":") if p and p not in node)])}


def command_argv(recipe: Recipe, container: dict, env: dict[str, str]) -> list[str]:
    """ENTRYPOINT/CMD merged with command/args, then ``$(VAR)`` expanded."""
    from .envs import expand
    argv = container_argv(recipe, container.get("command"), container.get("args"))
    return [expand(str(a), env) for a in argv]
