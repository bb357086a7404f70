"""Resource limits per container: cgroup v2, cgroup v1, or a userspace fallback without root.

Each container instance gets a fresh group ``<own cgroup>/sregym-<cluster>/<key>`` (nested under
the agent's own cgroup so the host's accounting still sees it). ``preexec`` runs in the forked
child before exec and moves it into the group, so the whole process tree is limited from its
first instruction. The userspace backend instead watches the process tree: RSS polling with
SIGKILL stands in for the OOM killer (reported as OOMKilled, exit 137), a SIGSTOP/SIGCONT budget
stands in for CFS quota, RLIMIT_NPROC for pids.max. Throttling counters mimic ``cpu.stat``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
CFS_PERIOD_US = 100_000


@dataclass(frozen=True)
class Limits:
    cpu_millis: int | None = None
    memory_bytes: int | None = None
    pids: int | None = None
    cpu_request_millis: int | None = None  # weight under contention (cpu.shares / cpu.weight)


@dataclass
class Usage:
    cpu_ns: int = 0
    memory_bytes: int = 0
    nr_periods: int = 0
    nr_throttled: int = 0
    throttled_ns: int = 0


class Group:
    """One container instance's resource group (no limits at all in the base class)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.pid: int | None = None

    def preexec(self) -> None:
        """Runs in the child between fork and exec: only fork-safe work here."""

    def started(self, pid: int) -> None:
        self.pid = pid

    def usage(self) -> Usage:
        return _tree_usage(self.pid)

    def oom_killed(self) -> bool:
        return False

    def pids(self) -> list[int]:
        return [p.pid for p in _tree(self.pid)]

    def destroy(self) -> None:
        """Remove the group; processes still inside are killed first."""


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        if not _PROC_CHILDREN:
            return [root, *root.children(recursive=True)]
        kids = _descendants(pid)
    except psutil.Error:
        return []
    out = [root]
    for child in kids:
        with contextlib.suppress(psutil.Error):
            out.append(psutil.Process(child))
    return out


#: the kernel lists each thread's children in /proc (CONFIG_PROC_CHILDREN, on by default)
_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``, read from each thread's ``children`` file in /proc.

    psutil's ``children(recursive=True)`` reads the parent of *every* process on the machine; the
    userspace limits of a node's two dozen containers poll their trees many times a second, and
    those whole-/proc scans once took the node agent's event loop (and the cluster DNS on it) to
    its knees. This walk reads only the tree's own files."""
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            threads = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                with open(f"/proc/{current}/task/{tid}/children") as fh:
                    kids = fh.read().split()
            except OSError:  # the thread or process just exited
                continue
            for kid in kids:
                found.append(int(kid))
                stack.append(int(kid))
    return found


def _tree_usage(pid: int | None) -> Usage:
    usage = Usage()
    for proc in _tree(pid):
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            usage.cpu_ns += int((times.user + times.system) * 1e9)
            usage.memory_bytes += proc.memory_info().rss
    return usage


class Backend:
    name = "none"

    def group(self, key: str, limits: Limits) -> Group:
        return Group(limits)

    def cleanup(self) -> None:
        """Remove the per-cluster parent group."""

    def directories(self) -> list[str]:
        """The per-cluster parent groups (the watchdog sweeps them if the agent dies)."""
        return []


# ---------------------------------------------------------------- cgroup v1


def _own_path(controller: str) -> str:
    """This process's cgroup path in the v1 hierarchy holding ``controller``."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    return "/"


class V1Group(Group):
    def __init__(self, dirs: dict[str, Path], limits: Limits) -> None:
        super().__init__(limits)
        self.dirs = dirs
        self._procs_paths = [str(d / "cgroup.procs") for d in dirs.values()]

    def preexec(self) -> None:
        for path in self._procs_paths:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def _read(self, controller: str, name: str) -> str:
        try:
            return (self.dirs[controller] / name).read_text()
        except (OSError, KeyError):
            return ""

    def usage(self) -> Usage:
        usage = Usage()
        with contextlib.suppress(ValueError):
            usage.cpu_ns = int(self._read("cpuacct", "cpuacct.usage") or 0)
        stat = dict(line.split() for line in self._read("memory", "memory.stat").splitlines() if " " in line)
        with contextlib.suppress(ValueError):
            total = int(self._read("memory", "memory.usage_in_bytes") or 0)
            usage.memory_bytes = max(total - int(stat.get("total_inactive_file", 0)), 0)
        cpu = dict(line.split() for line in self._read("cpu", "cpu.stat").splitlines() if " " in line)
        usage.nr_periods = int(cpu.get("nr_periods", 0))
        usage.nr_throttled = int(cpu.get("nr_throttled", 0))
        usage.throttled_ns = int(cpu.get("throttled_time", 0))
        return usage

    def oom_killed(self) -> bool:
        for line in self._read("memory", "memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1]) > 0
        return False

    def pids(self) -> list[int]:
        found: set[int] = set()
        for controller in self.dirs:
            found |= {int(x) for x in self._read(controller, "cgroup.procs").split()}
        return sorted(found)

    def destroy(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for directory in self.dirs.values():
            _rmdir_retry(directory)


def _rmdir_retry(directory: Path, tries: int = 50) -> None:
    for _ in range(tries):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


class V1Backend(Backend):
    name = "cgroup-v1"
    CONTROLLERS = ("cpu", "cpuacct", "memory", "pids", "freezer")

    def __init__(self, cluster: str) -> None:
        self.parents: dict[str, Path] = {}
        for controller in self.CONTROLLERS:
            mount = CGROUP_ROOT / controller
            parent = mount / _own_path(controller).lstrip("/") / f"sregym-{cluster}"
            parent.mkdir(parents=True, exist_ok=True)
            self.parents[controller] = parent
        self._remove_stale()

    def _remove_stale(self) -> None:
        """Groups left by a previous run of this cluster that was killed: empty them."""
        for parent in self.parents.values():
            for child in parent.iterdir():
                if child.is_dir():
                    V1Group({"x": child}, Limits()).destroy()

    def directories(self) -> list[str]:
        return [str(p) for p in self.parents.values()]

    def group(self, key: str, limits: Limits) -> Group:
        dirs = {}
        for controller, parent in self.parents.items():
            directory = parent / key
            if directory.exists():
                V1Group({controller: directory}, limits).destroy()
            directory.mkdir()
            dirs[controller] = directory
        if limits.cpu_request_millis:
            (dirs["cpu"] / "cpu.shares").write_text(str(max(limits.cpu_request_millis * 1024 // 1000, 2)))
        if limits.cpu_millis:
            (dirs["cpu"] / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            quota = max(limits.cpu_millis * CFS_PERIOD_US // 1000, 1000)
            (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))
        if limits.memory_bytes:
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
        if limits.pids:
            (dirs["pids"] / "pids.max").write_text(str(limits.pids))
        return V1Group(dirs, limits)

    def cleanup(self) -> None:
        for parent in self.parents.values():
            for child in parent.iterdir() if parent.exists() else []:
                if child.is_dir():
                    V1Group({"x": child}, Limits()).destroy()
            _rmdir_retry(parent)

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        for controller in ("cpu", "cpuacct", "memory", "pids"):
            if not (CGROUP_ROOT / controller / "cgroup.procs").exists():
                return False
        return True


# ---------------------------------------------------------------- cgroup v2


class V2Group(V1Group):
    def __init__(self, directory: Path, limits: Limits) -> None:
        Group.__init__(self, limits)
        self.directory = directory
        self.dirs = {"unified": directory}
        self._procs_paths = [str(directory / "cgroup.procs")]

    def _file(self, name: str) -> str:
        try:
            return (self.directory / name).read_text()
        except OSError:
            return ""

    def usage(self) -> Usage:
        cpu = dict(line.split() for line in self._file("cpu.stat").splitlines() if " " in line)
        memory = dict(line.split() for line in self._file("memory.stat").splitlines() if " " in line)
        current = int(self._file("memory.current") or 0)
        return Usage(cpu_ns=int(cpu.get("usage_usec", 0)) * 1000,
                     memory_bytes=max(current - int(memory.get("inactive_file", 0)), 0),
                     nr_periods=int(cpu.get("nr_periods", 0)), nr_throttled=int(cpu.get("nr_throttled", 0)),
                     throttled_ns=int(cpu.get("throttled_usec", 0)) * 1000)

    def oom_killed(self) -> bool:
        for line in self._file("memory.events").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1]) > 0
        return False

    def pids(self) -> list[int]:
        return sorted(int(x) for x in self._file("cgroup.procs").split())

    def destroy(self) -> None:
        kill = self.directory / "cgroup.kill"
        if kill.exists():
            with contextlib.suppress(OSError):
                kill.write_text("1")
        super().destroy()


class V2Backend(Backend):
    name = "cgroup-v2"

    def __init__(self, cluster: str) -> None:
        own = _own_path("")  # the v2 line is "0::<path>"
        self.parent = CGROUP_ROOT / own.lstrip("/") / f"sregym-{cluster}"
        self.parent.mkdir(parents=True, exist_ok=True)
        (self.parent / "cgroup.subtree_control").write_text("+cpu +memory +pids")
        for child in self.parent.iterdir():
            if child.is_dir():
                V2Group(child, Limits()).destroy()

    def directories(self) -> list[str]:
        return [str(self.parent)]

    def group(self, key: str, limits: Limits) -> Group:
        directory = self.parent / key
        if directory.exists():
            V2Group(directory, limits).destroy()
        directory.mkdir()
        if limits.cpu_request_millis:
            shares = max(limits.cpu_request_millis * 1024 // 1000, 2)
            with contextlib.suppress(OSError):  # the kubelet's shares -> weight conversion
                (directory / "cpu.weight").write_text(str(1 + ((shares - 2) * 9999) // 262142))
        if limits.cpu_millis:
            quota = max(limits.cpu_millis * CFS_PERIOD_US // 1000, 1000)
            (directory / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
        if limits.memory_bytes:
            (directory / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (directory / "memory.swap.max").write_text("0")
        if limits.pids:
            (directory / "pids.max").write_text(str(limits.pids))
        return V2Group(directory, limits)

    def cleanup(self) -> None:
        if self.parent.exists():
            for child in self.parent.iterdir():
                if child.is_dir():
                    V2Group(child, Limits()).destroy()
        _rmdir_retry(self.parent)

    @staticmethod
    def available() -> bool:
        try:
            if (CGROUP_ROOT / "cgroup.controllers").exists():
                controllers = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
            else:
                return False
        except OSError:
            return False
        return {"cpu", "memory", "pids"} <= set(controllers) and os.access(CGROUP_ROOT, os.W_OK)


# ---------------------------------------------------------------- userspace


@dataclass
class _Budget:
    last_cpu_ns: int = 0
    last_time: float = field(default_factory=time.monotonic)
    debt_s: float = 0.0


class UserspaceGroup(Group):
    """Limits enforced by watching the process tree from the agent's event loop."""

    POLL_S = 0.05

    def __init__(self, limits: Limits) -> None:
        super().__init__(limits)
        self._oom = False
        self._task: asyncio.Task | None = None
        self.counters = Usage()
        self._nproc = limits.pids

    def preexec(self) -> None:
        if self._nproc:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NPROC, (self._nproc, self._nproc))

    def started(self, pid: int) -> None:
        super().started(pid)
        if self.limits.cpu_millis or self.limits.memory_bytes:
            self._task = asyncio.get_running_loop().create_task(self._watch(pid))

    async def _watch(self, pid: int) -> None:
        budget = _Budget()
        quota = (self.limits.cpu_millis or 0) / 1000
        while True:
            await asyncio.sleep(self.POLL_S)
            procs = _tree(pid)
            if not procs:
                return
            usage = Usage()
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    times = proc.cpu_times()
                    usage.cpu_ns += int((times.user + times.system) * 1e9)
                    usage.memory_bytes += proc.memory_info().rss
            if self.limits.memory_bytes and usage.memory_bytes > self.limits.memory_bytes:
                self._oom = True
                for proc in procs:
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
                return
            if quota:
                now = time.monotonic()
                elapsed = now - budget.last_time
                used = (usage.cpu_ns - budget.last_cpu_ns) / 1e9 if budget.last_cpu_ns else 0.0
                budget.last_cpu_ns, budget.last_time = usage.cpu_ns, now
                self.counters.nr_periods += max(int(elapsed / (CFS_PERIOD_US / 1e6)), 1)
                budget.debt_s = max(budget.debt_s + used - quota * elapsed, 0.0)
                if budget.debt_s > 0:
                    pause = min(budget.debt_s / quota, 1.0)
                    _signal_all(procs, signal.SIGSTOP)
                    try:
                        await asyncio.sleep(pause)
                    finally:
                        _signal_all(procs, signal.SIGCONT)
                    self.counters.nr_throttled += 1
                    self.counters.throttled_ns += int(pause * 1e9)
                    budget.debt_s = max(budget.debt_s - quota * pause, 0.0)
                    budget.last_time = time.monotonic()

    def usage(self) -> Usage:
        usage = _tree_usage(self.pid)
        usage.nr_periods = self.counters.nr_periods
        usage.nr_throttled = self.counters.nr_throttled
        usage.throttled_ns = self.counters.throttled_ns
        return usage

    def oom_killed(self) -> bool:
        return self._oom

    def destroy(self) -> None:
        if self._task is not None:
            self._task.cancel()


def _signal_all(procs: list[psutil.Process], sig: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


class UserspaceBackend(Backend):
    name = "userspace"

    def group(self, key: str, limits: Limits) -> Group:
        return UserspaceGroup(limits)


def detect_backend(cluster: str, prefer: str | None = None) -> Backend:
    """The best backend this host offers (``prefer`` or $SREGYM_CGROUP_BACKEND forces one)."""
    choice = prefer or os.environ.get("SREGYM_CGROUP_BACKEND", "")
    candidates = [choice] if choice else ["cgroup-v2", "cgroup-v1", "userspace"]
    for name in candidates:
        try:
            if name in ("cgroup-v2", "v2") and V2Backend.available():
                return V2Backend(cluster)
            if name in ("cgroup-v1", "v1") and V1Backend.available():
                return V1Backend(cluster)
        except OSError:
            continue
        if name == "userspace":
            return UserspaceBackend()
        if name == "none":
            return Backend()
    return UserspaceBackend()


def free_key(text: str) -> str:
    """A cgroup directory name made of safe characters."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:200]


__all__ = ["Backend", "Group", "Limits", "Usage", "detect_backend", "free_key"]
