"""``exec_kubectl_cmd_safely``: real kubectl with the agent's restricted kubeconfig, no shell.

Refuses pipes, redirection, command chaining, interactive and streaming commands, and any flag
that would switch identity or cluster. Mutating commands are journaled per session: the object's
state before the command is saved so ``rollback_command`` can restore it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path
from typing import Any

import attrs

SHELL_METACHARACTERS = ("|", ">", "<", ";", "&", "`", "$(", "\n")
IDENTITY_FLAGS = ("--kubeconfig", "--token", "--server", "-s", "--as", "--as-group", "--as-uid", "--context",
                  "--user", "--cluster", "--certificate-authority", "--client-key", "--client-certificate",
                  "--insecure-skip-tls-verify", "--username", "--password", "--cache-dir")
INTERACTIVE_VERBS = {"edit": "use `kubectl patch` or `kubectl set` instead of an editor",
                     "attach": "attach is interactive; use `kubectl logs`",
                     "port-forward": "port-forward is long-running; use `kubectl exec` with a client inside the pod",
                     "proxy": "proxy is long-running", "debug": "debug is interactive; use `kubectl exec`",
                     "plugin": "plugins are disabled", "alpha": "alpha commands are disabled",
                     "config": "the kubeconfig cannot be changed", "completion": "not useful here"}
MUTATING_VERBS = {"apply", "create", "delete", "patch", "replace", "scale", "set", "label", "annotate", "rollout",
                  "cordon", "uncordon", "drain", "taint", "autoscale", "expose", "run"}
MAX_OUTPUT = 12000


class RefusedCommand(ValueError):
    """The command is not allowed; the message says why and what to do instead."""


def parse_command(cmd: str) -> list[str]:
    """Split and check a kubectl command line; return the arguments after ``kubectl``."""
    if not isinstance(cmd, str) or not cmd.strip():
        raise RefusedCommand("empty command; pass a kubectl command such as `kubectl get pods`")
    for meta in SHELL_METACHARACTERS:
        if meta in cmd:
            raise RefusedCommand(f"shell syntax {meta!r} is not allowed: run one kubectl command at a time, "
                                 "without pipes, redirection or chaining")
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise RefusedCommand(f"cannot parse the command: {exc}") from exc
    if argv and argv[0] == "kubectl":
        argv = argv[1:]
    if not argv:
        raise RefusedCommand("no kubectl subcommand given")
    if "/" in argv[0] or argv[0] in ("sh", "bash", "python", "curl"):
        raise RefusedCommand("only kubectl commands are allowed")
    verb = _verb(argv)
    if verb in INTERACTIVE_VERBS:
        raise RefusedCommand(f"`kubectl {verb}` is not allowed here: {INTERACTIVE_VERBS[verb]}")
    for arg in argv:
        name = arg.split("=", 1)[0]
        if name in IDENTITY_FLAGS:
            raise RefusedCommand(f"flag {name} is not allowed: the tool always uses your own credentials")
        if name in ("-w", "--watch", "--watch-only", "-f" if verb == "logs" else "", "--follow"):
            raise RefusedCommand(f"{name} streams forever; run the command without it (it returns a snapshot)")
        if verb in ("exec", "run") and name in ("-i", "-t", "-it", "-ti", "--stdin", "--tty"):
            raise RefusedCommand("interactive sessions are not supported; run a single command: "
                                 "`kubectl exec POD -- cat /etc/config.yaml`")
    return argv


def _verb(argv: list[str]) -> str:
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return ""


@attrs.frozen
class JournalEntry:
    command: str
    restore: tuple[dict[str, Any], ...]  # objects to put back as they were
    delete: tuple[str, ...]  # "kind/name -n ns" created by the command


@attrs.define
class KubectlTool:
    """One agent session's kubectl: restricted kubeconfig, timeout, output cap, undo journal."""

    kubeconfig: Path
    kubectl: str = "kubectl"
    namespace: str | None = None
    timeout: float = 60.0
    cache_dir: Path | None = None
    journal: list[JournalEntry] = attrs.Factory(list)

    async def run_argv(self, argv: list[str], input: str | None = None) -> tuple[int, str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECONFIG": str(self.kubeconfig),
               "HOME": str(self.cache_dir or self.kubeconfig.parent)}
        extra = ["--cache-dir", str(self.cache_dir)] if self.cache_dir else []
        proc = await asyncio.create_subprocess_exec(
            self.kubectl, *extra, *argv, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), self.timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return 124, "", f"kubectl timed out after {self.timeout:g} s"
        return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")

    async def execute(self, cmd: str) -> str:
        """What the MCP tool returns: stdout (and stderr), truncated, or why the command was refused."""
        try:
            argv = parse_command(cmd)
        except RefusedCommand as exc:
            return f"Refused: {exc}"
        verb = _verb(argv)
        before: list[dict[str, Any]] = []
        if verb in MUTATING_VERBS:
            before = await self._snapshot_targets(argv)
        code, out, err = await self.run_argv(argv)
        if code == 0 and verb in MUTATING_VERBS:
            created = [line.split()[0] for line in out.splitlines() if line.endswith(" created")]
            self.journal.append(JournalEntry(command=cmd, restore=tuple(before), delete=tuple(created)))
        text = out
        if err.strip():
            text += ("\n" if text else "") + err
        if code != 0 and not text.strip():
            text = f"kubectl exited with code {code}"
        if len(text) > MAX_OUTPUT:
            text = text[:MAX_OUTPUT] + f"\n... [output truncated: {len(text) - MAX_OUTPUT} more characters; narrow the query]"
        return text or "(no output)"

    async def _snapshot_targets(self, argv: list[str]) -> list[dict[str, Any]]:
        """The objects a mutating command will touch, as JSON, for the undo journal."""
        verb = _verb(argv)
        probe = ["get", "-o", "json"]
        rest = argv[argv.index(verb) + 1:]
        if verb in ("set", "rollout"):
            rest = rest[1:]  # skip the sub-verb (set image, rollout restart)
        if any(a in ("-f", "--filename") or a.startswith("--filename=") for a in rest):
            files = [rest[i + 1] for i, a in enumerate(rest[:-1]) if a in ("-f", "--filename")]
            probe += [x for f in files for x in ("-f", f)] + ["--ignore-not-found"]
        else:
            positional = [a for a in rest if not a.startswith("-") and "=" not in a]
            if verb in ("label", "annotate"):
                positional = [a for a in positional if "=" not in a and not a.endswith("-")]
            if verb == "scale":
                positional = positional[:2]
            if not positional:
                return []
            probe += positional[:2] if "/" not in positional[0] else positional[:1]
            probe.append("--ignore-not-found")
        probe += [a for i, a in enumerate(rest) if a.startswith("--namespace") or a == "-n" or (i and rest[i - 1] in ("-n", "--namespace"))]
        code, out, _err = await self.run_argv(probe)
        if code != 0 or not out.strip():
            return []
        try:
            data = json.loads(out)
        except ValueError:
            return []
        return data.get("items", [data]) if isinstance(data, dict) else []

    def previous_rollbackable(self) -> str:
        if not self.journal:
            return "No rollbackable command in this session."
        return f"The last rollbackable command is: {self.journal[-1].command}"

    async def rollback(self) -> str:
        if not self.journal:
            return "Nothing to roll back: no mutating command succeeded in this session."
        entry = self.journal.pop()
        notes = []
        for ref in entry.delete:
            code, out, err = await self.run_argv(["delete", ref, "--ignore-not-found"])
            notes.append((out or err).strip())
        for obj in entry.restore:
            clean = _restorable(obj)
            # a plain PUT keeps the object's uid (a forced replace would delete and recreate it)
            code, out, err = await self.run_argv(["replace", "-f", "-"], input=json.dumps(clean))
            if code != 0:
                code, out, err = await self.run_argv(["create", "-f", "-"], input=json.dumps(clean))
            notes.append((out or err).strip())
        return f"Rolled back `{entry.command}`:\n" + "\n".join(n for n in notes if n)


def _restorable(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in obj.get("metadata", {}).items()
                if k in ("name", "namespace", "labels", "annotations", "finalizers", "ownerReferences")}
    return {k: v for k, v in obj.items() if k not in ("status", "metadata")} | {"metadata": metadata}
