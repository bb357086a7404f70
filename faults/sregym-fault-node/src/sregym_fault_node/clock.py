"""clock-drift: the wall clock of the node hosting the target is off (time sync stopped, clock stepped).

On a real node: chrony or systemd-timesyncd stopped and the clock stepped (upstream: +30 days with a
privileged nsenter pod). Embedded: the node fault shim shifts what the node's pod processes read from
the wall clock (``clock_gettime(CLOCK_REALTIME)``, ``gettimeofday``, ``time``); monotonic clocks are
untouched, as on a real node whose clock was stepped.

What breaks is whatever checks a time window stamped on one node against another node's clock:
TrainTicket's login tokens (a JWT's ``nbf``/``exp``, checked with no allowed skew), so a drifted
ts-auth-service issues tokens every other service finds expired, and any service on the node finds
good tokens not yet valid. Social Network's compose-post-service stamps posts with its clock, so
new posts sort below older ones in the timelines.

The fix an SRE can make through the API is to take the node out of service for the app (cordon,
drain its pods elsewhere, or keep the workloads off it by node affinity), as for any misbehaving
node; the node's time sync is then repaired out of band.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sregym_core.faultkit import function_fault, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks
from .node import drain_app_from_node, mark_node, may_land_on_node, release_node

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

MOVABLE = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "db:*"),
                         requires=("service",))
DAY_MS = 86_400_000


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = mark_node(ctx, hooks.target_node(ctx, target))
    # every app pod on the node reads the node's clock, whenever it is there
    hooks.call(ctx, "node_fault", hooks.hook_id(ctx, "clock"), namespace=ctx.namespace, nodes=[node],
               calls=["clock"], offset_ms=int(params["offset_minutes"] * 60_000))


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The target runs on the drifted node, or nothing keeps it from landing there again."""
    record = hooks.status(ctx, "shim")
    node = ctx.state.get("node")
    if not record or not node:
        return False
    if any((p.get("spec") or {}).get("nodeName") == node for p in hooks.pods(ctx, target)):
        return True
    return may_land_on_node(ctx, target)


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Cordon the drifted node and drain the app's movable pods to nodes with a correct clock (every
    pod there reads the wrong time, not only the target's)."""
    drain_app_from_node(ctx, ctx.state["node"])
    hooks.wait_for(lambda: not is_present(ctx, target, params), 60.0, "no pod left on the drifted node")


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    release_node(ctx, "shim")


VOCABULARY = (
    "clock drift", "clock skew", "clock is behind", "clock is ahead", "clock .. wrong", "clock .. off",
    "time drift", "time skew", "time sync*", "ntp", "chrony", "timesyncd", "wall clock", "system time",
    "node's clock", "node clock", "timestamp* .. wrong", "timestamp* .. old", "timestamp* .. past",
    # how a newcomer says it: "its clock set about a month (30 days) in the past", "its date set a month back"
    "clock .. .. in the past", "clock .. .. behind", "clock .. .. ahead", "clock .. .. in the future", "clock .. late",
    "clock .. back", "date .. back", "date .. in the past", "calendar .. in the past", "wrong clock",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="clock-drift", summary="the wall clock of the target's node is off (time sync stopped)",
        layer="os", selector=MOVABLE, resource_kind="Node",
        mechanism="the node's wall clock is stepped away from true time (time sync stopped): processes on it "
                  "stamp and compare times with a skewed clock",
        params_schema=schema(offset_minutes={"type": "integer", "minimum": -525600, "maximum": 525600,
                                             "default": -43200, "not": {"const": 0}}),
        inject=inject, is_present=is_present, recover=recover, reference_fix=reference_fix,
        symptoms=("timestamps in the past on new records", "new items missing from time-ordered views",
                  "tokens rejected as expired or not yet valid", "date in the node's pods differs from other nodes"),
        keywords=("clock drift", "clock skew", "NTP", "time sync", "timestamp"),
        values=lambda t, p, s: {"node": s.get("node", "(unknown)"), "offset_minutes": p.get("offset_minutes"),
                                "offset_days": round(p.get("offset_minutes", 0) / 1440, 1)},
        prose="The wall clock of node {node}, which runs {component}, is off by {offset_minutes} minutes "
              "({offset_days} days; time sync stopped), so {component} stamps what it writes with a wrong time "
              "and checks times with it: tokens it issues look expired elsewhere, and tokens or records from other "
              "nodes look not yet valid or out of order to it and to every pod on {node}. Fix: cordon {node} and "
              "move the app's pods off it (or keep them off by node affinity), then repair the node's time sync.",
        capabilities=hooks.LD_PRELOAD, vocabulary=VOCABULARY,
    ),
]
