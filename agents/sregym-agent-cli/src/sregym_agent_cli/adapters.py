"""One adapter per coding-agent CLI: its MCP configuration in the tool's own format, its
non-interactive command line, and a parser for its JSON output (tokens, cost, tool calls).

Formats, from each tool's public documentation:

* Claude Code: ``--mcp-config <file>`` / ``.mcp.json`` with ``{"mcpServers": {name: {"type": "http",
  "url": ...}}}``; ``claude -p PROMPT --output-format stream-json --verbose`` prints one JSON event per
  line ending with a ``{"type": "result", "usage": {...}, "total_cost_usd": ..., "num_turns": ...}``.
* Codex CLI: ``$CODEX_HOME/config.toml`` (default ``~/.codex``) with ``[mcp_servers.<name>] url = ...``;
  ``codex exec --json PROMPT`` prints JSONL events; ``turn.completed`` carries ``usage``
  (``input_tokens``, ``cached_input_tokens``, ``output_tokens``).
* Gemini CLI: ``~/.gemini/settings.json`` with ``{"mcpServers": {name: {"httpUrl": ...}}}``;
  ``gemini -p PROMPT --output-format json`` prints ``{"response", "stats": {"models": {m: {"tokens":
  {"prompt", "candidates", "thoughts", ...}, "api": {"totalRequests"}}}, "tools": {...}}}``.
* OpenCode: ``opencode.json`` (``$OPENCODE_CONFIG``) with ``{"mcp": {name: {"type": "remote", "url":
  ..., "enabled": true}}}``; ``opencode run --format json PROMPT`` prints JSONL events;
  ``step_finish`` parts carry ``tokens`` (``input``, ``output``, ``reasoning``, ``cache``) and ``cost``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

MCP_NAME = "sregym"


@attrs.define(kw_only=True)
class Launch:
    """What an adapter needs to prepare one run."""

    workdir: Path  # the CLI's working directory (inside the sandbox, same path)
    home: Path  # the fresh HOME
    mcp_url: str
    api_url: str
    model: str | None = None
    isolated: bool = True  # running inside bubblewrap (the CLI's own sandbox can be relaxed)
    env: dict[str, str] = attrs.Factory(dict)
    files: list[Path] = attrs.Factory(list)


@attrs.define(kw_only=True)
class Usage:
    """What a run cost and did, parsed from the CLI's output."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    steps: int = 0
    final_text: str = ""
    error: str | None = None
    trajectory: list[dict[str, Any]] = attrs.Factory(list)


def json_lines(text: str) -> Iterator[Any]:
    """Every JSON value printed on its own line (other lines, e.g. progress text, are skipped)."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] not in "{[":
            continue
        try:
            yield json.loads(line)
        except ValueError:
            continue


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last complete top-level JSON object in ``text`` (CLIs may print notices before it)."""
    decoder = json.JSONDecoder()
    found = None
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found = value
        index = text.find("{", end)
    return found


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _write_json(path: Path, data: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _toml_string(value: str) -> str:
    # a JSON string is a valid TOML basic string for everything json.dumps emits (\", \\, \n, \uXXXX)
    return json.dumps(value, ensure_ascii=True)


class Adapter:
    """Base class; subclasses fill in the class attributes and the three methods."""

    name: ClassVar[str]
    binary: ClassVar[str]
    install_hint: ClassVar[str]
    #: provider settings passed through from the user's environment (keys, base URLs, proxies)
    provider_env: ClassVar[tuple[str, ...]] = ()
    #: the model provider's hosts (``host`` or ``host:port``) the sandbox's proxy lets the CLI reach
    provider_hosts: ClassVar[tuple[str, ...]] = ()
    #: variables that move the provider elsewhere (a base URL); their hosts are allowed too
    provider_url_env: ClassVar[tuple[str, ...]] = ()

    def prepare(self, launch: Launch) -> None:
        raise NotImplementedError

    def argv(self, binary: str, launch: Launch, prompt: str) -> list[str]:
        raise NotImplementedError

    def parse(self, stdout: str) -> Usage:
        raise NotImplementedError


class ClaudeCode(Adapter):
    name = "claude-code"
    binary = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    provider_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
                    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_REGION", "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION")
    provider_hosts = ("api.anthropic.com",)
    provider_url_env = ("ANTHROPIC_BASE_URL",)
    allowed_tools = (f"mcp__{MCP_NAME}", "Bash(kubectl:*)", "Bash(curl:*)")

    def config(self, launch: Launch) -> dict[str, Any]:
        return {"mcpServers": {MCP_NAME: {"type": "http", "url": launch.mcp_url}}}

    def prepare(self, launch: Launch) -> None:
        # both places Claude Code reads: the explicit --mcp-config file and the project's .mcp.json
        launch.files.append(_write_json(launch.workdir / ".mcp.json", self.config(launch)))
        launch.env["DISABLE_AUTOUPDATER"] = "1"
        launch.env["CLAUDE_CONFIG_DIR"] = str(launch.home / ".claude")

    def argv(self, binary: str, launch: Launch, prompt: str) -> list[str]:
        args = [binary, "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--mcp-config", str(launch.workdir / ".mcp.json"), "--strict-mcp-config",
                "--allowedTools", ",".join(self.allowed_tools)]
        if launch.model:
            args += ["--model", launch.model]
        return args

    def parse(self, stdout: str) -> Usage:
        usage = Usage()
        events = []
        for value in json_lines(stdout):
            events += value if isinstance(value, list) else [value]
        if not events and (whole := last_json_object(stdout)):
            events = [whole]
        results: dict[str, dict[str, Any]] = {}
        for event in events:
            if not isinstance(event, dict):
                continue
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            if event.get("type") == "assistant":
                for block in message.get("content") or ():
                    if block.get("type") == "tool_use":
                        usage.trajectory.append({"action": "tool", "message": block.get("name", ""), "tool_calls": [
                            {"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input") or {}}]})
                    elif block.get("type") == "text" and block.get("text"):
                        usage.trajectory.append({"action": "text", "message": block["text"][:4000]})
            elif event.get("type") == "user":
                for block in message.get("content") or ():
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        content = block.get("content")
                        if isinstance(content, list):
                            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
                        results[str(block.get("tool_use_id"))] = {"tool_call_id": block.get("tool_use_id"),
                                                                   "content": str(content)[:4000]}
            elif event.get("type") == "result":
                counts = event.get("usage") or {}
                usage.prompt_tokens = (_int(counts.get("input_tokens")) + _int(counts.get("cache_creation_input_tokens"))
                                       + _int(counts.get("cache_read_input_tokens")))
                usage.completion_tokens = _int(counts.get("output_tokens"))
                usage.cost = float(event.get("total_cost_usd") or event.get("cost_usd") or 0.0)
                usage.steps = _int(event.get("num_turns"))
                usage.final_text = str(event.get("result") or "")
                if event.get("is_error") or (event.get("subtype") not in (None, "success")):
                    usage.error = f"claude reported {event.get('subtype') or 'an error'}: {usage.final_text[:300]}"
                if usage.final_text:
                    usage.trajectory.append({"action": "text", "message": usage.final_text[:4000], "final": True})
        for step in usage.trajectory:
            for call in step.get("tool_calls", ()):
                if str(call.get("id")) in results:
                    step["observations"] = [results[str(call["id"])]]
        return usage


class Codex(Adapter):
    name = "codex"
    binary = "codex"
    install_hint = "npm install -g @openai/codex"
    provider_env = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "OPENAI_ORGANIZATION", "AZURE_OPENAI_API_KEY")
    provider_hosts = ("api.openai.com",)
    provider_url_env = ("OPENAI_BASE_URL",)

    def config_text(self, launch: Launch) -> str:
        lines = ["# written by SREGym for one attempt", 'approval_policy = "never"',
                 # inside bubblewrap our sandbox is the boundary; outside it, keep Codex's own
                 f'sandbox_mode = "{"danger-full-access" if launch.isolated else "workspace-write"}"']
        if launch.model:
            lines.append(f"model = {_toml_string(launch.model)}")
        lines += ["", "[sandbox_workspace_write]", "network_access = true", "",
                  f"[mcp_servers.{MCP_NAME}]", f"url = {_toml_string(launch.mcp_url)}",
                  "startup_timeout_sec = 30", "tool_timeout_sec = 300", "",
                  f"[projects.{_toml_string(str(launch.workdir))}]", 'trust_level = "trusted"', ""]
        return "\n".join(lines)

    def prepare(self, launch: Launch) -> None:
        codex_home = launch.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        path = codex_home / "config.toml"
        path.write_text(self.config_text(launch))
        launch.files.append(path)
        launch.env["CODEX_HOME"] = str(codex_home)

    def argv(self, binary: str, launch: Launch, prompt: str) -> list[str]:
        args = [binary, "exec", "--json", "--skip-git-repo-check", "-C", str(launch.workdir)]
        if launch.model:
            args += ["-m", launch.model]
        return [*args, prompt]

    def parse(self, stdout: str) -> Usage:
        usage = Usage()
        for event in json_lines(stdout):
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            if kind == "turn.completed":
                counts = event.get("usage") or {}
                usage.prompt_tokens += _int(counts.get("input_tokens"))  # cached tokens are a subset
                usage.completion_tokens += _int(counts.get("output_tokens"))
            elif kind in ("turn.failed", "error"):
                error = event.get("error") if isinstance(event.get("error"), dict) else {}
                usage.error = str(error.get("message") or event.get("message") or kind)[:300]
            elif kind == "item.completed" and isinstance(event.get("item"), dict):
                item = event["item"]
                item_type = item.get("type") or item.get("item_type")
                if item_type == "mcp_tool_call":
                    usage.steps += 1
                    usage.trajectory.append({"action": "tool", "message": item.get("tool", ""), "tool_calls": [
                        {"id": item.get("id"), "name": item.get("tool"), "arguments": item.get("arguments") or {}}],
                        "observations": [{"tool_call_id": item.get("id"),
                                          "content": json.dumps(item.get("result") or item.get("error") or "")[:4000]}]})
                elif item_type == "command_execution":
                    usage.steps += 1
                    usage.trajectory.append({"action": "command", "message": str(item.get("command", "")), "tool_calls": [
                        {"id": item.get("id"), "name": "shell", "arguments": {"command": item.get("command")}}],
                        "observations": [{"tool_call_id": item.get("id"),
                                          "content": str(item.get("aggregated_output", ""))[:4000]}],
                        "exit_code": item.get("exit_code")})
                elif item_type in ("agent_message", "assistant_message"):
                    usage.final_text = str(item.get("text", ""))
                    usage.trajectory.append({"action": "text", "message": usage.final_text[:4000]})
        return usage


class GeminiCLI(Adapter):
    name = "gemini-cli"
    binary = "gemini"
    install_hint = "npm install -g @google/gemini-cli"
    provider_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                    "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS")
    provider_hosts = ("generativelanguage.googleapis.com",)

    def config(self, launch: Launch) -> dict[str, Any]:
        return {"mcpServers": {MCP_NAME: {"httpUrl": launch.mcp_url, "trust": True, "timeout": 300_000}}}

    def prepare(self, launch: Launch) -> None:
        launch.files.append(_write_json(launch.home / ".gemini" / "settings.json", self.config(launch)))

    def argv(self, binary: str, launch: Launch, prompt: str) -> list[str]:
        args = [binary, "-p", prompt, "--output-format", "json", "--yolo", "--allowed-mcp-server-names", MCP_NAME]
        if launch.model:
            args += ["-m", launch.model]
        return args

    def parse(self, stdout: str) -> Usage:
        usage = Usage()
        body = last_json_object(stdout) or {}
        stats = body.get("stats") if isinstance(body.get("stats"), dict) else {}
        for model in (stats.get("models") or {}).values():
            tokens = model.get("tokens") or {}
            usage.prompt_tokens += _int(tokens.get("prompt"))
            usage.completion_tokens += _int(tokens.get("candidates")) + _int(tokens.get("thoughts"))
            usage.steps += _int((model.get("api") or {}).get("totalRequests"))
        for name, counts in ((stats.get("tools") or {}).get("byName") or {}).items():
            usage.trajectory.append({"action": "tool", "message": name, "calls": _int((counts or {}).get("count"))})
        usage.final_text = str(body.get("response") or "")
        if body.get("error"):
            error = body["error"]
            usage.error = str(error.get("message") if isinstance(error, dict) else error)[:300]
        if usage.final_text:
            usage.trajectory.append({"action": "text", "message": usage.final_text[:4000]})
        return usage


class OpenCode(Adapter):
    name = "opencode"
    binary = "opencode"
    install_hint = "npm install -g opencode-ai"
    provider_env = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                    "OPENROUTER_API_KEY", "GROQ_API_KEY", "DEEPSEEK_API_KEY")
    provider_hosts = ("api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai",
                      "api.groq.com", "api.deepseek.com")
    provider_url_env = ("OPENAI_BASE_URL",)

    def config(self, launch: Launch) -> dict[str, Any]:
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "mcp": {MCP_NAME: {"type": "remote", "url": launch.mcp_url, "enabled": True}},
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
            "autoupdate": False, "share": "disabled",
        }
        if launch.model:
            config["model"] = launch.model
        return config

    def prepare(self, launch: Launch) -> None:
        path = _write_json(launch.workdir / "opencode.json", self.config(launch))
        launch.files.append(path)
        launch.env["OPENCODE_CONFIG"] = str(path)

    def argv(self, binary: str, launch: Launch, prompt: str) -> list[str]:
        args = [binary, "run", "--format", "json"]
        if launch.model:
            args += ["-m", launch.model]
        return [*args, prompt]

    def parse(self, stdout: str) -> Usage:
        usage = Usage()
        for event in json_lines(stdout):
            if not isinstance(event, dict):
                continue
            part = event.get("part") if isinstance(event.get("part"), dict) else {}
            kind = event.get("type")
            if kind == "step_finish":
                tokens = part.get("tokens") or {}
                cache = tokens.get("cache") or {}
                usage.prompt_tokens += _int(tokens.get("input")) + _int(cache.get("read")) + _int(cache.get("write"))
                usage.completion_tokens += _int(tokens.get("output")) + _int(tokens.get("reasoning"))
                usage.cost += float(part.get("cost") or 0.0)
            elif kind == "tool_use":
                state = part.get("state") or {}
                usage.steps += 1
                usage.trajectory.append({"action": "tool", "message": str(part.get("tool", "")), "tool_calls": [
                    {"id": part.get("callID"), "name": part.get("tool"), "arguments": state.get("input") or {}}],
                    "observations": [{"tool_call_id": part.get("callID"),
                                      "content": str(state.get("output") or state.get("error") or "")[:4000]}]})
            elif kind == "text" and part.get("text"):
                usage.final_text = str(part["text"])
                usage.trajectory.append({"action": "text", "message": usage.final_text[:4000]})
            elif kind == "error":
                error = event.get("error")
                usage.error = str(error.get("message") if isinstance(error, dict) else error)[:300]
        return usage


ADAPTERS: dict[str, type[Adapter]] = {cls.name: cls for cls in (ClaudeCode, Codex, GeminiCLI, OpenCode)}
