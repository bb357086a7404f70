"""The type checker over the contract, the packs and the apps (issue #39: "types stop at the record").

mypy (pinned in the core's ``testing`` extra) checks :data:`TYPED_PATHS` with the settings in the
root ``pyproject.toml`` (``[tool.mypy]``): no package is exempt, a third-party module without types
is listed by name, and a ``# type: ignore`` must name its error code. The test fails with mypy's
report, so a fault pack that passes a plain ``str`` where the contract takes a ``Layer``, or a
toolkit helper that loses ``FaultContext``, fails the landing suite (docs/ci.md says how to run it).

It runs from a fresh cache, as CI does (no cache survives between CI runs), and is marked ``heavy``:
tens of seconds of one core, started early when the suite runs in parallel.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy

ROOT = Path(__file__).resolve().parent.parent

#: what the type checker covers, in the order it was brought in: the core (the contract side first:
#: records, protocols, the fault toolkit, problems, the plugin host; then the engine), the fault
#: packs, and the app kit the packs and apps import (a package outside these paths has no py.typed
#: marker, so its imports would not be checked: every package imported here is listed here)
TYPED_PATHS: tuple[str, ...] = (
    "sregym_core",
    *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("faults/*/src")),
    "libs/sregym-appkit/src",
)


def _mypy(*args: str, cwd: Path = ROOT, cache: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def _paths() -> list[str]:
    """TYPED_PATHS, each checked to exist (a renamed module must not silently drop out of the check)."""
    missing = [p for p in TYPED_PATHS if not (ROOT / p).exists()]
    assert not missing, f"TYPED_PATHS names paths that do not exist: {missing}"
    return list(TYPED_PATHS)


def test_the_typed_paths_pass_the_type_checker(tmp_path):
    result = _mypy(*_paths(), cache=tmp_path / "mypy-cache")
    assert result.returncode == 0, (f"mypy found type errors (settings: pyproject.toml [tool.mypy]; "
                                    f"run: python -m mypy {' '.join(TYPED_PATHS)}):\n"
                                    f"{result.stdout}{result.stderr}")


def test_the_checker_fails_on_a_type_error_and_on_a_bare_ignore(tmp_path):
    # the check can fail: a toolkit call with a wrong argument type, and a `# type: ignore` that
    # names no error code, are both reported with the repo's settings
    module = tmp_path / "typed_example.py"
    module.write_text(
        "from sregym_core.faultkit import kube\n"
        "from sregym_core.faults import FaultContext\n"
        "def inject(ctx: FaultContext) -> None:\n"
        "    kube.restart(ctx, 'frontend')\n"
        "x: int = 'one'  # type: ignore\n")
    result = _mypy("--config-file", str(ROOT / "pyproject.toml"), str(module), cache=tmp_path / "mypy-cache")
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"typed_example\.py:4: error: .*\[arg-type\]", result.stdout), result.stdout
    assert re.search(r"typed_example\.py:5: error: .*\[ignore-without-code\]", result.stdout), result.stdout


def test_no_blanket_ignores_in_the_settings():
    # per-module settings only: no package has its errors ignored wholesale
    settings = (ROOT / "pyproject.toml").read_text()
    section = settings[settings.index("[tool.mypy]"):settings.index("[tool.ruff]")]
    assert "ignore_errors" not in section
    assert not re.search(r"^follow_imports\s*=\s*\"?(skip|silent)", section, re.M)
