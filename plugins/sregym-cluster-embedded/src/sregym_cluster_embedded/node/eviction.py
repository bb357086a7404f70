"""The kubelet's eviction manager: hard eviction thresholds, node pressure conditions, evicted pods.

Configuration comes as on a kubeadm cluster: the ``kubelet`` key of ``kube-system/kubelet-config``
(a ``KubeletConfiguration``) for every node, merged with the node's drop-in
``kube-system/kubelet-config-<node>`` (the embedded stand-in for a file in the node's
``/etc/kubernetes/kubelet.conf.d/``; each node makes its own, empty, when it starts). The kubelet re-reads both every few seconds; a field it does
not know is ignored, a document it cannot parse is logged and the last good one kept.

Signals are measured on this host (the node's filesystem is the state directory's):
``memory.available``, ``nodefs.available``, ``nodefs.inodesFree``, ``imagefs.available`` (the same
filesystem: the embedded node keeps images and pods together) and ``pid.available``. A threshold is
met while a signal is below it (``10%`` of capacity or a quantity such as ``1Gi``). While any is met
the node reports the matching pressure condition (kept for ``evictionPressureTransitionPeriod`` after
the signal recovers) and, every housekeeping round, evicts one pod as the kubelet does: ranked by
priority, then ephemeral-storage use; the pod's containers are killed, it turns ``Failed`` with reason
``Evicted`` and the kubelet's message, and a ``DisruptionTarget`` condition. Pods of the benchmark's own
namespaces stand for the node's static and critical pods and are never evicted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import psutil
import yaml
from sregym_core.clusters import is_hidden_namespace

log = logging.getLogger(__name__)

SYSTEM_NS = "kube-system"
CONFIG_MAP = "kubelet-config"
CONFIG_KEY = "kubelet"
#: what a node's drop-in holds until someone sets something in it (read as no setting)
DROP_IN_EMPTY = "# this node's KubeletConfiguration settings; they override kube-system/kubelet-config\n"
CRITICAL_PRIORITY = 2_000_000_000
REFRESH_S = 5.0

#: the kubelet's built-in hard thresholds (a KubeletConfiguration without ``evictionHard``)
DEFAULT_HARD = {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
                "imagefs.available": "15%"}
#: what the cluster writes into kube-system/kubelet-config: disk thresholds at 0% as kind writes them,
#: because every embedded node measures the one disk of the machine it runs on (a laptop's disk or a CI
#: runner's, shared with everything else there); the kubelet defaults would put every node under
#: DiskPressure and evict the app as soon as that disk is 85% full. The disk faults set their own.
CLUSTER_HARD = {"memory.available": "100Mi", "nodefs.available": "0%", "nodefs.inodesFree": "0%",
                "imagefs.available": "0%"}
#: what the cluster writes into kube-system/kubelet-config when it is first created
CLUSTER_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "evictionHard": dict(CLUSTER_HARD), "evictionPressureTransitionPeriod": "30s",
    "maxPods": 110, "clusterDomain": "cluster.local", "cgroupDriver": "systemd",
}
#: signal -> (node condition, resource named in the eviction message)
SIGNALS = {"memory.available": ("MemoryPressure", "memory"),
           "nodefs.available": ("DiskPressure", "ephemeral-storage"),
           "nodefs.inodesFree": ("DiskPressure", "inodes"),
           "imagefs.available": ("DiskPressure", "ephemeral-storage"),
           "pid.available": ("PIDPressure", "pids")}

_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
          "Ti": 2**40}


def parse_quantity(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9.]+)\s*([kMGT]i?|)\s*", str(text))
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_duration(text: Any, default: float) -> float:
    total, found = 0.0, False
    for number, unit in re.findall(r"([0-9.]+)(ms|h|m|s)", str(text or "")):
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
        found = True
    return total if found else default


def threshold_value(text: str, capacity: float) -> float:
    """The threshold in the signal's unit: ``10%`` of ``capacity``, or a quantity."""
    text = str(text).strip()
    if text.endswith("%"):
        return capacity * float(text[:-1]) / 100.0
    return parse_quantity(text)


def format_ki(value: float) -> str:
    return f"{int(value // 1024)}Ki"


def measure(path: Path) -> dict[str, tuple[float, float]]:
    """signal -> (available, capacity), as the kubelet's summary provider reports them."""
    out: dict[str, tuple[float, float]] = {}
    with contextlib.suppress(Exception):
        memory = psutil.virtual_memory()
        out["memory.available"] = (float(memory.available), float(memory.total))
    with contextlib.suppress(Exception):
        usage = psutil.disk_usage(str(path))
        out["nodefs.available"] = out["imagefs.available"] = (float(usage.free), float(usage.total))
        stat = os.statvfs(str(path))
        out["nodefs.inodesFree"] = (float(stat.f_favail), float(stat.f_files))
    with contextlib.suppress(Exception):
        pid_max = float(Path("/proc/sys/kernel/pid_max").read_text())
        out["pid.available"] = (pid_max - len(psutil.pids()), pid_max)
    return out


def merged(base: dict, override: dict) -> dict:
    """A drop-in merged over the base, as the kubelet merges ``--config-dir`` files (maps merge)."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


class EvictionManager:
    """One node's eviction thresholds, pressure conditions and evictions."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.config: dict = dict(CLUSTER_CONFIG)
        self.sources: list[str] = []
        self._last_met: dict[str, float] = {}  # condition -> when last observed
        self._loaded = 0.0
        self._hidden: dict[str, tuple[bool, float]] = {}

    # ------------------------------------------------------------ configuration

    def hard(self) -> dict[str, str]:
        hard = self.config.get("evictionHard")
        return {str(k): str(v) for k, v in (hard if isinstance(hard, dict) else DEFAULT_HARD).items()}

    def transition_period(self) -> float:
        return parse_duration(self.config.get("evictionPressureTransitionPeriod"), 300.0)

    async def ensure_cluster_config(self) -> None:
        """kubeadm's ``kube-system/kubelet-config``, created once by whichever node comes first, and this
        node's drop-in, empty: every node has one (as every kubeadm node has its drop-in directory), so a
        fault that writes one node's settings changes an object that was there, not one only it makes
        (red-team round 8: the drop-in's existence alone named the faulty node)."""
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": CONFIG_MAP, "namespace": SYSTEM_NS},
                "data": {CONFIG_KEY: yaml.safe_dump(CLUSTER_CONFIG, sort_keys=False)}}
        drop_in = {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": f"{CONFIG_MAP}-{self.agent.name}", "namespace": SYSTEM_NS},
                   "data": {CONFIG_KEY: DROP_IN_EMPTY}}
        for obj in (body, drop_in):
            with contextlib.suppress(Exception):  # there already (409): a restarted node keeps what it finds
                await self.agent.client.create("configmaps", obj, SYSTEM_NS)

    async def _document(self, name: str) -> dict | None:
        try:
            obj = await self.agent.client.get("configmaps", name, SYSTEM_NS)
        except Exception as exc:  # noqa: BLE001
            if getattr(exc, "code", None) == 404:
                return None
            raise
        text = (obj.get("data") or {}).get(CONFIG_KEY)
        if not text:
            return {}
        doc = yaml.safe_load(text)
        if doc is None:
            return {}
        if not isinstance(doc, dict):
            raise ValueError(f"{SYSTEM_NS}/{name}: {CONFIG_KEY} is not a KubeletConfiguration mapping")
        return doc

    async def reload(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._loaded < REFRESH_S:
            return
        self._loaded = time.monotonic()
        try:
            base = await self._document(CONFIG_MAP)
            drop_in = await self._document(f"{CONFIG_MAP}-{self.agent.name}")
        except Exception as exc:  # noqa: BLE001 - keep the last good configuration
            log.warning("node %s: kubelet configuration not reloaded: %s", self.agent.name, exc)
            return
        config = merged(CLUSTER_CONFIG if base is None else base, drop_in or {})
        self.sources = [n for n, d in ((CONFIG_MAP, base), (f"{CONFIG_MAP}-{self.agent.name}", drop_in)) if d is not None]
        self.config = config

    # ------------------------------------------------------------ signals

    def met(self) -> list[dict]:
        """The hard thresholds met now: signal, threshold, threshold quantity, available."""
        found = []
        observed = measure(self.agent.state_dir)
        for signal, text in self.hard().items():
            if signal not in observed:
                continue
            available, capacity = observed[signal]
            try:
                value = threshold_value(text, capacity)
            except ValueError:
                continue
            if available < value:
                found.append({"signal": signal, "threshold": text, "quantity": value, "available": available})
        return found

    def pressure(self) -> tuple[bool, bool, bool]:
        """(memory, disk, pid) pressure, held for the transition period after the signal recovers."""
        now = time.monotonic()
        for row in self.met():
            self._last_met[SIGNALS[row["signal"]][0]] = now
        period = self.transition_period()
        held = {c for c, at in self._last_met.items() if now - at <= period}
        return "MemoryPressure" in held, "DiskPressure" in held, "PIDPressure" in held

    def conditions(self) -> list[str]:
        memory, disk, pids = self.pressure()
        return [n for n, on in (("MemoryPressure", memory), ("DiskPressure", disk), ("PIDPressure", pids)) if on]

    def status(self) -> dict:
        """What the admin endpoint reports for this node."""
        return {"evictionHard": self.hard(), "sources": self.sources,
                "met": [{k: r[k] for k in ("signal", "threshold", "available")} for r in self.met()],
                "conditions": self.conditions()}

    # ------------------------------------------------------------ admission and eviction

    async def exempt(self, pod: dict) -> bool:
        """Static, mirror and critical pods, and the benchmark's own pods, are never evicted."""
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        if (spec.get("priority") or 0) >= CRITICAL_PRIORITY:
            return True
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            return True
        namespace = meta.get("namespace") or "default"
        cached = self._hidden.get(namespace)
        if cached is None or time.monotonic() - cached[1] > 30:
            hidden = False
            with contextlib.suppress(Exception):
                labels = ((await self.agent.client.get("namespaces", namespace)).get("metadata") or {}).get("labels") or {}
                hidden = is_hidden_namespace(labels) or namespace.startswith("sregym-")
            cached = self._hidden[namespace] = (hidden, time.monotonic())
        return cached[0]

    async def admit(self, pod: dict) -> str | None:
        """The kubelet's admission under pressure: why ``pod`` is rejected, or None."""
        conditions = [c for c in self.conditions() if c in ("DiskPressure", "PIDPressure")]
        if not conditions or await self.exempt(pod):
            return None
        return f"The node had condition: [{', '.join(conditions)}]. "

    async def housekeeping(self) -> None:
        """One round: if a threshold is met, tell the node and evict one pod."""
        met = self.met()
        if not met:
            return
        row = met[0]
        resource = SIGNALS[row["signal"]][1]
        node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": self.agent.name, "uid": self.agent.name}}
        await self.agent.event(node, "EvictionThresholdMet", f"Attempting to reclaim {resource}", "Warning")
        candidates = []
        for worker in list(self.agent.workers.values()):
            if worker.terminating or worker.failed or worker.phase() in ("Succeeded", "Failed"):
                continue
            if await self.exempt(worker.pod):
                continue
            candidates.append(worker)
        if not candidates:
            return
        candidates.sort(key=lambda w: ((w.pod.get("spec") or {}).get("priority") or 0, -_usage(w.root)))
        victim = candidates[0]
        message = (f"The node was low on resource: {resource}. Threshold quantity: {int(row['quantity'])}, "
                   f"available: {format_ki(row['available'])}. ")
        for runner in victim.runners:
            message += (f"Container {runner.name} was using {format_ki(_usage(victim.root / 'logs'))}, "
                        f"request is {_request(runner.spec, resource)}, has larger consumption of {resource}. ")
        await victim.evict(message)


def _usage(path: Path) -> float:
    total = 0
    with contextlib.suppress(OSError):
        for root, _dirs, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return float(total)


def _request(container: dict, resource: str) -> str:
    return str(((container.get("resources") or {}).get("requests") or {}).get(resource, "0"))
