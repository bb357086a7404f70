"""Pod volumes materialised as real files under the pod's sandbox directory.

ConfigMap, Secret, downwardAPI and projected volumes use the kubelet's atomic layout: the data
lives in a timestamped ``..<ts>`` directory, ``..data`` is a symlink to it, and each key is a
symlink ``key -> ..data/key``; a refresh swaps ``..data`` in one rename, so readers never see a
half-written set. emptyDir is a plain directory that lives as long as the pod; with ``medium: Memory``
and a root node agent it is a tmpfs of ``sizeLimit`` (else the node's allocatable memory), as the
kubelet mounts it, so writes past the limit fail with ENOSPC (mounted at ``/dev/shm`` it is the pod's
``/dev/shm``); without root it stays a plain directory and the limit is not enforced. A PVC maps to its
bound PersistentVolume's directory (``hostPath``/``local`` path, else ``state_dir/volumes/<pv>``),
which survives pods. hostPath is kept inside the node's own directory, never the real host path.
"""

from __future__ import annotations

import base64
import os
import shutil
import time
from pathlib import Path
from typing import Any

from sregym_core.quantity import cpu_millis, memory_bytes

from .errors import MountError, NotAttached

NETWORK_DISK = "sregym.io/network-disk"  # attached by the attachdetach controller before use

DEFAULT_MODE = 0o644


async def _get(client, resource: str, name: str, namespace: str | None) -> dict | None:
    try:
        return await client.get(resource, name, namespace)
    except Exception as exc:  # noqa: BLE001 - only a 404 means "missing"; others propagate
        if getattr(exc, "code", None) == 404:
            return None
        raise


def field_value(pod: dict, path: str) -> str:
    """The value of a downward-API ``fieldPath`` for this pod."""
    meta = pod.get("metadata", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": pod.get("spec", {}).get("nodeName", ""),
        "spec.serviceAccountName": pod.get("spec", {}).get("serviceAccountName", "default"),
        "status.hostIP": pod.get("status", {}).get("hostIP", ""),
        "status.podIP": pod.get("status", {}).get("podIP", ""),
        "status.hostIPs": ",".join(i.get("ip", "") for i in pod.get("status", {}).get("hostIPs", [])),
        "status.podIPs": ",".join(i.get("ip", "") for i in pod.get("status", {}).get("podIPs", [])),
    }
    if path in simple:
        return simple[path]
    for prefix, source in (("metadata.labels", meta.get("labels") or {}),
                           ("metadata.annotations", meta.get("annotations") or {})):
        if path == prefix:
            return "\n".join(f'{k}="{v}"' for k, v in sorted(source.items()))
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str(source.get(path[len(prefix) + 2:-2], ""))
    raise MountError(f'unsupported fieldPath: "{path}"')


def resource_value(pod: dict, ref: dict, node_allocatable: dict[str, str], default_container: str = "") -> str:
    """The value of a ``resourceFieldRef`` (limits fall back to node allocatable, like the kubelet)."""
    name = ref.get("containerName") or default_container
    container: dict = next((c for c in pod.get("spec", {}).get("containers", []) if c.get("name") == name), {})
    resources = container.get("resources") or {}
    kind, _, resource = ref.get("resource", "").partition(".")
    value = (resources.get(kind) or {}).get(resource)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(resource)
    if value is None:
        value = node_allocatable.get(resource, "0") if kind == "limits" else "0"
    divisor = ref.get("divisor") or "1"
    if resource == "cpu":
        millis, div = cpu_millis(value) or 0, cpu_millis(divisor) or 1
        return str(max(-(-millis // div), 1 if millis else 0))
    amount, div = memory_bytes(value) or 0, memory_bytes(divisor) or 1
    return str(-(-amount // div))


def _decode_data(obj: dict, binary: bool) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    if binary:  # Secret: all values are base64
        for key, value in (obj.get("data") or {}).items():
            files[key] = base64.b64decode(value or "")
        for key, value in (obj.get("stringData") or {}).items():
            files[key] = value.encode()
        return files
    for key, value in (obj.get("data") or {}).items():
        files[key] = (value or "").encode()
    for key, value in (obj.get("binaryData") or {}).items():
        files[key] = base64.b64decode(value or "")
    return files


def _select(files: dict[str, bytes], items: list[dict] | None, kind: str, name: str, optional: bool,
            default_mode: int) -> dict[str, tuple[bytes, int]]:
    if not items:
        return {key: (value, default_mode) for key, value in files.items()}
    out = {}
    for item in items:
        key = item.get("key", "")
        if key not in files:
            if optional:
                continue
            raise MountError(f"{kind} references non-existent config key: {key}" if kind == "configmap"
                             else f"references non-existent secret key: {key}")
        out[item.get("path") or key] = (files[key], int(item.get("mode", default_mode)))
    return out


class VolumeBuilder:
    """Builds and refreshes one pod's volumes."""

    def __init__(self, client, pod: dict, pod_root: Path, node_root: Path, state_dir: Path,
                 node_allocatable: dict[str, str], token_source=None) -> None:
        self.client = client
        self.pod = pod
        self.pod_root = pod_root
        self.node_root = node_root
        self.state_dir = state_dir
        self.node_allocatable = node_allocatable
        self.token_source = token_source
        self.paths: dict[str, Path] = {}

    @property
    def namespace(self) -> str:
        return self.pod["metadata"].get("namespace", "default")

    async def setup_all(self) -> dict[str, Path]:
        """Materialise every volume; raises MountError naming the first one that cannot be set up,
        NotAttached when network disks wait for the attachdetach controller."""
        unattached = await self._unattached()
        if unattached:
            raise NotAttached(unattached)
        for volume in self.pod.get("spec", {}).get("volumes") or []:
            name = volume.get("name", "")
            try:
                self.paths[name] = await self.setup(volume)
            except MountError as exc:
                raise MountError(f'MountVolume.SetUp failed for volume "{name}" : {exc}') from None
        return self.paths

    async def _unattached(self) -> list[str]:
        """Names of the pod's network-disk volumes its node does not list as attached."""
        wanted = []
        for volume in self.pod.get("spec", {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = await _get(self.client, "persistentvolumeclaims", claim, self.namespace) if claim else None
            pv_name = (pvc or {}).get("spec", {}).get("volumeName")
            pv = await _get(self.client, "persistentvolumes", pv_name, None) if pv_name else None
            csi = ((pv or {}).get("spec") or {}).get("csi") or {}
            if csi.get("driver") == NETWORK_DISK:
                wanted.append((volume.get("name", ""), f"kubernetes.io/csi/{NETWORK_DISK}^{csi.get('volumeHandle', pv_name)}"))
        if not wanted:
            return []
        node = await _get(self.client, "nodes", self.pod.get("spec", {}).get("nodeName", ""), None) or {}
        attached = {e.get("name") for e in (node.get("status") or {}).get("volumesAttached") or []}
        return [name for name, unique in wanted if unique not in attached]

    async def refresh(self) -> None:
        """Re-project ConfigMap/Secret/downwardAPI/projected data (the kubelet's periodic sync)."""
        for volume in self.pod.get("spec", {}).get("volumes") or []:
            if any(k in volume for k in ("configMap", "secret", "downwardAPI", "projected")):
                try:
                    await self.setup(volume)
                except MountError:
                    continue  # keep the last good projection, as the kubelet does

    async def setup(self, volume: dict) -> Path:
        name = volume["name"]
        target = self.pod_root / "volumes" / name
        if "emptyDir" in volume:
            target.mkdir(parents=True, exist_ok=True)
            target.chmod(0o777)
            source = volume.get("emptyDir") or {}
            if source.get("medium") == "Memory":
                memory_backed(target, source.get("sizeLimit") or self.node_allocatable.get("memory") or "64Mi")
            return target
        if "configMap" in volume or "secret" in volume or "downwardAPI" in volume or "projected" in volume:
            files = await self._projection(volume)
            _atomic_write(target, files)
            return target
        if "persistentVolumeClaim" in volume:
            return await self._pvc(volume["persistentVolumeClaim"])
        if "hostPath" in volume:
            path = volume["hostPath"].get("path", "/")
            real = self.node_root / "host" / path.lstrip("/")
            kind = volume["hostPath"].get("type", "")
            if kind in ("File", "FileOrCreate"):
                real.parent.mkdir(parents=True, exist_ok=True)
                if kind == "FileOrCreate":
                    real.touch(exist_ok=True)
                elif not real.exists():
                    raise MountError(f"hostPath type check failed: {path} is not a file")
            elif kind == "Directory" and not real.is_dir():
                raise MountError(f"hostPath type check failed: {path} is not a directory")
            else:
                real.mkdir(parents=True, exist_ok=True)
            return real
        kinds = [k for k in volume if k != "name"]
        raise MountError(f"volume type {kinds[0] if kinds else 'unknown'} is not supported by the embedded node")

    async def _pvc(self, source: dict) -> Path:
        claim = source.get("claimName", "")
        pvc = await _get(self.client, "persistentvolumeclaims", claim, self.namespace)
        if pvc is None:
            raise MountError(f'persistentvolumeclaim "{claim}" not found')
        pv_name = pvc.get("spec", {}).get("volumeName")
        if not pv_name:  # the PV controller sets volumeName when it binds the claim
            raise MountError(f'persistentvolumeclaim "{claim}" is not bound')
        pv = await _get(self.client, "persistentvolumes", pv_name, None) or {}
        spec = pv.get("spec", {})
        path = (spec.get("hostPath") or {}).get("path") or (spec.get("local") or {}).get("path")
        real = Path(path) if path and Path(path).is_absolute() and _inside(Path(path), self.state_dir) \
            else self.state_dir / "volumes" / pv_name
        real.mkdir(parents=True, exist_ok=True)
        return real

    async def _projection(self, volume: dict) -> dict[str, tuple[bytes, int]]:
        if "configMap" in volume:
            return await self._configmap(volume["configMap"], volume["configMap"].get("defaultMode", DEFAULT_MODE))
        if "secret" in volume:
            return await self._secret(volume["secret"], volume["secret"].get("defaultMode", DEFAULT_MODE))
        if "downwardAPI" in volume:
            return self._downward(volume["downwardAPI"], volume["downwardAPI"].get("defaultMode", DEFAULT_MODE))
        projected = volume["projected"]
        mode = projected.get("defaultMode", DEFAULT_MODE)
        files: dict[str, tuple[bytes, int]] = {}
        for source in projected.get("sources") or []:
            if "configMap" in source:
                files |= await self._configmap(source["configMap"], mode, lenient_root_ca=True)
            elif "secret" in source:
                files |= await self._secret(source["secret"], mode)
            elif "downwardAPI" in source:
                files |= self._downward(source["downwardAPI"], mode)
            elif "serviceAccountToken" in source:
                token = source["serviceAccountToken"]
                files[token.get("path", "token")] = (await self._token(token), mode)
        return files

    async def _configmap(self, ref: dict, mode: int, lenient_root_ca: bool = False) -> dict[str, tuple[bytes, int]]:
        name, optional = ref.get("name", ""), bool(ref.get("optional"))
        obj = await _get(self.client, "configmaps", name, self.namespace)
        if obj is None:
            if optional or (lenient_root_ca and name == "kube-root-ca.crt"):
                return {}
            raise MountError(f'configmap "{name}" not found')
        return _select(_decode_data(obj, False), ref.get("items"), "configmap", name, optional, mode)

    async def _secret(self, ref: dict, mode: int) -> dict[str, tuple[bytes, int]]:
        name = ref.get("secretName") or ref.get("name", "")
        optional = bool(ref.get("optional"))
        obj = await _get(self.client, "secrets", name, self.namespace)
        if obj is None:
            if optional:
                return {}
            raise MountError(f'secret "{name}" not found')
        return _select(_decode_data(obj, True), ref.get("items"), "secret", name, optional, mode)

    def _downward(self, source: dict, mode: int) -> dict[str, tuple[bytes, int]]:
        files = {}
        for item in source.get("items") or []:
            if "fieldRef" in item:
                value = field_value(self.pod, item["fieldRef"].get("fieldPath", ""))
            else:
                value = resource_value(self.pod, item.get("resourceFieldRef") or {}, self.node_allocatable)
            files[item.get("path", "")] = (value.encode(), int(item.get("mode", mode)))
        return files

    async def _token(self, token: dict) -> bytes:
        if self.token_source is not None:
            try:
                value = self.token_source(self.pod, token)
                if hasattr(value, "__await__"):
                    value = await value
                return str(value).encode()
            except Exception:  # noqa: BLE001 - a token is best effort; the pod still starts
                pass
        sa = self.pod.get("spec", {}).get("serviceAccountName", "default")
        return f"sregym-embedded:{self.namespace}:{sa}".encode()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _atomic_write(target: Path, files: dict[str, tuple[bytes, int]]) -> None:
    """Write ``files`` with the kubelet's ``..data`` symlink swap; skip when nothing changed."""
    target.mkdir(parents=True, exist_ok=True)
    target.chmod(0o755)
    current = target / "..data"
    if current.is_symlink() and _same_content(current, files):
        return
    stamp = target / (time.strftime("..%Y_%m_%d_%H_%M_%S.") + str(time.monotonic_ns()))
    stamp.mkdir()
    for rel, (data, mode) in files.items():
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode & 0o777)
    stamp.chmod(0o755)
    tmp_link = target / "..data_tmp"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(stamp.name)
    old = os.readlink(current) if current.is_symlink() else None
    os.replace(tmp_link, current)
    top_level = {rel.split("/", 1)[0] for rel in files}
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.name not in top_level and entry.is_symlink():
            entry.unlink()
    for name in top_level:
        link = target / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")
    if old and old != stamp.name:
        shutil.rmtree(target / old, ignore_errors=True)


def _same_content(current: Path, files: dict[str, tuple[bytes, Any]]) -> bool:
    existing = {str(p.relative_to(current.resolve())) for p in current.resolve().rglob("*") if p.is_file()}
    if existing != set(files):
        return False
    return all((current / rel).read_bytes() == data for rel, (data, _) in files.items())


# --------------------------------------------------------------------------- memory-backed emptyDir

def memory_backed(target: Path, size_limit: str) -> bool:
    """Mount a tmpfs of ``size_limit`` on ``target`` (root only); False when it stays a directory."""
    if os.geteuid() != 0 or os.environ.get("SREGYM_POD_ISOLATION", "1") == "0" or os.path.ismount(target):
        return os.path.ismount(target)
    from .isolation import _libc

    size = max(memory_bytes(str(size_limit)) or 0, 4096)
    if _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", 0, f"size={size},mode=1777".encode()) != 0:
        return False
    return True


def release_memory_volumes(pod_root: Path) -> None:
    """Unmount the pod's memory-backed emptyDirs (before its directory is removed)."""
    from .isolation import MNT_DETACH, _libc

    volumes = pod_root / "volumes"
    if not volumes.is_dir():
        return
    for entry in volumes.iterdir():
        if os.path.ismount(entry):
            _libc.umount2(str(entry).encode(), MNT_DETACH)
