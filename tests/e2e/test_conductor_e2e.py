"""End to end: real embedded cluster, real Hotel Reservation, the conductor driven as a user does.

The cluster and the deployed app are shared with the other end-to-end modules (see conftest.py);
each test leaves the app reconciled to its baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.conductor.hostload import read_cpu_stall_us
from sregym_core.testing.verdicts import HACK_AGENTS, assert_fix_took, assert_hacks_fail

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

BIN = Path(sys.executable).parent
SREGYM, KUBECTL = str(BIN / "sregym"), str(BIN / "kubectl")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if not (_installed("sregym_cluster_embedded") and _installed("sregym_app_hotel_reservation")
        and _installed("sregym_agent_baselines") and _installed("sregym_fault_k8s")):
    pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents and the k8s faults",
                allow_module_level=True)


@pytest.fixture(scope="module")
def env(shared_cluster):
    home = shared_cluster.home
    deploy = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                             str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                            timeout=600)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    return {"environ": shared_cluster.environ, "home": home, "kubeconfig": shared_cluster.kubeconfig,
            "cluster": shared_cluster.name}


def _run(env, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([SREGYM, *args], env=env["environ"], capture_output=True, text=True, timeout=timeout)


def test_reference_passes_and_hackers_fail(env, tmp_path):
    results = tmp_path / "results"
    # with issue 14's hacks; restart-all runs in test_parallel_e2e's run, all seven in validation runs;
    # noop's failing grade: test_resume_skips_recorded_attempts
    agents = ("reference", "scale-zero-faulty", *HACK_AGENTS)
    proc = _run(env, "run", "--problem", "hotel-wrong-image-geo", *(f for a in agents for f in ("--agent", a)),
                "--cluster", env["cluster"], "--results", str(results), timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {r["agent"]: r for r in map(json.loads, (results / "results.jsonl").read_text().splitlines())}
    assert set(records) == set(agents)
    reference = records["reference"]
    # the fix took (state checks); the SLO window's rate is graded by validation runs, not on CI's machine
    assert reference["diagnosis_passed"]
    assert_fix_took(reference)
    assert reference["time_to_diagnose_s"] > 0 and reference["time_to_mitigate_s"] >= reference["time_to_diagnose_s"]
    assert reference["diagnosis"]["judge"] == "judge-rules"
    # on the embedded cluster the SLO window records how starved for CPU the host was (unknown without PSI)
    slo = next(c for c in reference["mitigation"]["children"] if c["name"] == "functional_slo")
    stall = slo["evidence"]["stats"]["host_cpu_stall"]
    assert stall is None if read_cpu_stall_us() is None else 0 <= stall <= 1, slo["evidence"]
    # the record spans the attempt: started before the injection, finished after grading
    assert reference["started_at"] < reference["finished_at"]
    assert records["scale-zero-faulty"]["mitigation_passed"] is False and not records["scale-zero-faulty"]["success"]
    # a hacker's evidence says why: the fault is still there or the baseline was broken
    hacker = records["scale-zero-faulty"]["mitigation"]
    failed = {c["name"] for c in hacker["children"] if not c["passed"]}
    assert failed & {"baseline_preserved", "fault_invariant", "functional_slo"}
    assert_hacks_fail(records)
    assert (results / "results.csv").exists()
    trajectory = json.loads((results / reference["trajectory_path"]).read_text())
    assert trajectory["steps"], "the reference agent's trajectory is recorded"
    report = _run(env, "report", str(results))
    assert report.returncode == 0 and "hotel-wrong-image-geo" in report.stdout
    assert (results / "report.html").exists()


def test_resume_skips_recorded_attempts(env, tmp_path):
    results = tmp_path / "results"
    first = _run(env, "run", "--problem", "hotel-scale-zero-rate", "--agent", "noop", "--cluster", env["cluster"],
                 "--results", str(results))
    assert first.returncode == 0, first.stderr[-2000:]
    again = _run(env, "run", "--problem", "hotel-scale-zero-rate", "--agent", "noop", "--cluster", env["cluster"],
                 "--results", str(results), "--resume")
    assert again.returncode == 0 and "skipped (--resume)" in again.stderr
    records = (results / "results.jsonl").read_text().splitlines()
    assert len(records) == 1
    noop = json.loads(records[0])  # doing nothing leaves the fault: no mitigation, no success
    assert noop["agent"] == "noop" and noop["mitigation_passed"] is False and not noop["success"]


def test_ctrl_c_stops_the_run_cleanly_keeps_what_was_recorded_and_leaves_the_app_whole(env, tmp_path):
    import signal
    import threading
    import time

    results = tmp_path / "results"
    # two noop attempts: the second is cut while its fault is surely in place (the noop agent never
    # fixes it, and grading waits for a recovery that does not come), so recovery is the run's doing
    proc = subprocess.Popen([SREGYM, "run", "--problem", "hotel-scale-zero-rate", "--agent", "noop", "--attempts", "2",
                             "--cluster", env["cluster"], "--results", str(results)],
                            env=env["environ"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as from a terminal: a suite started in the background (`cmd &` in a script)
                            # hands its children SIGINT ignored, and Python then keeps it ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    second_running = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            lines.append(line)
            if "noop #2: running" in line:
                second_running.set()

    def rate_replicas() -> int:
        out = subprocess.run([KUBECTL, "--kubeconfig", str(env["kubeconfig"]), "get", "deployment", "rate", "-n",
                              "hotel-reservation", "-o", "jsonpath={.spec.replicas}"], capture_output=True, text=True,
                             timeout=60)
        return int(out.stdout or -1)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert second_running.wait(600), "".join(lines)[-3000:]
        deadline = time.monotonic() + 60
        while rate_replicas() != 0:  # the second attempt's fault is injected
            assert time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    err = "".join(lines)
    assert proc.returncode == 130, err[-3000:]
    assert "Interrupted" in err and "unexpected" not in err and "Traceback" not in err, err[-3000:]
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    assert [(r["agent"], r["attempt"]) for r in records] == [("noop", 1)]  # the finished attempt is kept, the cut one is not
    # the interrupted attempt's fault is recovered: rate is back to its replica and Ready
    deploy = json.loads(subprocess.run([KUBECTL, "--kubeconfig", str(env["kubeconfig"]), "get", "deployment", "rate",
                                        "-n", "hotel-reservation", "-o", "json"], capture_output=True, text=True,
                                       timeout=60, check=True).stdout)
    assert deploy["spec"]["replicas"] >= 1, deploy["spec"]


def test_agent_kubeconfig_is_restricted(env):
    agent = env["home"] / "work" / "agent" / "hotel-reservation.kubeconfig"
    base = {**env["environ"], "KUBECONFIG": str(agent)}

    def kubectl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, *args], env=base, capture_output=True, text=True, timeout=60)

    assert kubectl("get", "pods", "-n", "hotel-reservation").returncode == 0
    for args in (("get", "pods", "-n", "hotel-workload"), ("get", "secrets", "-n", "sregym-system"),
                 ("get", "namespaces"), ("get", "secrets", "-n", "kube-system"),
                 ("get", "configmaps", "-n", "kube-system"), ("get", "configmaps", "-n", "ingress-nginx"),
                 ("get", "pods", "-n", "hotel-workload", "-o", "name")):
        denied = kubectl(*args)
        assert denied.returncode != 0 and "Forbidden" in denied.stderr, args
    # the cluster components an SRE on call reads (kube-proxy, the ingress controller): pods and logs only
    for namespace in ("kube-system", "ingress-nginx"):
        assert kubectl("get", "pods", "-n", namespace).returncode == 0, namespace
        assert kubectl("auth", "can-i", "get", "pods/log", "-n", namespace).stdout.strip() == "yes", namespace
        assert kubectl("auth", "can-i", "delete", "pods", "-n", namespace).stdout.strip() == "no", namespace
    assert kubectl("auth", "can-i", "get", "pods", "-n", "hotel-workload").stdout.strip() == "no"
    assert kubectl("auth", "can-i", "patch", "deployments", "-n", "hotel-reservation").stdout.strip() == "yes"


def test_an_agent_over_mcp_and_http(env, tmp_path):
    """A scripted agent uses the real MCP client and the HTTP API inside a real attempt."""
    script = tmp_path / "mcp_agent_run.py"
    script.write_text(MCP_AGENT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "results"), env["cluster"]], env=env["environ"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["bad_statuses"] == [422, 422, 422]
    assert seen["stage_after_bad"] == "diagnosis"
    assert "geo" in seen["kubectl_output"] and seen["refused"].startswith("Command Rejected:")
    assert seen["wrong_stage_status"] == 200 and seen["stage_while_grading"] == "mitigation"
    record = json.loads((tmp_path / "results" / "results.jsonl").read_text().splitlines()[0])
    assert record["agent"] == "mcp-script" and record["diagnosis_passed"] is True
    # "again" was absorbed: the mitigation was graded once, from the "done" submitted before it
    assert "no mitigation was submitted" not in json.dumps(record["mitigation"])


MCP_AGENT_SCRIPT = r'''
import asyncio, json, sys
from pathlib import Path

import httpx
from mcp import Client

from sregym_core import hookimpl
from sregym_core.agents import AgentOutcome
from sregym_core.clusters import get_cluster
from sregym_core.conductor.runner import RunPlan, run_plan
from sregym_core.plugins import process_host
from sregym_core.types import AgentSpec

SEEN = {}


class McpScriptAgent:
    async def run(self, task):
        async with httpx.AsyncClient(base_url=task.api_url, trust_env=False) as http:
            bad = [await http.post("/submit", content=b""), await http.post("/submit", content=b"{nope"),
                   await http.post("/submit", json={"answer": 1})]
            SEEN["bad_statuses"] = [r.status_code for r in bad]
            SEEN["stage_after_bad"] = (await http.get("/status")).json()["stage"]
            async with Client(task.mcp_url) as mcp:
                out = await mcp.call_tool("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {task.app_namespace}"})
                SEEN["kubectl_output"] = out.content[0].text
                refused = await mcp.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods | grep geo"})
                SEEN["refused"] = refused.content[0].text
                await mcp.call_tool("submit", {"ans": "The geo Deployment in namespace hotel-reservation has a container "
                                                     "image set to a tag that does not exist (ImagePullBackOff)."})
                while (await http.get("/status")).json()["stage"] == "diagnosis":  # graded while current
                    await asyncio.sleep(0.2)
                await mcp.call_tool("exec_kubectl_cmd_safely", {"cmd": f"kubectl rollout undo deployment/geo -n {task.app_namespace}"})
                await mcp.call_tool("submit", {"ans": "done"})
            # a second POST while the oracle grades the mitigation is absorbed, as upstream does
            again = await http.post("/submit", json={"solution": "again"})
            SEEN["wrong_stage_status"] = again.status_code
            SEEN["stage_while_grading"] = (await http.get("/status")).json()["stage"]
        return AgentOutcome(status="ok", steps=6)


class Plugin:
    @hookimpl
    def sregym_agents(self):
        return [AgentSpec(name="mcp-script", summary="scripted MCP agent", needs=frozenset({"mcp"}), factory=McpScriptAgent)]


host = process_host()
host.register(Plugin(), name="mcp-script-test")
problem = host.get_problems()["hotel-wrong-image-geo"]
plan = RunPlan(problems=[problem], agents=["mcp-script"], results_dir=Path(sys.argv[1]))
asyncio.run(run_plan(host, get_cluster(host, name=sys.argv[2]), plan))
print(json.dumps(SEEN))
'''
