"""Watching the app's users from a fault: the workload generator's success over a window.

A reference fix (and a recover) returns when the users are served again, as an SRE watches the site
after a change, not when the last object is patched: clients reconnect on their own back-off (gRPC's
resolver and connection back-off reach two minutes), and a fix that returns early is graded on
requests still failing for reasons the fix already removed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import FaultError
from ..faults import FaultContext, UsersProbe

if TYPE_CHECKING:
    from ..types import Target


def workload_client(ctx: FaultContext) -> UsersProbe | None:
    """The app's workload generator (``ctx.users``, which the engine fills), or None when the app
    has none. A context without one for an app that has a generator is a :class:`FaultError`: the
    toolkit never reaches the cluster's engine itself."""
    if ctx.app.workload is None:
        return None
    probe = getattr(ctx, "users", None)
    if probe is None:
        raise FaultError(f"app {ctx.app.name!r} has a workload generator, but this fault context has no users "
                         "probe to watch it through",
                         hints=("the engine fills FaultContext.users (sregym run, validate, the live test harness); "
                                "a context built by hand passes users=<a UsersProbe>",))
    return probe


def wait_users_succeed(ctx: FaultContext, *, window_s: float = 15.0, timeout_s: float = 180.0, min_count: int = 10,
                       min_success: float = 0.99, interval_s: float = 3.0, client: Any = None) -> bool:
    """Until the users succeed over a whole ``window_s`` (at least ``min_count`` requests, ``min_success``
    of them good), at most ``timeout_s``. True when they do; False on time-out. An app without a workload
    generator has nobody to watch: True."""
    client = client or workload_client(ctx)
    if client is None:
        return True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(interval_s)
        try:
            stats = client.stats(window_s)
        except Exception:  # noqa: BLE001 - the generator's answer is only a hint here; keep watching
            continue
        if (stats.get("count") or 0) >= min_count and (stats.get("success_rate") or 0) >= min_success:
            return True
    return False


def wait_users_after_recover(ctx: FaultContext, target: Target, *, timeout_s: float = 60.0, **kwargs: Any) -> bool:
    """After a recover: wait a while for the users to be served again, so the next attempt starts
    from a healthy app. Recover runs before the conductor reconciles the app to its baseline, so what
    the agent did is still in place: a target it deleted or scaled to zero cannot serve anyone (no
    wait at all), and one it replaced (a stub, another broken value) never will until the reconcile.
    Hence a shorter time-out than a fix's: the wait is a courtesy, the reconcile is the guarantee.
    True when the users succeed or there was nothing to wait for."""
    from . import kube

    live = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if live is None or (live.get("spec") or {}).get("replicas", 1) == 0:
        return True
    return wait_users_succeed(ctx, timeout_s=timeout_s, **kwargs)
