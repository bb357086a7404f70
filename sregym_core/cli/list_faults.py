"""``sregym list-faults``: the fault × target compatibility matrix, on the selected cluster."""

from __future__ import annotations

from typing import Any

import attrs
import click

from .. import mechanisms as mech
from ..compat import STAND_IN_REASON, build_matrix, mechanism_lines, render_markdown
from ..errors import UsageError
from ._app import App, render_table


def _probe(app: App, provider: str | None, cluster: str) -> tuple[dict, str]:
    """The selected cluster's mechanism probe (nothing is started) and the provider's name."""
    from ..clusters import ProbesFaultMechanisms, capability, default_provider, get_cluster

    if provider is None and not app.host.get_clusters():
        return {}, "no provider installed"
    name = provider or default_provider(app.host)
    handle = get_cluster(app.host, provider=name, name=cluster)
    probing = capability(handle, ProbesFaultMechanisms)
    if probing is None:
        return {}, name
    return dict(probing.fault_mechanisms()), name


def _mechanisms(fault: Any, probe: dict) -> dict[str, Any]:
    """Per operation: the mechanism that would run on this cluster, and each one's availability."""
    chosen = mech.choose(fault.mechanisms, probe)
    return {op: {"runs": chosen.get(op),
                 "candidates": [{"name": m, "available": mech.available(probe, m, op),
                                 **({} if mech.available(probe, m, op) else {"reason": mech.reason(probe, m, op)})}
                                for m in names]}
            for op, names in fault.mechanisms.items()}


def _mechanism_cell(fault: Any, probe: dict, reason: str) -> str:
    if not fault.mechanisms:
        return "-"
    if reason:
        return reason
    by_mechanism: dict[str, list[str]] = {}
    for op, name in mech.choose(fault.mechanisms, probe).items():
        by_mechanism.setdefault(name or "none", []).append(op)
    return "; ".join(f"{'/'.join(ops)}: {name}" for name, ops in by_mechanism.items())


@click.command(name="list-faults")
@click.option("--app", "app_name", help="Only this app's components.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True)
@click.option("--capabilities", help="Comma-separated cluster capabilities to filter by (default: no filter).")
@click.option("--provider", default=None, help="The cluster provider whose mechanisms to probe (default: the default "
                                               "provider); nothing is started.")
@click.option("--cluster", "cluster_name", default="sregym", show_default=True,
              help="The cluster to ask when it runs (else its host is probed).")
@click.option("--all", "show_all", is_flag=True,
              help="Also list pairs that are not viable, and faults with no mechanism on this cluster, with the reason.")
@click.pass_obj
def list_faults(app: App, app_name: str | None, as_json: bool, fmt: str, capabilities: str | None,
                provider: str | None, cluster_name: str, show_all: bool) -> None:
    """Show which faults can target which app components, and by which mechanism.

    A pair is viable when the fault can take effect there. Faults with low-level mechanisms (a
    syscall failing through cgroup BPF, a seccomp supervisor or a shim) are shown with the one
    the selected cluster would run per operation, and hidden where none is available. Test
    stand-ins (the noop fault) never are viable, though "sregym run" accepts them; --all also
    lists what is not viable, with the reason. --format markdown is the catalog (no probe): the
    matrix and each environment's mechanisms.
    """
    if app_name and app_name not in app.host.get_apps():
        raise UsageError(f"unknown app {app_name!r}", hints=(f"installed apps: {', '.join(app.host.get_apps()) or 'none'}",))
    caps = frozenset(c.strip() for c in capabilities.split(",")) if capabilities else None
    if fmt == "markdown" and not as_json:
        app.echo(render_markdown(build_matrix(app.host, app=app_name, capabilities=caps), mechanism_lines(app.host)))
        return
    faults = app.host.get_faults()
    # only faults with low-level mechanisms need the cluster's probe
    probe, provider_name = (_probe(app, provider, cluster_name) if any(f.mechanisms for f in faults.values())
                            else ({}, provider or "selected"))
    matrix = build_matrix(app.host, app=app_name, capabilities=caps, probe=probe)
    from ..compat import mechanism_verdict

    verdicts = {name: mechanism_verdict(f, probe) for name, f in faults.items()}
    shown = {name: f for name, f in faults.items() if show_all or verdicts[name][0]}
    if as_json:
        counts = matrix.counts_by_fault()
        app.echo_json({
            "provider": provider_name,
            "faults": [{"name": f.name, "layer": f.layer, "summary": f.summary, "selector": f.selector.describe(),
                        "capabilities": sorted(f.capabilities), "stand_in": f.stand_in,
                        "viable_targets": counts.get(f.name, 0),
                        **({"mechanisms": _mechanisms(f, probe)} if f.mechanisms else {}),
                        **({"mechanism_reason": verdicts[f.name][1]} if not verdicts[f.name][0] else {})}
                       for f in shown.values()],
            "pairs": [attrs.asdict(c) for c in (matrix.cells if show_all else matrix.viable())],
            "counts_by_layer": matrix.counts_by_layer(),
            "total": matrix.total,
        })
        return
    rows = []
    for fault in shown.values():
        cells = [c for c in matrix.cells if c.fault == fault.name]
        targets = [f"{c.app}/{c.component}" for c in cells if c.viable]
        listed = ", ".join(targets) or (f"- ({STAND_IN_REASON})" if fault.stand_in else "-")
        rows.append([fault.name, fault.layer, len(targets), _mechanism_cell(fault, probe, verdicts[fault.name][1]),
                     listed])
    app.echo(render_table(["FAULT", "LAYER", "TARGETS", "MECHANISM", "VIABLE (APP/COMPONENT)"], rows))
    app.echo()
    hidden = [name for name in faults if name not in shown]
    if hidden:
        app.echo(f"no mechanism on this {provider_name} cluster (--all shows why): {', '.join(hidden)}")
    app.echo("viable pairs by layer: " + ", ".join(f"{k}={v}" for k, v in matrix.counts_by_layer().items()))
    app.echo(f"total viable pairs: {matrix.total}")
