"""apps/_template made into a new app as docs/adding-an-app.md says, outside the repository: the
doc's rename steps run on a copy, the copy installs (beside the venv, not into it), `sregym plugins`
and `sregym list-problems` list it, and its own fast tests (the contract suites among them) pass.
Its deploy and a sound `sregym validate` are tests/test_app_template_validation.py's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SREGYM = str(Path(sys.executable).parent / "sregym")
DOC = ROOT / "docs" / "adding-an-app.md"
#: the name and title the doc's example renames the template to
NAME, TITLE = "bookshelf", "Book Shelf"


def rename_steps() -> str:
    """The doc's rename block: the fenced bash block after the ``rename-steps`` marker."""
    text = DOC.read_text()
    return re.search(r"<!-- rename-steps:.*?-->\n```bash\n(.*?)```", text, flags=re.S).group(1)


def build_from_the_doc(workdir: Path) -> Path:
    """A checkout-like folder holding only apps/_template, renamed there by the doc's steps; the new
    app's folder."""
    shutil.copytree(ROOT / "apps" / "_template", workdir / "apps" / "_template",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    steps = rename_steps()
    assert f'NAME={NAME} TITLE="{TITLE}"' in steps, "the test renames to the doc's own example"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", steps], cwd=workdir, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return workdir / "apps" / f"sregym-app-{NAME}"


def install_beside_the_venv(package: Path, site: Path) -> dict[str, str]:
    """``pip install --target`` (not into the venv: no other test sees the new app); the environment
    that sees it."""
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                              "--target", str(site), str(package)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    return {**os.environ, "PYTHONPATH": str(site)}


def test_the_rename_leaves_no_placeholder(tmp_path):
    package = build_from_the_doc(tmp_path)
    left = [str(p.relative_to(package)) for p in package.rglob("*")
            if "myapp" in p.name or (p.is_file() and re.search(r"myapp|My App", p.read_text(errors="replace")))]
    assert not left, left
    assert (package / "src" / f"sregym_app_{NAME}" / "problems" / f"{NAME}-wrong-image-backend.yaml").is_file()


def test_an_app_built_from_the_template_installs_lists_and_passes_its_contract(tmp_path):
    package = build_from_the_doc(tmp_path / "work")
    env = install_beside_the_venv(package, tmp_path / "site")

    plugins = subprocess.run([SREGYM, "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert plugins.returncode == 0, plugins.stderr
    assert any(p["name"] == f"app-{NAME}" and p["status"] == "loaded" for p in json.loads(plugins.stdout))
    problems = subprocess.run([SREGYM, "list-problems", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert problems.returncode == 0, problems.stderr
    ours = [p for p in json.loads(problems.stdout) if p.get("app") == NAME]
    assert [p["id"] for p in ours] == [f"{NAME}-wrong-image-backend"]

    tests = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "not slow", "tests"],
                           capture_output=True, text=True, env=env, cwd=package, timeout=300)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    for name in ("TestApp::test_inventory_matches_schema", "TestProblems::test_problems_resolve",
                 "test_inventory_matches_the_manifests", "test_shipped_manifests_are_the_built_ones",
                 "test_the_generator_passes_right_answers_and_catches_wrong_content_and_failures"):
        assert re.search(rf"{re.escape(name)}(\[\S+\])? PASSED", tests.stdout), (name, tests.stdout[-3000:])
    assert " skipped" not in tests.stdout.splitlines()[-1], tests.stdout[-1500:]


def test_the_template_itself_is_never_installed():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dev_install", ROOT / "tools" / "dev_install.py")
    dev_install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev_install)
    assert ROOT / "apps" / "_template" not in dev_install.packages()
    assert ROOT / "apps" / "sregym-app-fleetcast" in dev_install.packages()  # the rule skips only `_` folders
    assert importlib.util.find_spec("sregym_app_myapp") is None
