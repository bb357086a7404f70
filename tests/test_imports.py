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
