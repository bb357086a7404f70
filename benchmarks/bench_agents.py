"""Benchmark the agents' own overhead, without any model provider (everything on 127.0.0.1).

* react: seconds per step against the scripted stub LLM and a real MCP server over a fake kubectl
  (litellm request building, the HTTP round trip, the MCP tool call, bookkeeping), and the cost
  of ``import litellm``;
* CLI adapters: seconds to start a process in the bubblewrap sandbox versus a plain subprocess,
  and a whole adapter run with a fake CLI.

    python benchmarks/bench_agents.py [--steps 40] [--runs 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def bench_litellm_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import litellm"], check=True, capture_output=True)
    return time.perf_counter() - started


def bench_react(steps: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "agents" / "sregym-agent-react" / "tests"))
    from react_harness import NS, mcp_server
    from sregym_agent_react.agent import ReactAgent
    from sregym_agent_react.stub import ScriptedLLM, tool_call

    script = [tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"}) for _ in range(steps - 2)]
    script += [tool_call("submit", {"ans": "geo image tag missing"}), tool_call("submit", {"ans": "done"})]
    warmup = [tool_call("submit", {"ans": "warm-up"}), tool_call("submit", {"ans": "done"})]
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM(warmup + script) as llm:
        async def one_run(directory: Path):
            directory.mkdir()
            async with mcp_server(directory) as (_sink, _server, task):
                agent = ReactAgent(model="openai/stub", api_base=llm.url, self_check=False,
                                   max_steps_diagnosis=steps + 5, max_steps_mitigation=5)
                started = time.perf_counter()
                outcome = await agent.run(task)
                return outcome, time.perf_counter() - started

        asyncio.run(one_run(Path(tmp) / "warm-up"))  # litellm import and first connections
        outcome, seconds = asyncio.run(one_run(Path(tmp) / "measured"))
    latencies = [s["latency_s"] for s in outcome.trajectory if s["action"] == "llm"]
    return {"react_steps": outcome.steps, "react_seconds_per_step": seconds / max(outcome.steps, 1),
            "react_llm_roundtrip_p50_s": statistics.median(latencies) if latencies else 0.0}


def bench_sandbox(runs: int) -> dict[str, float]:
    from sregym_agent_cli.sandbox import Sandbox, bwrap_path

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, use in (("plain", False), ("bwrap", None)):
            if use is None and bwrap_path() is None:
                continue
            sandbox = Sandbox(workdir=Path(tmp), use_bwrap=use)
            times = []
            for _ in range(runs):
                argv, env = sandbox.wrap(["/bin/true"], {"PATH": "/usr/bin:/bin"})
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True)
                times.append(time.perf_counter() - started)
            figures[f"spawn_{label}_p50_s"] = statistics.median(times)
    return figures


def bench_cli_adapter() -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "agents" / "sregym-agent-cli" / "tests"))
    from test_cli_agents import install_fake, run_cli

    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = Path(tmp) / "tools" / "bin"
        install_fake(bin_dir, "codex")
        old_path = os.environ["PATH"]
        os.environ["PATH"] = f"{bin_dir}:{old_path}"
        try:
            started = time.perf_counter()
            outcome, _sink, _report = run_cli(Path(tmp), "codex")
            seconds = time.perf_counter() - started
        finally:
            os.environ["PATH"] = old_path
    return {"cli_adapter_run_s": seconds, "cli_adapter_status_ok": float(outcome.status == "ok")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, float] = {"litellm_import_s": bench_litellm_import()}
    figures.update(bench_react(args.steps))
    figures.update(bench_sandbox(args.runs))
    if shutil.which("kubectl") or (Path(sys.executable).parent / "kubectl").exists():
        figures.update(bench_cli_adapter())
    for key, value in figures.items():
        print(f"{key:32s} {value:10.4f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
