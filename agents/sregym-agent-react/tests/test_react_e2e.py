"""End to end: ``sregym run --agent react`` on a real problem (Hotel Reservation, geo given an image tag
that does not exist) on the embedded cluster, with the model replaced by a scripted stub LLM on
127.0.0.1 that investigates, diagnoses from what kubectl actually shows, repairs and verifies.

The result record must hold the trajectory, the tokens and both verdicts. Skipped when the embedded
cluster or the app is not installed. Runs on the session's shared cluster (sregym_core.testing), reusing its app.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sregym_agent_react.stub import ScriptedLLM, last_tool_output, tool_call

from sregym_core.testing.verdicts import assert_fix_took

# in the second live lane to balance the two (conftest.py): that lane deploys Hotel once more for it
pytestmark = [pytest.mark.slow, pytest.mark.second_lane]
pytest.importorskip("sregym_cluster_embedded")
pytest.importorskip("sregym_app_hotel_reservation")

NS = "hotel-reservation"
SREGYM = Path(sys.executable).parent / "sregym"
CONTAINER_IMAGE = "{.spec.template.spec.containers[0].name}={.spec.template.spec.containers[0].image}"


class Notes:
    """What the scripted model has learned so far (filled in from the tool outputs it reads)."""

    container = bad_image = good_image = ""


def script() -> list:
    notes = Notes()

    def read_geo(request):
        # the pod listing came back; now look at geo's image
        return tool_call("exec_kubectl_cmd_safely",
                         {"cmd": f"kubectl get deployment geo -n {NS} -o jsonpath={CONTAINER_IMAGE}"},
                         content="geo is not running; checking its image.")

    def read_sibling(request):
        notes.container, _, notes.bad_image = last_tool_output(request).strip().partition("=")
        return tool_call("exec_kubectl_cmd_safely",
                         {"cmd": f"kubectl get deployment frontend -n {NS} -o jsonpath={{.spec.template.spec.containers[0].image}}"})

    def diagnose(request):
        notes.good_image = last_tool_output(request).strip()
        return tool_call("submit", {"ans": (
            f"Root cause: the geo Deployment in namespace {NS} has its container {notes.container} image set to "
            f"{notes.bad_image}, a tag that does not exist (the other services run {notes.good_image}). New geo pods "
            f"cannot pull the image and stay in ErrImagePull/ImagePullBackOff, so geo is down and searches fail.")})

    def repair(request):
        return tool_call("exec_kubectl_cmd_safely",
                         {"cmd": f"kubectl set image deployment/geo {notes.container}={notes.good_image} -n {NS}"})

    def verify_or_submit(request):
        if "Before declaring the mitigation done" in last_tool_output(request):
            return tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl rollout status deployment/geo -n {NS} --timeout=90s"})
        return tool_call("submit", {"ans": "done"})

    return [
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"}, content="Listing the pods."),
        read_geo, read_sibling, diagnose, repair,
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl rollout status deployment/geo -n {NS} --timeout=120s"}),
        tool_call("submit", {"ans": "done"}),
        verify_or_submit, verify_or_submit, verify_or_submit,
    ]


def test_react_agent_solves_wrong_image_on_the_embedded_cluster(embedded_cluster, tmp_path):
    # the session's shared cluster (sregym_core.testing): the app deployed on it is reused, as a
    # benchmark's second run reuses it
    results = tmp_path / "results"
    with ScriptedLLM(script()) as llm:
        env = {**embedded_cluster.environ, "AGENT_API_BASE": llm.url, "AGENT_API_KEY": "sk-stub",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        env.pop("AGENT_MODEL", None)
        proc = subprocess.Popen([str(SREGYM), "run", "--app", "hotel-reservation", "--fault", "wrong-image",
                                 "--target", "geo", "--agent", "react", "--model", "openai/stub-sre", "--timeout", "400",
                                 "--oracle-window", "5", "--results", str(results), "--cluster", embedded_cluster.name],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=1500)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            output, _ = proc.communicate(timeout=60)
            pytest.fail(f"sregym run did not finish in time:\n{output[-3000:]}")
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()] \
        if (results / "results.jsonl").exists() else []
    assert records, f"no result record; sregym run said:\n{output[-4000:]}"
    record = records[-1]
    if record.get("deploy_failed"):
        pytest.skip(f"the embedded cluster could not deploy hotel-reservation here: {record.get('error', '')[:300]}")
    assert record["agent"] == "react" and record["agent_status"] == "ok", record.get("error")
    # tokens from the stub's usage blocks (1200 prompt + 80 completion per call)
    calls = len(llm.requests)
    assert 7 <= calls <= 10
    assert record["prompt_tokens"] == 1200 * calls and record["completion_tokens"] == 80 * calls
    assert record["steps"] == calls
    # both verdicts
    assert record["diagnosis"] and record["diagnosis_passed"], record["diagnosis"]
    assert_fix_took(record)  # state checks; the SLO bar is graded by validation runs
    # the diagnosis was written from what kubectl showed: the injected tag, read from the live object
    geo_image = llm.requests[2]["messages"][-1]["content"]
    assert re.fullmatch(r"\S+=\S+:v9\.9\.9-missing", geo_image.strip()), geo_image  # the fault's default tag
    # the trajectory file holds every model step with its tool calls
    trajectory = json.loads((results / record["trajectory_path"]).read_text())
    steps = trajectory["steps"]
    assert len([s for s in steps if s.get("tool_calls")]) >= calls
    names = [c["function_name"] for s in steps for c in s.get("tool_calls", ())]
    assert names.count("submit") >= 2 and "exec_kubectl_cmd_safely" in names
    submitted = [c["arguments"].get("ans", "") for s in steps for c in s.get("tool_calls", ()) if c["function_name"] == "submit"]
    assert "v9.9.9-missing" in submitted[0] and submitted[-1] == "done"
