"""The cluster state-directory locks: shared and exclusive holders, waiting, release on death."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sregym_cluster_embedded.locks import FileLock, holding


def test_shared_holders_coexist_and_keep_an_exclusive_one_out(tmp_path: Path) -> None:
    path = tmp_path / "users.lock"
    a, b, c = FileLock(path), FileLock(path), FileLock(path)
    assert a.acquire(shared=True) and b.acquire(shared=True)
    assert not c.acquire(timeout=0) and not c.held
    a.release()
    assert not c.acquire(timeout=0.2), "one shared holder is enough to keep it out"
    b.release()
    assert c.acquire(timeout=0) and c.held
    assert not a.acquire(shared=True, timeout=0.1), "an exclusive holder keeps shared ones out"
    c.release()


def test_exclusive_holder_is_named_and_a_waiter_gets_the_lock_when_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "apps.lock"
    holder = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / 'src')!r})
from sregym_cluster_embedded.locks import FileLock
held = FileLock(__import__('pathlib').Path({str(path)!r}))
held.acquire()
print('held', flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        waiter = FileLock(path)
        assert not waiter.acquire(timeout=0)
        assert waiter.holder().startswith(f"pid {holder.pid} (")
        holder.kill()
        started = time.monotonic()
        assert waiter.acquire(timeout=120), ("the kernel releases a dead holder's lock", time.monotonic() - started)
        waiter.release()
    finally:
        holder.kill()
        holder.wait()


def test_holding_raises_a_cluster_error_when_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sregym_core.errors import ClusterError

    monkeypatch.setenv("SREGYM_HOME", str(tmp_path))
    with holding("busy", "lifecycle.lock", timeout=0, busy="cluster 'busy' is being started"):
        with pytest.raises(ClusterError, match="cluster 'busy' is being started") as caught:
            with holding("busy", "lifecycle.lock", timeout=0.1, busy="cluster 'busy' is being started"):
                pass
    assert any("sregym cluster down --name busy" in hint for hint in caught.value.hints)
    with holding("busy", "lifecycle.lock", timeout=0, busy="x"):
        pass  # released on leaving the block
