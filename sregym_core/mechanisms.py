"""Fault mechanisms: which real machinery makes a low-level fault happen, in one vocabulary.

A fault that a node can run several ways (a syscall failing through a BPF LSM program, a seccomp
supervisor or an LD_PRELOAD shim) declares them per operation, strongest first
(``FaultSpec.mechanisms``). A cluster handle that can tell what its nodes accept implements
:class:`~sregym_core.clusters.ProbesFaultMechanisms`; ``sregym list-faults`` shows a fault only where
one of its mechanisms is available (``--all``: the probe's reason otherwise), the fault records
the one that ran in its state (:data:`STATE_KEY`) and the attempt's result row carries it as
``fault_mechanism``.

The names are stable: results and docs quote them.

.. versionadded:: 0.3
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: name -> what it is, in one line
MECHANISMS: dict[str, str] = {
    "bpf-lsm": "a BPF LSM program on the file hook fails the call for the target's cgroup (real nodes with BPF LSM)",
    "bpf-fmod-ret": "an fmod_ret BPF program on the syscall fails it for the target's cgroup (function error injection)",
    "bpf-cgroup": "cgroup BPF programs (connect4/6, sock_create) fail the call with bpf_set_retval, keyed on the "
                  "target pod's cgroup",
    "bpf-daemonset": "the same cgroup BPF programs (connect4/6, sock_create), loaded by a privileged DaemonSet on "
                     "each node of a cluster without node hooks, keyed on the target pods' cgroups (found by pod UID)",
    "seccomp-supervisor": "a seccomp filter installed at container start hands the call to a supervisor outside the "
                          "pod, which fails it (user notification)",
    "fuse-badblocks": "a FUSE layer over the volume fails reads of bad blocks for any binary",
    "dm-dust": "a device-mapper dust target under the volume's block device",
    "ld-preload-shim": "an LD_PRELOAD shim in the container's dynamically linked processes",
}

#: where a fault records, in ``ctx.state``, the mechanism that ran
STATE_KEY = "fault_mechanism"


def check(names: Iterable[str], owner: str) -> None:
    """Raise ``ValueError`` for a name outside the vocabulary (a typo would hide a fault everywhere)."""
    unknown = [n for n in names if n not in MECHANISMS]
    if unknown:
        raise ValueError(f"{owner}: unknown fault mechanism(s) {', '.join(unknown)}; known: {', '.join(MECHANISMS)}")


def operations(declared: Mapping[str, tuple[str, ...]], params: Mapping[str, Any] | None = None) -> list[str]:
    """The operations a fault instance needs: the ``syscall`` parameter when the fault declares it,
    else every declared operation."""
    wanted = (params or {}).get("syscall")
    if isinstance(wanted, str) and wanted in declared:
        return [wanted]
    return list(declared)


def available(probe: Mapping[str, Mapping[str, Any]], name: str, operation: str | None = None) -> bool:
    """Whether the probe says ``name`` runs here (for ``operation`` when it lists its operations)."""
    entry = probe.get(name) or {}
    if not entry.get("available"):
        return False
    ops = entry.get("operations")
    return operation is None or ops is None or operation in ops


def reason(probe: Mapping[str, Mapping[str, Any]], name: str, operation: str | None = None) -> str:
    entry = probe.get(name) or {}
    if entry.get("available") and operation is not None and entry.get("operations") is not None \
            and operation not in entry["operations"]:
        return f"runs {', '.join(entry['operations'])} only"
    return str(entry.get("reason") or ("not probed on this cluster" if not entry else "unavailable"))


def choose(declared: Mapping[str, tuple[str, ...]], probe: Mapping[str, Mapping[str, Any]],
           params: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """operation -> the strongest available mechanism (None: none is)."""
    return {op: next((m for m in declared[op] if available(probe, m, op)), None) for op in operations(declared, params)}


def unavailable_reason(declared: Mapping[str, tuple[str, ...]], probe: Mapping[str, Mapping[str, Any]]) -> str:
    """Why no operation of a fault has a mechanism here: each mechanism with the probe's reason."""
    parts = []
    for op, names in declared.items():
        parts.append(f"{op}: " + "; ".join(f"{m}: {reason(probe, m, op)}" for m in names))
    return "no fault mechanism available (" + " | ".join(parts) + ")"
