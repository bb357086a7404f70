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
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy

ROOT = Path(__file__).resolve().parent.parent


def _sources(pattern: str) -> list[str]:
    """The packages' ``src`` folders (``_template``-style folders are starting points, not packages)."""
    return sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern) if not p.parent.name.startswith("_"))


#: what the type checker covers, in the order it was brought in: the core (the contract side first:
#: records, protocols, the fault toolkit, problems, the plugin host; then the engine), the fault
#: packs, the app kit the packs and apps import, the apps, and the plugins, the embedded cluster last
#: (2026-11-30, issue #39): every package of ours (a package outside these paths has no py.typed
#: marker, so its imports would not be checked: every package imported here is listed here)
TYPED_PATHS: tuple[str, ...] = (
    "sregym_core",
    *_sources("faults/*/src"),
    "libs/sregym-appkit/src",
    *_sources("apps/*/src"),
    *_sources("plugins/*/src"),
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
    # per-module settings only: no package of ours has its errors ignored wholesale or goes unread;
    # what is skipped or may be missing is a third-party module, named
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "ignore_errors" not in settings and "follow_imports" not in settings
    for override in settings.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not override.get("ignore_errors"), override
        if override.get("follow_imports") or override.get("ignore_missing_imports"):
            ours = [m for m in modules if m.startswith("sregym")]
            assert not ours, f"our own modules must be checked, not skipped: {ours}"
