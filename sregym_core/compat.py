"""The compatibility matrix: fault selectors × app component inventories × cluster capabilities.

Computed, never written: ``sregym list-faults`` and ``docs/compatibility.md`` both come from here.
A pair is viable when the fault can take effect on the component: its selector matches (or a
plugin's ``sregym_check_compatibility`` decides), the cluster has what it needs, one of the fault's
real mechanisms (``FaultSpec.mechanisms``) is available on the cluster when a probe was given, and
the fault is not a test stand-in (``FaultSpec.stand_in``: it changes nothing, so it is never a
viable pair, though ``run`` and problem files accept it).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import attrs

from . import mechanisms as mech

if TYPE_CHECKING:
    from .plugins import PluginHost


@attrs.frozen(kw_only=True)
class Cell:
    """One (fault, app, component) pair and whether it can run."""

    fault: str
    layer: str
    app: str
    component: str
    viable: bool
    reason: str = ""


#: Why a test stand-in's pairs are not viable.
STAND_IN_REASON = "test stand-in: changes nothing"


@attrs.frozen(kw_only=True)
class Matrix:
    cells: tuple[Cell, ...]
    capabilities: frozenset[str] | None
    #: the faults that are test stand-ins (none of their cells is viable)
    stand_ins: frozenset[str] = frozenset()
    #: the cluster's mechanism probe the matrix was built with (None: not probed)
    probe: dict | None = None

    def viable(self) -> list[Cell]:
        return [c for c in self.cells if c.viable]

    def counts_by_layer(self) -> dict[str, int]:
        return dict(sorted(Counter(c.layer for c in self.viable()).items()))

    def counts_by_fault(self) -> dict[str, int]:
        counts = Counter({c.fault: 0 for c in self.cells})
        counts.update(c.fault for c in self.viable())
        return dict(sorted(counts.items()))

    @property
    def total(self) -> int:
        return len(self.viable())


def mechanism_verdict(fault, probe: dict | None) -> tuple[bool, str]:
    """Whether one of ``fault``'s declared mechanisms is available per ``probe`` (a fault with
    none declared, or no probe: yes), and why not."""
    declared = getattr(fault, "mechanisms", None) or {}
    if probe is None or not declared:
        return True, ""
    if any(m for m in mech.choose(declared, probe).values()):
        return True, ""
    return False, mech.unavailable_reason(declared, probe)


def build_matrix(host: PluginHost, *, app: str | None = None, capabilities: frozenset[str] | None = None,
                 probe: dict | None = None) -> Matrix:
    """Match every fault's selector against every component of every app (or just ``app``);
    with ``probe`` (a cluster's ``fault_mechanisms()``), a fault none of whose mechanisms is
    available there is viable nowhere."""
    apps = host.get_apps()
    if app is not None:
        apps = {app: apps[app]} if app in apps else {}
    cells = []
    faults = host.get_faults()
    for fault in faults.values():
        runs, why_not = mechanism_verdict(fault, probe)
        for app_spec in apps.values():
            for component in app_spec.components:
                verdict = host.is_compatible(fault, component, app_spec, capabilities=capabilities)
                viable, reason = verdict.ok, verdict.reason
                if viable and fault.stand_in:
                    viable, reason = False, STAND_IN_REASON
                if viable and not runs:
                    viable, reason = False, why_not
                cells.append(Cell(fault=fault.name, layer=fault.layer, app=app_spec.name,
                                  component=component.name, viable=viable, reason=reason))
    return Matrix(cells=tuple(cells), capabilities=capabilities,
                  stand_ins=frozenset(f.name for f in faults.values() if f.stand_in), probe=probe)


#: Environments the catalog describes, with the mechanisms each offers (what the node agent's
#: probe answers there; the first is this project's CI machine kind, where
#: tests/test_fault_mechanisms.py runs the probe). A real cluster runs what needs no SREGym node
#: agent: the privileged DaemonSet loader of cgroup BPF programs (sregym-fault-ebpf-syscall's
#: test_bpf_daemonset_live.py drives it through the kubeconfig provider).
ENVIRONMENTS: dict[str, frozenset[str]] = {
    "embedded, root (CI's VM: lsm/fmod_ret refused, EPERM)": frozenset({"bpf-cgroup", "seccomp-supervisor",
                                                                        "fuse-badblocks", "ld-preload-shim"}),
    "real cluster (kubeconfig)": frozenset({"bpf-daemonset"}),
}


def mechanism_lines(host: PluginHost) -> list[str]:
    """The catalog's table: per fault and operation, the mechanism each environment runs."""
    faults = [f for f in host.get_faults().values() if f.mechanisms and not f.stand_in]
    if not faults:
        return []
    envs = list(ENVIRONMENTS)
    lines = ["## Fault mechanisms per environment", "",
             "Faults with real low-level mechanisms (`sregym_core.mechanisms`), strongest first; each "
             "environment runs the first it offers (`sregym list-faults` shows the selected cluster's, "
             "and the attempt's result row records the one that ran as `fault_mechanism`). Elsewhere (not root, "
             "another kernel) the node agent's probe decides: `sregym list-faults --json` gives each "
             "mechanism's availability and the probe's reason. `seccomp-supervisor` reaches the pods that "
             "started under its filter (on the embedded cluster: the targets of installed problems' faults); "
             "for any other target the next mechanism runs.", "",
             "| fault | operation | mechanisms (strongest first) | " + " | ".join(envs) + " |",
             "|---|---|---|" + "---|" * len(envs)]
    for fault in sorted(faults, key=lambda f: f.name):
        for op, names in fault.mechanisms.items():
            chosen = [next((m for m in names if m in ENVIRONMENTS[env]), None) for env in envs]
            lines.append(f"| {fault.name} | {op} | {', '.join(names)} | "
                         + " | ".join(c or "none" for c in chosen) + " |")
    return lines + [""]


def render_markdown(matrix: Matrix, extra: tuple[str, ...] | list[str] = ()) -> str:
    """The matrix as a Markdown document (faults as rows, components as columns, per app).

    Test stand-ins get no row: the document is the catalog of faults a benchmark can use.
    """
    lines = ["# Fault compatibility matrix", "",
             "Generated by `sregym list-faults --format markdown`; do not edit by hand.", ""]
    by_app: dict[str, list[Cell]] = {}
    for cell in matrix.cells:
        by_app.setdefault(cell.app, []).append(cell)
    for app, cells in sorted(by_app.items()):
        components = sorted({c.component for c in cells})
        faults = sorted({(c.layer, c.fault) for c in cells if c.fault not in matrix.stand_ins})
        lookup = {(c.fault, c.component): c for c in cells}
        lines += [f"## {app}", "", "| fault | layer | " + " | ".join(components) + " | targets |",
                  "|---|---|" + "---|" * len(components) + "---|"]
        for layer, fault in faults:
            marks = ["✓" if lookup[(fault, comp)].viable else "" for comp in components]
            lines.append(f"| {fault} | {layer} | " + " | ".join(marks) + f" | {marks.count('✓')} |")
        lines.append("")
    lines += ["## Totals", "", "| layer | viable pairs |", "|---|---|"]
    lines += [f"| {layer} | {n} |" for layer, n in matrix.counts_by_layer().items()]
    lines += [f"| **total** | **{matrix.total}** |", ""]
    return "\n".join(lines + list(extra))
