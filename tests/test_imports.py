"""The dependency rule: the core never imports a plugin (an import-linter-style contract)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "sregym_core"


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_core_never_imports_a_plugin():
    offenders = []
    for path in CORE.rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top.startswith("sregym_") and top != "sregym_core":
                offenders.append(f"{path.relative_to(CORE.parent)} imports {name}")
    assert not offenders, offenders


def test_hookspecs_import_nothing_heavy():
    names = _imports(CORE / "hookspecs.py")
    assert set(names) <= {"__future__", "typing", "pluggy", "collections.abc", "click", "types"}, names


REPO = CORE.parent
_SOURCE_ROOTS = ("sregym_core", "libs", "plugins", "apps", "faults", "agents", "tests", "benchmarks", "tools")


def _repo_sources():
    for root in _SOURCE_ROOTS:
        for path in (REPO / root).rglob("*.py"):
            if not any(part in (".venv", "build", ".tox") or part.endswith(".egg-info") for part in path.parts):
                yield path


def test_hooks_are_called_only_through_the_plugin_host():
    """Every hook call goes through :class:`PluginHost`'s typed methods (one place to trace,
    order and type them); ``pm.hook`` appears only in sregym_core/plugins.py."""
    allowed = CORE / "plugins.py"
    offenders = []
    for path in _repo_sources():
        if path == allowed:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "hook" and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "pm":
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, offenders


def test_no_import_fallbacks_in_the_core():
    """A module that fails to import is an error naming it, never a silently missing feature."""
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = [node.type] if not isinstance(node.type, ast.Tuple) else list(node.type.elts)
                reraises = any(isinstance(n, ast.Raise) for stmt in node.body for n in ast.walk(stmt))
                if not reraises and any(isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError")
                                        for t in caught):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr == "find_spec":
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno} (find_spec)")
    assert not offenders, offenders
