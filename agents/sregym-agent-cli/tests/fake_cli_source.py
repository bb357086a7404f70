#!/usr/bin/python3
"""A stand-in for claude / codex / gemini / opencode (installed under those names by the tests).

Stdlib only, because it runs inside the sandbox where the repo's virtualenv is invisible. It does
what the real CLI would in a good run: reads the MCP server from its own config file, opens an MCP
session, uses kubectl with $KUBECONFIG, submits a diagnosis and "done" to the URL in the prompt,
and prints its JSON output with token usage. It also reports which $FAKE_MARKERS it could read.
"""

import json
import os
import re
import subprocess
import sys
import time
import tomllib
import urllib.request

NAME = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]


def mcp_url():
    if NAME == "claude":
        path = ARGS[ARGS.index("--mcp-config") + 1]
        return json.load(open(path))["mcpServers"]["sregym"]["url"]
    if NAME == "codex":
        with open(os.path.join(os.environ["CODEX_HOME"], "config.toml"), "rb") as handle:
            return tomllib.load(handle)["mcp_servers"]["sregym"]["url"]
    if NAME == "gemini":
        path = os.path.join(os.environ["HOME"], ".gemini", "settings.json")
        return json.load(open(path))["mcpServers"]["sregym"]["httpUrl"]
    return json.load(open(os.environ["OPENCODE_CONFIG"]))["mcp"]["sregym"]["url"]


def post(url, body, headers=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=20) as reply:
        return reply.status, reply.read().decode()


if os.environ.get("FAKE_SHELL"):  # what a model's shell tool may run in the sandbox
    subprocess.run(["/bin/sh", "-c", os.environ["FAKE_SHELL"]], cwd=os.getcwd())

if os.environ.get("FAKE_SLEEP"):
    with open(os.path.join(os.getcwd(), "fake.pid"), "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(float(os.environ["FAKE_SLEEP"]))

prompt = ARGS[-1] if NAME in ("codex", "opencode") else ARGS[ARGS.index("-p") + 1]
submit_url = re.search(r"(http://127\.0\.0\.1:\d+/submit)", prompt).group(1)
status, init = post(mcp_url(), {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fake-cli", "version": "0"}}},
    {"Accept": "application/json, text/event-stream"})
server = subprocess.run(["kubectl", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"],
                        capture_output=True, text=True).stdout
readable = []
for path in filter(None, os.environ.get("FAKE_MARKERS", "").split(":")):
    try:
        open(path).read()
        readable.append(path)
    except OSError:
        pass
report = {"mcp_status": status, "mcp_initialized": '"serverInfo"' in init, "kube_server": server,
          "readable_markers": readable, "home": os.environ.get("HOME"), "cwd": os.getcwd(),
          "env_keys": sorted(os.environ)}
post(submit_url, {"solution": "geo Deployment in hotel-reservation runs image hotel:404 (was hotel:1.0)"})
post(submit_url, {"solution": "done"})
text = "REPORT " + json.dumps(report)

if NAME == "claude":
    for event in [
        {"type": "system", "subtype": "init", "tools": ["mcp__sregym__exec_kubectl_cmd_safely"]},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Checking pods."}, {
            "type": "tool_use", "id": "toolu_1", "name": "mcp__sregym__exec_kubectl_cmd_safely",
            "input": {"cmd": "kubectl get pods"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": [{"type": "text", "text": "geo 0/1 ImagePullBackOff"}]}]}},
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 7, "result": text,
         "total_cost_usd": 0.0421, "usage": {"input_tokens": 1500, "cache_creation_input_tokens": 2000,
                                             "cache_read_input_tokens": 30000, "output_tokens": 900}},
    ]:
        print(json.dumps(event))
elif NAME == "codex":
    for event in [
        {"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_1", "type": "mcp_tool_call", "server": "sregym",
                                            "tool": "exec_kubectl_cmd_safely", "arguments": {"cmd": "kubectl get pods"},
                                            "result": {"content": [{"type": "text", "text": "geo 0/1"}]},
                                            "status": "completed"}},
        {"type": "item.completed", "item": {"id": "item_2", "type": "command_execution", "command": "kubectl get deploy",
                                            "aggregated_output": "geo 0/1", "exit_code": 0, "status": "completed"}},
        {"type": "item.completed", "item": {"id": "item_3", "type": "agent_message", "text": text}},
        {"type": "turn.completed", "usage": {"input_tokens": 26549, "cached_input_tokens": 22272, "output_tokens": 1590}},
    ]:
        print(json.dumps(event))
elif NAME == "gemini":
    print("Loaded cached credentials.")  # real CLIs print notices before the JSON
    print(json.dumps({"response": text, "stats": {
        "models": {"gemini-2.5-pro": {"api": {"totalRequests": 4, "totalErrors": 0},
                                      "tokens": {"prompt": 24939, "candidates": 20, "total": 25113, "cached": 21263,
                                                 "thoughts": 154, "tool": 0}},
                   "gemini-2.5-flash": {"api": {"totalRequests": 1}, "tokens": {"prompt": 1000, "candidates": 50}}},
        "tools": {"totalCalls": 3, "byName": {"sregym__exec_kubectl_cmd_safely": {"count": 3}}}}}, indent=2))
else:
    for event in [
        {"type": "step_start", "timestamp": 1, "sessionID": "ses_1", "part": {"type": "step-start"}},
        {"type": "tool_use", "timestamp": 2, "sessionID": "ses_1", "part": {
            "type": "tool", "callID": "call_1", "tool": "sregym_exec_kubectl_cmd_safely",
            "state": {"status": "completed", "input": {"cmd": "kubectl get pods"}, "output": "geo 0/1"}}},
        {"type": "step_finish", "timestamp": 3, "sessionID": "ses_1", "part": {
            "type": "step-finish", "reason": "tool-calls", "cost": 0.01,
            "tokens": {"input": 1000, "output": 100, "reasoning": 20, "cache": {"read": 500, "write": 0}}}},
        {"type": "text", "timestamp": 4, "sessionID": "ses_1", "part": {"type": "text", "text": text}},
        {"type": "step_finish", "timestamp": 5, "sessionID": "ses_1", "part": {
            "type": "step-finish", "reason": "stop", "cost": 0.02,
            "tokens": {"input": 2000, "output": 300, "reasoning": 0, "cache": {"read": 0, "write": 100}}}},
    ]:
        print(json.dumps(event))
