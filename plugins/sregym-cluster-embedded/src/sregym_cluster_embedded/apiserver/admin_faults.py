"""Node-level fault hooks for the benchmark: an admin-only HTTP surface under ``/sregym``.

Faults run in the benchmark process, so the node agents, the fault shim and the service proxy are
reached through these endpoints (system:masters only; errors are Kubernetes ``Status`` objects):

* ``GET /sregym/nodes`` (each node agent's state, its eviction manager's thresholds, the ones met
  now and its pressure conditions, and its conntrack table: count, max, drops, demand); ``POST /sregym/nodes/<node>/stop`` and ``.../start``: stop a node agent
  (heartbeats and status stop, pods keep running; the node lifecycle controller then marks the
  node Unknown and evicts) and start it again.
* ``PUT /sregym/faults/shim/<id>``: an LD_PRELOAD fault rule (see ``node/faultshim.c``) for the
  pods selected by ``namespace`` + ``labels`` (+ ``pods`` names; ``pinned`` keeps exactly the pods
  alive now, so a replacement pod is healthy), the pods mounting ``volumes``, or every pod of
  ``nodes``; limited to files under ``paths`` and ``volumes`` (``[{namespace, claim}]``, resolved
  to the bound PersistentVolume now: a disk fault stays with the disk, a new volume is healthy;
  ``whole_volume: false`` limits it to ``paths`` on those volumes).
  Fields: ``calls`` (read, write, fsync, open, connect, clock), ``errno`` (number or name), ``rate``,
  ``mode`` (random | badblocks, with ``frac``, ``block``, ``seed`` | ranges, with ``files``:
  ``{path: [[first, last], ...]}``, fuse-badblocks only), ``port``, ``delay_us``,
  ``offset_ms`` (with ``calls: [clock]``: the wall clock the pods read is off by that much).
  ``mechanism``: ``auto`` (default) or one name of ``sregym_core.mechanisms`` (``bpf-cgroup``,
  ``seccomp-supervisor``, ``ld-preload-shim``; the old ``cgroup-bpf``/``seccomp``/``ld-preload``
  are read as these); ``mechanisms``: the caller's order of preference (a fault's declared list).
  The strongest that can run the rule here wins: ``bpf-cgroup`` for ``calls: [connect]`` or
  ``[socket]`` alone (no paths or volumes; programs keyed on the target pods' cgroups,
  ``node/bpffault.py``); ``seccomp-supervisor`` for one of ``fsync``, ``read``, ``write`` (paths
  and volumes allowed) when every target pod started under a filter naming it
  (``node/seccompfault.py``); else the shim. The kernel and supervisor ways reach any binary,
  static ones included, and keep the rate and errno outside the pod. The record says which ran
  (``mechanism``) and why each stronger one did not (``passed_over``).
* ``PUT /sregym/faults/supervise/<id>`` ``{namespace, labels | workload: {kind, name}, calls}``:
  pods matching it that start from now on run under a seccomp filter naming ``calls`` (what a
  later ``seccomp-supervisor`` rule needs; the node's plan from installed problems adds such
  records itself, ``plan-*``).
* ``PUT /sregym/faults/diskfull/<id>`` ``{namespace, claim, filler, fill_bytes}``: writes a filler
  file into the volume and caps the volume at less than its usage, so writes under it fail with
  ENOSPC while usage stays at or above the cap (deleting the filler frees it).
* ``PUT /sregym/faults/network/<id>`` ``{namespace, service | labels, nodes, delay_ms, jitter_ms, loss_pct}``:
  impair the service proxy for a Service, for the backend pods selected now (like netem in the
  pods' namespaces: a replacement pod is healthy), or with ``nodes`` for the selected pods on those
  nodes, whenever they are there (a node's bad network: moving the pods away heals them).
* ``GET /sregym/faults`` (everything, with what each fault currently reaches) and
  ``GET``/``DELETE /sregym/faults/<kind>/<id>``.

Each pod's rules are re-rendered every half second from the fault records and the pods in the
store, so pods that appear later are covered and deleted pods drop out (their IPs may be reused).
They go into the pod's own rules channel (``node/faultshim.py``: a memfd only this process writes,
handed read-only to the pod's main processes), holding only the rules that apply to that pod:
no file, mount or environment variable of any pod names a fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno as errno_names
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from ..node import bpffault, seccompfault
from . import admin_fuse
from ..node import mechanisms as node_mechanisms
from ..node.faultshim import RulesChannel, build_fault_shim
from .errors import ApiError

log = logging.getLogger(__name__)

CALLS = ("read", "write", "fsync", "open", "connect", "socket", "clock")
#: the names of sregym_core.mechanisms a rule can run by here, strongest first
BPF_CGROUP, SECCOMP, SHIM, FUSE = "bpf-cgroup", "seccomp-supervisor", "ld-preload-shim", admin_fuse.NAME
DEFAULT_ORDER = ("bpf-lsm", "bpf-fmod-ret", BPF_CGROUP, SECCOMP, FUSE, SHIM)
#: the names records used before the shared vocabulary
ALIASES = {"cgroup-bpf": BPF_CGROUP, "seccomp": SECCOMP, "ld-preload": SHIM}
MAX_OFFSET_MS = 10 * 365 * 86400 * 1000
RECONCILE_SECONDS = 0.5
STARTING_TTL_S = 60.0
MAX_FILL_BYTES = 512 * 1024 * 1024
_ID = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
_SAFE_PATH = re.compile(r"^/[^\s:]*$")


def _bad(message: str) -> ApiError:
    return ApiError(422, message, "Invalid")


def _errno(value: Any) -> int:
    if isinstance(value, bool):
        raise _bad("errno must be a number or a name such as EIO")
    if isinstance(value, int) and 0 < value < 4096:
        return value
    if isinstance(value, str) and value.isupper() and isinstance(getattr(errno_names, value, None), int):
        return int(getattr(errno_names, value))
    raise _bad(f"errno {value!r} is not a number or a name such as EIO")


def _number(body: dict, key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _bad(f"{key} must be a number in [{low}, {high}]")
    return float(value)


def _labels(body: dict) -> dict[str, str]:
    labels = body.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise _bad("labels must map strings to strings")
    return labels


def _str_list(body: dict, key: str) -> list[str]:
    value = body.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _bad(f"{key} must be a list of strings")
    return value


def _pod_matches(pod: dict, namespace: str, labels: dict[str, str], names: list[str]) -> bool:
    meta = pod.get("metadata", {})
    if meta.get("namespace") != namespace or (names and meta.get("name") not in names):
        return False
    have = meta.get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


class FaultHooks:
    """Fault records of one cluster and the rendering of them into rules files and proxy faults."""

    def __init__(self, client: Any, settings: Any, nodes: Any, network: Any) -> None:
        self.client = client
        self.settings = settings
        self.nodes = nodes
        self.network = network
        self.state_dir = Path(settings.state_dir)
        self.shim_path = build_fault_shim() if nodes is not None and getattr(nodes, "shim", None) else None
        self.shim: dict[str, dict] = {}
        self.diskfull: dict[str, dict] = {}
        self.net: dict[str, dict] = {}
        #: which pods start under a seccomp filter, and for which calls (see put_supervise)
        self.supervise: dict[str, dict] = {}
        #: node -> [(pod IPs or ["*"], rule text without its pods= field)], from the last render
        self._node_rules: dict[str, list[tuple[list[str], str]]] = {}
        #: pod uid -> (its channel, node, pod IP)
        self.channels: dict[str, tuple[RulesChannel, str, str]] = {}
        #: per call (connect, socket): the cgroup BPF programs, while a cgroup-bpf record reaches a pod
        self.bpf: dict[str, bpffault.CgroupConnectFaults] = {}
        #: the seccomp supervisor every container's filter reports to (None: unavailable here)
        self.seccomp: seccompfault.SupervisorClient | None = None
        self._task: asyncio.Task | None = None
        #: pods whose containers are starting, by uid, with when: kept until the store has their IP,
        #: so a periodic render between the start hook and the status update does not drop them
        self._starting: dict[str, tuple[dict, float]] = {}

    # ------------------------------------------------------------ lifecycle

    def install(self) -> None:
        """Load the (inert) fault shim into every pod started from now on, give each pod's main
        processes its rules channel, and start rendering."""
        if self.nodes is not None and self.shim_path is not None:
            for node in self.nodes.agents:
                self.nodes.set_fault_env(node, {"LD_PRELOAD": str(self.shim_path)})
            self.nodes.pod_start_hooks.append(self.pod_starting)
            self.nodes.fault_channel = self.channel_for
        if self.nodes is not None and seccompfault.enabled() and seccompfault.probe()[0]:
            all_pods = seccompfault.mode() == "all"
            self.seccomp = seccompfault.SupervisorClient(select=None if all_pods else self.supervised_calls)
            self.nodes.syscall_supervisor = self.seccomp
            if not all_pods:
                self._load_plan()
        admin_fuse.install(self)  # the FUSE layer over pod volumes (node/fuselayer.py)
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="fault-hooks")

    def pod_starting(self, pod: dict) -> None:
        """Render the rules with ``pod`` (its IP just assigned) before its first process runs: a
        pod that replaces a faulty one is faulty from its first read, as on a real broken disk,
        not only from the next render (up to RECONCILE_SECONDS later)."""
        if not (self.shim or self.diskfull):
            return
        self._starting[pod["metadata"].get("uid", "")] = (pod, time.monotonic())
        self.render()

    async def stop(self) -> None:
        if self.nodes is not None and self.pod_starting in self.nodes.pod_start_hooks:
            self.nodes.pod_start_hooks.remove(self.pod_starting)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        if self.nodes is not None and self.nodes.fault_channel == self.channel_for:
            self.nodes.fault_channel = None
        for channel, _node, _ip in self.channels.values():
            channel.close()
        self.channels.clear()
        for faults in self.bpf.values():
            faults.close()
        self.bpf.clear()
        if self.seccomp is not None:
            if self.nodes is not None and self.nodes.syscall_supervisor is self.seccomp:
                self.nodes.syscall_supervisor = None
            self.seccomp.close()
            self.seccomp = None
        admin_fuse.stop(self)

    # ------------------------------------------------------------ seccomp filters: which pods, which calls

    def _load_plan(self) -> None:
        """The targets of installed problems whose faults may run through the supervisor (read
        in a child process, in the background: it loads every plugin)."""
        import threading

        from ..node import supervision_plan

        def load() -> None:
            for index, entry in enumerate(supervision_plan.compute()):
                self.supervise[f"plan-{index}"] = {**entry, "id": f"plan-{index}", "labels": {}}
        threading.Thread(target=load, name="supervision-plan", daemon=True).start()

    def supervised_calls(self, pod: dict) -> set[str]:
        """The calls the filter of a starting pod names: the union over the supervise records it
        matches (none: no filter, the pod pays nothing)."""
        meta = pod.get("metadata") or {}
        have = meta.get("labels") or {}
        out: set[str] = set()
        for record in list(self.supervise.values()):
            if record.get("namespace") != meta.get("namespace"):
                continue
            labels = record.get("labels") or {}
            workload = record.get("workload") or ({"kind": record["kind"], "name": record["name"]}
                                                  if record.get("name") else None)
            if workload:
                labels = {**labels, **self._workload_labels(record["namespace"], workload)}
                if not labels:
                    continue  # not deployed (yet): nothing to match
            if all(have.get(k) == v for k, v in labels.items()):
                out.update(record["calls"])
        return out

    def _workload_labels(self, namespace: str, workload: dict) -> dict[str, str]:
        resource = {"Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps", "DaemonSet": "daemonsets.apps",
                    "ReplicaSet": "replicasets.apps", "Job": "jobs.batch"}.get(workload.get("kind", ""), "")
        obj = self._get(resource, workload.get("name", ""), namespace) if resource else None
        return dict((((obj or {}).get("spec") or {}).get("selector") or {}).get("matchLabels") or {})

    def put_supervise(self, fault_id: str, body: dict) -> dict:
        namespace = body.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise _bad("namespace is required")
        calls = _str_list(body, "calls")
        if not calls or any(c not in seccompfault.CALLS for c in calls):
            raise _bad(f"calls must be a non-empty list of {', '.join(seccompfault.CALLS)}")
        workload = body.get("workload")
        if workload is not None and not (isinstance(workload, dict) and isinstance(workload.get("kind"), str)
                                         and isinstance(workload.get("name"), str)):
            raise _bad("workload must be {kind, name}")
        if self.seccomp is None:
            raise ApiError(503, "the seccomp supervisor is unavailable here: " + seccompfault.unavailable_reason(),
                           "ServiceUnavailable")
        record = {"id": fault_id, "namespace": namespace, "labels": _labels(body), "calls": calls,
                  **({"workload": workload} if workload else {})}
        self.supervise[fault_id] = record
        return dict(record)

    def mechanisms(self) -> dict[str, dict]:
        """What this cluster's nodes accept (sregym_core.mechanisms vocabulary), with reasons."""
        return {**node_mechanisms.node_mechanisms(guard=getattr(self.nodes, "net_guard", None) is not None,
                                                  shim=self.shim_path is not None, supervisor=self.seccomp is not None),
                FUSE: admin_fuse.summary(self)}

    def bpf_available(self) -> tuple[bool, str]:
        """Whether connect faults can run as cgroup BPF programs here, and why not."""
        if self.nodes is None or getattr(self.nodes, "net_guard", None) is None:
            return False, "pods have no cgroup v2 directories (the network guard is off: not root or no cgroup v2)"
        return bpffault.probe()

    def channel_for(self, pod: dict) -> int | None:
        """A read-only descriptor of the pod's rules channel (made on its first container start),
        holding the rules that reach it now; the node agent passes it to the main process only."""
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        uid, node = meta.get("uid", ""), spec.get("nodeName", "")
        ip = status.get("podIP") or ""
        if not ip:
            starting = self._starting.get(uid)
            ip = ((starting[0] if starting else {}).get("status") or {}).get("podIP", "")
        if not uid:
            return None
        entry = self.channels.get(uid)
        if entry is None:
            entry = self.channels[uid] = (RulesChannel(), node, ip)
            entry[0].write(self._pod_lines(node, ip))
        return entry[0].reader()

    def _pod_lines(self, node: str, ip: str) -> list[str]:
        return [f"pods=* {text}" for ips, text in self._node_rules.get(node, []) if "*" in ips or (ip and ip in ips)]

    async def _loop(self) -> None:
        while True:
            try:
                self.render()
            except Exception:  # noqa: BLE001 - a bad record must not stop the loop
                log.exception("rendering fault rules failed")
            await asyncio.sleep(RECONCILE_SECONDS)

    # ------------------------------------------------------------ store lookups

    def _pods(self) -> list[dict]:
        pods = self.client.list_nocopy("pods")
        if not self._starting:
            return pods
        out = []
        for pod in pods:
            uid = pod["metadata"].get("uid", "")
            starting = self._starting.get(uid)
            if starting is not None and (pod.get("status") or {}).get("podIP"):
                del self._starting[uid]  # the store caught up
                starting = None
            out.append(starting[0] if starting is not None else pod)
        now = time.monotonic()
        for uid, (_pod, since) in list(self._starting.items()):
            if now - since > STARTING_TTL_S:  # never stored with an IP: deleted while it started
                del self._starting[uid]
        return out

    def _get(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        for obj in self.client.list_nocopy(resource, namespace):
            if obj["metadata"]["name"] == name:
                return obj
        return None

    def bound_volume(self, namespace: str, claim: str) -> str:
        """The PersistentVolume a claim is bound to: disk faults stay with the disk, not the claim."""
        pvc = self._get("persistentvolumeclaims", claim, namespace)
        if pvc is None:
            raise ApiError(404, f'persistentvolumeclaims "{claim}" not found', "NotFound")
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        pv = self._get("persistentvolumes", pv_name) if pv_name else None
        if not ((pv or {}).get("spec") or {}).get("hostPath", {}).get("path"):
            raise ApiError(409, f'persistentvolumeclaims "{claim}" is not bound to a host-path volume', "Conflict")
        return str(pv_name)

    def volume_scope(self, pv_name: str) -> tuple[str | None, list[str], list[dict]]:
        """A volume's host directory, the mount paths pods see it at, and the pods that mount it."""
        pv = self._get("persistentvolumes", pv_name)
        host = ((pv or {}).get("spec") or {}).get("hostPath", {}).get("path")
        if not host:
            return None, [], []
        claims = {(c["metadata"].get("namespace"), c["metadata"]["name"])
                  for c in self.client.list_nocopy("persistentvolumeclaims")
                  if (c.get("spec") or {}).get("volumeName") == pv_name}
        mounts: set[str] = set()
        pods = []
        for pod in self._pods():
            spec = pod.get("spec") or {}
            names = {v.get("name") for v in spec.get("volumes") or []
                     if (pod["metadata"].get("namespace"), (v.get("persistentVolumeClaim") or {}).get("claimName"))
                     in claims}
            if not names:
                continue
            pods.append(pod)
            for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                for mount in container.get("volumeMounts") or []:
                    if mount.get("name") in names and mount.get("mountPath"):
                        mounts.add(mount["mountPath"].rstrip("/") or "/")
        return os.path.realpath(host), sorted(mounts), pods

    def _prefixes(self, record: dict) -> list[str]:
        out = list(record["paths"])
        for pv in record["pvs"]:
            host, mounts, _pods = self.volume_scope(pv)
            if host and record.get("whole_volume", True):
                out += [host, *mounts]
        return [p for p in dict.fromkeys(out) if _SAFE_PATH.match(p) and p != "/"][:4]

    def _targets(self, record: dict) -> dict[str, list[str]]:
        """node -> pod IPs ("*" for every pod of the node) a record reaches right now."""
        if not record["namespace"] and not record["pvs"]:
            return {n: ["*"] for n in record["nodes"]}
        out: dict[str, list[str]] = {}
        for pod in self._target_pods(record):
            out.setdefault(pod["spec"]["nodeName"], []).append(pod["status"]["podIP"])
        return out

    def _target_pods(self, record: dict) -> list[dict]:
        """The running pods (scheduled, with an IP) a record reaches right now."""
        mounting: set[str] | None = None
        if record["pvs"]:
            mounting = {p["metadata"].get("uid") for pv in record["pvs"] for p in self.volume_scope(pv)[2]}
        out: list[dict] = []
        for pod in self._pods():
            meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
            if mounting is not None and meta.get("uid") not in mounting:
                continue
            if record["uids"] is not None:
                if meta.get("uid") not in record["uids"]:
                    continue
            elif record["namespace"] and not _pod_matches(pod, record["namespace"], record["labels"], record["pods"]):
                continue
            node, ip = spec.get("nodeName"), status.get("podIP")
            if not node or not ip or (record["nodes"] and node not in record["nodes"]):
                continue
            if meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
                continue
            out.append(pod)
        return out

    # ------------------------------------------------------------ rendering

    @staticmethod
    def _line(record: dict, prefixes: list[str]) -> str:
        parts = [f"calls={','.join(record['calls'])}", f"errno={record['errno']}",
                 f"rate={record['rate']:g}", f"mode={record['mode']}", f"frac={record['frac']:g}",
                 f"block={record['block']}", f"seed={record['seed']}", f"port={record['port']}",
                 f"delay_us={record['delay_us']}"]
        if record.get("offset_ms"):
            parts.append(f"offset_ms={record['offset_ms']}")
        if prefixes:
            parts.append("prefix=" + ":".join(prefixes))
        return " ".join(parts)

    def render(self) -> None:
        if self.network is not None:
            self._net_render()
        if self.nodes is None:
            return
        self._bpf_render()
        self._seccomp_render()
        admin_fuse.render(self)
        if self.shim_path is None:
            return
        lines: dict[str, list[tuple[list[str], str]]] = {node: [] for node in self.nodes.agents}
        for record in self.shim.values():
            if record["mechanism"] != SHIM:
                continue
            prefixes = self._prefixes(record)
            if (record["paths"] or (record["pvs"] and record["whole_volume"])) and not prefixes:
                continue  # its volume is gone: nothing to scope it to
            for node, ips in self._targets(record).items():
                if node in lines:
                    lines[node].append((ips, self._line(record, prefixes)))
        for record in self.diskfull.values():
            self._measure(record)
            if record["full"]:
                rule = {**record, "calls": ["write"], "errno": errno_names.ENOSPC, "rate": 1.0, "mode": "random",
                        "frac": 0.0, "block": 8192, "seed": 0, "port": 0, "delay_us": 0, "paths": [],
                        "namespace": "", "labels": {}, "pods": [], "nodes": [], "uids": None}
                prefixes = self._prefixes(rule)
                for node, ips in self._targets(rule).items():
                    if node in lines and prefixes:
                        lines[node].append((ips, self._line(rule, prefixes)))
        self._node_rules = lines
        self._write_channels()

    def _bpf_render(self) -> None:
        """Each call's map: the cgroup id of every pod a cgroup-bpf record reaches."""
        by_call: dict[str, dict[int, bpffault.ConnectFault]] = {call: {} for call in bpffault.ATTACH}
        for record in self.shim.values():
            if record["mechanism"] != BPF_CGROUP:
                continue
            faults = by_call[record["calls"][0]]
            fault = bpffault.ConnectFault(errno=record["errno"], rate=record["rate"],
                                          port=record["port"] if record["calls"] == ["connect"] else 0)
            pods = self._target_pods(record) if record["namespace"] else [
                p for p in self._pods() if (p.get("spec") or {}).get("nodeName") in record["nodes"]]
            for pod in pods:
                cgroup = self.nodes.pod_cgroup(pod["metadata"].get("uid", ""))
                cgroup_id = bpffault.cgroup_id(cgroup) if cgroup is not None else None
                if cgroup_id is not None:
                    faults[cgroup_id] = fault
            record["cgroups"] = len([f for f in faults.values() if f is fault])
        for call, faults in by_call.items():
            if faults and call not in self.bpf:
                self.bpf[call] = bpffault.CgroupConnectFaults(call=call)
            if call in self.bpf:
                try:
                    self.bpf[call].set(faults)
                except OSError:
                    log.exception("updating the cgroup BPF %s faults failed", call)

    def _seccomp_render(self) -> None:
        """The supervisor's rules: per target pod, errno, rate and the path prefixes."""
        if self.seccomp is None:
            return
        self.seccomp.check()
        rules: dict[str, list] = {}
        for record in self.shim.values():
            if record["mechanism"] != SECCOMP:
                continue
            prefixes = self._prefixes(record)
            if (record["paths"] or (record["pvs"] and record["whole_volume"])) and not prefixes:
                continue  # its volume is gone
            pods = self._target_pods(record) if (record["namespace"] or record["pvs"]) else [
                p for p in self._pods() if (p.get("spec") or {}).get("nodeName") in record["nodes"]]
            for pod in pods:
                rules.setdefault(pod["metadata"].get("uid", ""), []).append(
                    [record["errno"], record["rate"], prefixes, record["calls"]])
        self.seccomp.set_rules(rules)

    def _write_channels(self) -> None:
        """Each pod's channel gets the rules reaching it; channels of deleted pods are closed."""
        if not self.channels:
            return
        present = {p["metadata"].get("uid") for p in self.client.list_nocopy("pods")}
        for uid, (channel, node, ip) in list(self.channels.items()):
            if uid not in present and uid not in self._starting:
                channel.close()
                del self.channels[uid]
                continue
            if not ip:  # started before the store had its IP
                pod = next((p for p in self._pods() if p["metadata"].get("uid") == uid), None)
                ip = ((pod or {}).get("status") or {}).get("podIP") or ""
                self.channels[uid] = (channel, node, ip)
            wanted = self._pod_lines(node, ip)
            if channel.lines != wanted:
                channel.write(wanted)

    # ------------------------------------------------------------ shim records

    def put_shim(self, fault_id: str, body: dict) -> dict:
        calls = _str_list(body, "calls")
        if not calls or any(c not in CALLS for c in calls):
            raise _bad(f"calls must be a non-empty list of {', '.join(CALLS)}")
        mode = body.get("mode", "random")
        if mode not in ("random", "badblocks", "ranges"):
            raise _bad("mode must be random, badblocks or ranges (files: {path: [[first, last], ...]}, fuse-badblocks)")
        namespace = body.get("namespace") or ""
        if not isinstance(namespace, str):
            raise _bad("namespace must be a string")
        nodes = _str_list(body, "nodes")
        unknown = [n for n in nodes if self.nodes is None or n not in self.nodes.agents]
        if unknown:
            raise ApiError(404, f'nodes "{unknown[0]}" not found', "NotFound")
        if not namespace and not nodes:
            raise _bad("give a namespace (with labels or pods) or nodes")
        paths = _str_list(body, "paths")
        if any(not _SAFE_PATH.match(p) for p in paths):
            raise _bad("paths must be absolute, without spaces or colons")
        volumes = body.get("volumes") or []
        if not isinstance(volumes, list) or not all(
                isinstance(v, dict) and isinstance(v.get("namespace"), str) and isinstance(v.get("claim"), str)
                for v in volumes):
            raise _bad("volumes must be a list of {namespace, claim}")
        record = {
            "id": fault_id, "mechanism": "", "calls": calls, "errno": _errno(body.get("errno", "EIO")),
            "rate": _number(body, "rate", 1.0, 0.0, 1.0), "mode": mode,
            "frac": _number(body, "frac", 0.0, 0.0, 1.0), "block": int(_number(body, "block", 8192, 512, 1 << 20)),
            "seed": int(_number(body, "seed", 1, 0, 2**31)), "port": int(_number(body, "port", 0, 0, 65535)),
            "delay_us": int(_number(body, "delay_us", 0, 0, 1_000_000)),
            "offset_ms": int(_number(body, "offset_ms", 0, -MAX_OFFSET_MS, MAX_OFFSET_MS)),
            "namespace": namespace, "labels": _labels(body), "pods": _str_list(body, "pods"), "nodes": nodes,
            "paths": paths, "volumes": [{"namespace": v["namespace"], "claim": v["claim"]} for v in volumes],
            "pvs": [self.bound_volume(v["namespace"], v["claim"]) for v in volumes], "uids": None,
            # false: the volumes only choose the pods (the pods mounting them) and `paths` the files
            "whole_volume": body.get("whole_volume", True) is not False,
        }
        if mode == "badblocks" and record["frac"] <= 0:
            raise _bad("badblocks needs frac > 0")
        if mode == "ranges":
            record["files"] = admin_fuse.files(body)
        record.update(admin_fuse.options(self, body))  # sticky, corrupt, flips, cover: the layer's own
        if body.get("pinned"):
            if not namespace:
                raise _bad("pinned needs a namespace")
            record["uids"] = [p["metadata"]["uid"] for p in self._pods()
                              if _pod_matches(p, namespace, record["labels"], record["pods"])]
            if not record["uids"]:
                raise ApiError(404, "no pod matches the selector", "NotFound")
        record["mechanism"], record["passed_over"] = self._mechanism(body, record)
        self.shim[fault_id] = record
        self.render()
        return self.describe_shim(record)

    def _fits(self, name: str, record: dict, body: dict) -> str | None:
        """Why mechanism ``name`` cannot run the rule here (None: it can)."""
        calls, paths, volumes = record["calls"], record["paths"], record["volumes"]
        delay = bool(body.get("delay_us"))
        if name in ("bpf-lsm", "bpf-fmod-ret"):
            return self.mechanisms()[name].get("reason", "unavailable")
        if name == BPF_CGROUP:
            if calls not in (["connect"], ["socket"]) or paths or volumes or delay:
                return "runs calls [connect] or [socket] alone, without paths, volumes or delay_us"
            available, reason = self.bpf_available()
            return None if available else reason
        if name == SECCOMP:
            if len(calls) != 1 or calls[0] not in seccompfault.CALLS or record["mode"] != "random" or delay:
                return f"runs one of {', '.join(seccompfault.CALLS)}, in random mode, without delay_us"
            if admin_fuse.layer_only(record):
                return admin_fuse.layer_only(record)
            if self.seccomp is None:
                return seccompfault.unavailable_reason()
            pods = self._target_pods(record) if (record["namespace"] or record["pvs"]) else []
            if not pods:
                return "no target pod is running now"
            uncovered = [p["metadata"]["name"] for p in pods
                         if not self.seccomp.covers(p["metadata"].get("uid", ""), calls[0])]
            if uncovered:
                return (f"pods {', '.join(sorted(uncovered)[:3])} did not start under a filter naming {calls[0]} "
                        "(PUT /sregym/faults/supervise before they start)")
            return None
        if name == FUSE:
            return admin_fuse.fits(self, record, body)
        if name == SHIM:
            if admin_fuse.layer_only(record):
                return admin_fuse.layer_only(record)
            if "socket" in calls:
                return "the shim does not run socket"
            return None if self.shim_path is not None else "no C compiler or no bind shim"
        return f"unknown mechanism {name!r}"

    def _mechanism(self, body: dict, record: dict) -> tuple[str, dict[str, str]]:
        """The strongest mechanism that can run the rule here, and why each stronger one did not
        (in the caller's order of preference, ``mechanisms``, else :data:`DEFAULT_ORDER`)."""
        wanted = ALIASES.get(body.get("mechanism", "auto"), body.get("mechanism", "auto"))
        if wanted != "auto" and wanted not in DEFAULT_ORDER:
            raise _bad(f"mechanism must be auto or one of {', '.join(DEFAULT_ORDER)}")
        order = body.get("mechanisms") or DEFAULT_ORDER
        if not isinstance(order, list | tuple) or not all(isinstance(m, str) for m in order):
            raise _bad("mechanisms must be a list of names")
        order = [ALIASES.get(m, m) for m in order]
        if wanted != "auto":
            order = [wanted]
        passed_over: dict[str, str] = {}
        for name in order:
            if name not in DEFAULT_ORDER:
                continue  # a mechanism this node agent does not run (e.g. fuse-badblocks)
            why = self._fits(name, record, body)
            if why is None:
                return name, passed_over
            passed_over[name] = why
        detail = "; ".join(f"{k}: {v}" for k, v in passed_over.items()) or "none of the named mechanisms runs here"
        if wanted != "auto" and "runs " in passed_over.get(wanted, ""):
            raise _bad(f"{wanted} {passed_over[wanted]}")
        raise ApiError(503, f"no mechanism can run this rule here ({detail})", "ServiceUnavailable")

    def describe_shim(self, record: dict) -> dict:
        targets = self._targets(record)
        described = {**{k: v for k, v in record.items() if k != "uids"}, "pinned": record["uids"] is not None,
                     "prefixes": self._prefixes(record), "targets": targets,
                     "active": bool(targets) and (not (record["paths"] or record["pvs"]) or bool(self._prefixes(record)))}
        if record["mechanism"] == SECCOMP:
            described["mechanism_detail"] = seccompfault.MECHANISM
            # the rule reaches the target pods whose filter names the call
            described["active"] = described["active"] and self.seccomp is not None and any(
                self.seccomp.covers(p["metadata"].get("uid", ""), record["calls"][0]) for p in self._target_pods(record))
        if record["mechanism"] == FUSE:
            admin_fuse.describe(self, record, described)
        if record["mechanism"] == BPF_CGROUP:
            call = record["calls"][0]
            described["mechanism_detail"] = bpffault.MECHANISM[call]
            described["active"] = bool(record.get("cgroups")) and call in self.bpf and self.bpf[call].attached
        return described

    # ------------------------------------------------------------ disk full

    def _measure(self, record: dict) -> None:
        used = 0
        for root, _dirs, files in os.walk(record["host"]):
            for name in files:
                with contextlib.suppress(OSError):
                    used += os.lstat(os.path.join(root, name)).st_blocks * 512
        record["usage"] = used
        record["full"] = used >= record["capacity"]

    def put_diskfull(self, fault_id: str, body: dict) -> dict:
        namespace, claim = body.get("namespace"), body.get("claim")
        if not isinstance(namespace, str) or not isinstance(claim, str):
            raise _bad("namespace and claim are required strings")
        filler = body.get("filler", ".fill")
        if not isinstance(filler, str) or not filler or filler.startswith("/") or ".." in filler.split("/"):
            raise _bad("filler must be a relative path inside the volume")
        fill = int(_number(body, "fill_bytes", 32 * 1024 * 1024, 1024 * 1024, MAX_FILL_BYTES))
        pv = self.bound_volume(namespace, claim)
        host_dir = self.volume_scope(pv)[0]
        if host_dir is None:
            raise ApiError(409, f'persistentvolumes "{pv}" has no host directory', "Conflict")
        host = Path(host_dir)
        record = {"id": fault_id, "namespace": namespace, "claim": claim, "pvs": [pv], "host": str(host),
                  "filler": filler, "fill_bytes": fill, "capacity": 0, "usage": 0, "full": False}
        before = self._measure_value(record)
        # the cap leaves a tenth of the filler as headroom once the filler is gone
        record["capacity"] = before + fill - fill // 10
        path = host / filler
        path.parent.mkdir(parents=True, exist_ok=True)
        chunk = b"\0" * (1024 * 1024)
        with open(path, "wb") as out:
            for _ in range(fill // len(chunk)):
                out.write(chunk)
        with contextlib.suppress(OSError):
            st = host.stat()
            os.chown(path, st.st_uid, st.st_gid)
        self.diskfull[fault_id] = record
        self.render()
        return dict(record)

    def _measure_value(self, record: dict) -> int:
        probe = {**record, "capacity": 1 << 62}
        self._measure(probe)
        return int(probe["usage"])

    # ------------------------------------------------------------ network

    def put_network(self, fault_id: str, body: dict) -> dict:
        if self.network is None:
            raise ApiError(503, "this cluster has no service network", "ServiceUnavailable")
        namespace = body.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise _bad("namespace is required")
        delay = _number(body, "delay_ms", 0.0, 0.0, 60_000.0)
        jitter = _number(body, "jitter_ms", 0.0, 0.0, 60_000.0)
        loss = _number(body, "loss_pct", 0.0, 0.0, 100.0)
        if not (delay or jitter or loss):
            raise _bad("give delay_ms, jitter_ms or loss_pct")
        service = body.get("service")
        if service:
            if not isinstance(service, str) or self._get("services", service, namespace) is None:
                raise ApiError(404, f'services "{service}" not found', "NotFound")
            targets = [f"{namespace}/{service}"]
        nodes = _str_list(body, "nodes")
        if any(self.nodes is None or n not in self.nodes.agents for n in nodes):
            raise ApiError(404, "nodes not found: " + ", ".join(nodes), "NotFound")
        record = {"id": fault_id, "namespace": namespace, "service": service or None, "labels": _labels(body),
                  "nodes": nodes, "delay_ms": delay, "jitter_ms": jitter, "loss_pct": loss, "targets": []}
        if service:
            if not isinstance(service, str) or self._get("services", service, namespace) is None:
                raise ApiError(404, f'services "{service}" not found', "NotFound")
            targets = [f"{namespace}/{service}"]
        else:
            targets = self._net_pods(record)
            if not targets and not nodes:
                raise ApiError(404, "no pod matches the selector", "NotFound")
        self.delete_network(fault_id)
        self.net[fault_id] = record
        self._net_apply(record, targets)
        return self.describe_network(record)

    def _net_pods(self, record: dict) -> list[str]:
        """``ns/pod`` of the selected pods; with ``nodes``, the ones on those nodes now (a node's
        network is impaired: pods that land there later are too, pods that leave are not)."""
        return [f"{record['namespace']}/{p['metadata']['name']}" for p in self._pods()
                if _pod_matches(p, record["namespace"], record["labels"], []) and not p["metadata"].get("deletionTimestamp")
                and (not record["nodes"] or (p.get("spec") or {}).get("nodeName") in record["nodes"])]

    def _net_apply(self, record: dict, targets: list[str]) -> None:
        for gone in set(record["targets"]) - set(targets):
            self.network.clear_faults(gone)
        for target in targets:
            self.network.set_delay(target, record["delay_ms"], record["jitter_ms"])
            self.network.set_loss(target, record["loss_pct"])
        record["targets"] = targets

    def _net_render(self) -> None:
        for record in self.net.values():
            if record["nodes"] and not record["service"]:
                targets = self._net_pods(record)
                if targets != record["targets"]:
                    self._net_apply(record, targets)

    def describe_network(self, record: dict) -> dict:
        live = []
        for target in record["targets"]:
            namespace, name = target.split("/", 1)
            kind = "services" if record["service"] else "pods"
            obj = self._get(kind, name, namespace)
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                live.append(target)
        return {**record, "live": live, "active": bool(live)}

    def delete_network(self, fault_id: str) -> bool:
        record = self.net.pop(fault_id, None)
        if record is None:
            return False
        for target in record["targets"]:
            self.network.clear_faults(target)
        return True

    # ------------------------------------------------------------ summary

    def nodes_status(self) -> dict:
        if self.nodes is None:
            return {}
        conntrack = self.network.proxy.conntrack.status() if self.network is not None else {}
        # a crash-looping agent reports "crashloop", why it exits and its restart count (node/service.py)
        return {name: {"agent": "stopped" if agent.paused else "running", **agent.service.status(),
                       "eviction": agent.eviction.status(),
                       **({"conntrack": conntrack[name]} if name in conntrack else {})}
                for name, agent in self.nodes.agents.items()}

    def summary(self) -> dict:
        return {"shimAvailable": self.shim_path is not None, "nodes": self.nodes_status(),
                "mechanisms": self.mechanisms(),
                "supervise": {k: dict(v) for k, v in self.supervise.items()},
                "shim": {k: self.describe_shim(v) for k, v in self.shim.items()},
                "diskfull": {k: dict(v) for k, v in self.diskfull.items()},
                "network": {k: self.describe_network(v) for k, v in self.net.items()}}


# ---------------------------------------------------------------------------------------------- HTTP


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json")


async def _body(request: web.Request) -> dict:
    raw = await request.read()
    if len(raw) > 64 * 1024:
        raise ApiError(413, "the request body is too large", "RequestEntityTooLarge")
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ApiError(400, f"the request body is not JSON: {exc}", "BadRequest") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object", "BadRequest")
    return body


async def handle(request: web.Request, hooks: FaultHooks | None, parts: list[str]) -> web.Response:
    """``parts`` is the path split on "/" starting with "sregym"; the caller checked the admin."""
    if hooks is None:
        raise ApiError(503, "node fault hooks are not running in this cluster", "ServiceUnavailable")
    method = request.method
    rest = parts[1:]
    if rest[0] == "nodes":
        if rest == ["nodes"] and method == "GET":
            return _json(hooks.nodes_status())
        if rest == ["nodes", "pods"] and method == "GET":  # the node agents' own account (graders)
            from ..node.account import node_pods

            return _json(node_pods(hooks.nodes))
        if len(rest) == 3 and rest[2] in ("stop", "start") and method == "POST":
            if hooks.nodes is None or rest[1] not in hooks.nodes.agents:
                raise ApiError(404, f'nodes "{rest[1]}" not found', "NotFound")
            if rest[2] == "stop":
                await hooks.nodes.stop_node(rest[1])
            elif hooks.nodes.agents[rest[1]].paused:
                await hooks.nodes.start_node(rest[1])
            return _json({"node": rest[1], **hooks.nodes_status()[rest[1]]})
        raise ApiError(404, "the server could not find the requested resource", "NotFound")
    if rest == ["faults"] and method == "GET":
        return _json(hooks.summary())
    if len(rest) != 3 or rest[1] not in ("shim", "diskfull", "network", "supervise"):
        raise ApiError(404, "the server could not find the requested resource", "NotFound")
    kind, fault_id = rest[1], rest[2]
    if not _ID.match(fault_id):
        raise _bad(f"fault id {fault_id!r} must be a DNS-1123 label")
    records = {"shim": hooks.shim, "diskfull": hooks.diskfull, "network": hooks.net,
               "supervise": hooks.supervise}[kind]
    if method == "PUT":
        body = await _body(request)
        if kind == "shim":
            return _json(hooks.put_shim(fault_id, body), 201)
        if kind == "supervise":
            return _json(hooks.put_supervise(fault_id, body), 201)
        if kind == "diskfull":
            if hooks.shim_path is None:
                raise ApiError(503, "the fault shim is unavailable", "ServiceUnavailable")
            return _json(await asyncio.to_thread(hooks.put_diskfull, fault_id, body), 201)
        return _json(hooks.put_network(fault_id, body), 201)
    if fault_id not in records:
        raise ApiError(404, f'{kind} fault "{fault_id}" not found', "NotFound")
    if method == "GET":
        record = records[fault_id]
        if kind == "shim":
            return _json(hooks.describe_shim(record))
        if kind == "network":
            return _json(hooks.describe_network(record))
        if kind == "supervise":
            return _json(dict(record))
        await asyncio.to_thread(hooks._measure, record)
        return _json(dict(record))
    if method == "DELETE":
        if kind == "network":
            hooks.delete_network(fault_id)
        else:
            record = records.pop(fault_id)
            if kind == "diskfull":  # recovery frees the space too
                with contextlib.suppress(OSError):
                    (Path(record["host"]) / record["filler"]).unlink()
            hooks.render()
        return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                      "details": {"name": fault_id, "kind": kind}})
    raise ApiError(405, f"the server does not allow this method on {request.path}", "MethodNotAllowed")
