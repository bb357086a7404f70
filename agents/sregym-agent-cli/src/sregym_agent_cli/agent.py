"""Run a coding-agent CLI as an evaluated SREGym agent.

One run: a fresh HOME and work directory inside the attempt's workdir, the MCP server written into
the CLI's own configuration, a copy of the restricted kubeconfig as ``$KUBECONFIG``, the task
prompt on the command line (and in ``TASK.md``), the CLI started in the sandbox with a scrubbed
environment and a time limit, then its JSON output parsed for tokens, cost and tool calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

from sregym_core.agent_api.stages import WAITER_HEADER
from sregym_core.agents import AgentOutcome, AgentTask
from sregym_core.errors import AgentError, ConfigError, SregymError

from .adapters import ADAPTERS, Adapter, Launch, Usage
from .netrelay import Endpoint, NetworkRelay, endpoint_of
from .prompt import task_prompt
from .sandbox import NETWORKS, Sandbox, bwrap_path, protected_paths, with_file_size_limit

log = structlog.get_logger()

SETTINGS = ("model", "binary", "timeout", "sandbox", "network", "env", "pass_env", "read_only", "protected",
            "max_output_bytes", "provider_hosts", "max_file_bytes", "max_workdir_bytes")
#: the most one file the CLI writes may hold, and all of its work directory (kept with the attempt): red-team round
#: 20, finding 2 (a sparse file the copy-back wrote out in full; a work directory that could fill the host's disk)
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_WORKDIR_BYTES = 1024 * 1024 * 1024
#: how often the work directory's size is checked while the CLI runs
WORKDIR_CHECK_S = 3.0
#: how deep under its work directory the CLI's files are kept with the attempt (red-team round 21, finding 3: a
#: tree 2500 levels deep, made one ``mkdir``/``chdir`` at a time, broke a copy by path)
MAX_COPY_DEPTH = 32
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin")
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
#: seconds left to the conductor after the CLI's own limit, to parse output and report
TIMEOUT_MARGIN = 15.0


class CLIAgent:
    """An adapter plus settings; see :data:`SETTINGS` and the package README."""

    def __init__(self, adapter: str, **settings: Any) -> None:
        self.adapter_name = adapter
        self.settings = settings
        self.copy_back: Path | None = None
        self.run_dir: Path | None = None  # where the CLI runs (its cwd)
        self.relay: NetworkRelay | None = None  # the isolated network's way out, while the CLI runs

    async def run(self, task: AgentTask) -> AgentOutcome:
        started = time.time()
        trajectory: list[dict[str, Any]] = []
        try:
            settings = {**{k: v for k, v in dict(task.config).items() if k in SETTINGS}, **self.settings}
            unknown = sorted(set(settings) - set(SETTINGS))
            if unknown:
                raise ConfigError(f"agent {self.adapter_name} does not take {', '.join(unknown)}",
                                  hints=(f"known settings: {', '.join(SETTINGS)}",))
            adapter = ADAPTERS[self.adapter_name]()
            binary = _find_binary(adapter, settings.get("binary"))
            if not task.mcp_url:
                raise AgentError(f"{adapter.name} needs the MCP server and the task has no mcp_url")
            launch, sandbox, wrapped = self._prepare(adapter, binary, task, settings)
        except SregymError as exc:
            self._stop_relay()
            return AgentOutcome(status="crashed", error=exc.render())
        try:
            return await self._run(task, adapter, binary, settings, launch, sandbox, wrapped, started, trajectory)
        finally:
            self._stop_relay()

    def _stop_relay(self) -> None:
        if self.relay is not None:
            self.relay.stop()
            self.relay = None

    async def _run(self, task, adapter, binary, settings, launch, sandbox, wrapped, started, trajectory) -> AgentOutcome:
        timeout = float(settings.get("timeout") or max(task.timeout - TIMEOUT_MARGIN, 10.0))
        trajectory.append({"action": "launch", "message": f"{adapter.name}: {binary}", "timestamp": round(started, 3),
                           "sandbox": "bwrap" if sandbox.isolated else "none", "network": sandbox.network,
                           "config_files": [str(p) for p in launch.files], "timeout_s": timeout})
        if not sandbox.isolated:
            log.warning("cli_agent_unsandboxed", agent=adapter.name,
                        reason="bubblewrap unavailable or disabled: the CLI can read the benchmark's files")
        out_path, err_path = launch.workdir / f"{adapter.name}.stdout", launch.workdir / f"{adapter.name}.stderr"
        status, code = "ok", None
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                proc = await asyncio.create_subprocess_exec(*wrapped.argv, stdin=asyncio.subprocess.DEVNULL, stdout=out,
                                                            stderr=err, env=wrapped.env, cwd=str(launch.workdir),
                                                            start_new_session=True)
            except OSError as exc:
                return AgentOutcome(status="crashed", trajectory=tuple(trajectory),
                                    error=AgentError(f"{adapter.name} could not be started: {exc}").render())
            workdir_cap = int(settings.get("max_workdir_bytes") or MAX_WORKDIR_BYTES)
            skipped: list[str] = []
            try:
                code, overfull = await _wait_within(proc, timeout, launch.workdir, workdir_cap)
                if overfull:
                    status = "overfull"
            except TimeoutError:
                status = "timeout"
            finally:
                await _stop(proc)  # also on cancellation by the conductor
                if self.copy_back is not None:
                    skipped = _copy_back(launch.workdir, self.copy_back,
                                         max_file=int(settings.get("max_file_bytes") or MAX_FILE_BYTES),
                                         budget=workdir_cap)
        if self.copy_back is not None:
            out_path, err_path = self.copy_back / out_path.name, self.copy_back / err_path.name
        limit = int(settings.get("max_output_bytes") or 50_000_000)
        stdout = _tail(out_path, limit)
        stderr = _tail(err_path, 4000)
        usage = _parse(adapter, stdout)
        stage = await _stage(task.api_url)
        now = round(time.time(), 3)
        trajectory += [{**step, "timestamp": now} for step in usage.trajectory]
        trajectory.append({"action": "exit", "message": f"exit code {code}", "exit_code": code, "stage": stage,
                           "seconds": round(time.time() - started, 2), "stderr_tail": stderr[-1000:], "timestamp": now})
        problems = []
        if skipped:
            trajectory.insert(-1, {"action": "copy_back", "message": "files left out of the attempt's record (too big)",
                                   "skipped": skipped[:50], "timestamp": now})
        if status == "overfull":
            status = "crashed"
            problems.append(f"{adapter.name} wrote more than {workdir_cap} bytes into its work directory and was stopped")
        elif status == "timeout":
            problems.append(f"{adapter.name} exceeded its {timeout:g} s limit and was stopped")
        elif code != 0:
            status = "crashed"
            problems.append(f"{adapter.name} exited with code {code}: {stderr.strip()[-500:] or '(no stderr)'}")
        if usage.error:
            problems.append(usage.error)
        if self.relay is not None and self.relay.refused:
            trajectory.insert(-1, {"action": "network", "message": "proxy refused (not the model provider)",
                                   "refused": self.relay.refused[:50], "timestamp": now})
        if stage in ("diagnosis", "mitigation"):
            problems.append(f"{adapter.name} stopped before submitting {'a diagnosis' if stage == 'diagnosis' else 'done'}")
        return AgentOutcome(status=status, steps=usage.steps, prompt_tokens=usage.prompt_tokens,
                            completion_tokens=usage.completion_tokens, cost=round(usage.cost, 6),
                            trajectory=tuple(trajectory), error="; ".join(problems) or None)

    def _prepare(self, adapter: Adapter, binary: Path, task: AgentTask, settings: dict[str, Any]):
        mode = settings.get("sandbox", "auto")
        if mode not in ("auto", "bwrap", "none"):
            raise ConfigError(f"sandbox must be auto, bwrap or none, got {mode!r}")
        workdir = (task.workdir / adapter.name).resolve()
        if mode != "none" and os.geteuid() == 0 and bwrap_path() is not None:
            # the sandbox runs as an unprivileged user that may not reach the results directory:
            # the CLI works in a fresh directory of its own, copied back to ``workdir`` afterwards
            self.copy_back = workdir
            base = Path(tempfile.mkdtemp(prefix="sregym-agent-"))
            base.chmod(0o711)
            workdir = base / adapter.name
        self.run_dir = workdir
        home = workdir / "home"
        for directory in (home / ".kube", home / ".config", home / ".cache", home / ".local" / "share", workdir / "tmp"):
            directory.mkdir(parents=True, exist_ok=True)
        kubeconfig = home / ".kube" / "config"
        if Path(task.kubeconfig).exists():
            shutil.copyfile(task.kubeconfig, kubeconfig)  # the original sits among the benchmark's files
            kubeconfig.chmod(0o600)
        kubectl = shutil.which(task.kubectl) or shutil.which("kubectl")
        read_only = [binary.parent, binary.resolve().parent, *[Path(p) for p in settings.get("read_only") or ()]]
        if kubectl:
            read_only.append(Path(kubectl).resolve())
        network = settings.get("network", "isolated")
        if network not in NETWORKS:
            raise ConfigError(f"network must be one of {', '.join(NETWORKS)}, got {network!r}")
        use_bwrap = {"auto": None, "bwrap": True, "none": False}[mode]
        if network == "isolated" and (use_bwrap is False or bwrap_path() is None):
            network = "host"  # no namespace without bubblewrap: the unsandboxed fallback, with its warning
        if network == "isolated":
            self.relay = NetworkRelay(workdir / ".sregym-net", _endpoints(task, kubeconfig, adapter),
                                      _provider_hosts(adapter, settings)).start()
        sandbox = Sandbox(workdir=workdir, read_only=read_only, network=network, relay=self.relay,
                          protected=protected_paths(settings.get("protected") or ()), use_bwrap=use_bwrap)
        if mode == "bwrap" and not sandbox.isolated:
            raise AgentError("sandbox=bwrap was asked for but bubblewrap is not usable here",
                             hints=("install bubblewrap (apt-get install bubblewrap) or allow unprivileged user namespaces",))
        launch = Launch(workdir=workdir, home=home, mcp_url=task.mcp_url, api_url=task.api_url,
                        model=settings.get("model"), isolated=sandbox.isolated)
        adapter.prepare(launch)
        prompt = task_prompt(task)
        (workdir / "TASK.md").write_text(prompt)
        path = [str(Path(kubectl).resolve().parent)] if kubectl else []
        path += [str(binary.parent), *SYSTEM_PATH]
        env = {"PATH": ":".join(dict.fromkeys(path)), "HOME": str(home), "USER": "sre", "LOGNAME": "sre",
               "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1",
               "TMPDIR": "/tmp" if sandbox.isolated else str(workdir / "tmp"),
               "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
               "XDG_DATA_HOME": str(home / ".local" / "share"), "KUBECONFIG": str(kubeconfig),
               "SREGYM_API_URL": task.api_url, "SREGYM_SUBMIT_URL": f"{task.api_url}/submit",
               "SREGYM_MCP_URL": task.mcp_url, "SREGYM_NAMESPACE": task.app_namespace}
        for name in (*adapter.provider_env, *PROXY_ENV, *(settings.get("pass_env") or ())):
            if os.environ.get(name):
                env[name] = os.environ[name]
        if any(name in env for name in PROXY_ENV):
            # the MCP server and the cluster are on 127.0.0.1: never send them through a proxy
            env["NO_PROXY"] = env["no_proxy"] = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1,localhost"]))
        env.update(launch.env)
        env.update({str(k): str(v) for k, v in (settings.get("env") or {}).items()})
        wrapped = sandbox.wrap(adapter.argv(str(binary), launch, prompt), env)
        wrapped.argv = with_file_size_limit(wrapped.argv, int(settings.get("max_file_bytes") or MAX_FILE_BYTES))
        if sandbox.isolated:
            wrapped.env = {"PATH": os.environ.get("PATH", ":".join(SYSTEM_PATH))}  # for bwrap itself; --clearenv inside
        return launch, sandbox, wrapped


def _endpoints(task: AgentTask, kubeconfig: Path, adapter: Adapter) -> list[Endpoint]:
    """What the isolated sandbox may reach: the agent API, the MCP server, every API server of the
    agent's kubeconfig, and a model provider the configuration puts on loopback (a local proxy)."""
    found = [endpoint_of(task.api_url, "agent API")]
    if task.mcp_url:
        found.append(endpoint_of(task.mcp_url, "MCP server"))
    if kubeconfig.exists():
        import yaml

        config = yaml.safe_load(kubeconfig.read_text()) or {}
        for entry in config.get("clusters") or ():
            server = (entry.get("cluster") or {}).get("server")
            if server:
                found.append(endpoint_of(server, "cluster API server"))
    for name in adapter.provider_url_env:
        url = os.environ.get(name)
        if url and _on_loopback(url):
            found.append(endpoint_of(url, f"model provider ({name})"))
    return found


def _provider_hosts(adapter: Adapter, settings: dict[str, Any]) -> list[str]:
    """The CONNECT proxy's allowlist: the adapter's provider, a base URL's host, and ``provider_hosts``."""
    from urllib.parse import urlsplit

    hosts = list(adapter.provider_hosts)
    for name in adapter.provider_url_env:
        url = os.environ.get(name)
        if url and not _on_loopback(url):
            parts = urlsplit(url)
            if parts.hostname:
                hosts.append(f"{parts.hostname}:{parts.port or (80 if parts.scheme == 'http' else 443)}")
    extra = settings.get("provider_hosts") or ()
    hosts += [extra] if isinstance(extra, str) else list(extra)
    return hosts


def _on_loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def binary_env(adapter: Adapter) -> str:
    """``SREGYM_CLAUDE_BINARY`` and so on: where to find the CLI when it is not on PATH."""
    return f"SREGYM_{adapter.binary.upper()}_BINARY"


def _find_binary(adapter: Adapter, override: str | None) -> Path:
    name = override or os.environ.get(binary_env(adapter)) or adapter.binary
    found = shutil.which(name)
    if found is None:
        raise AgentError(f"{adapter.name}: the {name!r} command is not installed (not found on PATH)",
                         hints=(f"install it: {adapter.install_hint}",
                                f"or point to it: {binary_env(adapter)}=/path/to/{adapter.binary} (or the agent setting binary)"))
    return Path(found).absolute()


def _copy_back(run_dir: Path, workdir: Path, *, max_file: int, budget: int) -> list[str]:
    """Keep the CLI's files (output, transcripts, HOME) with the attempt, none bigger than ``max_file``, no more than
    ``budget`` bytes in all (a file's size, not its blocks: a sparse file is written out in full) and none deeper than
    :data:`MAX_COPY_DEPTH`; remove its private copy whatever happens (a copy that failed once left hundreds of MB on the
    host's /tmp, every attempt again). Returns what was left out."""
    skipped: list[str] = []
    copied = 0
    try:
        for root, dirs, names in os.walk(run_dir, onerror=lambda exc: skipped.append(f"unreadable: {exc.filename}")):
            relative = os.path.relpath(root, run_dir)
            depth = 0 if relative == "." else relative.count(os.sep) + 1
            if depth >= MAX_COPY_DEPTH:
                skipped += [os.path.join(relative, d) + "/ (too deep)" for d in dirs]
                dirs.clear()
            target = os.path.join(workdir, relative)
            try:
                os.makedirs(target, exist_ok=True)
            except OSError:
                skipped.append(relative + "/")
                dirs.clear()
                continue
            for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
                src, dst = os.path.join(root, name), os.path.join(target, name)
                try:  # sockets, fifos and unreadable leftovers are not worth a crash
                    st = os.lstat(src)
                    if stat.S_ISLNK(st.st_mode):
                        with contextlib.suppress(FileExistsError):
                            os.symlink(os.readlink(src), dst)
                        continue
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    if st.st_size > max_file or copied + st.st_size > budget:
                        skipped.append(os.path.relpath(src, run_dir))
                        continue
                    shutil.copy2(src, dst)
                    copied += st.st_size
                except OSError:
                    skipped.append(os.path.relpath(src, run_dir))
    finally:
        remove_tree(run_dir.parent)
    return skipped


def remove_tree(path: Path) -> None:
    """Remove ``path`` however deep its tree: ``rm`` walks it by directory handles, where a path would pass the
    kernel's length limit and Python's recursive removal its recursion limit."""
    try:
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        pass
    shutil.rmtree(path, ignore_errors=True)


def disk_use(directory: Path, stop_above: int) -> int:
    """Bytes the files under ``directory`` take (allocated blocks), however deep (``du`` walks by directory handles:
    a file at the bottom of a tree deeper than a path can name counts too); a walk of our own where ``du`` is missing."""
    try:
        done = subprocess.run(["du", "-s", "-x", "--block-size=1", "--", str(directory)], capture_output=True,
                              text=True, timeout=60)
        if done.stdout.split():
            return int(done.stdout.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    total = 0
    for root, _dirs, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
        if total > stop_above:
            break
    return total


async def _wait_within(proc: asyncio.subprocess.Process, timeout: float, workdir: Path,
                       cap: int) -> tuple[int | None, bool]:
    """Wait for the CLI (``TimeoutError`` after ``timeout``); (its exit code, False), or (None, True) as soon as its work
    directory holds more than ``cap`` bytes (the host's disk is every later attempt's)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        try:
            return await asyncio.wait_for(asyncio.shield(proc.wait()), min(WORKDIR_CHECK_S, left)), False
        except TimeoutError:
            if await asyncio.to_thread(disk_use, workdir, cap) > cap:
                return None, True


def _parse(adapter: Adapter, stdout: str) -> Usage:
    try:
        return adapter.parse(stdout)
    except Exception as exc:  # noqa: BLE001 - unexpected output shapes must not lose the run
        return Usage(error=f"could not parse {adapter.name} output: {type(exc).__name__}: {exc}")


def _tail(path: Path, limit: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(size - limit, 0))
        return handle.read().decode(errors="replace")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """End the CLI and everything it started (its own session; in bwrap the PID namespace dies with it)."""
    if proc.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), wait)
            return
        except TimeoutError:
            continue


async def _stage(api_url: str) -> str | None:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
            reply = await client.get(f"{api_url}/status", headers={WAITER_HEADER: "cli-agent"})
        return reply.json().get("stage")
    except Exception:  # noqa: BLE001 - the stage is informative only
        return None
