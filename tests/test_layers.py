"""The core's layers: contract < host < engine, read from the import graph (issue #39).

* **contract** — what a plugin is written against: records, protocols, schemas, the fault toolkit,
  the judge checklist and mitigation oracles (pure functions of an ``OracleContext``), the offline
  test doubles. It installs with ``pip install sregym-core`` alone.
* **host** — the plugin manager: hook specs, entry-point loading, the facade, and what is decided
  from the installed plugins alone (the compatibility matrix, the contract kit that loads a plugin).
* **engine** — what runs problems on a cluster: the conductor, the agent API and MCP server, results,
  the RL API, the CLI (``sregym-core[run]``).

A module may import its own layer and the layers below it, never one above. Every import counts:
top level, inside a function, and under ``if TYPE_CHECKING`` (a type is a dependency too), and
importing ``a.b.c`` imports the packages ``a`` and ``a.b`` first. The graph is read with ``ast``
(nothing is imported), so a new module must be placed in :data:`LAYERS` before it lands.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORE = REPO / "sregym_core"

CONTRACT, HOST, ENGINE = 0, 1, 2
NAMES = {CONTRACT: "contract", HOST: "host", ENGINE: "engine"}

#: module (or package: it covers its submodules unless one is listed itself) -> (layer, why)
LAYERS: dict[str, tuple[int, str]] = {
    "sregym_core": (CONTRACT, "the hookimpl marker and the version every plugin imports"),
    "sregym_core.errors": (CONTRACT, "the SregymError tree plugins raise"),
    "sregym_core.types": (CONTRACT, "the records plugins register (AppSpec, FaultSpec, ProblemSpec...)"),
    "sregym_core.faults": (CONTRACT, "the Fault and NoiseSource protocols and FaultContext"),
    "sregym_core.faultkit": (CONTRACT, "the toolkit fault packs write faults with; acts through FaultContext"),
    "sregym_core.mechanisms": (CONTRACT, "the vocabulary of fault mechanisms FaultSpec declares"),
    "sregym_core.symptoms": (CONTRACT, "a problem's declared symptom and what a probe concludes from what it read"),
    "sregym_core.unchanged": (CONTRACT, "which manifest documents an apply would change, read against the live objects"),
    "sregym_core.quantity": (CONTRACT, "Kubernetes quantities, a value helper of the toolkit"),
    "sregym_core.quantity_canonical": (CONTRACT, "canonical quantity text, a value helper"),
    "sregym_core.validation": (CONTRACT, "the JSON Schemas and their checker"),
    "sregym_core.problems": (CONTRACT, "problem files parsed into records; resolved against a Catalog"),
    "sregym_core.grant_rules": (CONTRACT, "which agent_access grants a problem file may declare"),
    "sregym_core.agents": (CONTRACT, "the Agent protocol and its task/outcome records"),
    "sregym_core.clusters": (CONTRACT, "the cluster handle protocols; a handle is built from a Catalog"),
    "sregym_core.catalog": (CONTRACT, "the Catalog protocol: what the host gives plugins and the contract"),
    "sregym_core.upstream_catalog": (CONTRACT, "upstream SREGym's problem ids, a data table"),
    "sregym_core.oracles": (CONTRACT, "the judge checklist and mitigation oracles over an OracleContext"),
    "sregym_core.testing": (CONTRACT, "the harness's entry: StateFault, CliOutcome; fixtures load by name"),
    "sregym_core.testing.recording": (CONTRACT, "the offline kubectl double a FaultContext runs against"),
    "sregym_core.testing.verdicts": (CONTRACT, "assertions over oracle verdicts"),
    "sregym_core.testing.reach": (CONTRACT, "socket reachability helpers, no cluster"),
    "sregym_core.testing.localservers": (CONTRACT, "real loopback servers for unit tests, no cluster"),
    "sregym_core.testing.processes": (CONTRACT, "process snapshots for leak checks, no cluster"),
    "sregym_core.hookspecs": (HOST, "the hook specifications the plugin manager is built from"),
    "sregym_core.plugins": (HOST, "the plugin manager: entry points, the typed facade"),
    "sregym_core.compat": (HOST, "the fault x app x capability matrix, decided from the installed plugins"),
    "sregym_core.testing.contracts": (HOST, "the contract kit: loads one plugin into a host and checks it"),
    "sregym_core.testing.fixtures": (ENGINE, "pytest fixtures: plugin hosts, the in-process CLI, live clusters"),
    "sregym_core.testing.live": (ENGINE, "live fixtures and the live fault contract on an embedded cluster"),
    "sregym_core.testing.probes": (ENGINE, "what a live test waits for on a running app"),
    "sregym_core.testing.slo": (ENGINE, "service levels measured on a running app"),
    "sregym_core.conductor": (ENGINE, "runs attempts: deploy, inject, grade, reconcile"),
    "sregym_core.agent_api": (ENGINE, "the agent's HTTP API and MCP server"),
    "sregym_core.results": (ENGINE, "result records written, summarized and reported"),
    "sregym_core.rl": (ENGINE, "the RL environment over the conductor"),
    "sregym_core.cli": (ENGINE, "the sregym command"),
    "sregym_core.logging": (ENGINE, "log configuration of the sregym process"),
    "sregym_core.progress": (ENGINE, "a run's progress line on the terminal"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def core_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def layer_of(module: str) -> tuple[str, int]:
    """The table entry that places ``module`` (its own, else its nearest listed package's)."""
    name = module
    while name:
        if name in LAYERS:
            return name, LAYERS[name][0]
        name = name.rpartition(".")[0]
    raise KeyError(module)


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imported_modules(source: str, module: str, *, is_package: bool, known: set[str]) -> set[str]:
    """Every ``sregym_core`` module ``source`` (the text of ``module``) imports, anywhere in it,
    with the packages Python imports on the way."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from pkg import name`: the submodule pkg.name when there is one, else pkg itself
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        else:
            continue
        for target in targets:
            if target == "sregym_core" or target.startswith("sregym_core."):
                found.update([*_parents(target), target])
    found.discard(module)
    return found


def layer_violations() -> list[str]:
    modules = core_modules()
    known = set(modules)
    out = []
    for module, path in modules.items():
        where, own = layer_of(module)
        deps = imported_modules(path.read_text(), module, is_package=path.name == "__init__.py", known=known)
        for dep in sorted(deps | set(_parents(module))):
            dep_entry, dep_layer = layer_of(dep)
            if dep_layer > own:
                out.append(f"{module} ({NAMES[own]}, as {where}) imports {dep} ({NAMES[dep_layer]}, as {dep_entry})")
    return out


def test_every_core_module_has_a_layer_and_every_entry_a_module():
    modules = core_modules()
    unplaced = []
    for module in modules:
        try:
            layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"place these in LAYERS (with why): {unplaced}"
    stale = sorted(set(LAYERS) - set(modules))
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_layer_imports_a_higher_one():
    violations = layer_violations()
    assert not violations, "\n".join(violations)


def test_the_graph_sees_every_kind_of_import():
    """The reader finds relative, absolute, lazy and type-only imports and the packages on the way,
    so the rule cannot pass by missing an edge."""
    source = textwrap.dedent("""
        from __future__ import annotations
        from typing import TYPE_CHECKING
        from .. import hookimpl
        from ..conductor import kube
        import sregym_core.results.writer
        if TYPE_CHECKING:
            from ..plugins import PluginHost
        def later():
            from ..agent_api.server import serve
    """)
    known = set(core_modules())
    found = imported_modules(source, "sregym_core.faultkit.users", is_package=False, known=known)
    assert found == {"sregym_core", "sregym_core.conductor", "sregym_core.conductor.kube", "sregym_core.results",
                     "sregym_core.results.writer", "sregym_core.plugins", "sregym_core.agent_api",
                     "sregym_core.agent_api.server"}
    assert layer_of("sregym_core.conductor.kube") == ("sregym_core.conductor", ENGINE)
    assert layer_of("sregym_core.testing.recording") == ("sregym_core.testing.recording", CONTRACT)


# ------------------------------------------------------------------------------------------------
# the contract imports without the engine's dependencies
# ------------------------------------------------------------------------------------------------

#: the Python modules of the ``sregym-core[run]`` extra (kubectl is the PATH below)
ENGINE_DEPENDENCIES = ("kubernetes", "mcp", "uvicorn", "starlette", "httpx")


def third_party_imports(source: str) -> set[str]:
    """The top-level names of every absolute import in ``source``, wherever it is."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_contract_never_reaches_for_the_engines_dependencies():
    """Not even inside a function: what reads a live cluster (the Kubernetes client, the generator's
    HTTP API) is the engine's, handed to the contract (``FaultContext.api``, ``FaultContext.users``)."""
    offenders = []
    for module, path in core_modules().items():
        if layer_of(module)[1] == CONTRACT:
            offenders += [f"{module} imports {dep}" for dep in
                          sorted(third_party_imports(path.read_text()) & set(ENGINE_DEPENDENCIES))]
    assert not offenders, offenders
    assert third_party_imports("def f():\n    from kubernetes import client\n") == {"kubernetes"}

_IMPORT_ALL = """
import importlib, json, sys

class Refuse:
    # a meta path finder: the engine's dependencies are not installed here
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: not installed)", name=name)
        return None

BLOCKED = set(json.loads(sys.argv[1]))
sys.meta_path.insert(0, Refuse())
failed = {}
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except BaseException as exc:  # report every module, not only the first
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"failed": failed, "loaded": sorted(m for m in sys.modules if m.startswith("sregym"))}))
"""


def _fault_pack_modules() -> tuple[list[str], list[str]]:
    """(source roots, module names) of every fault pack in faults/."""
    roots, names = [], []
    for src in sorted((REPO / "faults").glob("*/src")):
        roots.append(str(src))
        for path in sorted(src.rglob("*.py")):
            if path.name != "__main__.py" and not any(p.endswith(".egg-info") for p in path.parts):
                parts = list(path.relative_to(src).with_suffix("").parts)
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return roots, names


def test_the_contract_and_every_fault_pack_import_without_the_engine(tmp_path):
    contract = sorted(m for m in core_modules() if layer_of(m)[1] == CONTRACT)
    roots, packs = _fault_pack_modules()
    assert len(packs) > 20 and "sregym_fault_k8s.plugin" in packs, packs
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": os.pathsep.join([str(REPO), *roots])}
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, json.dumps(ENGINE_DEPENDENCIES),
                           json.dumps(contract + packs)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report["failed"], report["failed"]
    above = [m for m in report["loaded"] if m.startswith("sregym_core") and layer_of(m)[1] != CONTRACT]
    assert not above, f"the contract and the fault packs pulled in host or engine modules: {above}"


def test_the_blocker_refuses_each_engine_dependency(tmp_path):
    """The import check can fail: under the blocker, none of the engine's dependencies imports."""
    deps = json.dumps(ENGINE_DEPENDENCIES)
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, deps, deps], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(report["failed"]) == sorted(ENGINE_DEPENDENCIES)
    assert all("blocked" in why for why in report["failed"].values()), report
