"""The app's volumes go back to their post-deploy state at every reset (issue #34 attack 5: files an
agent wrote into a database's data directory were read back in the next attempt). The API is a
recording stand-in here (the directories and the copies are real); the live test on the embedded
cluster is tests/adversarial/test_grading_integrity.py::test_what_the_agent_wrote_into_a_volume_is_gone_after_the_reset."""

from __future__ import annotations

import os
from pathlib import Path

from sregym_core.conductor.volumes import VolumeSnapshots


class FakeKube:
    def __init__(self, volume_dir: Path) -> None:
        self.volume_dir = volume_dir
        self.calls: list[tuple] = []
        self.pods_left = 2  # the user's pod is still listed twice, then gone

    def list_items(self, path, kind, **query):
        if kind == "PersistentVolumeClaim":
            return [{"metadata": {"name": "postgres-geo-data"}, "spec": {"volumeName": "pv-1"}},
                    {"metadata": {"name": "remote"}, "spec": {"volumeName": "pv-remote"}}]
        if kind == "StatefulSet":
            return [{"metadata": {"name": "postgres-geo"}, "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "postgres-geo"}},
                "template": {"spec": {"volumes": [{"name": "data",
                                                   "persistentVolumeClaim": {"claimName": "postgres-geo-data"}}]}}}}]
        if kind == "Deployment":
            return [{"metadata": {"name": "geo"}, "spec": {"replicas": 1, "template": {"spec": {}}}}]
        if kind == "Pod":
            self.pods_left -= 1
            return [{"metadata": {"name": "postgres-geo-0"}}] if self.pods_left > 0 else []
        raise AssertionError(kind)

    def get(self, path, **query):
        if path.endswith("pv-1"):
            return {"spec": {"hostPath": {"path": str(self.volume_dir)}}}
        return {"spec": {"csi": {"driver": "x"}}}  # a network disk: no data on this host

    def request(self, method, path, body=None, **kwargs):
        self.calls.append((method, path, body))


def test_a_reset_puts_the_post_deploy_volume_back_with_its_users_stopped_around_it(tmp_path):
    volume = tmp_path / "pv-1"
    (volume / "pgdata" / "base").mkdir(parents=True)
    (volume / "pgdata" / "base" / "1").write_text("seeded rows")
    os.chmod(volume / "pgdata", 0o700)
    kube = FakeKube(volume)
    snapshots = VolumeSnapshots(kube, ("hotel",))
    assert snapshots.take() == ["hotel/postgres-geo-data"]
    scaled = [(body["spec"]["replicas"], path.rsplit("/", 1)[-1]) for _m, path, body in kube.calls]
    assert scaled == [(0, "postgres-geo"), (1, "postgres-geo")]  # stopped for the copy, then back
    # the attempt: the agent leaves a note and changes a row
    (volume / "pgdata" / "agent-notes.txt").write_text("the answer was geo")
    (volume / "pgdata" / "base" / "1").write_text("tampered")
    kube.calls.clear()
    kube.pods_left = 2
    assert snapshots.restore() == ["restored volume hotel/postgres-geo-data"]
    assert not (volume / "pgdata" / "agent-notes.txt").exists()
    assert (volume / "pgdata" / "base" / "1").read_text() == "seeded rows"
    assert oct((volume / "pgdata").stat().st_mode & 0o777) == oct(0o700)  # modes kept (cp -a)
    assert [body["spec"]["replicas"] for _m, _p, body in kube.calls] == [0, 1]
    assert kube.pods_left <= 0  # the copy waited until the database's pod was gone


def _seeded(tmp_path: Path) -> tuple[Path, FakeKube, VolumeSnapshots]:
    volume = tmp_path / "pv-1"
    (volume / "pgdata" / "base").mkdir(parents=True)
    (volume / "pgdata" / "base" / "1").write_text("seeded rows")
    kube = FakeKube(volume)
    snapshots = VolumeSnapshots(kube, ("hotel",))
    snapshots.take()
    return volume, kube, snapshots


def _stops(kube: FakeKube) -> list[int]:
    return [body["spec"]["replicas"] for _m, _p, body in kube.calls]


def test_a_volume_nothing_wrote_to_is_left_running(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)
    snapshots.mark()  # the attempt begins
    kube.calls.clear()
    assert snapshots.restore() == []
    assert _stops(kube) == []  # the database was not stopped
    assert (volume / "pgdata" / "base" / "1").read_text() == "seeded rows"


def test_a_write_hidden_behind_its_old_times_and_size_is_still_put_back(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)
    snapshots.mark()
    row = volume / "pgdata" / "base" / "1"
    before = row.stat()
    row.write_text("tampered!!!")  # the same size as "seeded rows"
    os.utime(row, ns=(before.st_atime_ns, before.st_mtime_ns))  # and its old modification time
    assert row.stat().st_size == before.st_size and row.stat().st_mtime_ns == before.st_mtime_ns
    kube.calls.clear()
    kube.pods_left = 2
    assert snapshots.restore() == ["restored volume hotel/postgres-geo-data"]
    assert row.read_text() == "seeded rows" and _stops(kube) == [0, 1]


def test_without_a_mark_every_volume_is_put_back(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)
    kube.calls.clear()
    kube.pods_left = 2
    assert snapshots.restore() == ["restored volume hotel/postgres-geo-data"]


def test_a_write_after_the_check_is_put_back_before_the_next_attempt(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)
    snapshots.mark()
    assert snapshots.restore() == []  # unchanged when checked
    (volume / "pgdata" / "late-note.txt").write_text("written while the reset ran")
    kube.calls.clear()
    kube.pods_left = 2
    assert snapshots.restore_late_changes() == ["restored volume hotel/postgres-geo-data"]
    assert not (volume / "pgdata" / "late-note.txt").exists()
    assert snapshots.restore_late_changes() == []  # checked once


def test_an_unreadable_volume_counts_as_changed(tmp_path, monkeypatch):
    from sregym_core.conductor import volumes

    volume, kube, snapshots = _seeded(tmp_path)
    snapshots.mark()
    monkeypatch.setattr(volumes, "fingerprint", lambda path: None)
    kube.calls.clear()
    kube.pods_left = 2
    assert snapshots.restore() == ["restored volume hotel/postgres-geo-data"]


def test_the_next_run_uses_the_copy_again_while_the_volume_is_as_marked(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)
    snapshots.mark()
    # the next `sregym run` on the kept cluster: a new VolumeSnapshots finds the copy and its mark
    again = VolumeSnapshots(FakeKube(volume), ("hotel",))
    assert again.take() == ["hotel/postgres-geo-data"]
    assert not again.copied and again.kube.calls == []  # nothing stopped
    (volume / "pgdata" / "agent-notes.txt").write_text("left by the last attempt of the last run")
    third = VolumeSnapshots(FakeKube(volume), ("hotel",))
    third.take()
    assert third.copied and [b["spec"]["replicas"] for _m, _p, b in third.kube.calls] == [0, 1]
    assert not (volume / "pgdata" / "agent-notes.txt").exists()  # the clean copy was put back
    assert (volume / "pgdata" / "base" / "1").read_text() == "seeded rows"
    third.forget()
    assert not (volume.parent / ".pv-1.sregym-copy").exists() and not (volume.parent / ".pv-1.sregym-mark").exists()


def test_a_copy_without_its_mark_is_taken_again(tmp_path):
    volume, kube, snapshots = _seeded(tmp_path)  # copied, never marked (say, the run died before healthy)
    (volume / "pgdata" / "base" / "1").write_text("the state now")
    again = VolumeSnapshots(FakeKube(volume), ("hotel",))
    again.take()
    assert again.copied
    assert (volume.parent / ".pv-1.sregym-copy" / "pgdata" / "base" / "1").read_text() == "the state now"
