"""Watching the app's users from a fault: the workload generator's success over a window.

A reference fix (and a recover) returns when the users are served again, as an SRE watches the site
after a change, not when the last object is patched: clients reconnect on their own back-off (gRPC's
resolver and connection back-off reach two minutes), and a fix that returns early is graded on
requests still failing for reasons the fix already removed.
"""

from __future__ import annotations

import time
from typing import Any


def workload_client(ctx: Any) -> Any | None:
    """The app's workload generator client, or None when the app has none."""
    from ..conductor.kube import Kube
    from ..conductor.workload import WorkloadClient

    if ctx.app.workload is None:
        return None
    return WorkloadClient(ctx.app.workload, Kube(ctx.kubeconfig, kubectl=ctx.kubectl_path), ctx.cluster)


def wait_users_succeed(ctx: Any, *, window_s: float = 15.0, timeout_s: float = 180.0, min_count: int = 10,
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
