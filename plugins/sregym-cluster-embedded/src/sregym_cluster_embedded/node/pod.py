"""One pod on a node: sandbox directory, IP, volumes, init containers, containers, status."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import sysctls
from .container import ContainerRunner
from .envs import expand, service_env
from .errors import ContainerConfigError, MountError, NotAttached
from .hostports import HostPortForwarder
from .shim import ensure_private_dir, shim_env
from .volumes import VolumeBuilder, release_memory_volumes

if TYPE_CHECKING:
    from .kubelet import NodeAgent

log = logging.getLogger(__name__)
CONFIG_REFRESH_S = 10.0
#: how long the kubelet waits for a network disk to be attached before it reports a FailedMount
ATTACH_TIMEOUT_S = 120.0
#: short paths for UNIX sockets (108-byte limit), one directory per user (see shim.ensure_private_dir)
RUN_ROOT = Path(tempfile.gettempdir()) / f"sregym-run-{os.geteuid()}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def qos_class(pod: dict) -> str:
    containers = (pod.get("spec", {}).get("containers") or []) + (pod.get("spec", {}).get("initContainers") or [])
    requests_any = limits_any = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for name in ("cpu", "memory"):
            request, limit = requests.get(name, limits.get(name)), limits.get(name)
            requests_any |= request is not None
            limits_any |= limit is not None
            if limit is None or str(request) != str(limit):
                guaranteed = False
    if not requests_any and not limits_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def subpath_source(base: Path, sub: str, volume: str, container: str) -> Path:
    """The host path a ``subPath`` of volume directory ``base`` mounts, as the kubelet prepares it: symlinks resolved
    (a subPath is a snapshot of what it names then) and the result inside the volume, or the container does not start
    (CVE-2017-1002101; red-team round 22, finding 1: a pod's own symlink to ``/`` in its emptyDir, mounted by subPath,
    gave it the host's whole filesystem as root). A missing one is made, inside the volume. The child then opens the
    resolved path one component at a time without following symlinks (``mountns.safe_source``), so a symlink swapped
    in after this check fails the start instead of being followed (CVE-2021-25741)."""
    refused = ContainerConfigError(f'failed to prepare subPath for volumeMount "{volume}" of container "{container}"')
    if os.path.isabs(sub) or ".." in Path(sub).parts:
        raise refused
    root = Path(os.path.realpath(base))
    real = Path(os.path.realpath(root / sub))
    if real != root and root not in real.parents:
        raise refused
    if not os.path.lexists(real):
        real.mkdir(parents=True, exist_ok=True)
        if Path(os.path.realpath(real)) != real:  # a component became a symlink meanwhile
            raise refused
    return real


class PodWorker:
    def __init__(self, agent: NodeAgent, pod: dict) -> None:
        self.agent = agent
        self.pod = pod
        meta = pod["metadata"]
        self.uid: str = meta.get("uid", "")
        self.name: str = meta.get("name", "")
        self.namespace: str = meta.get("namespace", "default")
        self.root: Path = agent.root / "pods" / self.uid
        self.log_dir = self.root / "logs"
        self.pod_ip = ""
        self.volumes: dict[str, Path] = {}
        spec = pod.get("spec", {})
        self.init_runners = [ContainerRunner(self, c, kind="sidecar" if c.get("restartPolicy") == "Always" else "init")
                             for c in spec.get("initContainers") or []]
        self.runners = [ContainerRunner(self, c, kind="main") for c in spec.get("containers") or []]
        self.ephemeral_runners: list[ContainerRunner] = []
        self.host_ports = HostPortForwarder()
        self.sandbox_ready = False
        self.initialized = not self.init_runners
        self.failed: tuple[str, str] | None = None
        self.start_time = _now()
        self.terminating = False
        self.entered = 0  # exec/attach sessions of others than the cluster's own (runtime.note_entered)
        self._stop = asyncio.Event()
        self._dirty = asyncio.Event()
        self._conditions: dict[str, dict] = {}
        self._tasks: list[asyncio.Task] = []
        self._writer: asyncio.Task | None = None
        self._builder: VolumeBuilder | None = None
        self.finished = asyncio.Event()
        self._run_prefix = hashlib.sha1(str(self.root).encode()).hexdigest()[:8]
        self._hidden: bool | None = None
        #: the pod's ip_local_port_range for the shim, where the node's cgroup program cannot run
        self.port_range_env = ""

    # ------------------------------------------------------------ small helpers

    @property
    def restart_policy(self) -> str:
        return self.pod.get("spec", {}).get("restartPolicy") or "Always"

    @property
    def grace_period(self) -> float:
        value = self.pod.get("spec", {}).get("terminationGracePeriodSeconds")
        return float(30 if value is None else value)

    def all_runners(self) -> list[ContainerRunner]:
        return self.init_runners + self.runners + self.ephemeral_runners

    def runner(self, name: str) -> ContainerRunner | None:
        return next((r for r in self.all_runners() if r.name == name), None)

    def mark_dirty(self) -> None:
        self._dirty.set()

    async def sleep(self, delay: float) -> bool:
        """Wait ``delay`` seconds; True when the pod is being stopped meanwhile."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stop.wait(), delay)
        return self._stop.is_set()

    async def sleep_or(self, delay: float, wake: asyncio.Future) -> bool:
        """Like :meth:`sleep`, but ``wake`` finishing ends the wait early too."""
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({stop, wake}, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        return self._stop.is_set()

    async def base_env(self) -> dict[str, str]:
        """Service variables of the pod's namespace (and the master ``kubernetes`` service)."""
        if self.agent.service_env_source is not None:
            result = self.agent.service_env_source(self.namespace)
            if asyncio.iscoroutine(result):
                result = await result
            env = dict(result or {})
            if self.pod.get("spec", {}).get("enableServiceLinks", True) is False:
                env = {k: v for k, v in env.items() if k.startswith("KUBERNETES_")}
            return env
        services = []
        if self.pod.get("spec", {}).get("enableServiceLinks", True) is not False:
            services = await self.agent.client.list("services", self.namespace)
        if self.namespace != "default" or not services:
            with contextlib.suppress(Exception):
                master = await self.agent.client.get("services", "kubernetes", "default")
                services = [s for s in services if s["metadata"]["name"] != "kubernetes"] + [master]
        return service_env(services)

    def run_root(self, container: str) -> Path:
        """A short per-container directory for UNIX sockets (see launch.build_context)."""
        digest = hashlib.sha1(f"{self.root}/{container}".encode()).hexdigest()[:12]
        return ensure_private_dir(RUN_ROOT) / f"{self._run_prefix}-{digest}"

    def pod_files(self) -> dict[str, str]:
        """Per-pod files bound over the host's in a mount namespace: /etc/hosts (the kubelet's
        managed hosts file) and /etc/resolv.conf when the network provides one."""
        files = {}
        hosts = self.root / "etc-hosts"
        spec = self.pod.get("spec", {})
        hostname = spec.get("hostname") or self.name
        if spec.get("subdomain"):
            hostname = f"{hostname}.{spec['subdomain']}.{self.namespace}.svc.{self.agent.cluster_domain} {hostname}"
        lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
                 "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix",
                 "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters", f"{self.pod_ip}\t{hostname}"]
        for alias in spec.get("hostAliases") or []:
            lines.append(f"\n# Entries added by HostAliases.\n{alias.get('ip')}\t{chr(9).join(alias.get('hostnames') or [])}")
        hosts.write_text("\n".join(lines) + "\n")
        files["/etc/hosts"] = str(hosts)
        if self.agent.nodes.resolv_conf is not None:
            text = self.agent.nodes.resolv_conf(self.pod)
            if text:
                resolv = self.root / "resolv.conf"
                resolv.write_text(text)
                files["/etc/resolv.conf"] = str(resolv)
        return files

    def mounts_for(self, container: dict) -> dict[str, str]:
        mounts: dict[str, str] = {}
        env = {e.get("name", ""): str(e.get("value", "")) for e in container.get("env") or [] if "value" in e}
        for mount in container.get("volumeMounts") or []:
            base = self.volumes.get(mount.get("name", ""))
            if base is None:
                continue
            sub = mount.get("subPath") or expand(mount.get("subPathExpr", ""), env)
            real = Path(os.path.realpath(base))  # the child binds it without following a symlink
            if sub:
                real = subpath_source(base, sub, mount.get("name", ""), container.get("name", ""))
            mounts[mount.get("mountPath", "")] = str(real)
        return mounts

    @property
    def hidden(self) -> bool:
        """A pod of the benchmark's hidden namespaces (known once ``net_preexec`` has asked)."""
        return bool(self._hidden)

    async def net_preexec(self):
        """The hook putting this pod's processes under the network's reachability rules: every pod
        but those of the benchmark's hidden namespaces (and host-network ones), asked once per pod."""
        guard = self.agent.nodes.net_guard
        if guard is None or self.pod.get("spec", {}).get("hostNetwork"):
            return None
        labels: dict[str, str] | None = None  # None: not asked now (or the question failed)
        if self._hidden is None:
            from sregym_core.clusters import is_hidden_namespace
            try:
                ns = await self.agent.client.get("namespaces", self.namespace)
                labels = (ns.get("metadata") or {}).get("labels") or {}
                self._hidden = is_hidden_namespace(labels)
            except Exception:  # noqa: BLE001 - unknown: the safe side (restricted)
                self._hidden = False
        if self._hidden:
            return None
        # the pod's own cgroup under the guard's (the guard's programs apply to it as to the
        # guard's own): what the kernel syscall faults key on (node/bpffault.py)
        cgroup = self.agent.nodes.pod_cgroup(self.uid)
        if cgroup is None:
            return guard.join  # a cgroup the guard does not know: refused every app's addresses
        try:
            cgroup.mkdir(exist_ok=True)
        except OSError:
            return guard.join
        if labels is not None:  # its app, known to the guard before its first process runs
            guard.admit(cgroup, labels)
        procs = str(cgroup / "cgroup.procs")

        def join() -> None:
            with open(procs, "w") as handle:
                handle.write("0")
        return join

    def readonly_mounts(self, container: dict) -> set[str]:
        """Mount paths the container gets read-only: ``readOnly`` mounts, and the API-projected
        volumes (configMap, secret, downwardAPI, projected), which the kubelet always mounts so."""
        projected = {v.get("name") for v in self.pod.get("spec", {}).get("volumes") or []
                     if any(k in v for k in ("configMap", "secret", "downwardAPI", "projected"))}
        return {m.get("mountPath", "") for m in container.get("volumeMounts") or []
                if m.get("readOnly") or m.get("name") in projected}

    def extra_env(self, env: dict[str, str]) -> dict[str, str]:
        extra = shim_env(self.agent.shim, self.pod_ip, env)
        if self.agent.nodes.pod_env is not None:
            extra.update(self.agent.nodes.pod_env(self.pod) or {})
        if "POD_IP" not in env:
            extra["POD_IP"] = self.pod_ip
        if self.port_range_env:
            extra["SREGYM_LOCAL_PORT_RANGE"] = self.port_range_env
        for key, value in self.agent.fault_env.items():
            if key == "LD_PRELOAD" and extra.get("LD_PRELOAD"):
                extra["LD_PRELOAD"] = f"{extra['LD_PRELOAD']}:{value}"
            else:
                extra[key] = value
        return extra

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._writer = asyncio.create_task(self._status_writer(), name=f"status-{self.name}")
        self._tasks.append(asyncio.create_task(self._run(), name=f"pod-{self.name}"))

    async def _run(self) -> None:
        try:
            await self._run_inner()
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one pod's bug must not take the node down
            log.exception("pod %s/%s failed in the node agent", self.namespace, self.name)
            self.failed = ("Failed", "node agent error; see the cluster log")
            self.mark_dirty()
        finally:
            self.finished.set()

    async def _run_inner(self) -> None:
        spec = self.pod.get("spec", {})
        conflict = self.agent.host_port_conflict(self)
        if conflict:
            self.failed = ("NodePorts", "Pod was rejected: Predicate NodePorts failed: "
                                        "node(s) didn't have free ports for the requested pod ports")
            await self.agent.event(self.pod, "NodePorts", self.failed[1], "Warning")
            self.mark_dirty()
            return
        forbidden = sysctls.forbidden(self.pod)
        if forbidden:  # the kubelet's sysctl admission: unsafe, unknown, or net.* on the host network
            self.failed = (sysctls.FORBIDDEN_REASON, forbidden)
            await self.agent.event(self.pod, sysctls.FORBIDDEN_REASON, forbidden, "Warning")
            self.mark_dirty()
            return
        rejected = await self.agent.eviction.admit(self.pod)
        if rejected:  # the kubelet's admission under disk or PID pressure
            self.failed = ("Evicted", rejected)
            await self.agent.event(self.pod, "Evicted", rejected, "Warning")
            self.mark_dirty()
            return
        status = self.pod.setdefault("status", {})
        status.update({"hostIP": self.agent.host_ip, "hostIPs": [{"ip": self.agent.host_ip}]})
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.mark_dirty()
        self._builder = VolumeBuilder(self.agent.client, self.pod, self.root, self.agent.root,
                                      self.agent.state_dir, self.agent.allocatable,
                                      token_source=self.agent.nodes.token_source)
        delay, waiting_since = 2.0, time.monotonic()
        while True:
            try:
                self.volumes = await self._builder.setup_all()
                break
            except NotAttached as exc:
                # the kubelet waits for the attachment, and says so once its two-minute deadline passed
                if time.monotonic() - waiting_since >= ATTACH_TIMEOUT_S:
                    names = " ".join(exc.volumes)
                    await self.agent.event(self.pod, "FailedMount", (
                        f"Unable to attach or mount volumes: unmounted volumes=[{names}], unattached volumes=[{names}], "
                        "failed to process volumes=[]: timed out waiting for the condition"), "Warning")
                    waiting_since = time.monotonic()
                delay = 1.0  # attachment is noticed within a second or two, as the kubelet polls for it
            except MountError as exc:
                await self.agent.event(self.pod, "FailedMount", str(exc), "Warning")
            if await self.sleep(delay):
                return
            delay = min(delay * 2, 30.0)
        # the sandbox, and with it the pod's IP, comes after its volumes are mounted
        if spec.get("hostNetwork"):
            self.pod_ip = self.agent.host_ip
        else:
            ip = await self._sandbox_ip()
            if ip is None:
                return
            self.pod_ip = ip
        status.update({"podIP": self.pod_ip, "podIPs": [{"ip": self.pod_ip}]})
        self.sandbox_ready = True
        cgroup = self.agent.nodes.pod_cgroup(self.uid)
        if cgroup is not None:  # before the start hooks: a fault keyed on it covers the first process
            with contextlib.suppress(OSError):
                cgroup.mkdir(exist_ok=True)
        if not await self._apply_sysctls():
            return
        for hook in self.agent.nodes.pod_start_hooks:
            try:
                hook(self.pod)
            except Exception:  # noqa: BLE001 - a broken hook must not keep the pod from starting
                log.exception("a pod start hook failed for %s", self.name)
        if not spec.get("hostNetwork"):
            await self.host_ports.start(self.agent.host_ip, self.pod_ip, self.pod)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline:
            self._tasks.append(asyncio.create_task(self._deadline(float(deadline))))
        if self.init_runners:
            for runner in self.runners:
                runner.state = {"waiting": {"reason": "PodInitializing"}}
        self.mark_dirty()
        self._tasks.append(asyncio.create_task(self._refresh_loop()))
        for runner in self.init_runners:
            if runner.kind == "sidecar":
                self._tasks.append(asyncio.create_task(runner.run()))
                while not (runner.started and runner.running()):
                    if await self.sleep(0.05):
                        return
                continue
            await runner.run()
            if self._stop.is_set():
                return
            if runner.state.get("terminated", {}).get("exitCode", 1) != 0:
                self.mark_dirty()  # restartPolicy Never: the pod fails
                return
        self.initialized = True
        self.mark_dirty()
        mains = [asyncio.create_task(r.run()) for r in self.runners]
        self._tasks += mains
        await asyncio.gather(*mains, return_exceptions=True)
        if not self._stop.is_set():
            for runner in reversed(self.init_runners):
                await runner.stop(self.grace_period)
            self.mark_dirty()

    async def _apply_sysctls(self) -> bool:
        """The pod's sysctls, before its first process: a value the kernel refuses fails the
        sandbox, retried as the kubelet retries it (False: the pod was stopped meanwhile)."""
        delay = 1.0
        while True:
            try:
                wanted = sysctls.port_range(self.pod)
                break
            except ValueError as exc:
                await self.agent.event(self.pod, "FailedCreatePodSandBox", str(exc), "Warning")
                if await self.sleep(delay):
                    return False
                delay = min(delay * 2, 30.0)
        missing = sysctls.not_applied(self.pod)
        if wanted is not None:
            why = self.agent.nodes.apply_port_range(self.uid, *wanted, self.pod_ip)
            if why and self.agent.shim is not None:  # the fallback: dynamically linked processes only
                self.port_range_env = f"{wanted[0]} {wanted[1]}"
                missing.insert(0, f"{sysctls.PORT_RANGE} for statically linked processes (the LD_PRELOAD shim "
                                  f"applies it to the others; the cgroup program cannot run: {why})")
            elif why:
                missing.insert(0, f"{sysctls.PORT_RANGE} ({why})")
        if missing:  # admitted, but this node has no per-pod way to apply them: say so, never silently
            await self.agent.event(self.pod, sysctls.NOT_APPLIED_REASON, (
                f"sysctls not applied on this node (pods share the host's namespaces): {', '.join(missing)}"), "Warning")
        return True

    async def _sandbox_ip(self) -> str | None:
        """The sandbox's address from the cluster's IP pools. While none is free the sandbox fails
        and is retried, as the kubelet retries a failed RunPodSandbox: the pod stays
        ContainerCreating with a FailedCreatePodSandBox event (None: the pod was stopped meanwhile)."""
        delay = 1.0
        while (ip := self.agent.allocate_ip(self.uid)) is None:
            await self.agent.event(self.pod, "FailedCreatePodSandBox", self.agent.sandbox_error(self.uid), "Warning")
            if await self.sleep(delay):
                return None
            delay = min(delay * 2, 10.0)
        return ip

    def restart_runner(self, runner: ContainerRunner) -> None:
        self._tasks.append(asyncio.create_task(runner.run()))

    async def update_spec(self, pod: dict) -> None:
        """Apply the mutable parts of a pod update (container images, new ephemeral containers)."""
        known = {r.name for r in self.ephemeral_runners}
        for spec in pod.get("spec", {}).get("ephemeralContainers") or []:
            if spec.get("name") not in known and self.initialized and not self.terminating:
                runner = ContainerRunner(self, spec, kind="ephemeral")
                self.ephemeral_runners.append(runner)
                self.mark_dirty()
                self._tasks.append(asyncio.create_task(runner.run()))
        specs = {c.get("name"): c for c in (pod.get("spec", {}).get("containers") or [])
                 + (pod.get("spec", {}).get("initContainers") or [])}
        for runner in self.all_runners():
            if runner.name in specs and specs[runner.name].get("image") != runner.spec.get("image"):
                await runner.update_spec(specs[runner.name])

    async def _deadline(self, seconds: float) -> None:
        """spec.activeDeadlineSeconds: the kubelet fails the pod and stops its containers."""
        if await self.sleep(seconds):
            return
        self.failed = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
        await self.agent.event(self.pod, "DeadlineExceeded", self.failed[1], "Normal")
        self._stop.set()
        await asyncio.gather(*(r.stop(self.grace_period) for r in self.all_runners()), return_exceptions=True)
        self.mark_dirty()

    async def evict(self, message: str) -> None:
        """The eviction manager's hard eviction: kill every container now; the pod fails as Evicted."""
        self.failed = ("Evicted", message)
        self._conditions["DisruptionTarget"] = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                                                "lastTransitionTime": _now(), "reason": "TerminationByKubelet",
                                                "message": message}
        self.mark_dirty()
        await self.agent.event(self.pod, "Evicted", message, "Warning")
        self._stop.set()
        await asyncio.gather(*(r.stop(0) for r in self.all_runners()), return_exceptions=True)
        self.mark_dirty()

    async def _refresh_loop(self) -> None:
        while not await self.sleep(CONFIG_REFRESH_S):
            if self._builder is not None:
                with contextlib.suppress(Exception):
                    await self._builder.refresh()

    async def terminate(self, grace: float) -> None:
        """Stop every container (main ones first, then sidecars in reverse order)."""
        self.terminating = True
        self._stop.set()
        await asyncio.gather(*(r.stop(grace) for r in self.runners + self.ephemeral_runners),
                             return_exceptions=True)
        for runner in reversed(self.init_runners):
            await runner.stop(grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.mark_dirty()
        await self.flush_status()

    async def close(self) -> None:
        """After the pod is gone: stop the writer, free the IP, remove the sandbox."""
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer
        await self.host_ports.stop()
        self.agent.release_ip(self.uid)
        release_memory_volumes(self.root)
        self.agent.nodes.release_port_range(self.uid)
        cgroup = self.agent.nodes.pod_cgroup(self.uid)
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroup.rmdir()  # empty now: its processes are gone
        shutil.rmtree(self.root, ignore_errors=True)
        for path in RUN_ROOT.glob(f"{self._run_prefix}-*"):
            shutil.rmtree(path, ignore_errors=True)

    # ------------------------------------------------------------ status

    def phase(self) -> str:
        if self.failed:
            return "Failed"
        if not self.initialized:
            for runner in self.init_runners:
                terminated = runner.state.get("terminated")
                if runner.kind == "init" and terminated and terminated.get("exitCode") != 0 and \
                        self.restart_policy == "Never":
                    return "Failed"
            return "Pending"
        if self.runners and all(r.done for r in self.runners):
            codes = [r.state.get("terminated", {}).get("exitCode", 1) for r in self.runners]
            return "Succeeded" if all(c == 0 for c in codes) else "Failed"
        if any(r.launched for r in self.runners):
            return "Running"
        return "Pending"

    def _condition(self, kind: str, ok: bool, reason: str = "", message: str = "") -> dict:
        status = "True" if ok else "False"
        previous = self._conditions.get(kind)
        stamp = previous["lastTransitionTime"] if previous and previous["status"] == status else _now()
        cond = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": stamp}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        self._conditions[kind] = cond
        return cond

    def build_status(self, existing: dict) -> dict:
        phase = self.phase()
        conditions = [c for c in existing.get("conditions") or [] if c.get("type") not in
                      ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")]
        if not any(c.get("type") == "PodScheduled" for c in conditions):
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": self.start_time})
        done = phase in ("Succeeded", "Failed")
        conditions.append(self._condition("PodReadyToStartContainers", self.sandbox_ready and not self.terminating))
        pending_init = [r.name for r in self.init_runners if not (
            (r.kind == "init" and r.state.get("terminated", {}).get("exitCode") == 0) or (r.kind == "sidecar" and r.started))]
        if self.initialized or not pending_init:
            conditions.append(self._condition("Initialized", True, "PodCompleted" if done and self.init_runners else ""))
        else:
            conditions.append(self._condition("Initialized", False, "ContainersNotInitialized",
                                              f"containers with incomplete status: [{' '.join(pending_init)}]"))
        unready = [r.name for r in self.runners if not r.ready] + \
                  [r.name for r in self.init_runners if r.kind == "sidecar" and not r.ready]
        if done:
            ready_args = (False, "PodCompleted", "")
        elif unready:
            ready_args = (False, "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]")
        else:
            ready_args = (True, "", "")
        conditions.append(self._condition("ContainersReady", *ready_args))
        conditions.append(self._condition("Ready", *ready_args))
        if "DisruptionTarget" in self._conditions:
            conditions = [c for c in conditions if c.get("type") != "DisruptionTarget"]
            conditions.append(self._conditions["DisruptionTarget"])
        order = {"PodReadyToStartContainers": 0, "Initialized": 1, "Ready": 2, "ContainersReady": 3, "PodScheduled": 4}
        conditions.sort(key=lambda c: order.get(c.get("type"), 9))
        status = {k: v for k, v in existing.items() if k in ("nominatedNodeName", "resize", "resourceClaimStatuses")}
        status.update({"phase": phase, "conditions": conditions, "qosClass": qos_class(self.pod),
                       "startTime": self.start_time})
        if self.agent.host_ip:
            status["hostIP"] = self.agent.host_ip
            status["hostIPs"] = [{"ip": self.agent.host_ip}]
        if self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        if self.failed:
            status["reason"], status["message"] = self.failed
        status["containerStatuses"] = [r.status() for r in self.runners]
        if self.init_runners:
            status["initContainerStatuses"] = [r.status() for r in self.init_runners]
        if self.ephemeral_runners:
            status["ephemeralContainerStatuses"] = [r.status() for r in self.ephemeral_runners]
        return status

    async def _status_writer(self) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(0.02)  # coalesce bursts of changes into one write
            if self.agent.paused:
                await asyncio.sleep(0.5)
                continue
            self._dirty.clear()
            await self.flush_status()

    async def flush_status(self) -> None:
        client = self.agent.client
        for _ in range(5):
            try:
                current = await client.get("pods", self.name, self.namespace)
            except Exception as exc:  # noqa: BLE001
                if getattr(exc, "code", None) == 404:
                    return
                raise
            if current["metadata"].get("uid") != self.uid:
                return
            # keep labels/annotations fresh for the downward API
            self.pod["metadata"]["labels"] = current["metadata"].get("labels") or {}
            self.pod["metadata"]["annotations"] = current["metadata"].get("annotations") or {}
            new_status = self.build_status(current.get("status") or {})
            if new_status == current.get("status"):
                return
            current["status"] = new_status
            try:
                await client.update("pods", current, subresource="status")
                return
            except Exception as exc:  # noqa: BLE001
                code = getattr(exc, "code", None)
                if code == 409:
                    continue
                if code == 404:
                    return
                log.warning("status update of %s/%s failed: %s", self.namespace, self.name, exc)
                return
