"""End to end: `sregym run --external-harness` with an upstream problem id, on the shared cluster.

An outside process (a small Python script with plain HTTP, as an upstream driver would be) is the
agent: it polls /status on the configured API port, reads /get_app, submits a diagnosis, waits for
the mitigation stage and submits "done". SREGym grades and records both shapes of results.
"""

from __future__ import annotations

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
import json, sys, time, urllib.error, urllib.request

base = sys.argv[1]
seen = {"statuses": []}

def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)

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
seen["diagnosis"] = call("/submit", {"solution": "A NetworkPolicy in namespace hotel-reservation denies all ingress "
                                                  "to the geo pods, so search cannot reach geo."})
while call("/status")[1]["stage"] == "diagnosis":
    time.sleep(0.5)
seen["mitigation_stage"] = call("/status")[1]["stage"]
seen["mitigation"] = call("/submit", {"solution": "done"})
print(json.dumps(seen))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_external_harness_with_an_outside_agent(shared_cluster, tmp_path):
    deploy = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                             str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                            timeout=600)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    api, mcp = _free_port(), _free_port()
    script = tmp_path / "outside_agent.py"
    script.write_text(OUTSIDE_AGENT)
    results = tmp_path / "results"
    outside = subprocess.Popen([sys.executable, str(script), f"http://127.0.0.1:{api}"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        run = subprocess.run([SREGYM, "run", "--external-harness", "--problem", "network_policy_block",
                              "--agent-timeout", "600", "--oracle-window", "10", "--api-bind-host", "127.0.0.1",
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
    assert seen["statuses"][-1] == [200, "diagnosis"]
    assert seen["app"]["namespaces"] == ["hotel-reservation"]
    assert seen["diagnosis"] == [200, {"status": "200", "message": "Submission received"}]
    assert seen["mitigation_stage"] == "mitigation" and seen["mitigation"][0] == 200
    record = json.loads((results / "results.jsonl").read_text().splitlines()[0])
    assert record["problem_id"] == "hotel-network-policy-block-geo" and record["agent"] == "external-harness"
    assert record["diagnosis"]["answers"], "the outside agent's diagnosis was judged"
    assert record["mitigation_passed"] is False  # it changed nothing
    assert 0 <= record["time_to_diagnose_s"] <= record["diagnosis_graded_s"] <= record["time_to_mitigate_s"]
    rows = list(csv.DictReader(next(results.glob("*/external-harness_ALL_results.csv")).open()))
    assert rows[0]["problem_id"] == "hotel-network-policy-block-geo" and rows[0]["Mitigation.success"] == "False"
