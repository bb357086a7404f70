"""docs/plugin-hooks.md's worked examples (one per plugin kind), built as packages outside the repo:
every block is written to its path and each example's contract suite runs in a fresh pytest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("fault", "app", "noise", "agent", "oracle", "judge", "problems")


def example_files() -> dict[str, str]:
    text = (ROOT / "docs" / "plugin-hooks.md").read_text()
    files = {}
    for block in re.findall(r"```(?:python|yaml)\n(.*?)```", text, flags=re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# examples/"):
            files[first[2:].strip()] = rest
    return files


def test_there_is_one_example_per_plugin_kind():
    kinds = {path.split("/")[1] for path in example_files()}
    assert kinds == set(KINDS)
    for kind in KINDS:
        assert any(p.startswith(f"examples/{kind}/tests/test_") for p in example_files()), kind


@pytest.mark.slow
def test_every_example_passes_its_contract_suite(tmp_path):
    for path, content in example_files().items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    (tmp_path / "examples" / "conftest.py").write_text('pytest_plugins = ["sregym_core.testing"]\n')
    roots = [str(tmp_path / "examples" / kind) for kind in KINDS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(roots)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly",
                          str(tmp_path / "examples")], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary, summary
    assert "SKIPPED" not in run.stdout, run.stdout[-3000:]  # every contract really ran
