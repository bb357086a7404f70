"""Builds the bind/connect LD_PRELOAD shim once per state dir (gcc), or picks the Python fallback."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sregym_core.errors import ClusterError

SOURCE = Path(__file__).with_name("shim_bind.c")
PY_FALLBACK = Path(__file__).with_name("pyshim")


#: World-readable (processes that drop privileges must map the shims) but per user and owned by it:
#: a directory another user created first could hand this user's pods a library of that user's choosing.
SHARED_DIR = Path(tempfile.gettempdir()) / f"sregym-shim-{os.geteuid()}"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (0755), and refuse one this user does not own or others may write: a
    directory in /tmp another user created first would choose what this user's pods load or run."""
    path.mkdir(mode=0o755, exist_ok=True)
    info = path.lstat()
    if path.is_symlink() or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise ClusterError(f"{path} is not a private directory of this user (owner uid {info.st_uid}, "
                           f"mode {info.st_mode & 0o777:o})",
                           hints=(f"remove it (it only holds caches and sockets of stopped clusters): rm -rf {path}",))
    return path


def ensure_shared_dir() -> Path:
    """:data:`SHARED_DIR`, created private to this user (see :func:`ensure_private_dir`)."""
    return ensure_private_dir(SHARED_DIR)


def build_shim(state_dir: Path | None = None) -> Path | None:
    """Path of the compiled shim (cached by source hash), or None when gcc is unavailable.

    It lives in a world-readable directory, not the state dir: processes that drop privileges
    (postgres, memcached -u) must still be able to map it, and a state dir under a 0700 home
    would make the dynamic loader skip it silently, leaving the server on 0.0.0.0."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target = SHARED_DIR / f"sregym_bind-{digest}.so"
    if target.exists():
        return target
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    ensure_shared_dir()
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    result = subprocess.run([gcc, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(SOURCE), "-ldl"],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        return None
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


def shim_env(shim: Path | None, pod_ip: str, env: dict[str, str]) -> dict[str, str]:
    """Env additions that make a container's processes use its pod IP."""
    extra = {"SREGYM_POD_IP": pod_ip}
    if shim is not None:
        preload = env.get("LD_PRELOAD", "")
        extra["LD_PRELOAD"] = f"{shim}:{preload}" if preload else str(shim)
    else:
        path = env.get("PYTHONPATH", "")
        extra["PYTHONPATH"] = f"{PY_FALLBACK}:{path}" if path else str(PY_FALLBACK)
    return extra
