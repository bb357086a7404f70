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


#: every first-party package's shipped code: the core, and ``src/`` of each distribution folder
_PACKAGE_GROUPS = ("plugins", "faults", "apps", "agents", "libs")
_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")

#: The only places allowed to probe for a module, each with the reason it is not a silent fallback.
#: Keep this list minimal: a declared dependency is imported plainly; an optional one is an extra
#: whose absence raises a SregymError naming it.
_FALLBACK_ALLOWED = {
    # find_spec locates the source directories a local image's pods run from without importing
    # them; a missing image package is a PluginError (see package_dirs), not a silent skip
    ("plugins/sregym-cluster-embedded/src/sregym_cluster_embedded/plugin_images.py", "find_spec"),
}


def _first_party_sources():
    yield from CORE.rglob("*.py")
    for group in _PACKAGE_GROUPS:
        for package in sorted((REPO / group).iterdir()):
            if package.is_dir() and not package.name.startswith("."):
                assert (package / "src").is_dir(), f"{package.relative_to(REPO)} has no src/ to scan"
                yield from (package / "src").rglob("*.py")


def _fallbacks(tree: ast.AST):
    """(line, kind) for every handler that swallows an ImportError, every ``suppress(ImportError)``
    and every ``find_spec``: the shapes a silently degrading optional import takes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            caught = [node.type] if not isinstance(node.type, ast.Tuple) else list(node.type.elts)
            reraises = any(isinstance(n, ast.Raise) for stmt in node.body for n in ast.walk(stmt))
            if not reraises and any(ast.unparse(t).rsplit(".", 1)[-1] in _IMPORT_ERRORS for t in caught):
                yield node.lineno, "except ImportError"
        elif isinstance(node, ast.Call) and ast.unparse(node.func).rsplit(".", 1)[-1] == "suppress" and \
                any(ast.unparse(arg).rsplit(".", 1)[-1] in _IMPORT_ERRORS for arg in node.args):
            yield node.lineno, "except ImportError"
        elif (isinstance(node, ast.Attribute) and node.attr == "find_spec") or \
                (isinstance(node, ast.Name) and node.id == "find_spec"):
            yield node.lineno, "find_spec"


def test_no_import_fallbacks_in_any_first_party_package():
    """A module that fails to import is an error naming it, never a silently missing feature:
    in the core and in every plugin, fault pack, app, agent and library of the repository."""
    offenders, allowed_seen, roots = [], set(), set()
    for path in _first_party_sources():
        where = str(path.relative_to(REPO))
        roots.add(where.split("/")[0])
        for line, kind in _fallbacks(ast.parse(path.read_text(), filename=where)):
            if (where, kind) in _FALLBACK_ALLOWED:
                allowed_seen.add((where, kind))
            else:
                offenders.append(f"{where}:{line} ({kind})")
    assert roots == {"sregym_core", *_PACKAGE_GROUPS}
    assert not offenders, offenders
    assert allowed_seen == _FALLBACK_ALLOWED, f"stale allow-list entries: {_FALLBACK_ALLOWED - allowed_seen}"


def test_the_fallback_scan_catches_each_shape():
    source = """
try:
    import grpc
except ImportError:
    grpc = None
try:
    import yaml
except (ValueError, ModuleNotFoundError):
    pass
with contextlib.suppress(ImportError):
    import ray
ok = importlib.util.find_spec("mcp") is not None
try:
    import fine
except ImportError as exc:
    raise UsageError("install it") from exc
"""
    assert [kind for _line, kind in _fallbacks(ast.parse(source))] == \
        ["except ImportError", "except ImportError", "except ImportError", "find_spec"]
