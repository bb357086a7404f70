"""The README's "Writing a plugin" example, copied into a fresh package outside the repo as an
outside contributor would: it installs, appears in `sregym list-faults` and passes its contract."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SREGYM = str(Path(sys.executable).parent / "sregym")


def readme_files(section: str = "## Writing a plugin") -> dict[str, str]:
    """The fenced blocks of a README section whose first line names a file (``# path``)."""
    text = (ROOT / "README.md").read_text()
    body = text[text.index(section):]
    body = body[:body.index("\n## ", len(section))]
    files = {}
    for block in re.findall(r"```(?:toml|python)\n(.*?)```", body, flags=re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# ") and "/" in first or first.strip() in ("# pyproject.toml", "# conftest.py"):
            files[first[2:].strip()] = rest
    return files


def test_the_readme_names_every_file_of_the_example():
    assert set(readme_files()) == {"pyproject.toml", "src/sregym_fault_example/plugin.py", "conftest.py",
                                   "tests/test_contract.py", "tests/test_live.py"}


@pytest.mark.slow
def test_readme_plugin_installs_lists_and_passes_its_contract(tmp_path, embedded_cluster):
    package = tmp_path / "sregym-fault-example"
    for name, content in readme_files().items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    site = tmp_path / "site"
    # installed beside the test venv (not into it), so no other test sees the example plugin
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                              "--target", str(site), str(package)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(site), "SREGYM_LOAD_PLUGINS": "fault-example,app-hotel-reservation"}

    listed = subprocess.run([SREGYM, "list-faults", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "scale-to-zero" in listed.stdout
    plugins = subprocess.run([SREGYM, "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert any(p["name"] == "fault-example" and p["status"] == "loaded" for p in json.loads(plugins.stdout))

    tests = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "not slow",
                            str(package)], capture_output=True, text=True, env=env, cwd=package, timeout=300)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "test_inject_fix_recover_round_trip[scale-to-zero] PASSED" in tests.stdout
    assert "test_every_fault_has_a_live_case PASSED" in tests.stdout

    # the live contract, on this session's embedded cluster (reused, not a second bring-up)
    live_env = {**os.environ, "PYTHONPATH": str(site), "SREGYM_HOME": str(embedded_cluster.home),
                "SREGYM_E2E_CLUSTER": embedded_cluster.name}
    live = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "slow",
                           str(package / "tests" / "test_live.py")], capture_output=True, text=True, env=live_env,
                          cwd=package, timeout=900)
    assert live.returncode == 0, live.stdout[-4000:] + live.stderr[-2000:]
    assert "test_fault_live[scale-to-zero] PASSED" in live.stdout
