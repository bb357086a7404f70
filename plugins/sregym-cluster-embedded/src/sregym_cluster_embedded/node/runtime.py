"""The PodRuntime the API server calls for logs, exec and metrics (kubectl logs/exec/top)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import struct
import termios
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from . import isolation
from .errors import api_error
from .launch import ExecNotFound
from .logs import instance_log_path, read_log

if TYPE_CHECKING:
    from .container import ContainerRunner
    from .kubelet import NodeSet
    from .pod import PodWorker


class LogStream:
    """The bytes of one log request: usable with ``async for`` directly or after ``await``."""

    def __init__(self, source: AsyncIterator[bytes]) -> None:
        self._source = source

    def __await__(self):
        async def _self() -> LogStream:
            return self
        return _self().__await__()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._source.__aiter__()

    async def aclose(self) -> None:
        close = getattr(self._source, "aclose", None)
        if close is not None:
            await close()


class PtyProcess:
    """An exec'd process on a pseudo-terminal, shaped like asyncio's Process."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.master = master
        self.stdout = asyncio.StreamReader()
        self.stderr = None
        self.stdin = _PtyWriter(master)
        loop = asyncio.get_running_loop()
        loop.add_reader(master, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:
            data = b""
        if data:
            self.stdout.feed_data(data)
        else:
            asyncio.get_running_loop().remove_reader(self.master)
            self.stdout.feed_eof()

    def resize(self, cols: int, rows: int) -> None:
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        code = await self._proc.wait()
        await asyncio.sleep(0.05)  # let the last output drain from the pty
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(self.master)
        if not self.stdout.at_eof():
            self.stdout.feed_eof()
        with contextlib.suppress(OSError):
            os.close(self.master)
        return code

    def kill(self) -> None:
        self._proc.kill()

    def terminate(self) -> None:
        self._proc.terminate()


class _PtyWriter:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fd, data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.write(b"\x04")

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        self.write(b"\x04")


class NodeRuntime:
    def __init__(self, nodes: NodeSet) -> None:
        self.nodes = nodes

    def _worker(self, namespace: str, pod: str) -> PodWorker:
        for agent in self.nodes.agents.values():
            worker = agent.find(namespace, pod)
            if worker is not None:
                return worker
        raise api_error(404, "NotFound", f'pods "{pod}" not found')

    def _runner(self, worker: PodWorker, container: str | None) -> ContainerRunner:
        """The named container (the first one when no name is given, as the API server defaults)."""
        if not container:
            return worker.runners[0]
        runner = worker.runner(container)
        if runner is None:
            raise api_error(400, "BadRequest", f"container {container} is not valid for pod {worker.name}")
        return runner

    def read_log(self, namespace: str, pod: str, container: str | None = None, *, previous: bool = False,
                 tail_lines: int | None = None, since_seconds: int | None = None, timestamps: bool = False,
                 limit_bytes: int | None = None, follow: bool = False) -> LogStream:
        worker = self._worker(namespace, pod)
        runner = self._runner(worker, container)
        if previous:
            if runner.restart_count == 0:
                raise api_error(400, "BadRequest",
                                f'previous terminated container "{runner.name}" in pod "{pod}" not found')
            path = instance_log_path(worker.log_dir, runner.name, runner.restart_count - 1)
            if not path.exists():
                raise api_error(400, "BadRequest",
                                f'previous terminated container "{runner.name}" in pod "{pod}" not found')
            running = None
        else:
            if runner.log_path is None:
                waiting = runner.state.get("waiting", {})
                reason = waiting.get("reason", "ContainerCreating")
                detail = {"ErrImagePull": "trying and failing to pull image",
                          "ImagePullBackOff": "trying and failing to pull image",
                          "ErrImageNeverPull": "image can't be pulled"}.get(reason, reason)
                raise api_error(400, "BadRequest",
                                f'container "{runner.name}" in pod "{pod}" is waiting to start: {detail}')
            path = runner.log_path
            running = runner.running
        since = time.time() - since_seconds if since_seconds else None
        return LogStream(read_log(path, tail_lines=tail_lines, since_time=since, timestamps=timestamps,
                                  limit_bytes=limit_bytes, follow=follow and running is not None and runner.running(),
                                  is_running=running))

    def note_entered(self, namespace: str, pod: str) -> None:
        """Someone other than the cluster's own ran a command in (or attached to) this pod: what it
        started there may outlive the session (``GET /sregym/nodes/pods`` says ``entered``)."""
        try:
            self._worker(namespace, pod).entered += 1
        except Exception:  # noqa: BLE001 - no such pod: the exec itself fails with the right status
            pass

    async def exec(self, namespace: str, pod: str, container: str | None, command: list[str], *,
                   tty: bool = False):
        worker = self._worker(namespace, pod)
        phase = worker.phase()
        if phase in ("Succeeded", "Failed"):
            raise api_error(400, "BadRequest",
                            f"cannot exec into a container in a completed pod; current phase is {phase}")
        runner = self._runner(worker, container)
        if not runner.running():
            raise api_error(400, "BadRequest", f'unable to upgrade connection: container not found ("{runner.name}")')
        try:
            if not tty:
                return await runner.spawn_exec(command, stdin=asyncio.subprocess.PIPE)
            if runner.context is not None and runner.context.sandbox is not None and runner.process is not None:
                master, slave = isolation.open_pty(runner.process.pid)  # the container's own /dev/pts
            else:
                master, slave = pty.openpty()
            try:
                proc = await runner.spawn_exec(command, stdin=slave, stdout=slave, stderr=slave)
            finally:
                os.close(slave)
            return PtyProcess(proc, master)
        except ExecNotFound as exc:
            raise api_error(500, "InternalError",
                            f"failed to exec in container: failed to start exec: OCI runtime exec failed: "
                            f"exec failed: unable to start container process: {exc}: unknown") from None

    def pod_usage(self, namespace: str, pod: str) -> dict[str, tuple[int, int]]:
        try:
            worker = self._worker(namespace, pod)
        except Exception:  # noqa: BLE001
            return {}
        return {r.name: r.usage() for r in worker.all_runners() if r.running()}

    def node_usage(self, node: str) -> tuple[int, int]:
        agent = self.nodes.agents.get(node)
        if agent is None:
            return 0, 0
        cpu = memory = 0
        for worker in agent.workers.values():
            for runner in worker.all_runners():
                if runner.running():
                    c, m = runner.usage()
                    cpu, memory = cpu + c, memory + m
        return cpu, memory
