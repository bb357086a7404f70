"""The app's volumes as they were after deploy, put back at every reset.

An agent can write anything into the app's persistent volumes (``kubectl exec`` into a database's
pod, or a row through the database itself); a reset that only reconciles API objects leaves it
there for the next attempt to read back (issue #34: notes left in a data directory survived the
reset). So right after deploy each claim's volume is copied, and every reset puts the copy back.

Only volumes whose data this host holds are handled: a PersistentVolume with a ``hostPath`` or
``local`` directory that exists here (the embedded cluster's provisioner makes exactly those). The
workloads that mount a claim are scaled to zero around the copy (a database is never copied or
overwritten while it runs: the copy is the state its clean shutdown left) and back to their
replicas after it.

Stopping a database and starting it again is most of a reset's time, so a volume nothing wrote to
during the attempt is left as it is: :meth:`VolumeSnapshots.mark` fingerprints every volume as an
attempt begins (each entry's inode, size, mode, owner, modification *and change* time: the change
time cannot be set back from user space, so a write hidden behind ``touch -d`` still shows) and
:meth:`~VolumeSnapshots.restore` puts back only the volumes whose fingerprint moved, or that could not
be read. A write that lands after that check (a writer still stopping) is caught by
:meth:`~VolumeSnapshots.restore_late_changes` before the next mark.

The copy and the mark live beside the volume's directory (``.<volume>.sregym-copy`` and
``.<volume>.sregym-mark``, out of every pod's mounts), so the next run on a kept cluster finds them:
when the volume's fingerprint still equals the mark, the volume is as clean as when it was marked
and the copy is used again without stopping anything (every ``sregym run`` used to stop and restart
all the app's datastores at its deploy).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import structlog

from ..errors import DeployError
from .kube import ApiStatusError, Kube

log = structlog.get_logger()

#: how long the workloads mounting a claim get to stop before the copy (an outer bound against hangs)
STOP_TIMEOUT_S = 180.0
_USERS = (("Deployment", "/apis/apps/v1/namespaces/{ns}/deployments"),
          ("StatefulSet", "/apis/apps/v1/namespaces/{ns}/statefulsets"))


@attrs.define
class Volume:
    namespace: str
    claim: str
    path: Path  # the volume's directory on this host
    copy: Path  # its post-deploy copy


@attrs.define
class Stopped:
    kind: str
    namespace: str
    name: str
    replicas: int
    selector: dict[str, str]


class VolumeSnapshots:
    """Post-deploy copies of an app's volumes (beside each volume) and their restoration."""

    def __init__(self, kube: Kube, namespaces: tuple[str, ...]) -> None:
        self.kube, self.namespaces = kube, namespaces
        self.volumes: list[Volume] = []
        #: whether the last take() stopped the users to copy (False: every copy was still good)
        self.copied = False
        #: each volume's fingerprint as the current attempt began ((namespace, claim) -> digest)
        self.marks: dict[tuple[str, str], str | None] = {}
        #: the volumes restore() found unchanged, with the fingerprint it saw
        self.checked: dict[tuple[str, str], str | None] = {}

    # -------------------------------------------------------------------- finding them

    def local_volumes(self) -> list[Volume]:
        """The bound claims of the app whose volume is a directory on this host."""
        found = []
        for ns in self.namespaces:
            for claim in self.kube.list_items(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", "PersistentVolumeClaim"):
                name, volume = claim["metadata"]["name"], (claim.get("spec") or {}).get("volumeName")
                if not volume:
                    continue
                try:
                    pv = self.kube.get(f"/api/v1/persistentvolumes/{volume}")
                except ApiStatusError:
                    continue
                spec = pv.get("spec") or {}
                path = (spec.get("hostPath") or spec.get("local") or {}).get("path")
                if path and Path(path).is_dir():
                    found.append(Volume(ns, name, Path(path), _beside(Path(path), "copy")))
                else:
                    log.info("volume_not_local", namespace=ns, claim=name, volume=volume)
        return found

    def users(self, volumes: list[Volume]) -> list[Stopped]:
        """The Deployments and StatefulSets whose pods mount one of ``volumes``' claims."""
        claims = {(v.namespace, v.claim) for v in volumes}
        out = []
        for ns in self.namespaces:
            for kind, template in _USERS:
                for obj in self.kube.list_items(template.format(ns=ns), kind):
                    spec = obj.get("spec") or {}
                    mounted = {v.get("persistentVolumeClaim", {}).get("claimName")
                               for v in (spec.get("template", {}).get("spec", {}).get("volumes") or [])}
                    name = obj["metadata"]["name"]
                    templated = [t["metadata"]["name"] for t in spec.get("volumeClaimTemplates") or []]
                    if any((ns, c) in claims for c in mounted) or any(
                            n == ns and any(c.startswith(f"{t}-{name}-") for t in templated) for n, c in claims):
                        selector = (spec.get("selector") or {}).get("matchLabels") or {}
                        out.append(Stopped(kind, ns, name, int(spec.get("replicas", 1) or 0), dict(selector)))
        return out

    # -------------------------------------------------------------------- take, restore

    def take(self) -> list[str]:
        """Copy every local volume of the app, its users stopped meanwhile; returns the claims.

        A volume with a marked copy beside it (an earlier run on this cluster) is not copied again:
        unchanged since its mark, it is left as it is; changed (say, by the last attempt of a run
        that ended before its reset), the copy is put back, so no run starts from another's leftovers.
        """
        self.volumes = self.local_volumes()
        marked = {(v.namespace, v.claim): mark for v in self.volumes
                  if (mark := _read_mark(v)) is not None and v.copy.is_dir()}
        fresh = [v for v in self.volumes if (v.namespace, v.claim) not in marked]
        stale = [v for v in self.volumes if (v.namespace, v.claim) in marked
                 and fingerprint(v.path) != marked[(v.namespace, v.claim)]]
        self.marks = dict(marked)
        self.copied = bool(fresh or stale)
        if self.copied:
            with self._stopped(self.users(fresh + stale)):
                for volume in fresh:
                    _beside(volume.path, "mark").unlink(missing_ok=True)  # the mark certifies a whole copy
                    shutil.rmtree(volume.copy, ignore_errors=True)
                    volume.copy.mkdir(parents=True)
                    _copy_tree(volume.path, volume.copy)
                for volume in stale:
                    _empty(volume.path)
                    _copy_tree(volume.copy, volume.path)
        reused = [f"{v.namespace}/{v.claim}" for v in self.volumes if v not in fresh and v not in stale]
        if reused or stale:
            log.info("volume_copies_reused", unchanged=reused, put_back=[f"{v.namespace}/{v.claim}" for v in stale])
        return [f"{v.namespace}/{v.claim}" for v in self.volumes]

    def mark(self) -> None:
        """Fingerprint every volume as the next attempt begins (after deploy, after each reset)."""
        self.marks, self.checked = {}, {}
        for volume in self.local_volumes():
            digest = self.marks[(volume.namespace, volume.claim)] = fingerprint(volume.path)
            mark = _beside(volume.path, "mark")
            if digest is None or not volume.copy.is_dir():
                mark.unlink(missing_ok=True)
            else:
                mark.write_text(digest)

    def restore(self) -> list[str]:
        """Put every volume something wrote to since :meth:`mark` back to its post-deploy copy (a
        claim recreated since has a new volume: the copy goes into that one). Returns what was done."""
        if not self.volumes:
            return []
        current = {(v.namespace, v.claim): v for v in self.local_volumes()}
        targets = [(saved, current[(saved.namespace, saved.claim)]) for saved in self.volumes
                   if (saved.namespace, saved.claim) in current and saved.copy.is_dir()]
        changed, self.checked = [], {}
        for saved, live in targets:
            key = (saved.namespace, saved.claim)
            now = fingerprint(live.path)
            if now is None or key not in self.marks or self.marks[key] != now:
                changed.append((saved, live))
            else:
                self.checked[key] = now
        if self.checked:
            log.info("volumes_unchanged", claims=[f"{ns}/{claim}" for ns, claim in self.checked])
        return self._put_back(changed)

    def restore_late_changes(self) -> list[str]:
        """Put back the volumes :meth:`restore` found unchanged but that were written since."""
        if not self.checked:
            return []
        current = {(v.namespace, v.claim): v for v in self.local_volumes()}
        late = [(saved, current[key]) for saved in self.volumes
                if (key := (saved.namespace, saved.claim)) in self.checked and key in current
                and fingerprint(current[key].path) != self.checked[key]]
        self.checked = {}
        return self._put_back(late)

    def _put_back(self, targets: list[tuple[Volume, Volume]]) -> list[str]:
        if not targets:
            return []
        with self._stopped(self.users([live for _saved, live in targets])):
            for saved, live in targets:
                _empty(live.path)
                _copy_tree(saved.copy, live.path)
        return [f"restored volume {saved.namespace}/{saved.claim}" for saved, _live in targets]

    def forget(self) -> None:
        for volume in self.volumes:
            shutil.rmtree(volume.copy, ignore_errors=True)
            _beside(volume.path, "mark").unlink(missing_ok=True)
        self.volumes, self.marks, self.checked = [], {}, {}

    # -------------------------------------------------------------------- stopping users

    @contextlib.contextmanager
    def _stopped(self, users: list[Stopped]) -> Iterator[None]:
        try:
            for user in users:
                self._scale(user, 0)
            self._wait_gone(users)
            yield
        finally:  # back to their replicas whatever happened (a failed reset then redeploys the app)
            for user in users:
                self._scale(user, user.replicas)

    def _scale(self, user: Stopped, replicas: int) -> None:
        path = dict(_USERS)[user.kind].format(ns=user.namespace) + f"/{user.name}"
        self.kube.request("PATCH", path, body={"spec": {"replicas": replicas}},
                          content_type="application/merge-patch+json")

    def _wait_gone(self, users: list[Stopped]) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        left: list[str] = []
        while time.monotonic() < deadline:
            left = [p["metadata"]["name"] for user in users if user.selector
                    for p in self.kube.list_items(f"/api/v1/namespaces/{user.namespace}/pods", "Pod",
                                                  labelSelector=",".join(f"{k}={v}" for k, v in user.selector.items()))]
            if not left:
                return
            time.sleep(0.5)
        raise DeployError(f"the pods using the app's volumes did not stop within {STOP_TIMEOUT_S:g} s",
                          hints=tuple(f"still running: {name}" for name in left[:10]))


def _beside(path: Path, what: str) -> Path:
    """Where the copy or the mark of the volume at ``path`` lives: beside it, in no pod's mount."""
    return path.parent / f".{path.name}.sregym-{what}"


def _read_mark(volume: Volume) -> str | None:
    try:
        return _beside(volume.path, "mark").read_text().strip() or None
    except OSError:
        return None


def fingerprint(directory: Path) -> str | None:
    """A digest of every entry under ``directory`` (path, type, inode, size, mode, owner, mtime and
    ctime; never contents: reading a database's files would cost more than restoring them). None when
    some part cannot be read, which counts as changed."""
    digest = hashlib.sha256()
    try:
        for root, dirs, names in os.walk(directory, onerror=_raise):
            dirs.sort()
            for name in [".", *sorted(names), *dirs]:
                path = os.path.join(root, name)
                st = os.lstat(path)
                digest.update(f"{os.path.relpath(path, directory)}\0{st.st_mode}:{st.st_ino}:{st.st_size}:"
                              f"{st.st_uid}:{st.st_gid}:{st.st_mtime_ns}:{st.st_ctime_ns}\n".encode())
    except OSError:
        return None
    return digest.hexdigest()


def _raise(error: OSError) -> None:
    raise error


def _empty(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _copy_tree(source: Path, target: Path) -> None:
    """``source``'s contents into ``target``, ownership, modes, times and links kept (cp -a)."""
    done = subprocess.run(["cp", "-a", f"{source}/.", f"{target}/"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise DeployError(f"could not copy volume data {source} -> {target}: {done.stderr.strip()[:500]}")
