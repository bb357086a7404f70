"""One container of a pod as a real process group: start, logs, probes, restarts, stop.

Restart back-off follows the kubelet: the first restart is immediate, later ones wait 10 s,
20 s, 40 s ... capped at 5 min, measured from the last exit; a container that ran for 10 min
resets the back-off. Image pulls back off the same way (ImagePullBackOff).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
from sregym_core.errors import SregymError
from sregym_core.quantity import cpu_millis, memory_bytes

from . import fuselayer, isolation, mountns, seccompfault
from .cgroups import Group, Limits, free_key
from .envs import container_env
from .errors import ContainerConfigError
from .faultshim import dynamically_linked
from .images import normalize_reference
from .launch import ExecNotFound, ProcessContext, build_context, command_argv
from .logs import LogWriter, instance_log_path, prune_old_instances, pump_stream, rfc3339_nano
from .probes import run_probe

if TYPE_CHECKING:
    from .pod import PodWorker

log = logging.getLogger(__name__)
BACKOFF_INITIAL = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET_AFTER = 600.0


def _with_seccomp_filter(preexec, send_fd: int, calls: tuple[str, ...]):
    """The child-side setup, then the dormant seccomp filter for ``calls`` whose listener goes to
    the node's supervisor (node/seccompfault.py): last, so the namespace setup runs unfiltered."""
    def run() -> None:
        preexec()
        seccompfault.install(send_fd, calls)
    return run


def _with_uniform_filter(preexec):
    """The child-side setup, then a seccomp filter that lets every call through (no listener)."""
    def run() -> None:
        preexec()
        seccompfault.install_uniform()
    return run


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def pump_fd(fd: int, stream: str, writer: LogWriter) -> None:
    """Log everything read from pipe ``fd`` until EOF (then close it)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        await pump_stream(reader, stream, writer)
    finally:
        transport.close()


def _log_tail(path: Path | None, lines: int = 80, limit: int = 2048) -> str:
    """The kubelet's FallbackToLogsOnError message: the last lines of the log, at most 2 KiB."""
    if path is None or not path.exists():
        return ""
    text = b"\n".join(line.split(b" ", 3)[-1] for line in path.read_bytes().splitlines()[-lines:])
    return text[-limit:].decode("utf-8", "replace")


def container_limits(container: dict) -> Limits:
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    try:
        return Limits(cpu_millis=cpu_millis(limits.get("cpu")), memory_bytes=memory_bytes(limits.get("memory")),
                      cpu_request_millis=cpu_millis(requests.get("cpu", limits.get("cpu"))))
    except ValueError:
        return Limits()


#: the tasks that untrack exec'd processes once they exit (referenced so they are not collected)
_EXEC_WATCHERS: set[asyncio.Task] = set()


class ContainerRunner:
    def __init__(self, worker: PodWorker, spec: dict, *, kind: str) -> None:
        self.worker = worker
        self.spec = spec
        self.name: str = spec.get("name", "")
        self.kind = kind  # "init", "sidecar", "main" or "ephemeral" (kubectl debug)
        self.restart_count = 0
        self.state: dict = {"waiting": {"reason": "ContainerCreating" if kind == "main" else "PodInitializing"}}
        self._last_terminated: dict = {}
        self._before_last: dict = {}
        self.ready = False
        self.started = False
        self.container_id = ""
        self.image_id = ""
        self.process: asyncio.subprocess.Process | None = None
        self.group: Group | None = None
        self.context: ProcessContext | None = None
        self.log_path: Path | None = None
        self.instance = -1
        self._started_at = 0.0
        self._finished_at = 0.0
        self._backoff: float | None = None
        self._stopping = False
        self._probe_tasks: list[asyncio.Task] = []
        self._exited = asyncio.Event()
        self._cpu_sample: tuple[float, int] | None = None
        self._stop_signal = signal.SIGTERM
        self._cpu_rate = 0
        self.done = False  # finished and will not restart
        self.launched = False  # some instance got as far as running (or failing to start)
        self._spec_changed = False
        #: set when the spec changes: a waiting back-off (image pull, crash loop) ends at once, as the
        #: real kubelet's back-off is keyed by the container's hash and a new image starts afresh
        self._new_spec = asyncio.Event()

    # ------------------------------------------------------------ helpers

    @property
    def pod(self) -> dict:
        return self.worker.pod

    def _field_ref(self) -> dict:
        meta = self.pod["metadata"]
        prefix = {"main": "spec.containers", "ephemeral": "spec.ephemeralContainers"}.get(
            self.kind, "spec.initContainers")
        return {"kind": "Pod", "apiVersion": "v1", "metadata": {**meta}, "fieldPath": f"{prefix}{{{self.name}}}"}

    async def event(self, reason: str, message: str, type: str = "Normal") -> None:
        await self.worker.agent.event(self._field_ref(), reason, message, type)

    def _set(self, state: dict) -> None:
        self.state = state
        self.worker.mark_dirty()

    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def status(self) -> dict:
        image = self.spec.get("image", "")
        out = {
            "name": self.name,
            "image": image,
            "imageID": self.image_id,
            "state": self.state,
            "lastState": (self._before_last if "terminated" in self.state else self._last_terminated) or {},
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out

    # ------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Start, then restart per policy until stopped or finished for good."""
        while not self._stopping:
            exit_code = await self.run_once()
            if self._stopping or exit_code is None:
                return
            if self._spec_changed:  # new image: restart now, whatever the policy says
                self._spec_changed = False
                continue
            if not self._should_restart(exit_code):
                self.done = True
                self.worker.mark_dirty()
                return
            if time.monotonic() - self._started_at >= BACKOFF_RESET_AFTER:
                self._backoff = None
            if self._backoff is None:
                self._backoff = BACKOFF_INITIAL
                continue
            delay = self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
            pod = self.pod["metadata"]
            pod_id = f"{pod.get('name')}_{pod.get('namespace')}({pod.get('uid')})"
            self._set({"waiting": {"reason": "CrashLoopBackOff",
                                   "message": f"back-off {int(delay)}s restarting failed container={self.name} pod={pod_id}"}})
            await self.event("BackOff", f"Back-off restarting failed container {self.name} in pod {pod_id}", "Warning")
            if await self._back_off(delay):
                return

    async def _back_off(self, delay: float) -> bool:
        """Wait out a back-off; a new spec cuts it short. True when the pod is being stopped."""
        waiter = asyncio.create_task(self._new_spec.wait())
        try:
            stopping = await self.worker.sleep_or(delay, waiter)
        finally:
            waiter.cancel()
        if self._new_spec.is_set():
            self._backoff = None
        return stopping

    def _should_restart(self, exit_code: int) -> bool:
        if self.kind == "sidecar":
            return True
        if self.kind == "ephemeral":
            return False
        policy = self.worker.restart_policy
        if self.kind == "init":
            return exit_code != 0 and policy != "Never"
        return policy == "Always" or (policy == "OnFailure" and exit_code != 0)

    async def run_once(self) -> int | None:
        """One container instance: returns its exit code, or None when stopped before it ran."""
        recipe = await self._pull()
        if recipe is None:
            return None
        context = await self._prepare(recipe)
        if context is None:
            return None
        return await self._execute(recipe, context)

    async def _pull(self):
        delay = BACKOFF_INITIAL
        while not self._stopping:
            # read each round: a pod update may have replaced the image meanwhile
            self._new_spec.clear()
            image = self.spec.get("image", "")
            policy = self.spec.get("imagePullPolicy") or ("Always" if normalize_reference(image).endswith(":latest") else "IfNotPresent")
            recipe = self.worker.agent.catalog.resolve(image) if image else None
            if recipe is not None:
                if policy == "Always" and self.instance < 0:
                    await self.event("Pulling", f'Pulling image "{image}"')
                    await self.event("Pulled", f'Successfully pulled image "{image}" in 1ms (1ms including waiting). '
                                               "Image size: 0 bytes.")
                elif self.instance < 0:
                    await self.event("Pulled", f'Container image "{image}" already present on machine')
                ref = normalize_reference(image)
                digest = hashlib.sha256(repr(recipe).encode()).hexdigest()
                registry = "docker.io/" + ("library/" if "/" not in ref else "")
                self.image_id = f"{registry}{ref.rsplit(':', 1)[0]}@sha256:{digest}"
                return recipe
            if policy == "Never":
                message = f'Container image "{image}" is not present with pull policy of Never'
                self._set({"waiting": {"reason": "ErrImageNeverPull", "message": message}})
                await self.event("ErrImageNeverPull", message, "Warning")
            else:
                full = "docker.io/" + ("library/" if "/" not in normalize_reference(image) else "") + normalize_reference(image)
                message = (f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
                           f'failed to resolve reference "{full}": {full}: not found')
                await self.event("Pulling", f'Pulling image "{image}"')
                self._set({"waiting": {"reason": "ErrImagePull", "message": message}})
                await self.event("Failed", f'Failed to pull image "{image}": {message}', "Warning")
                await self.event("Failed", "Error: ErrImagePull", "Warning")
                if await self.worker.sleep(1.0):
                    return None
                self._set({"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}})
                await self.event("BackOff", f'Back-off pulling image "{image}"')
                await self.event("Failed", "Error: ImagePullBackOff", "Warning")
            if await self._back_off(delay):
                return None
            delay = BACKOFF_INITIAL if self._new_spec.is_set() else min(delay * 2, BACKOFF_MAX)
        return None

    async def _prepare(self, recipe) -> ProcessContext | None:
        delay = 1.0
        while not self._stopping:
            try:
                base = await self.worker.base_env()
                env = await container_env(self.worker.agent.client, self.pod, self.spec, base,
                                          self.worker.agent.allocatable)
                root = self.worker.root / "containers" / self.name
                if root.exists() and self.instance >= 0:  # a new container: fresh writable layer
                    for layer in ("rootfs", "layers"):
                        shutil.rmtree(root / layer, ignore_errors=True)
                mounts = self.worker.mounts_for(self.spec)
                nodes = self.worker.agent.nodes
                # a volume over e.g. /work would hide the interpreter: fall back to path rewriting
                exact = nodes.isolation is not None or (nodes.mount_ns and not mountns.shadows(
                    [*mounts, *recipe.private_dirs, self.spec.get("workingDir") or "/."], nodes.essential_paths))
                join_net = await self.worker.net_preexec()  # asks, once, whether the pod's namespace is hidden
                context = build_context(pod=self.pod, container=self.spec, recipe=recipe, env=env,
                                        container_root=root, mounts=mounts,
                                        extra_env=self.worker.extra_env(env),
                                        run_root=self.worker.run_root(self.name),
                                        mount_ns=exact,
                                        files=self.worker.pod_files(),
                                        planner=nodes.isolation, readonly=self.worker.readonly_mounts(self.spec),
                                        benchmark_own=self.worker.hidden)
                if join_net is not None:
                    context.extra_preexec.append(join_net)
                return context
            except ContainerConfigError as exc:
                self._set({"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}})
                await self.event("Failed", f"Error: {exc}", "Warning")
            except (OSError, SregymError) as exc:  # the node could not prepare it (a directory, a file): say so
                self._set({"waiting": {"reason": "CreateContainerError", "message": str(exc)}})
                await self.event("Failed", f"Error: {exc}", "Warning")
            if await self.worker.sleep(delay):
                return None
            delay = min(delay * 2, 10.0)
        return None

    async def _execute(self, recipe, context: ProcessContext) -> int | None:
        self.instance += 1
        if self.instance > 0:
            self.restart_count += 1
        log_dir = self.worker.log_dir
        self.log_path = instance_log_path(log_dir, self.name, self.restart_count)
        prune_old_instances(log_dir, self.name, self.restart_count)
        self.log_path.unlink(missing_ok=True)
        self.container_id = "containerd://" + hashlib.sha256(
            f"{self.pod['metadata'].get('uid')}/{self.name}/{self.restart_count}/{time.time_ns()}".encode()).hexdigest()
        self.context = context
        self._stop_signal = recipe.stop_signal
        started_iso = _now()
        try:
            argv = context.command(command_argv(recipe, self.spec, context.env))
        except ExecNotFound as exc:
            message = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                       f"runc create failed: unable to start container process: {exc}: unknown")
            await self.event("Failed", f"Error: {message}", "Warning")
            self.launched = True
            self._finish({"exitCode": 128, "reason": "StartError", "message": message,
                          "startedAt": "1970-01-01T00:00:00Z", "finishedAt": _now(), "containerID": self.container_id})
            self._started_at = self._finished_at = time.monotonic()
            return 128
        key = free_key(f"{self.pod['metadata'].get('uid')}_{self.name}")
        self.group = self.worker.agent.backend.group(key, container_limits(self.spec))
        writer = LogWriter(self.log_path)
        self._exited.clear()
        try:
            user, group = context.popen_ids()
            # our own pipes, not asyncio's: with asyncio's, wait() (3.11) only returns once every
            # pipe is closed, i.e. after a leftover grandchild dies, not when the main process exits
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            channel = self._fault_channel(argv, context)
            preexec = context.preexec(self.group.preexec)
            # volumes under a FUSE layer (node/fuselayer.py): mounted in the child, served outside the pod
            layers = fuselayer.plan_for(self.worker, self.pod, self.spec, context)
            if layers:
                preexec = fuselayer.with_layers(preexec, layers)
            # the benchmark's own hidden pods are never fault targets: no filter, no round trips
            supervisor = None if self.worker.hidden else self.worker.agent.nodes.syscall_supervisor
            # only pods a fault may need it for get a filter, naming only those operations
            filter_calls = supervisor.filter_calls(self.pod) if supervisor else ()
            listener_pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if filter_calls else None
            if listener_pair is not None:
                preexec = _with_seccomp_filter(preexec, listener_pair[1].fileno(), filter_calls)
            elif supervisor:  # the others look the same from inside (a filter that lets everything through)
                preexec = _with_uniform_filter(preexec)
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *argv, env=context.env, cwd=context.popen_cwd, stdin=asyncio.subprocess.DEVNULL,
                    stdout=out_w, stderr=err_w, start_new_session=True,
                    pass_fds=(channel,) if channel is not None else (),
                    preexec_fn=preexec, user=user, group=group)
                fuselayer.hand_over(self.worker, self.pod, layers)
                if listener_pair is not None and supervisor is not None:  # a pair only with a supervisor
                    listener = seccompfault.receive_listener(listener_pair[0])
                    if listener is not None:
                        supervisor.add(listener, self.pod["metadata"].get("uid", ""), filter_calls)
            except BaseException:
                os.close(out_r)
                os.close(err_r)
                raise
            finally:
                os.close(out_w)
                os.close(err_w)
                if channel is not None:
                    os.close(channel)
                for end in listener_pair or ():
                    end.close()
                fuselayer.discard(layers)
        except (OSError, subprocess.SubprocessError) as exc:
            writer.close()
            self.group.destroy()
            self.launched = True
            message = f"failed to create containerd task: {getattr(exc, 'strerror', None) or exc}: unknown"
            await self.event("Failed", f"Error: {message}", "Warning")
            self._finish({"exitCode": 128, "reason": "StartError", "message": message,
                          "startedAt": started_iso, "finishedAt": _now(), "containerID": self.container_id})
            self._started_at = self._finished_at = time.monotonic()
            return 128
        self.launched = True
        self.group.started(self.process.pid)
        self.worker.agent.track(self.process.pid)
        if self._stopping:
            # stop() ran while this instance was being prepared (a restart racing a pod deletion):
            # it saw no live process, so this one must not outlive the pod
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self._started_at = time.monotonic()
        self._cpu_sample = None
        pumps = [asyncio.create_task(pump_fd(out_r, "stdout", writer)),
                 asyncio.create_task(pump_fd(err_r, "stderr", writer))]
        await self.event("Created", f"Created container: {self.name}")
        await self.event("Started", f"Started container {self.name}")
        self._set({"running": {"startedAt": started_iso}})
        self.started = "startupProbe" not in self.spec
        self.ready = False
        self._start_probes()
        self._probe_tasks.append(asyncio.create_task(self._check_listeners()))
        post_start = ((self.spec.get("lifecycle") or {}).get("postStart"))
        if post_start:
            ok, message = await self._run_hook(post_start, 30.0)
            if not ok:
                await self.event("FailedPostStartHook", f"PostStartHook failed: {message}", "Warning")
                await self._kill_process(0)
        code = await self.process.wait()
        # the main process is gone, so is the container: its other processes die now (they may
        # hold the log pipes open), then the pipes are drained
        oom = self.group.oom_killed()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in self.group.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*pumps, return_exceptions=True), 5)
        writer.close()
        self._stop_probes()
        self.group.destroy()
        self.worker.agent.untrack(self.process.pid)
        exit_code = 128 - code if code < 0 else code
        if oom:
            reason, exit_code = "OOMKilled", 137
        else:
            reason = "Completed" if exit_code == 0 else "Error"
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": started_iso,
                      "finishedAt": _now(), "containerID": self.container_id}
        if exit_code != 0 and self.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            terminated["message"] = _log_tail(self.log_path)
        if code < 0:
            terminated["signal"] = -code
        self._finish(terminated)
        self._finished_at = time.monotonic()
        self._exited.set()
        return exit_code

    def _finish(self, terminated: dict) -> None:
        self.ready = False
        self.started = False
        self._before_last, self._last_terminated = self._last_terminated, {"terminated": terminated}
        self.state = {"terminated": terminated}
        self.worker.mark_dirty()

    # ------------------------------------------------------------ probes

    def _start_probes(self) -> None:
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            if self.spec.get(kind):
                self._probe_tasks.append(asyncio.create_task(self._probe_loop(kind, self.spec[kind])))
        if not self.spec.get("readinessProbe"):
            self.ready = self.kind in ("main", "sidecar")

    def _stop_probes(self) -> None:
        for task in self._probe_tasks:
            task.cancel()
        self._probe_tasks = []

    async def _probe_loop(self, kind: str, probe: dict) -> None:
        label = {"startupProbe": "Startup", "livenessProbe": "Liveness", "readinessProbe": "Readiness"}[kind]
        period = max(float(probe.get("periodSeconds") or 10), 0.1)
        success_needed = int(probe.get("successThreshold") or 1)
        failure_allowed = int(probe.get("failureThreshold") or 3)
        await asyncio.sleep(float(probe.get("initialDelaySeconds") or 0))
        successes = failures = 0
        while self.running():
            if kind != "startupProbe" and not self.started:
                await asyncio.sleep(min(period, 0.2))
                continue
            try:
                ok, message = await run_probe(probe, self.spec, self.worker.pod_ip, self._probe_exec)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a malformed probe fails, it does not crash the node
                hints = exc.hints if isinstance(exc, SregymError) else ()
                ok, message = False, f"probe error: {exc}" + "".join(f" (hint: {hint})" for hint in hints)
            if not self.running():
                return
            if ok:
                successes, failures = successes + 1, 0
                if successes >= success_needed:
                    if kind == "readinessProbe" and not self.ready:
                        self.ready = True
                        self.worker.mark_dirty()
                    elif kind == "startupProbe":
                        self.started = True
                        self.worker.mark_dirty()
                        return
            else:
                successes, failures = 0, failures + 1
                await self.event("Unhealthy", f"{label} probe failed: {message}".rstrip(), "Warning")
                if failures >= failure_allowed:
                    if kind == "readinessProbe":
                        if self.ready:
                            self.ready = False
                            self.worker.mark_dirty()
                    else:
                        await self.event("Killing", f"Container {self.name} failed {label.lower()} probe, will be restarted")
                        grace = probe.get("terminationGracePeriodSeconds", self.worker.grace_period)
                        asyncio.create_task(self._kill_process(float(grace)))
                        return
            await asyncio.sleep(period)

    async def _probe_exec(self, command: list[str], timeout: float) -> tuple[int | None, bytes]:
        try:
            proc = await self.spawn_exec(command)
        except ExecNotFound as exc:
            return 126, str(exc).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return None, b""
        return proc.returncode, (out or b"") + (err or b"")

    def _fault_channel(self, argv: list[str], context: ProcessContext) -> int | None:
        """The pod's fault rules channel for the main process, when its program loads the shim (a
        static binary never reads it, and would leave it readable through /proc: it stays dumpable).
        Never for an ephemeral container: ``kubectl debug`` would read it with a command of its own."""
        hook = self.worker.agent.nodes.fault_channel
        if hook is None or self.kind == "ephemeral":  # kubectl debug runs the caller's own code in the pod
            return None
        program = argv[argv.index("--") + 1] if context.identity is not None and "--" in argv else argv[0]
        host = context.lookup.host(program) if context.lookup is not None else program
        if not dynamically_linked(host):
            return None
        return hook(self.pod)

    async def spawn_exec(self, command: list[str], *, stdin=asyncio.subprocess.DEVNULL,
                         stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE) -> asyncio.subprocess.Process:
        """A process in this container's context: env, cwd, paths, cgroup."""
        if self.context is None:
            raise ExecNotFound("container not started")
        argv = self.context.command(command, exec_mode=True)
        group_preexec = self.group.preexec if self.group is not None and self.running() else None
        join_fd = join_fds = None
        if self.context.sandbox is not None:
            join_fds = await self._container_namespaces(self._running_process())
        elif self.context.plan is not None:
            join_fd = os.open(f"/proc/{self._running_process().pid}/ns/mnt", os.O_RDONLY)
        user, group = self.context.popen_ids()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=self.context.env, cwd=self.context.popen_cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                start_new_session=True, preexec_fn=self.context.preexec(group_preexec, join_fd, join_fds),
                user=user, group=group)
        finally:
            if join_fd is not None:
                os.close(join_fd)
            for fd, _ in join_fds or ():
                os.close(fd)
        self.worker.agent.track(proc.pid)
        # forget it once it has exited: the kernel reuses PIDs (pid_max is often 32768, which a busy
        # machine goes through in a minute), and the node's stop kills every group still tracked
        watcher = asyncio.create_task(self._untrack_on_exit(proc))
        _EXEC_WATCHERS.add(watcher)
        watcher.add_done_callback(_EXEC_WATCHERS.discard)
        return proc

    async def _untrack_on_exit(self, proc: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(Exception):
            await proc.wait()
        self.worker.agent.untrack(proc.pid)

    def _running_process(self) -> asyncio.subprocess.Process:
        """The container's process, while it runs (ExecNotFound otherwise)."""
        if self.process is None or not self.running():
            raise ExecNotFound("container not running")
        return self.process

    async def _container_namespaces(self, process: asyncio.subprocess.Process) -> list[tuple[int, int]]:
        try:
            return await isolation.open_namespaces_once_ready(process.pid, self.running)
        except OSError as exc:
            raise ExecNotFound(f"container not running: {exc}") from None

    async def _check_listeners(self, delay: float = 3.0) -> None:
        """Warn when the container listens on a wildcard address: the bind shim did not apply
        (a static binary, say), so the port is taken on every pod IP of the machine."""
        await asyncio.sleep(delay)
        if not self.running() or self.worker.pod.get("spec", {}).get("hostNetwork"):
            return
        pids = self.group.pids() if self.group is not None else []
        for pid in pids:
            try:
                proc = psutil.Process(pid)
                connections = proc.net_connections(kind="inet") if hasattr(proc, "net_connections") \
                    else proc.connections(kind="inet")
            except psutil.Error:
                continue
            for conn in connections:
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.ip in ("0.0.0.0", "::"):
                    log.warning("pod %s/%s container %s listens on %s:%s, not on its pod IP %s: the bind shim did "
                                "not apply, so this port is taken on every pod IP", self.worker.namespace,
                                self.worker.name, self.name, conn.laddr.ip, conn.laddr.port, self.worker.pod_ip)
                    return

    # ------------------------------------------------------------ hooks and stop

    async def _run_hook(self, hook: dict, timeout: float) -> tuple[bool, str]:
        if "exec" in hook:
            code, output = await self._probe_exec(list((hook["exec"] or {}).get("command") or []), timeout)
            if code == 0:
                return True, ""
            return False, f"command {hook['exec'].get('command')!r} exited with {code}: {output.decode('utf-8', 'replace')}"
        if "httpGet" in hook:
            probe = {"httpGet": hook["httpGet"], "timeoutSeconds": timeout}
            return await run_probe(probe, self.spec, self.worker.pod_ip, self._probe_exec)
        if "sleep" in hook:
            await asyncio.sleep(min(float(hook["sleep"].get("seconds", 0)), timeout))
            return True, ""
        return True, ""

    async def update_spec(self, spec: dict) -> None:
        """The pod's container spec changed (``kubectl set image`` on a pod): restart with it."""
        if spec.get("image") == self.spec.get("image"):
            return
        self.spec = spec
        self._new_spec.set()
        if self.running():
            await self.event("Killing", f"Container {self.name} definition changed, will be restarted")
            self._spec_changed = True
            await self._kill_process(self.worker.grace_period)
        elif self.done:
            self.done = False
            self._spec_changed = False
            self.worker.restart_runner(self)

    async def stop(self, grace: float) -> None:
        """Stop for good: preStop hook, the stop signal (SIGTERM), wait up to ``grace``, SIGKILL."""
        self._stopping = True
        if self.running():
            await self.event("Killing", f"Stopping container {self.name}")
            await self._kill_process(grace)
        self._stop_probes()

    async def _kill_process(self, grace: float) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        deadline = time.monotonic() + grace
        pre_stop = (self.spec.get("lifecycle") or {}).get("preStop")
        if pre_stop and grace > 0:
            ok, message = await self._run_hook(pre_stop, grace)
            if not ok:
                await self.event("FailedPreStopHook", f"PreStopHook failed: {message}", "Warning")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            # like the container runtime: the stop signal goes to the main process only; whatever
            # else runs in the container is killed once it exits
            os.kill(proc.pid, self._stop_signal)
        remaining = deadline - time.monotonic()
        if remaining > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._exited.wait()), remaining)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            if self.group is not None:
                for pid in self.group.pids():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._exited.wait()), 5)

    # ------------------------------------------------------------ metrics

    def usage(self) -> tuple[int, int]:
        """(CPU nanocores averaged since the last call, working-set bytes)."""
        if self.group is None or not self.running():
            return 0, 0
        usage = self.group.usage()
        now = time.monotonic()
        if self._cpu_sample is None:
            elapsed = max(now - self._started_at, 1e-3)
            self._cpu_rate = int(usage.cpu_ns / elapsed)
        elif now - self._cpu_sample[0] >= 0.5:
            self._cpu_rate = int(max(usage.cpu_ns - self._cpu_sample[1], 0) / (now - self._cpu_sample[0]))
        if self._cpu_sample is None or now - self._cpu_sample[0] >= 0.5:
            self._cpu_sample = (now, usage.cpu_ns)
        return self._cpu_rate, usage.memory_bytes

    def stats(self) -> dict:
        usage = self.group.usage() if self.group is not None and self.running() else None
        return {"container": self.name, "running": self.running(), "restartCount": self.restart_count,
                "cpu_ns": usage.cpu_ns if usage else 0, "memory_bytes": usage.memory_bytes if usage else 0,
                "nr_periods": usage.nr_periods if usage else 0, "nr_throttled": usage.nr_throttled if usage else 0,
                "throttled_ns": usage.throttled_ns if usage else 0, "timestamp": rfc3339_nano()}
