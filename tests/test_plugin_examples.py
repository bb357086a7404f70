"""docs/plugin-hooks.md's worked examples (one per plugin kind), as an outside contributor uses them.

The fast tests write every block to its path and run each example's contract suite from source.
The slow test builds each example as a real package outside the repo (a ``pyproject.toml`` with an
entry point in the ``sregym`` group), installs it into a throwaway venv, and checks that
``sregym plugins`` lists it and that its contract suite passes against the installed copy.
"""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("fault", "app", "noise", "agent", "oracle", "judge", "problems", "cluster", "executor", "observability",
         "tool")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "sregym-example-{kind}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["sregym-core>=0.2,<0.3"]

[project.entry-points.sregym]
example-{kind} = "example_{kind}.plugin"

[tool.setuptools]
packages = ["example_{kind}"]

[tool.setuptools.package-data]
example_{kind} = ["*.yaml", "problems/*.yaml"]
"""


def example_files() -> dict[str, str]:
    text = (ROOT / "docs" / "plugin-hooks.md").read_text()
    files = {}
    for block in re.findall(r"```(?:python|yaml)\n(.*?)```", text, flags=re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# examples/"):
            files[first[2:].strip()] = rest
    return files


def write_examples(root: Path) -> Path:
    """Every example block at its path under ``root/examples``, plus the harness's conftest (the
    ``pytest.ini`` keeps ``examples/`` the rootdir once each example has its own pyproject.toml)."""
    for path, content in example_files().items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    examples = root / "examples"
    (examples / "conftest.py").write_text('pytest_plugins = ["sregym_core.testing"]\n')
    (examples / "pytest.ini").write_text("[pytest]\n")
    return examples


def run_contracts(python: str, examples: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    tests = [str(examples / kind / "tests") for kind in KINDS]
    return subprocess.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly", *tests],
                          capture_output=True, text=True, env=env, cwd=examples.parent, timeout=600)


def assert_contracts_passed(run: subprocess.CompletedProcess) -> None:
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert "passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert "SKIPPED" not in run.stdout, run.stdout[-3000:]  # every contract really ran


def test_there_is_one_example_per_plugin_kind():
    kinds = {path.split("/")[1] for path in example_files()}
    assert kinds == set(KINDS)
    for kind in KINDS:
        assert f"examples/{kind}/example_{kind}/plugin.py" in example_files(), kind
        assert any(p.startswith(f"examples/{kind}/tests/test_") for p in example_files()), kind


def test_every_example_passes_its_contract_suite_from_source(tmp_path):
    examples = write_examples(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(examples / kind) for kind in KINDS)}
    assert_contracts_passed(run_contracts(sys.executable, examples, env))


def throwaway_venv(where: Path) -> Path:
    """A venv with ``--system-site-packages`` from this interpreter that also sees this venv's
    packages (editable installs included: the ``.pth`` runs ``site.addsitedir``). This venv is itself
    a venv, so "system" alone would mean the base interpreter's site-packages only."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
                   check=True, capture_output=True, timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    parents = [p for p in site.getsitepackages() if p.startswith(sys.prefix)] or [sysconfig.get_paths()["purelib"]]
    (Path(purelib) / "sregym-parent-venv.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in parents))
    return python


@pytest.mark.slow
def test_every_example_installs_as_a_package_lists_and_passes_its_contract_suite(tmp_path):
    examples = write_examples(tmp_path)
    for kind in KINDS:
        (examples / kind / "pyproject.toml").write_text(PYPROJECT.format(kind=kind))
    python = str(throwaway_venv(tmp_path / "venv"))
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "SREGYM_LOAD_PLUGINS", "SREGYM_DISABLE_PLUGINS")}
    # setuptools older than 70.1 builds wheels only with the `wheel` package, which the test venv
    # lacks: the throwaway venv takes it from pip's configured index (never the test venv itself)
    tool = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "wheel>=0.40"], capture_output=True, text=True, env=env, timeout=300)
    assert tool.returncode == 0, tool.stderr[-2000:]
    install = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                              "--no-build-isolation", "--no-index", *(str(examples / kind) for kind in KINDS)],
                             capture_output=True, text=True, env=env, timeout=600)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]

    # the installed copies, not the sources beside the tests, are what gets imported
    script = ("import importlib, json, sys\n"
              "print(json.dumps({k: importlib.import_module(f'example_{k}.plugin').__file__ for k in sys.argv[1:]}))")
    where = subprocess.run([python, "-c", script, *KINDS], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120)
    assert where.returncode == 0, where.stderr
    for kind, module_file in json.loads(where.stdout).items():
        assert module_file.startswith(str(tmp_path / "venv" / "lib")), (kind, module_file)

    sregym = [python, "-c", "import sys; from sregym_core.cli import main; sys.argv[0] = 'sregym'; main()"]
    listed = subprocess.run([*sregym, "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    for kind in KINDS:
        assert plugins[f"example-{kind}"]["distribution"] == f"sregym-example-{kind}", plugins.get(f"example-{kind}")
        assert plugins[f"example-{kind}"]["status"] == "loaded"
    faults = subprocess.run([*sregym, "list-faults", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert faults.returncode == 0, faults.stderr
    assert "image-tag-typo" in [f["name"] for f in json.loads(faults.stdout)["faults"]]

    for kind in KINDS:  # the tests import the package, never the source folder beside them
        (examples / kind / f"example_{kind}").rename(examples / kind / f"example_{kind}.src")
    assert_contracts_passed(run_contracts(python, examples, env))
