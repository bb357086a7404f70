"""Settings of one embedded cluster, shared by every part of the cluster process."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import attrs

from sregym_core.errors import ConfigError

T = TypeVar("T")
#: kube-controller-manager's default --node-monitor-grace-period
DEFAULT_NODE_MONITOR_GRACE_S = 40.0


def sregym_home() -> Path:
    """``$SREGYM_HOME`` or ``~/.sregym``: where cluster state directories live."""
    return Path(os.environ.get("SREGYM_HOME") or Path.home() / ".sregym")


def cluster_dir(name: str) -> Path:
    return sregym_home() / "clusters" / name


@attrs.frozen(kw_only=True)
class ClusterSettings:
    """What the API server, controllers and node agents of one cluster need to know.

    ``pod_cidr_prefix`` and ``service_cidr_prefix`` are two-octet prefixes inside 127.0.0.0/8
    ("127.42"): pods get ``<prefix>.x.y`` addresses, so several clusters never collide.
    """

    name: str = "default"
    state_dir: Path = attrs.field(factory=lambda: cluster_dir("default"), converter=Path)
    nodes: int = 1
    node_cpu: str = "4"
    node_memory: str = "8Gi"
    pod_cidr_prefix: str = "127.42"
    service_cidr_prefix: str = "127.43"
    api_host: str = "127.0.0.1"
    api_port: int = 0
    kubernetes_version: str = "v1.32.4"
    cluster_domain: str = "cluster.local"
    # kube-controller-manager's --node-monitor-grace-period: how long a node may miss its Lease
    # renewals (every 10 s) before it is NotReady. SREGYM_NODE_MONITOR_GRACE_PERIOD sets it at start.
    node_monitor_grace_period: float = DEFAULT_NODE_MONITOR_GRACE_S


def node_monitor_grace_period() -> float:
    """The grace period a new cluster starts with: ``SREGYM_NODE_MONITOR_GRACE_PERIOD`` or 40 s.
    At least 15 s, so that one late Lease renewal on a loaded machine never marks a node NotReady."""
    raw = os.environ.get("SREGYM_NODE_MONITOR_GRACE_PERIOD", "").strip()
    if not raw:
        return DEFAULT_NODE_MONITOR_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 15:
        raise ConfigError(f"SREGYM_NODE_MONITOR_GRACE_PERIOD={raw!r} is not a number of seconds >= 15",
                          hints=["unset it for the default 40 s (Lease renewals are every 10 s)"])
    return value


# -- per-cluster address ranges --------------------------------------------------------------------
# Each cluster gets a pair of /16 prefixes inside 127.0.0.0/8: pods in 127.<40+2i>, services in
# 127.<41+2i>. The table lives in $SREGYM_HOME/clusters/allocations.json, guarded by a file lock,
# so clusters started side by side never share a range.
FIRST_OCTET = 40
MAX_CLUSTERS = 100


def _allocation_file() -> Path:
    return sregym_home() / "clusters" / "allocations.json"


def _locked_table(update: Callable[[dict[str, int]], T]) -> T:
    path = _allocation_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            try:
                table = json.loads(path.read_text())
                if not isinstance(table, dict):
                    table = {}
            except (FileNotFoundError, ValueError):
                table = {}
            result = update(table)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(table, indent=2, sort_keys=True))
            tmp.replace(path)
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def allocate(name: str) -> tuple[str, str]:
    """(pod prefix, service prefix) for cluster ``name``: the same each time for one name."""

    busy = ranges_in_use()

    def take(table: dict[str, int]) -> int:
        if name in table and table[name] not in busy and _claim_machine_wide(table[name], name):
            return table[name]
        used = set(table.values())
        for index in range(MAX_CLUSTERS):
            if index not in used and index not in busy and _claim_machine_wide(index, name):
                table[name] = index
                return index
        raise RuntimeError(f"no free address range: {MAX_CLUSTERS} clusters already allocated")

    index = _locked_table(take)
    return f"127.{FIRST_OCTET + 2 * index}", f"127.{FIRST_OCTET + 2 * index + 1}"


def ranges_in_use(proc_net: Path = Path("/proc/net")) -> set[int]:
    """Range indexes with a listening socket of anyone on this machine, whatever registry they used.

    The daemon allocates before it listens, so every listener found belongs to another cluster:
    another user's (the registries are per user and cannot see each other), or one started with a
    different registry. Read from /proc/net, which shows every user's sockets."""
    busy: set[int] = set()
    for table, listening in (("tcp", "0A"), ("udp", None)):
        try:
            lines = (proc_net / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or (listening and fields[3] != listening):
                continue
            address = fields[1].split(":")[0]
            if len(address) != 8:
                continue
            octets = bytes.fromhex(address)[::-1]  # /proc/net stores IPv4 in host (little-endian) order
            if octets[0] == 127 and octets[1] >= FIRST_OCTET:
                busy.add((octets[1] - FIRST_OCTET) // 2)
    return busy


def release(name: str) -> None:
    """Give cluster ``name``'s address range back."""
    index = _locked_table(lambda table: table.pop(name, None))
    if index is not None:
        _release_machine_wide(index, name)


# -- machine-wide claims ----------------------------------------------------------------------------
# The table above is per $SREGYM_HOME, but addresses are per machine: two homes (two users' runs, or
# tests with temporary homes) must never hand out the same range. Each range is also claimed in a
# machine-wide registry; a claim is kept while its cluster's state directory has a live daemon pid,
# or for a short grace period while that cluster is still starting.
CLAIM_GRACE_S = 120.0


def _machine_registry() -> Path:
    return Path(os.environ.get("SREGYM_RANGE_REGISTRY", f"/tmp/sregym-ranges-{os.getuid()}.json"))


def _claim_alive(claim: dict) -> bool:
    pid_file = Path(claim.get("dir", "")) / "pid"
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        return True
    except PermissionError:  # another user's live process
        return True
    except (OSError, ValueError):
        return time.time() - float(claim.get("at", 0)) < CLAIM_GRACE_S and not pid_file.exists()


def _with_registry(update: Callable[[dict[str, dict]], T]) -> T:
    path = _machine_registry()
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            try:
                registry = json.loads(path.read_text())
                if not isinstance(registry, dict):
                    registry = {}
            except (FileNotFoundError, ValueError):
                registry = {}
            result = update(registry)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(registry, indent=2, sort_keys=True))
            tmp.replace(path)
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _claim_machine_wide(index: int, name: str) -> bool:
    directory = str(cluster_dir(name).resolve())

    def claim(registry: dict[str, dict]) -> bool:
        current = registry.get(str(index))
        if current and current.get("dir") != directory and _claim_alive(current):
            return False
        registry[str(index)] = {"dir": directory, "at": time.time()}
        return True

    return _with_registry(claim)


def _release_machine_wide(index: int, name: str) -> None:
    directory = str(cluster_dir(name).resolve())

    def drop(registry: dict[str, dict]) -> None:
        if registry.get(str(index), {}).get("dir") == directory:
            registry.pop(str(index))

    _with_registry(drop)
