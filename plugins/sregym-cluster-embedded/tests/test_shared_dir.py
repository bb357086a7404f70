"""The compiled shims' directory is this user's own: a directory in /tmp that another user created
first (or made writable) would let that user choose the libraries preloaded into this user's pods."""

from __future__ import annotations

import os

import pytest
from sregym_cluster_embedded.node import shim

from sregym_core.errors import ClusterError


@pytest.fixture
def shared(tmp_path, monkeypatch):
    path = tmp_path / "sregym-shim-test"
    monkeypatch.setattr(shim, "SHARED_DIR", path)
    return path


def test_the_directory_is_created_private_and_world_readable(shared):
    assert shim.ensure_shared_dir() == shared
    assert shared.stat().st_uid == os.geteuid() and shared.stat().st_mode & 0o777 == 0o755


def test_a_directory_others_may_write_is_refused(shared):
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ClusterError, match="not a private directory"):
        shim.ensure_shared_dir()


def test_a_symlink_is_refused(shared, tmp_path):
    (tmp_path / "elsewhere").mkdir(mode=0o755)
    shared.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ClusterError):
        shim.ensure_shared_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create a directory owned by another user")
def test_a_directory_of_another_user_is_refused(shared):
    shared.mkdir(mode=0o755)
    os.chown(shared, 1234, 1234)
    with pytest.raises(ClusterError, match="owner uid 1234"):
        shim.ensure_shared_dir()


def test_each_user_has_its_own_directory():
    assert shim.SHARED_DIR.name == f"sregym-shim-{os.geteuid()}"
