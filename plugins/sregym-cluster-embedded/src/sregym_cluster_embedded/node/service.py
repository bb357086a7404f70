"""The node agent as a systemd service: configuration checked at start, crash, restart loop.

A real kubelet validates its ``KubeletConfiguration`` when it starts and exits when it is invalid
(``"command failed" err="failed to validate kubelet configuration, error: invalid configuration:
..."``); systemd restarts it every ``RestartSec`` (10 s on kubeadm's unit) and it exits again, until
someone fixes the file. Meanwhile the node stops heartbeating (NotReady, then ``unreachable``
taints), and the containers keep running: nothing is there to stop them.

The embedded node agent does the same with the configuration it reads from
``kube-system/kubelet-config`` and its drop-in (see eviction.py). Only a start checks it: a running
agent keeps running whatever the ConfigMap says, like a kubelet that was not restarted. An admin
stop (``/sregym/nodes/<node>/stop``, i.e. ``systemctl stop kubelet``) ends the restart loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

#: systemd's RestartSec in kubeadm's kubelet.service drop-in
RESTART_S = 10.0

#: int32 fields of KubeletConfiguration and their kubelet defaults
_GC = {"imageGCHighThresholdPercent": ("--image-gc-high-threshold", 85),
       "imageGCLowThresholdPercent": ("--image-gc-low-threshold", 80)}
_INTS = ("maxPods", "podPidsLimit", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
         "nodeStatusMaxImages")


def validate(config: dict) -> str | None:
    """Why a kubelet would refuse ``config`` at start (its own words), or None.

    The checks are the kubelet's (decoding, then pkg/kubelet/apis/config/validation) for the fields
    the embedded node has: integer fields must decode as integers, the image GC thresholds must lie
    in 0..100 with low below high, maxPods must not be negative.
    """
    for field in _INTS:
        value = config.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            kind = "string" if isinstance(value, str) else "number" if isinstance(value, float) else type(value).__name__
            return (f"failed to load kubelet config file, error: json: cannot unmarshal {kind} into Go struct field "
                    f"KubeletConfiguration.{field} of type int32")
    errors = []
    high = config.get("imageGCHighThresholdPercent", _GC["imageGCHighThresholdPercent"][1])
    low = config.get("imageGCLowThresholdPercent", _GC["imageGCLowThresholdPercent"][1])
    for field, value in (("imageGCHighThresholdPercent", high), ("imageGCLowThresholdPercent", low)):
        if not 0 <= value <= 100:
            errors.append(f"invalid configuration: {field} ({_GC[field][0]}) {value} must be between 0 and 100, "
                          "inclusive")
    if low >= high:
        errors.append(f"invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be "
                      f"less than imageGCHighThresholdPercent (--image-gc-high-threshold) {high}")
    if (config.get("maxPods") or 0) < 0:
        errors.append(f"invalid configuration: maxPods (--max-pods) {config['maxPods']} must not be a negative number")
    if not errors:
        return None
    return "failed to validate kubelet configuration, error: " + ", ".join(errors) + \
        ", path: &TypeMeta{Kind:,APIVersion:,}"


class KubeletService:
    """One node agent's unit: whether it runs, why it last exited, the pending restart."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.crash: str | None = None
        self.restarts = 0
        self.since = 0.0
        self._restart: asyncio.TimerHandle | None = None

    def may_start(self) -> bool:
        """Called as the agent starts, its configuration loaded: False (and a restart scheduled) when
        the kubelet would exit on it."""
        self.cancel_restart()
        problem = validate(self.agent.eviction.config)
        if problem is None:
            self.crash = None
            return True
        if self.crash != problem:
            log.error('node %s: kubelet "command failed" err="%s"', self.agent.name, problem)
        self.crash, self.since = problem, self.since if self.crash else time.time()
        self.restarts += 1
        self._restart = asyncio.get_running_loop().call_later(RESTART_S, self._scheduled_restart)
        return False

    def _scheduled_restart(self) -> None:
        self._restart = None
        task = asyncio.ensure_future(self.agent.start())

        def report(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception():
                log.warning("node %s: kubelet restart failed: %s", self.agent.name, done.exception())

        task.add_done_callback(report)

    def cancel_restart(self) -> None:
        if self._restart is not None:
            self._restart.cancel()
            self._restart = None

    def stop(self) -> None:
        """systemctl stop: no more restarts; the last crash is forgotten."""
        self.cancel_restart()
        self.crash = None

    def status(self) -> dict:
        """What ``/sregym/nodes`` reports besides running/stopped."""
        if self.crash is None:
            return {}
        return {"agent": "crashloop", "crash": self.crash, "restarts": self.restarts,
                "crashing_since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since))}


__all__ = ["KubeletService", "RESTART_S", "validate"]

