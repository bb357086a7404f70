"""Shared helpers for the patch/protobuf/openapi tests (helper "patch")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).parent / "data_patch"


def kubectl_path() -> str | None:
    """The project's pinned kubectl (1.37 from the venv), else one on PATH."""
    venv_kubectl = Path(sys.executable).parent / "kubectl"
    if venv_kubectl.exists():
        return str(venv_kubectl)
    return shutil.which("kubectl")


def kubectl_local_patch(obj: dict[str, Any], patch: Any, patch_type: str, tmp: Path) -> dict[str, Any] | str:
    """Run ``kubectl patch --local`` (kubectl's own compiled-in patch code): the oracle for our patches.

    Returns the patched object, or the error text when kubectl refuses the patch.
    """
    kubectl = kubectl_path()
    assert kubectl, "kubectl not found"
    src = tmp / "obj.json"
    src.write_text(json.dumps(obj))
    env = {**os.environ, "KUBECONFIG": str(tmp / "no-kubeconfig"), "HOME": str(tmp)}
    proc = subprocess.run(
        [kubectl, "patch", "--local", "-f", str(src), "--type", patch_type, "-p", json.dumps(patch), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    if proc.returncode != 0:
        return proc.stderr.strip()
    return json.loads(proc.stdout)


def prune_empty(value: Any) -> Any:
    """Drop empty maps/lists and nulls: kubectl's typed round trip adds ``resources: {}`` and the like."""
    if isinstance(value, dict):
        pruned = {k: prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value
