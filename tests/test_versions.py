"""One version for every package, pins that exclude the next breaking release, and a changelog
entry for the version (issue #39: the API changed at 0.1.0 with plugins pinned ``<1``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import sregym_core

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("libs", "plugins", "apps", "faults", "agents")


def _packages() -> list[Path]:
    # as tools/dev_install.py: folders starting with "_" are templates, not packages
    return [ROOT, *sorted(p.parent for group in GROUPS for p in (ROOT / group).glob("*/pyproject.toml")
                          if not p.parent.name.startswith("_"))]


def _next_minor(version: str) -> str:
    major, minor, _patch = (int(part) for part in version.split("."))
    return f"{major}.{minor + 1}" if major == 0 else f"{major + 1}.0"


def _admits(spec: str, version: str) -> bool:
    """Whether a ``>=A,<B`` specifier admits ``version`` (the only form the repo uses)."""
    def key(text):
        return tuple(int(p) for p in text.split("."))

    bounds = dict(re.findall(r"(>=|<)\s*([0-9.]+)", spec))
    return key(bounds[">="]) <= key(version) < key(bounds["<"])


def test_every_package_carries_the_core_version():
    versions = {path.name if path != ROOT else "sregym-core":
                tomllib.loads((path / "pyproject.toml").read_text())["project"]["version"] for path in _packages()}
    assert set(versions.values()) == {sregym_core.__version__}, versions


def test_module_versions_match_their_package():
    for path in _packages():
        for init in (path / "src").glob("*/__init__.py") if path != ROOT else [ROOT / "sregym_core" / "__init__.py"]:
            found = re.search(r'(?m)^__version__ = "([^"]+)"', init.read_text())
            if found:
                assert found.group(1) == sregym_core.__version__, init


def test_sibling_pins_admit_this_version_and_exclude_the_next_breaking_one():
    version, breaking = sregym_core.__version__, _next_minor(sregym_core.__version__) + ".0"
    names = {tomllib.loads((p / "pyproject.toml").read_text())["project"]["name"] for p in _packages()}
    for path in _packages():
        project = tomllib.loads((path / "pyproject.toml").read_text())["project"]
        requirements = [*project.get("dependencies", []),
                        *[r for extra in project.get("optional-dependencies", {}).values() for r in extra]]
        for requirement in requirements:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
            if name not in names:
                continue
            spec = requirement[len(name):].split("]")[-1]
            assert ">=" in spec and "<" in spec, f"{project['name']}: {requirement!r} needs >=X.Y,<X.Y+1"
            assert _admits(spec, version), f"{project['name']}: {requirement!r} does not admit {version}"
            assert not _admits(spec, breaking), f"{project['name']}: {requirement!r} admits {breaking} (breaking)"


def test_the_changelog_has_this_version_in_keep_a_changelog_form():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text and "keepachangelog.com" in text
    assert re.search(rf"(?m)^## \[{re.escape(sregym_core.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text)
    assert re.search(r"(?m)^### Changed \(breaking", text), "a minor 0.x release lists what it breaks"
