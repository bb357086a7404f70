"""The react agent through litellm against a scripted OpenAI-compatible stub on 127.0.0.1 and a real
MCP server (the conductor's ``AgentServer``) over a fake kubectl. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from react_harness import BAD_IMAGE, GOOD_IMAGE, NS, kubectl_calls, mcp_server
from sregym_agent_react.agent import ReactAgent
from sregym_agent_react.stub import ScriptedLLM, last_tool_output, text, tool_call, tool_calls

pytestmark = pytest.mark.slow  # imports litellm (about 20 s on 2 cores) and starts servers

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DIAGNOSIS = (f"Root cause: the geo Deployment in namespace {NS} runs image {BAD_IMAGE}, a tag that does not exist "
             f"(was {GOOD_IMAGE}); geo pods are stuck in ImagePullBackOff, so searches that need geo fail.")


def run_agent(tmp_path, script, **settings):
    """Run the agent against the stub; returns (outcome, sink, stub)."""
    with ScriptedLLM(script) as llm:
        async def scenario():
            async with mcp_server(tmp_path) as (sink, _server, task):
                agent = ReactAgent(model="openai/stub-sre", api_base=llm.url, api_key="sk-local-test",
                                   retry_backoff=0.01, **settings)
                outcome = await asyncio.wait_for(agent.run(task), 120)
                return outcome, sink

        outcome, sink = asyncio.run(scenario())
    return outcome, sink, llm


def diagnose_from_describe(request):
    # a realistic model reads the describe output before naming the image
    seen = last_tool_output(request)
    assert BAD_IMAGE in seen and "ImagePull" not in seen or "Failed to pull" in seen
    return tool_call("submit", {"ans": DIAGNOSIS}, content="The image tag does not exist.", prompt_tokens=2000,
                     completion_tokens=150)


def test_diagnosis_then_mitigation_with_self_check(tmp_path):
    script = [
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"}, content="Let me look at the pods."),
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl describe pod geo-7d9f8-x2x4k -n {NS}"}),
        diagnose_from_describe,
        # declares victory too early: the self-check must catch the unready geo pod
        tool_call("submit", {"ans": "done"}),
        tool_call("exec_kubectl_cmd_safely",
                  {"cmd": f"kubectl set image deployment/geo hotel-reservation-geo={GOOD_IMAGE} -n {NS}"}),
        tool_calls([("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"}), ("get_alerts", {})]),
        tool_call("submit", {"ans": "done"}),
    ]
    outcome, sink, llm = run_agent(tmp_path, script)
    assert outcome.status == "ok", outcome.error
    assert outcome.error is None
    assert sink.received == [DIAGNOSIS, "done"]
    assert outcome.steps == 7 and len(llm.requests) == 7
    assert outcome.prompt_tokens == 6 * 1200 + 2000 and outcome.completion_tokens == 6 * 80 + 150
    # the requests: temperature 0, the MCP tools as functions, the key sent, tool outputs fed back
    first = llm.requests[0]
    assert first["temperature"] == 0 and first["model"] == "stub-sre"
    functions = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"exec_kubectl_cmd_safely", "submit", "get_metrics", "get_logs", "get_traces"} <= set(functions)
    assert functions["exec_kubectl_cmd_safely"]["parameters"]["properties"]["cmd"]["type"] == "string"
    assert "hotel-reservation" in first["messages"][1]["content"] and first["messages"][0]["role"] == "system"
    assert llm.headers[0]["Authorization"] == "Bearer sk-local-test"
    assert "ImagePullBackOff" in llm.requests[1]["messages"][-1]["content"]
    # the early "done" was held back with the self-check's findings
    held = llm.requests[4]["messages"][-1]
    assert held["role"] == "tool" and "geo-7d9f8-x2x4k (Pending)" in held["content"]
    assert "Phase 2 of 2" in llm.requests[3]["messages"][-2]["content"] or any(
        "Phase 2 of 2" in (m.get("content") or "") for m in llm.requests[3]["messages"])
    # two tool calls in one reply both ran and both answered
    assert [m["role"] for m in llm.requests[6]["messages"][-2:]] == ["tool", "tool"]
    assert "not available" in llm.requests[6]["messages"][-1]["content"]  # no observability plugin here
    calls = kubectl_calls(tmp_path)
    assert any("set image deployment/geo" in c for c in calls), calls
    # trajectory: every model step with its tool calls, observations, tokens and timestamps, plus self-checks
    steps = [s for s in outcome.trajectory if s["action"] == "llm"]
    assert [s["phase"] for s in steps] == ["diagnosis"] * 3 + ["mitigation"] * 4
    assert steps[0]["tool_calls"][0]["name"] == "exec_kubectl_cmd_safely"
    assert steps[0]["tool_calls"][0]["arguments"] == {"cmd": f"kubectl get pods -n {NS}"}
    assert "ImagePullBackOff" in steps[0]["observations"][0]["content"]
    assert steps[2]["prompt_tokens"] == 2000 and steps[0]["message"] == "Let me look at the pods."
    assert all(isinstance(s["timestamp"], float) for s in outcome.trajectory)
    checks = [s for s in outcome.trajectory if s["action"] == "self_check"]
    assert [c["healthy"] for c in checks] == [False, True]
    json.dumps(list(outcome.trajectory))  # the record must be serialisable


def test_step_and_token_budgets_submit_on_the_models_behalf(tmp_path):
    script = [
        text("I suspect geo: its pod cannot pull its image " + BAD_IMAGE),
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"}),
        # mitigation: one call of 1280 tokens exhausts a 1000-token budget
        tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl rollout undo deployment/geo -n {NS}"}),
    ]
    outcome, sink, llm = run_agent(tmp_path, script, max_steps_diagnosis=2, max_tokens_mitigation=1000)
    assert len(llm.requests) == 3
    assert sink.received == ["I suspect geo: its pod cannot pull its image " + BAD_IMAGE, "done"]
    assert outcome.status == "ok"
    assert "diagnosis step budget exhausted (2 steps" in outcome.error
    assert "mitigation token budget exhausted (1 steps, 1280 tokens)" in outcome.error
    # the text-only reply was answered with a nudge back to the tools
    assert "calling one of the tools" in llm.requests[1]["messages"][-1]["content"]
    fallbacks = [s for s in outcome.trajectory if s["action"] == "submit_fallback"]
    assert [f["phase"] for f in fallbacks] == ["diagnosis", "mitigation"]


def test_budget_warning_before_the_last_steps(tmp_path):
    script = [tool_call("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"})] * 2 + [
        tool_call("submit", {"ans": DIAGNOSIS}), tool_call("submit", {"ans": "done"})]
    outcome, sink, llm = run_agent(tmp_path, script, max_steps_diagnosis=4, self_check=False)
    assert sink.received == [DIAGNOSIS, "done"]
    assert "2 step(s) left" in llm.requests[2]["messages"][-1]["content"]
    assert "step(s) left" not in json.dumps(llm.requests[1]["messages"])


def test_malformed_tool_arguments_are_reported_back(tmp_path):
    def after_error(request):
        seen = last_tool_output(request)
        assert "not valid JSON" in seen
        echoed = request["messages"][-2]["tool_calls"][0]["function"]["arguments"]
        assert echoed == "{}"  # the broken JSON is never replayed to the provider
        return tool_call("exec_kubectl_cmd_safely", {"cmd": f"kubectl get pods -n {NS}"})

    script = [
        tool_call("exec_kubectl_cmd_safely", '{"cmd": "kubectl get pods -n hotel'),
        after_error,
        tool_call("submit", '["not", "an", "object"]'),
        tool_call("submit", {"ans": DIAGNOSIS}),
        tool_call("submit", {"ans": "done"}),
    ]
    outcome, sink, llm = run_agent(tmp_path, script, self_check=False)
    assert outcome.status == "ok" and sink.received == [DIAGNOSIS, "done"]
    steps = [s for s in outcome.trajectory if s["action"] == "llm"]
    assert steps[0]["observations"][0]["error"].startswith("not valid JSON")
    assert steps[0]["tool_calls"][0]["arguments"] == {"raw": '{"cmd": "kubectl get pods -n hotel'}
    assert "expected a JSON object" in steps[2]["observations"][0]["error"]
    calls = kubectl_calls(tmp_path)
    assert len(calls) == 1 and calls[0].endswith(f"get pods -n {NS}")  # nothing ran for the broken calls


def test_provider_errors_are_retried_then_succeed(tmp_path):
    script = [503, 429, tool_call("submit", {"ans": DIAGNOSIS}), 500, tool_call("submit", {"ans": "done"})]
    outcome, sink, llm = run_agent(tmp_path, script, self_check=False, max_retries=2)
    assert outcome.status == "ok" and sink.received == [DIAGNOSIS, "done"]
    assert len(llm.requests) == 5
    steps = [s for s in outcome.trajectory if s["action"] == "llm"]
    assert [s["llm_attempts"] for s in steps] == [3, 2]
    assert outcome.steps == 2  # retries are not steps


def test_provider_errors_are_bounded(tmp_path):
    outcome, sink, llm = run_agent(tmp_path, [503] * 10, max_retries=2)
    assert outcome.status == "crashed" and len(llm.requests) == 3
    assert "ProviderError after 3 attempt(s)" in outcome.error
    assert sink.received == []


def test_client_errors_are_not_retried(tmp_path):
    outcome, _sink, llm = run_agent(tmp_path, [401] * 3, max_retries=3)
    assert outcome.status == "crashed" and len(llm.requests) == 1
    assert "AuthenticationError" in outcome.error


def test_no_model_is_a_recorded_failure(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_MODEL", raising=False)

    async def scenario():
        async with mcp_server(tmp_path) as (sink, _server, task):
            return await ReactAgent().run(task), sink

    outcome, sink = asyncio.run(scenario())
    assert outcome.status == "crashed" and sink.received == []
    assert "needs a model" in outcome.error and "AGENT_API_BASE" in outcome.error


def test_model_and_server_from_the_environment(tmp_path, monkeypatch):
    with ScriptedLLM([tool_call("submit", {"ans": DIAGNOSIS}), tool_call("submit", {"ans": "done"})]) as llm:
        monkeypatch.setenv("AGENT_MODEL", "openai/env-model")
        monkeypatch.setenv("AGENT_API_BASE", llm.url)
        monkeypatch.setenv("AGENT_API_KEY", "sk-from-env")

        async def scenario():
            async with mcp_server(tmp_path) as (sink, _server, task):
                return await ReactAgent(self_check=False).run(task), sink

        outcome, sink = asyncio.run(scenario())
    assert outcome.status == "ok" and sink.received == [DIAGNOSIS, "done"]
    assert llm.requests[0]["model"] == "env-model" and llm.headers[0]["Authorization"] == "Bearer sk-from-env"


def test_cost_is_summed_from_the_bundled_price_list(tmp_path):
    # gpt-4o-mini costs $0.15 per million input and $0.60 per million output tokens in litellm's list
    script = [tool_call("submit", {"ans": DIAGNOSIS}, prompt_tokens=1_000_000, completion_tokens=0),
              tool_call("submit", {"ans": "done"}, prompt_tokens=0, completion_tokens=1_000_000)]
    with ScriptedLLM(script) as llm:
        async def scenario():
            async with mcp_server(tmp_path) as (sink, _server, task):
                agent = ReactAgent(model="openai/gpt-4o-mini", api_base=llm.url, self_check=False)
                return await agent.run(task), sink

        outcome, sink = asyncio.run(scenario())
    assert sink.received == [DIAGNOSIS, "done"]
    assert outcome.cost == pytest.approx(0.15 + 0.60)
    assert [s["cost"] for s in outcome.trajectory if s["action"] == "llm"] == pytest.approx([0.15, 0.60])
