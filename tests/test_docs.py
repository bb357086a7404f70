"""Every hook is documented in docs/plugin-hooks.md (datasette's test, adapted)."""

from __future__ import annotations

import inspect
from pathlib import Path

from sregym_core import hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugin-hooks.md"


def test_plugin_hooks_are_documented():
    text = DOCS.read_text()
    missing = []
    for name, func in inspect.getmembers(hookspecs, inspect.isfunction):
        if not name.startswith("sregym_"):
            continue
        heading = f"## {name}({', '.join(inspect.signature(func).parameters)})"
        if heading not in text:
            missing.append(heading)
    assert not missing, f"undocumented hooks: {missing}"


def test_every_hook_has_a_docstring_with_version():
    for name, func in inspect.getmembers(hookspecs, inspect.isfunction):
        if name.startswith("sregym_"):
            assert func.__doc__ and "versionadded" in func.__doc__, name
