"""``exec_kubectl_cmd_safely``: real kubectl with the agent's restricted kubeconfig, no shell.

Behaves as upstream SREGym's tool does (the rules are in :mod:`.kubectl_rules`): commands start
with ``kubectl``; mutating commands run with ``--dry-run=server`` first and only then for real;
``delete`` does not wait; output is cut at 10000 characters with ``... [truncated]``; refusals
and kubectl failures start with ``Command Rejected:``. kubectl itself runs in a sandbox with no
host files (:mod:`.kubectl_sandbox`).

Each MCP session has its own rollback stack (:meth:`KubectlTool.for_session`): before a mutating
command the objects it names are read, and ``rollback_command`` puts them back (a plain PUT that
keeps their uid) and deletes what the command created.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

import attrs
import structlog

from . import kubectl_sandbox
from .kubectl_rules import REJECTED, KubectlCommand, RefusedCommand, parse_command

__all__ = ["KubectlSession", "KubectlTool", "RefusedCommand", "parse_command"]

log = structlog.get_logger()

MAX_OUTPUT = 10000
TRUNCATED = "... [truncated]"
#: Sessions kept at once, and how long an idle one keeps its rollback stack (upstream's values).
MAX_SESSIONS = 10000
SESSION_TTL = 600.0
DEFAULT_SESSION = ""


@attrs.frozen
class JournalEntry:
    command: str
    restore: tuple[dict[str, Any], ...]  # objects to put back as they were
    delete: tuple[str, ...]  # "kind/name" created by the command
    namespace: str | None = None


@attrs.define(eq=False)
class KubectlTool:
    """kubectl for one attempt: restricted kubeconfig, sandbox, timeout, output cap, rollback stacks.

    :param isolation: ``"auto"`` (the sandbox when bubblewrap works here, else the fallback),
        ``"bwrap"`` (the sandbox or an error per call) or ``"none"`` (the fallback; for tests that
        stand a script in for kubectl).
    """

    kubeconfig: Path
    kubectl: str = "kubectl"
    namespace: str | None = None
    timeout: float = 60.0
    cache_dir: Path | None = None  # only used without the sandbox
    isolation: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "bwrap", "none")))
    _sessions: collections.OrderedDict = attrs.field(factory=collections.OrderedDict, init=False)
    _private: Path | None = attrs.field(default=None, init=False)
    _neutral_dir: Path | None = attrs.field(default=None, init=False)
    _neutral: tuple[Path, int] | None = attrs.field(default=None, init=False)

    # ------------------------------------------------------------------ sessions

    def for_session(self, session_id: str | None) -> KubectlSession:
        """The session keyed by upstream's ``sregym_ssid`` header or ``session_id`` query (None: the
        attempt's default session). Idle sessions expire after :data:`SESSION_TTL` seconds; at most
        :data:`MAX_SESSIONS` are kept, least recently used first out."""
        key = session_id or DEFAULT_SESSION
        now = time.monotonic()
        for old_key in [k for k, s in self._sessions.items() if now - s.last_used > SESSION_TTL]:
            del self._sessions[old_key]
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = KubectlSession(tool=self, session_id=key)
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(key)
        session.last_used = now
        return session

    # the attempt's default session, for callers that do not track MCP sessions
    async def execute(self, cmd: str) -> str:
        return await self.for_session(None).execute(cmd)

    async def rollback(self) -> str:
        return await self.for_session(None).rollback()

    def previous_rollbackable(self) -> str:
        return self.for_session(None).previous_rollbackable()

    @property
    def journal(self) -> list[JournalEntry]:
        return self.for_session(None).journal

    # ------------------------------------------------------------------ running kubectl

    @property
    def sandboxed(self) -> bool:
        return self.isolation != "none" and kubectl_sandbox.bwrap_usable(self._kubectl_path()) is not None

    def _kubectl_path(self) -> str:
        return shutil.which(self.kubectl) or self.kubectl

    def _neutral_kubeconfig(self) -> Path:
        """A copy of the kubeconfig under a name that says nothing: the sandbox shows a bind mount's
        source path in ``/proc/self/mountinfo`` and bwrap's argv in ``/proc/1/cmdline``, and the
        original's path names the results directory and the attempt (red-team round 7, finding 3).
        Copied again when the original changes."""
        source = Path(self.kubeconfig)
        stamp = source.stat().st_mtime_ns if source.exists() else 0
        if self._neutral is None or self._neutral[1] != stamp:
            if self._neutral_dir is None:
                self._neutral_dir = Path(tempfile.mkdtemp(prefix="sregym-kubectl-"))
                weakref.finalize(self, shutil.rmtree, self._neutral_dir, True)
            copy = self._neutral_dir / "config"
            shutil.copy2(source, copy)
            self._neutral = (copy, stamp)
        return self._neutral[0]

    def _private_dir(self) -> Path:
        """An empty directory of our own: kubectl's cwd and HOME when it runs without the sandbox."""
        if self._private is None:
            base = self.cache_dir.parent if self.cache_dir else None
            if base is not None:
                base.mkdir(parents=True, exist_ok=True)
            self._private = Path(tempfile.mkdtemp(prefix="kubectl-", dir=base))
            # removed with the tool (or at exit): a temporary directory per tool must not pile up
            weakref.finalize(self, shutil.rmtree, self._private, True)
        return self._private

    def _spawn_argv(self, args: list[str]) -> tuple[list[str], dict[str, str], str | None]:
        if self.isolation != "none":
            bwrap = kubectl_sandbox.bwrap_usable(self._kubectl_path())
            if bwrap is not None:
                return kubectl_sandbox.sandboxed_argv(bwrap, self._kubectl_path(), self._neutral_kubeconfig(),
                                                      args), {}, None
            if self.isolation == "bwrap":
                raise RefusedCommand("the kubectl sandbox is not available on this machine (bubblewrap is missing "
                                     "or user namespaces are disabled)")
            _warn_fallback_once()
        private = self._private_dir()
        cache = self.cache_dir or private / "cache"
        # PATH holds only kubectl's own directory: no kubectl-<name> plugins from the host's PATH
        env = {"PATH": str(Path(self.kubectl).parent) if os.sep in self.kubectl else os.environ.get("PATH", ""),
               "KUBECONFIG": str(self.kubeconfig), "HOME": str(private)}
        return [self.kubectl, "--cache-dir", str(cache), *args], env, str(private)

    async def run_argv(self, args: list[str], input: str | None = None) -> tuple[int, str, str]:
        """Run ``kubectl args``; never raises for what the command does (errors are an exit code)."""
        try:
            argv, env, cwd = self._spawn_argv(args)
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
                start_new_session=True)
        except RefusedCommand as exc:
            return 126, "", str(exc)
        except (OSError, ValueError) as exc:  # argument list too long, missing binary...
            return 126, "", f"kubectl could not be started: {exc}"
        try:
            out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None),
                                              self.timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return 124, "", f"kubectl timed out after {self.timeout:g} s"
        return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


_warned: list[bool] = []


def _warn_fallback_once() -> None:
    if not _warned:
        _warned.append(True)
        log.warning("kubectl_tool_unsandboxed", reason=kubectl_sandbox.FALLBACK_WARNING)


@attrs.define(eq=False)
class KubectlSession:
    """One MCP session's view of the tool: its own rollback stack."""

    tool: KubectlTool
    session_id: str
    journal: list[JournalEntry] = attrs.Factory(list)
    last_used: float = 0.0

    async def execute(self, cmd: str) -> str:
        """What the MCP tool returns: kubectl's output (truncated), or why it was rejected."""
        try:
            return await self._execute(cmd)
        except RefusedCommand as exc:
            return REJECTED + str(exc)
        except Exception as exc:  # noqa: BLE001 - a tool failure is an answer, never a crash of the server
            log.warning("kubectl_tool_failed", error=f"{type(exc).__name__}: {exc}")
            return f"{REJECTED}the tool failed: {type(exc).__name__}: {exc}"

    async def _execute(self, cmd: str) -> str:
        command = parse_command(cmd, host_files=self.tool.sandboxed)
        args = list(command.argv)
        if command.verb == "delete" and not command.has_flag("--wait"):
            args = _insert(args, "--wait=false")
        before: list[dict[str, Any]] = []
        if command.mutating:
            if command.supports_dry_run:
                code, _out, err = await self.tool.run_argv(_insert(args, "--dry-run=server"))
                if code != 0:
                    return _failure(err, code)
            before = await self._snapshot_targets(command)
        code, out, err = await self.tool.run_argv(args)
        if code != 0:
            return _failure(err or out, code)
        if command.mutating:
            created = [line.split()[0] for line in out.splitlines() if line.endswith(" created")]
            self.journal.append(JournalEntry(command=cmd, restore=tuple(before), delete=tuple(created),
                                             namespace=_namespace_of(command)))
        text = out
        if err.strip():  # warnings (deprecations, defaulted containers) belong with the answer
            text += ("\n" if text else "") + err
        return _truncate(text) if text.strip() else "(no output)"

    async def _snapshot_targets(self, command: KubectlCommand) -> list[dict[str, Any]]:
        """The objects a mutating command will touch, as JSON, for the rollback stack."""
        words = list(command.positionals[1:])
        if command.subverb and words and words[0] == command.subverb:
            words = words[1:]  # set image, rollout undo...
        if command.verb in ("label", "annotate", "set"):
            words = [w for w in words if "=" not in w and not w.endswith("-")]
        if command.verb in ("create", "run", "expose", "autoscale") or not words:
            return []  # nothing exists yet (created objects are deleted on rollback)
        probe = ["get", "-o", "json", "--ignore-not-found"]
        probe += words[:1] if "/" in words[0] else words[:2]
        namespace = _namespace_of(command)
        if namespace:
            probe += ["-n", namespace]
        code, out, _err = await self.tool.run_argv(probe)
        if code != 0 or not out.strip():
            return []
        try:
            data = json.loads(out)
        except ValueError:
            return []
        return data.get("items", [data]) if isinstance(data, dict) else []

    def previous_rollbackable(self) -> str:
        """Every command the rollback stack holds, oldest first, numbered (as upstream lists them)."""
        if not self.journal:
            return "No rollbackable command in this session."
        return "\n".join(f"{number}. {entry.command}" for number, entry in enumerate(self.journal, 1))

    async def rollback(self) -> str:
        """Undo the newest command; ``"<result>, action_stack: <remaining commands>"`` as upstream."""
        if not self.journal:
            return "No rollbackable command in this session, action_stack: []"
        entry = self.journal.pop()
        notes = []
        scope = ["-n", entry.namespace] if entry.namespace else []
        for ref in entry.delete:
            code, out, err = await self.tool.run_argv(["delete", ref, "--ignore-not-found", "--wait=false", *scope])
            notes.append((out or err).strip())
        for obj in entry.restore:
            clean = _restorable(obj)
            # a plain PUT keeps the object's uid (a forced replace would delete and recreate it)
            code, out, err = await self.tool.run_argv(["replace", "-f", "-"], input=json.dumps(clean))
            if code != 0:
                code, out, err = await self.tool.run_argv(["create", "-f", "-"], input=json.dumps(clean))
            notes.append((out or err).strip())
        result = f"Rolled back `{entry.command}`: " + "; ".join(n for n in notes if n)
        return f"{result}, action_stack: {[e.command for e in self.journal]}"


def _insert(args: list[str], flag: str) -> list[str]:
    if "--" in args:
        at = args.index("--")
        return [*args[:at], flag, *args[at:]]
    return [*args, flag]


def _namespace_of(command: KubectlCommand) -> str | None:
    for flag, value in command.flags:
        if flag in ("-n", "--namespace") and value:
            return value
    return None


def _failure(stderr: str, code: int) -> str:
    detail = stderr.strip() or f"kubectl exited with code {code}"
    return _truncate(f"{REJECTED}Error executing kubectl command:\n{detail}")


def _truncate(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + TRUNCATED


def _restorable(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in obj.get("metadata", {}).items()
                if k in ("name", "namespace", "labels", "annotations", "finalizers", "ownerReferences")}
    return {k: v for k, v in obj.items() if k not in ("status", "metadata")} | {"metadata": metadata}
