"""Which pods start under the seccomp supervisor's filter, from the installed problems.

A filter costs its pod one round trip per filtered call, so the node agent installs one only in
pods a fault may need it for: the targets of installed problems whose fault instances may run
through ``seccomp-supervisor`` (the fault's declared ``mechanisms`` for the operation its
parameters choose), naming only those operations. Reading the problems loads every plugin, so it
runs once, in a child process (``python -m sregym_cluster_embedded.node.supervision_plan``
prints the plan as JSON): the cluster process imports none of them.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

log = logging.getLogger(__name__)
SUPERVISOR = "seccomp-supervisor"
TIMEOUT_S = 180.0


def plan(host: Any) -> list[dict]:
    """``[{namespace, kind, name, calls, problem}]`` for every problem fault that may need the
    supervisor on its target."""
    from sregym_core.mechanisms import operations

    from .seccompfault import CALLS

    faults, apps = host.get_faults(), host.get_apps()
    out: dict[tuple[str, str, str], dict] = {}
    for problem in host.get_problems().values():
        app = apps.get(problem.app)
        if app is None:
            continue
        components = {c.name: c for c in app.components}
        for instance in problem.faults:
            spec = faults.get(instance.fault)
            component = components.get(instance.target)
            declared = getattr(spec, "mechanisms", None) or {}
            if spec is None or component is None or not declared:
                continue
            calls = [op for op in operations(declared, instance.params)
                     if SUPERVISOR in declared[op] and op in CALLS]
            if not calls:
                continue
            key = (app.namespace, component.kind, component.name)
            entry = out.setdefault(key, {"namespace": app.namespace, "kind": component.kind, "name": component.name,
                                         "calls": [], "problems": []})
            entry["calls"] = sorted({*entry["calls"], *calls})
            entry["problems"].append(problem.id)
    return list(out.values())


def compute() -> list[dict]:
    """The plan, read in a child process; empty (and logged) when that fails."""
    try:
        done = subprocess.run([sys.executable, "-m", __name__], capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("reading the supervision plan failed: %s", exc)
        return []
    if done.returncode != 0:
        log.warning("reading the supervision plan failed: %s", done.stderr.strip()[-500:])
        return []
    try:
        return [e for e in json.loads(done.stdout) if isinstance(e, dict)]
    except ValueError:
        log.warning("the supervision plan is not JSON: %s", done.stdout[:200])
        return []


def main() -> None:
    from sregym_core.plugins import new_plugin_host

    print(json.dumps(plan(new_plugin_host())))  # a process of its own: the host of its installed plugins


if __name__ == "__main__":
    main()
