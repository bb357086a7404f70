"""Builds the node fault shim (faultshim.c) and says where each node's rules file lives.

The shim is loaded into every pod process (after the bind shim) and stays inert until the node's
rules file has rules; ``admin_faults`` writes that file. Both live in a world-readable directory,
as the bind shim does: processes that drop privileges (postgres) must still map and read them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from .shim import SHARED_DIR, ensure_shared_dir

SOURCE = Path(__file__).with_name("faultshim.c")


def build_fault_shim() -> Path | None:
    """Path of the compiled fault shim (cached by source hash), or None when gcc is unavailable."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    target = SHARED_DIR / f"sregym_fault-{digest}.so"
    if target.exists():
        return target
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    ensure_shared_dir()
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    result = subprocess.run([gcc, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(SOURCE), "-ldl", "-lpthread"],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        return None
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


def rules_dir(state_dir: Path) -> Path:
    """A world-readable directory of rules files, one per cluster (keyed by its state dir)."""
    key = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:12]
    directory = ensure_shared_dir() / f"faults-{key}"
    directory.mkdir(exist_ok=True)
    directory.chmod(0o755)
    return directory


def rules_file(state_dir: Path, node: str) -> Path:
    return rules_dir(state_dir) / f"{node}.rules"


def write_rules(path: Path, lines: list[str]) -> None:
    """Replace a rules file atomically (the shim notices the new mtime within 100 ms)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.chmod(0o644)
    tmp.replace(path)
