"""End to end: `sregym run --external-harness` with an upstream problem id, on the shared cluster.

An outside process is the agent, driving the episode as upstream's drivers do: it polls /status
from its start (before SREGym listens), reads /get_app, looks around through the MCP tools on
upstream's MCP port, submits its diagnosis twice (a retried POST), waits for the mitigation stage,
submits "done" twice, and polls /status until it reads ``done``. SREGym grades and records; the
results are read back with upstream's CSV conventions (``ast.literal_eval`` on every dict cell).
"""

from __future__ import annotations

import ast
import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SREGYM = str(Path(sys.executable).parent / "sregym")

pytest.importorskip("sregym_app_hotel_reservation")
pytest.importorskip("sregym_cluster_embedded")

OUTSIDE_AGENT = r"""
import asyncio, json, sys, time, urllib.error, urllib.request

from mcp import ClientSession
from mcp.client.sse import sse_client

base, mcp_base = sys.argv[1], sys.argv[2]
seen = {"statuses": [], "errors_after_last_submit": 0}

def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)

async def tool(family, name, arguments):
    async with sse_client(f"{mcp_base}/{family}/sse") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(name, arguments)
        return "".join(getattr(part, "text", "") for part in result.content)

deadline = time.time() + 800
while time.time() < deadline:
    try:
        code, body = call("/status")
        if not seen["statuses"] or seen["statuses"][-1] != [code, body.get("stage")]:
            seen["statuses"].append([code, body.get("stage")])
        if code == 200 and body["stage"] == "diagnosis":
            break
    except (urllib.error.URLError, ConnectionError):
        pass
    time.sleep(0.5)
seen["app"] = call("/get_app")[1]
seen["pods"] = asyncio.run(tool("kubectl", "exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n hotel-reservation"}))
seen["alerts"] = asyncio.run(tool("prometheus", "get_alerts", {}))
diagnosis = {"solution": "A NetworkPolicy in namespace hotel-reservation denies all ingress to the geo pods, so "
                         "search cannot reach geo."}
seen["diagnosis"] = [call("/submit", diagnosis), call("/submit", diagnosis)]
while call("/status")[1]["stage"] == "diagnosis":
    time.sleep(0.5)
seen["mitigation_stage"] = call("/status")[1]["stage"]
seen["mitigation"] = [call("/submit", {"solution": "done"}), call("/submit", {"solution": "done"})]
while time.time() < deadline:  # upstream's drivers poll until they read done
    try:
        stage = call("/status")[1]["stage"]
    except (urllib.error.URLError, ConnectionError):
        seen["errors_after_last_submit"] += 1
        time.sleep(0.5)
        continue
    seen["statuses"].append([200, stage])
    if stage == "done":
        break
    time.sleep(0.5)
print(json.dumps(seen))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.timeout(1500)  # a cluster start, a deploy and the reset after the attempt, on a loaded host: hangs only
def test_an_episode_by_upstream_id_as_upstreams_drivers_run_it(shared_cluster, tmp_path):
    deploy = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                             str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                            timeout=600)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    api, mcp = _free_port(), _free_port()
    script = tmp_path / "outside_agent.py"
    script.write_text(OUTSIDE_AGENT)
    results = tmp_path / "results"
    outside = subprocess.Popen([sys.executable, str(script), f"http://127.0.0.1:{api}", f"http://127.0.0.1:{mcp}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # no --agent-timeout: a run by upstream id gets upstream's 1800 s
        run = subprocess.run([SREGYM, "run", "--external-harness", "--problem", "network_policy_block",
                              "--oracle-window", "5", "--api-bind-host", "127.0.0.1",
                              "--api-port", str(api), "--mcp-port", str(mcp), "--cluster", shared_cluster.name,
                              "--results", str(results)], env=shared_cluster.environ, capture_output=True, text=True,
                             timeout=900)
        out, err = outside.communicate(timeout=60)
    finally:
        if outside.poll() is None:
            outside.kill()
    assert run.returncode == 0, run.stderr[-3000:]
    assert outside.returncode == 0, err[-2000:]
    seen = json.loads(out.strip().splitlines()[-1])
    assert [200, "diagnosis"] in seen["statuses"] and seen["statuses"][-1] == [200, "done"]
    assert seen["errors_after_last_submit"] == 0  # the API stayed up until the harness read `done`
    assert seen["app"]["namespaces"] == ["hotel-reservation"] and seen["app"]["app_name"] == "Hotel Reservation"
    assert "geo" in seen["pods"] and "Command Rejected" not in seen["pods"]
    assert seen["alerts"]  # "No firing alerts" or the list: an answer, not an error
    first, again = seen["diagnosis"]
    assert first == [200, {"status": "200", "message": "Submission received"}]
    # the retried POST is absorbed while the judge runs, or answered as a copy once it has: never the mitigation
    assert again[0] == 200 and again[1]["status"] in ("200", "duplicate")
    assert seen["mitigation_stage"] == "mitigation"
    assert seen["mitigation"][0] == [200, {"status": "200", "message": "Submission received"}]
    assert seen["mitigation"][1][0] in (200, 400)  # absorbed while graded, or "Cannot submit at stage" after

    record = json.loads((results / "results.jsonl").read_text().splitlines()[0])
    assert (record["problem_id"], record["upstream_id"]) == ("hotel-network-policy-block-geo", "network_policy_block")
    assert record["agent"] == "external-harness" and record["agent_timeout_s"] == 1800
    assert record["diagnosis"]["answers"], "the outside agent's diagnosis was judged"
    assert record["mitigation_passed"] is False  # it changed nothing
    assert 0 <= record["time_to_diagnose_s"] <= record["diagnosis_graded_s"] <= record["time_to_mitigate_s"]

    # upstream's readers: every dict cell through ast.literal_eval, checklist answers Yes/No
    rows = list(csv.DictReader(next(results.glob("*/external-harness_ALL_results.csv")).open()))
    assert len(rows) == 1
    row = rows[0]
    assert row["problem_id"] == "network_policy_block" and row["Mitigation.success"] == "False"
    assert float(row["agent_timeout_seconds"]) == 1800 and row["timed_out"] == "False"
    checklist = ast.literal_eval(row["Diagnosis.checklist"])
    assert checklist and {item["answer"] for item in checklist} <= {"Yes", "No"}
    dimensions = ast.literal_eval(row["Diagnosis.dimensions"])
    assert set(dimensions) == {"D1", "D2", "D3"} and all({"name", "score"} <= set(d) for d in dimensions.values())
    assert ast.literal_eval(row["Mitigation.oracles"])["passed"] is False
    run_dir = next(results.glob("*/external-harness/network_policy_block/run_1"))
    assert (run_dir / "network_policy_block_results.csv").is_file()
    trajectory = json.loads((run_dir / "trajectory.json").read_text())
    stamps = [step["timestamp"] for step in trajectory["steps"]]
    assert len(stamps) >= 2 and stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert trajectory["extra"]["upstream_id"] == "network_policy_block"
