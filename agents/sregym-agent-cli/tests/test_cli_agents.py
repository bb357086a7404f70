"""CLI adapters: generated configuration (parsed back), output parsers, the bubblewrap sandbox, and a
fake CLI (installed under each real binary's name) run through the whole adapter against a real
MCP server and conductor API on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import psutil
import pytest
import sregym_agent_cli.plugin
from sregym_agent_cli.adapters import (
    ADAPTERS,
    ClaudeCode,
    Codex,
    GeminiCLI,
    Launch,
    OpenCode,
    last_json_object,
)
from sregym_agent_cli.agent import CLIAgent
from sregym_agent_cli.sandbox import Sandbox, bwrap_path, protected_paths

from sregym_core.agent_api.kubectl_tool import KubectlTool
from sregym_core.agent_api.server import AgentServer
from sregym_core.agents import AgentTask
from sregym_core.testing.contracts import AgentContract

HERE = Path(__file__).parent
REPO_FILE = Path(__file__).resolve().parents[3] / "pyproject.toml"  # a file of the SREGym checkout
MCP = "http://127.0.0.1:41234/mcp"
needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not usable here")


@pytest.fixture
def tmp_path():
    """A temporary directory the sandbox's unprivileged host user can reach (pytest's own base
    directory is private to root when the tests run as root)."""
    path = Path(tempfile.mkdtemp(prefix="sregym-cli-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class TestCLIAgentContract(AgentContract):
    plugin = sregym_agent_cli.plugin


def launch(tmp_path, model=None, isolated=True):
    workdir, home = tmp_path / "work", tmp_path / "work" / "home"
    home.mkdir(parents=True)
    return Launch(workdir=workdir, home=home, mcp_url=MCP, api_url="http://127.0.0.1:41234", model=model,
                  isolated=isolated)


# ---------------------------------------------------------------------- generated configuration


def test_claude_code_config(tmp_path):
    run = launch(tmp_path, model="claude-sonnet-4-5")
    ClaudeCode().prepare(run)
    config = json.loads((run.workdir / ".mcp.json").read_text())
    assert config == {"mcpServers": {"sregym": {"type": "http", "url": MCP}}}
    argv = ClaudeCode().argv("claude", run, "the prompt")
    assert argv[:3] == ["claude", "-p", "the prompt"]
    assert argv[argv.index("--mcp-config") + 1] == str(run.workdir / ".mcp.json") and "--strict-mcp-config" in argv
    assert argv[argv.index("--output-format") + 1] == "stream-json" and argv[-2:] == ["--model", "claude-sonnet-4-5"]
    assert "mcp__sregym" in argv[argv.index("--allowedTools") + 1].split(",")
    assert "--dangerously-skip-permissions" not in argv  # tools are allowed one by one instead
    assert run.env["CLAUDE_CONFIG_DIR"] == str(run.home / ".claude")


@pytest.mark.parametrize("isolated", [True, False])
def test_codex_config(tmp_path, isolated):
    run = launch(tmp_path, model='gpt-5-codex "quoted"', isolated=isolated)
    Codex().prepare(run)
    config = tomllib.loads((run.home / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["sregym"]["url"] == MCP
    assert config["model"] == 'gpt-5-codex "quoted"' and config["approval_policy"] == "never"
    assert config["sandbox_mode"] == ("danger-full-access" if isolated else "workspace-write")
    assert config["projects"][str(run.workdir)]["trust_level"] == "trusted"
    assert run.env["CODEX_HOME"] == str(run.home / ".codex")
    argv = Codex().argv("codex", run, "the prompt")
    assert argv[:3] == ["codex", "exec", "--json"] and argv[-1] == "the prompt" and "--skip-git-repo-check" in argv


def test_gemini_config(tmp_path):
    run = launch(tmp_path)
    GeminiCLI().prepare(run)
    config = json.loads((run.home / ".gemini" / "settings.json").read_text())
    assert config["mcpServers"]["sregym"]["httpUrl"] == MCP and config["mcpServers"]["sregym"]["trust"] is True
    argv = GeminiCLI().argv("gemini", run, "the prompt")
    assert argv[:3] == ["gemini", "-p", "the prompt"] and argv[argv.index("--output-format") + 1] == "json"
    assert "--yolo" in argv and "-m" not in argv


def test_opencode_config(tmp_path):
    run = launch(tmp_path, model="anthropic/claude-sonnet-4-5")
    OpenCode().prepare(run)
    path = run.workdir / "opencode.json"
    config = json.loads(path.read_text())
    assert config["mcp"]["sregym"] == {"type": "remote", "url": MCP, "enabled": True}
    assert config["model"] == "anthropic/claude-sonnet-4-5" and config["$schema"] == "https://opencode.ai/config.json"
    assert run.env["OPENCODE_CONFIG"] == str(path)
    argv = OpenCode().argv("opencode", run, "the prompt")
    assert argv[:4] == ["opencode", "run", "--format", "json"] and argv[-1] == "the prompt"


# ---------------------------------------------------------------------- output parsers


def test_parsers_survive_garbage():
    for adapter in ADAPTERS.values():
        usage = adapter().parse("Segmentation fault\n{not json\n[1, 2\n")
        assert usage.prompt_tokens == 0 and usage.completion_tokens == 0
    assert last_json_object('notice\n{"a": {"b": 1}}\ntrailer {"c": 2}') == {"c": 2}


def test_claude_error_result_is_reported():
    usage = ClaudeCode().parse(json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True,
                                           "usage": {"input_tokens": 10, "output_tokens": 5}}))
    assert usage.prompt_tokens == 10 and "error_max_turns" in usage.error


# ---------------------------------------------------------------------- the sandbox


@needs_bwrap
def test_sandbox_hides_the_benchmark_files(tmp_path, monkeypatch):
    sregym_home = tmp_path / "sregym-home"
    results = tmp_path / "results"
    workdir = results / ".work" / "p-agent-1" / "agent"
    tool_dir = tmp_path / "opt-tools"
    for directory in (sregym_home / "clusters", workdir, tool_dir / "secret-checkout"):
        directory.mkdir(parents=True)
    monkeypatch.setenv("SREGYM_HOME", str(sregym_home))
    markers = {"home": sregym_home / "clusters" / "admin-kubeconfig", "results": results / "results.jsonl",
               "nested": tool_dir / "secret-checkout" / "problem.yaml"}
    for path in markers.values():
        path.write_text("ground truth")
    (workdir / "notes.txt").write_text("mine")
    (tool_dir / "tool.txt").write_text("a tool")
    sandbox = Sandbox(workdir=workdir, read_only=[tool_dir],
                      protected=protected_paths([results, tool_dir / "secret-checkout"]))
    assert sandbox.isolated

    def inside(script):
        return run_sandboxed(sandbox, ["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"})

    for name, path in [*markers.items(), ("repo", REPO_FILE)]:
        assert REPO_FILE.exists()
        seen = inside(f"cat {path}")
        assert seen.returncode != 0 and "ground truth" not in seen.stdout, name
    mine = inside(f"cat {workdir}/notes.txt")
    assert mine.stdout == "mine", mine.stderr
    assert inside(f"echo new > {workdir}/out.txt && cat {tool_dir}/tool.txt").stdout == "a tool"
    assert (workdir / "out.txt").read_text() == "new\n"
    assert inside(f"echo x > {tool_dir}/tool.txt").returncode != 0  # read-only
    homes = inside("ls /root /home 2>/dev/null; echo $HOME $SREGYM_HOME")
    assert homes.returncode == 0 and homes.stdout.strip() == "", homes  # the shell ran, and found nothing
    assert inside("cat /etc/hostname >/dev/null && echo ok").stdout.strip() == "ok"  # the system is there


@needs_bwrap
def test_sandbox_without_network(tmp_path):
    sandbox = Sandbox(workdir=tmp_path, network="none")
    devices = run_sandboxed(sandbox, ["/bin/cat", "/proc/net/dev"], {}).stdout
    interfaces = [line.split(":")[0].strip() for line in devices.splitlines()[2:]]
    assert interfaces == ["lo"]


def run_sandboxed(sandbox, argv, env):
    argv, env = sandbox.wrap(argv, env)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)


@needs_bwrap
def test_the_cli_is_not_root_and_cannot_break_out(tmp_path, monkeypatch):
    """Started by a root conductor, the CLI holds no privilege: not root, no capabilities, no
    remount, no device nodes, no root-only host files, nothing writable outside its work directory."""
    repo = Path(__file__).resolve().parents[3]
    workdir = tmp_path / "results" / ".work" / "a1b2c3" / "agent"
    tool_dir = tmp_path / "opt-tools"
    for directory in (workdir, tool_dir):
        directory.mkdir(parents=True)
    (tool_dir / "tool.txt").write_text("a tool")
    sandbox = Sandbox(workdir=workdir, read_only=[tool_dir], protected=protected_paths())
    script = "; ".join([
        "echo uid=$(id -u)", "grep CapEff /proc/self/status",
        "mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED",
        f"mount -o remount,rw {tool_dir} 2>/dev/null && echo REMOUNTED",
        "mknod /tmp/sda b 8 0 2>/dev/null && echo MKNOD", f"mknod {workdir}/sda b 8 0 2>/dev/null && echo MKNOD",
        "mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED",
        "cat /etc/shadow 2>/dev/null && echo SHADOW", f"cat {repo}/pyproject.toml 2>/dev/null && echo REPO",
        f"ls {repo} 2>/dev/null | head -1 | grep . && echo REPO",
        f"touch {tool_dir}/x 2>/dev/null && echo WROTE", "touch /etc/x /usr/x /x 2>/dev/null && echo WROTE",
        f"touch {workdir}/mine && echo home-ok", "touch /tmp/t && echo tmp-ok",
        "ls /dev | tr '\\n' ' '; echo", "echo end"])
    seen = run_sandboxed(sandbox, ["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"})
    out = seen.stdout
    assert "end" in out, seen.stderr
    assert "uid=1000" in out and "CapEff:\t0000000000000000" in out
    for forbidden in ("REMOUNTED", "MKNOD", "MOUNTED", "SHADOW", "REPO", "WROTE"):
        assert forbidden not in out, (forbidden, out)
    assert "home-ok" in out and "tmp-ok" in out
    assert (workdir / "mine").exists() and not (tool_dir / "x").exists()
    devices = set(out.split("tmp-ok")[1].split("end")[0].split())
    assert devices <= {"console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr",
                       "stdin", "stdout", "tty", "urandom", "zero"}, devices


def test_plain_subprocess_when_bwrap_is_off(tmp_path):
    argv, env = Sandbox(workdir=tmp_path, use_bwrap=False).wrap(["/bin/true"], {"HOME": "/x"})
    assert argv == ["/bin/true"] and env == {"HOME": "/x"}


# ---------------------------------------------------------------------- the whole adapter


class Sink:
    def __init__(self):
        self.stage = "diagnosis"
        self.received = []

    def submit(self, solution):
        if self.stage not in ("diagnosis", "mitigation"):
            return 409, {"error": "late", "stage": self.stage}
        self.received.append(solution)
        self.stage = "mitigation" if self.stage == "diagnosis" else "tearing_down"
        return 200, {"status": "accepted", "stage": self.stage}

    def app_info(self):
        return {"app_name": "hotel-reservation", "namespace": "hotel-reservation", "descriptions": "Hotels."}


def install_fake(bin_dir: Path, name: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    shutil.copyfile(HERE / "fake_cli_source.py", path)
    path.chmod(0o755)
    return path


def kubectl_binary() -> str:
    found = shutil.which("kubectl", path=str(Path(os.sys.executable).parent)) or shutil.which("kubectl")
    assert found, "kubectl is needed for the adapter tests"
    return found


def run_cli(tmp_path, agent_name, **settings):
    """The adapter end to end: returns (outcome, sink, report printed by the fake)."""
    sink = Sink()
    kubeconfig = tmp_path / "sregym-home" / "agent-kubeconfig"
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\n"
                          "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
                          "users:\n- name: u\n  user: {token: agent-token}\n")

    async def scenario():
        server = AgentServer(sink, KubectlTool(kubeconfig=kubeconfig, kubectl=kubectl_binary(),
                                               cache_dir=tmp_path / "kube-cache"))
        await server.start()
        try:
            workdir = tmp_path / "results" / ".work" / "p-1" / "agent"
            workdir.mkdir(parents=True)
            task = AgentTask(attempt_id="a1", app_name="hotel-reservation", app_namespace="hotel-reservation",
                             app_description="Hotel Reservation (gRPC services, MongoDB, memcached).",
                             api_url=server.api_url, mcp_url=server.mcp_url, kubeconfig=kubeconfig, workdir=workdir,
                             timeout=60, kubectl=kubectl_binary())
            return await CLIAgent(agent_name, **settings).run(task)
        finally:
            await server.stop()

    outcome = asyncio.run(scenario())
    texts = [s["message"] for s in outcome.trajectory if s["action"] == "text" and s["message"].startswith("REPORT ")]
    report = json.loads(texts[-1][len("REPORT "):]) if texts else None
    return outcome, sink, report


EXPECTED_USAGE = {  # (prompt, completion, cost, steps) from each fake's output
    "claude-code": (33_500, 900, 0.0421, 7),
    "codex": (26_549, 1590, 0.0, 2),
    "gemini-cli": (25_939, 224, 0.0, 5),
    "opencode": (3600, 420, 0.03, 1),
}


@pytest.mark.slow  # starts the MCP server and a sandboxed process (1-5 s each)
@needs_bwrap
@pytest.mark.parametrize("agent_name", sorted(ADAPTERS))
def test_fake_cli_through_the_adapter(tmp_path, monkeypatch, agent_name):
    adapter = ADAPTERS[agent_name]
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, adapter.binary)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SREGYM_HOME", str(tmp_path / "sregym-home"))
    monkeypatch.setenv("SREGYM_TEST_SECRET", "must-not-leak")
    key = adapter.provider_env[0]
    monkeypatch.setenv(key, "sk-provider-key")
    results_marker = tmp_path / "results" / "results.jsonl"
    results_marker.parent.mkdir(parents=True)
    results_marker.write_text("{}")
    markers = [str(REPO_FILE), str(results_marker), str(tmp_path / "sregym-home" / "agent-kubeconfig")]
    outcome, sink, report = run_cli(tmp_path, agent_name, env={"FAKE_MARKERS": ":".join(markers)})
    assert outcome.status == "ok", outcome.error
    assert outcome.error is None
    assert sink.received == ["geo Deployment in hotel-reservation runs image hotel:404 (was hotel:1.0)", "done"]
    prompt, completion, cost, steps = EXPECTED_USAGE[agent_name]
    assert (outcome.prompt_tokens, outcome.completion_tokens, outcome.steps) == (prompt, completion, steps)
    assert outcome.cost == pytest.approx(cost)
    # what the fake saw inside: the MCP server from its own config, kubectl with the copied kubeconfig,
    # a fresh HOME in the work directory, none of the benchmark's files, a scrubbed environment
    assert report["mcp_status"] == 200 and report["mcp_initialized"]
    assert report["kube_server"] == "https://127.0.0.1:6443"
    assert report["readable_markers"] == []
    workdir = tmp_path / "results" / ".work" / "p-1" / "agent" / agent_name
    # the CLI's own directory (a private copy when a root conductor drops privileges), copied back after
    assert report["home"] == report["cwd"] + "/home" and report["cwd"].endswith(f"/{agent_name}")
    assert report["cwd"] == str(workdir) or (os.geteuid() == 0 and "/.work/" not in report["cwd"])
    assert (workdir / "home" / ".kube" / "config").exists()
    assert key in report["env_keys"] and "SREGYM_TEST_SECRET" not in report["env_keys"]
    launch_step = outcome.trajectory[0]
    assert launch_step["action"] == "launch" and launch_step["sandbox"] == "bwrap"
    assert outcome.trajectory[-1]["action"] == "exit" and outcome.trajectory[-1]["stage"] == "tearing_down"
    if agent_name != "gemini-cli":  # gemini's JSON has per-tool counts only
        calls = [c for s in outcome.trajectory for c in s.get("tool_calls", ())]
        assert any(c["arguments"] == {"cmd": "kubectl get pods"} for c in calls)
    assert (workdir / "TASK.md").read_text().count("/submit") == 1
    json.dumps(list(outcome.trajectory))


def test_missing_binary_is_a_recorded_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SREGYM_CLAUDE_BINARY", raising=False)
    task = AgentTask(attempt_id="a", app_name="x", app_namespace="x", app_description="", api_url="http://127.0.0.1:9",
                     mcp_url="http://127.0.0.1:9/mcp", kubeconfig=tmp_path / "kc", workdir=tmp_path)
    outcome = asyncio.run(CLIAgent("claude-code").run(task))
    assert outcome.status == "crashed"
    assert "'claude' command is not installed" in outcome.error and "npm install -g @anthropic-ai/claude-code" in outcome.error


def test_unknown_setting_is_a_recorded_failure(tmp_path):
    task = AgentTask(attempt_id="a", app_name="x", app_namespace="x", app_description="", api_url="http://127.0.0.1:9",
                     mcp_url="http://127.0.0.1:9/mcp", kubeconfig=tmp_path / "kc", workdir=tmp_path)
    outcome = asyncio.run(CLIAgent("codex", sandbox_mode="off").run(task))
    assert outcome.status == "crashed" and "sandbox_mode" in outcome.error


@pytest.mark.slow
@needs_bwrap
def test_time_limit_stops_the_cli_and_everything_in_it(tmp_path, monkeypatch):
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "gemini")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    outcome, sink, _report = run_cli(tmp_path, "gemini-cli", timeout=2, env={"FAKE_SLEEP": "120"})
    assert outcome.status == "timeout" and "exceeded its 2 s limit" in outcome.error
    assert sink.received == []
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(bin_dir) in " ".join(p.info["cmdline"] or ())]
    assert leftovers == []


@pytest.mark.slow
def test_plain_subprocess_fallback_works(tmp_path, monkeypatch):
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "opencode")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    outcome, sink, report = run_cli(tmp_path, "opencode", sandbox="none")
    assert outcome.status == "ok" and len(sink.received) == 2
    assert outcome.trajectory[0]["sandbox"] == "none"
    assert report["home"].endswith("/opencode/home")


@pytest.mark.slow
@needs_bwrap
def test_cancellation_by_the_conductor_stops_the_cli(tmp_path, monkeypatch):
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "codex")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    workdir = tmp_path / "work"
    workdir.mkdir()
    task = AgentTask(attempt_id="a", app_name="x", app_namespace="x", app_description="", api_url="http://127.0.0.1:9",
                     mcp_url="http://127.0.0.1:9/mcp", kubeconfig=tmp_path / "kc", workdir=workdir, timeout=300,
                     kubectl=kubectl_binary())

    async def scenario():
        agent = CLIAgent("codex", env={"FAKE_SLEEP": "120"})
        run = asyncio.create_task(agent.run(task))
        for _ in range(100):
            pid_file = (agent.run_dir or workdir / "codex") / "fake.pid"
            if pid_file.exists() and pid_file.read_text():
                break
            await asyncio.sleep(0.1)
        assert pid_file.exists(), "the fake CLI never started"
        run.cancel()  # what the conductor does when the agent's time is up
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(scenario())
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(bin_dir) in " ".join(p.info["cmdline"] or ())]
    assert leftovers == []


def _files_kept(tmp_path: Path) -> dict[str, int]:
    """Every file kept with the attempt (its results directory), by name: the larger of its size and its allocated
    bytes less one filesystem block (a file's last block is allocated whole)."""
    kept = {}
    for root, _dirs, names in os.walk(tmp_path / "results"):
        for name in names:
            st = os.lstat(os.path.join(root, name))
            kept[name] = max(st.st_size, st.st_blocks * 512 - 4096)
    return kept


@pytest.mark.slow
@needs_bwrap
def test_no_file_the_cli_writes_or_extends_grows_past_the_limit_and_a_sparse_one_is_not_written_out(tmp_path,
                                                                                                    monkeypatch):
    """Red-team round 20, finding 2: `truncate -s 1G ~/x` in the sandbox (no block written) was copied back as 1 GiB
    of real blocks, so one command could fill the host's disk. The CLI runs under a file size limit (the kernel
    refuses the truncate and stops a writer at it) and the copy-back leaves out what is bigger."""
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "gemini")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    shell = ("truncate -s 1G sparse.img; echo $? > truncate.rc; head -c 3000000 /dev/zero > big.bin; echo $? > head.rc; "
             "truncate -s 1G /tmp/t.img; echo $? > tmp.rc")
    outcome, sink, report = run_cli(tmp_path, "gemini-cli", max_file_bytes=1_000_000, env={"FAKE_SHELL": shell})
    assert outcome.status == "ok", outcome.error
    assert len(sink.received) == 2  # the agent went on working
    kept = _files_kept(tmp_path)
    assert {"truncate.rc", "head.rc", "tmp.rc", "big.bin"} <= set(kept), sorted(kept)
    assert max(kept.values()) <= 1_000_000, {k: v for k, v in kept.items() if v > 1_000_000}
    rcs = {name: (tmp_path / "results").rglob(name) for name in ("truncate.rc", "head.rc", "tmp.rc")}
    assert all(int(next(paths).read_text()) != 0 for paths in rcs.values())


@pytest.mark.slow
@needs_bwrap
def test_a_cli_that_fills_its_work_directory_is_stopped_and_its_record_kept_within_the_budget(tmp_path, monkeypatch):
    """Red-team round 20, finding 2: the work directory (on the host's disk) had no bound. Past its budget the CLI
    is stopped, the attempt records why, and no more than the budget is kept."""
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "gemini")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    shell = "for i in 1 2 3 4 5 6 7 8; do head -c 900000 /dev/urandom > fill$i.bin; done; sleep 60"
    outcome, sink, _report = run_cli(tmp_path, "gemini-cli", max_file_bytes=1_000_000, max_workdir_bytes=4_000_000,
                                     env={"FAKE_SHELL": shell})
    assert outcome.status == "crashed" and "wrote more than 4000000 bytes" in outcome.error, outcome
    assert sink.received == []  # stopped before it submitted
    kept = _files_kept(tmp_path)
    assert sum(v for k, v in kept.items() if k.startswith("fill")) <= 4_000_000
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(bin_dir) in " ".join(p.info["cmdline"] or ())]
    assert leftovers == []


def _private_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("sregym-agent-*")}


@pytest.mark.slow
@needs_bwrap
def test_a_tree_deeper_than_a_path_can_name_is_counted_left_out_and_removed(tmp_path, monkeypatch):
    """Red-team round 21, finding 3: a tree 2500 levels deep (one mkdir and chdir at a time) crashed the copy-back
    ("File name too long"), the attempt was recorded as a crash and the CLI's private directory, with everything it
    wrote, stayed on the host's /tmp. The files at the bottom of such a tree count against the work directory's
    budget, the copy-back keeps what is shallow enough and leaves the rest out, and the private directory goes."""
    bin_dir = tmp_path / "tools" / "bin"
    install_fake(bin_dir, "gemini")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    deep = ("import os\nfor _ in range(300):\n    os.mkdir('d' * 40)\n    os.chdir('d' * 40)\n"
            "for i in range(5):\n    open(f'deep{i}.bin', 'wb').write(os.urandom(900000))\n")
    shell = f"echo shallow > top.txt; python3 -c \"{deep}\"; sleep 60"
    before = _private_dirs()
    outcome, sink, _report = run_cli(tmp_path, "gemini-cli", max_file_bytes=1_000_000, max_workdir_bytes=4_000_000,
                                     env={"FAKE_SHELL": shell})
    # the deep files were seen: past the budget the CLI was stopped (not a crash of the copy-back)
    assert outcome.status == "crashed" and "wrote more than 4000000 bytes" in outcome.error, outcome
    kept = _files_kept(tmp_path)
    assert "top.txt" in kept and not any(name.startswith("deep") for name in kept), sorted(kept)
    assert _private_dirs() <= before, "the CLI's private directory was left on the host"
