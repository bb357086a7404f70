"""judge-llm through litellm against a scripted OpenAI-compatible stub server on 127.0.0.1 and
litellm's mock_response. No network beyond 127.0.0.1."""

from __future__ import annotations

import json
import time

import pytest
from judge_llm_stub import rules_backed_reply
from sregym_judge_llm.judge import LLMJudge, make_llm_judge

from sregym_core.errors import ConfigError
from sregym_core.oracles.judge import QUESTION_IDS, Judge
from sregym_core.types import GroundTruth

pytestmark = pytest.mark.slow  # starts a server and imports litellm (slow on 2 cores)

NS = "hotel-reservation"
SERVICES = ("frontend", "search", "geo", "rate", "profile", "recommendation", "user", "reservation")
COMPONENTS = SERVICES + tuple(f"postgres-{s}" for s in SERVICES[2:]) + ("memcached-rate", "memcached-profile", "memcached-reservation")
TRUTH = GroundTruth(
    fault="wrong-image", layer="k8s", components=("geo",), namespace=NS, resource_kind="Deployment",
    mechanism="the geo container image was set to a tag that does not exist",
    mutated_values={"image": {"before": "sregym/hotel-reservation:1.0", "after": "sregym/hotel-reservation:1.0-rc9"}},
    symptoms=("geo pods in ImagePullBackOff",),
)
GOOD = "The geo deployment's image sregym/hotel-reservation:1.0-rc9 does not exist, so geo pods are in ImagePullBackOff and searches fail."
EVERY_SERVICE = (
    "All eight services are broken: frontend, search, geo, rate, profile, recommendation, user and reservation all have "
    "image tag 1.0-rc9 which does not exist, so everything is in ImagePullBackOff."
)


def answers_json(no=()):
    return json.dumps({"answers": [{"id": q, "answer": q not in no, "evidence": f"about {q}", "confidence": 0.8} for q in QUESTION_IDS]})


def judge_for(stub, **kwargs):
    return LLMJudge(model="openai/stub-judge", api_base=stub.url, api_key="sk-test-secret", **kwargs)


def run(judge, submission=GOOD):
    return judge.judge(submission, (TRUTH,), app_components=COMPONENTS, app_namespace=NS)


def test_valid_reply(stub_llm):
    stub_llm.script = [answers_json(no=("char_values",))]
    judge = judge_for(stub_llm)
    assert isinstance(judge, Judge)
    verdict = run(judge)
    assert verdict.judge == "judge-llm" and verdict.error is None
    assert verdict.passed and verdict.dimensions["characterization"] == pytest.approx(2 / 3)
    assert verdict.tokens == {"prompt": 500, "completion": 120}
    assert verdict.answers[4].evidence == "about char_values" and verdict.answers[4].confidence == 0.8
    request = stub_llm.requests[0]
    assert request["model"] == "stub-judge" and request["temperature"] == 0
    assert request["response_format"] == {"type": "json_object"}
    assert "BEGIN DIAGNOSIS" in request["messages"][1]["content"] and GOOD in request["messages"][1]["content"]
    assert stub_llm.headers[0]["Authorization"] == "Bearer sk-test-secret"
    assert "sk-test-secret" not in json.dumps(verdict.to_dict())  # the key is never stored
    assert verdict.inputs["model"] == "openai/stub-judge"


def test_malformed_then_valid_retries_with_feedback(stub_llm):
    stub_llm.script = ["I think the diagnosis is mostly right!", answers_json()]
    verdict = run(judge_for(stub_llm))
    assert verdict.passed and len(stub_llm.requests) == 2
    retry = stub_llm.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I think the diagnosis is mostly right!"}
    assert "could not be used: not valid JSON" in retry[-1]["content"]
    assert verdict.tokens == {"prompt": 1000, "completion": 240}  # both calls counted
    assert verdict.inputs["retries"][0].startswith("reply 1: not valid JSON")


def test_malformed_forever_is_bounded_and_recorded(stub_llm):
    stub_llm.script = ['{"answers": "all good"}']
    verdict = run(judge_for(stub_llm, max_attempts=3))
    assert len(stub_llm.requests) == 3
    assert not verdict.passed and verdict.composite == 0.0
    assert "no valid reply from openai/stub-judge after 3 attempt(s)" in verdict.error
    assert verdict.tokens["prompt"] == 1500


def test_server_errors_then_valid(stub_llm):
    stub_llm.script = [500, answers_json()]
    verdict = run(judge_for(stub_llm))
    assert verdict.passed and len(stub_llm.requests) == 2
    assert verdict.inputs["retries"][0].startswith("call 1:")


def test_unreachable_server_gives_error_verdict_quickly():
    import socket

    with socket.socket() as s:  # a port on 127.0.0.1 that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = LLMJudge(model="openai/stub-judge", api_base=f"http://127.0.0.1:{port}/v1", max_attempts=2, timeout=5)
    started = time.monotonic()
    verdict = run(judge)
    assert not verdict.passed and "call 2:" in verdict.error
    assert time.monotonic() - started < 120  # suite-rules: outer-bound (refused at once; a retry loop would not end)


def test_adversarial_listing_every_service_fails_scope(stub_llm):
    stub_llm.script = [rules_backed_reply]
    judge = judge_for(stub_llm)
    good = run(judge, GOOD)
    assert good.passed, good.to_dict()["answers"]
    broad = run(judge, EVERY_SERVICE)
    assert not broad.passed
    assert broad.dimensions["scope"] == 0.0
    assert broad.dimensions["localization"] == 1.0 and broad.dimensions["characterization"] > 0


def test_scope_all_false_fails_even_when_everything_else_is_perfect(stub_llm):
    stub_llm.script = [answers_json(no=("scope_no_unrelated", "scope_all_faults", "scope_priority"))]
    verdict = run(judge_for(stub_llm), EVERY_SERVICE)
    assert verdict.composite == pytest.approx(2 / 3, abs=1e-6) and not verdict.passed


def test_threshold_from_config(stub_llm):
    stub_llm.script = [answers_json(no=("char_values", "char_chain"))]  # composite 7/9 = 0.78
    assert run(judge_for(stub_llm, threshold=0.7)).passed
    assert not run(judge_for(stub_llm, threshold=0.8)).passed


def test_environment_configuration(stub_llm, monkeypatch):
    stub_llm.script = [answers_json()]
    monkeypatch.setenv("JUDGE_MODEL", "openai/env-model")
    monkeypatch.setenv("JUDGE_API_BASE", stub_llm.url)
    monkeypatch.setenv("JUDGE_API_KEY", "sk-from-env")
    verdict = run(make_llm_judge(threshold=0.9))
    assert verdict.passed and verdict.threshold == 0.9
    assert stub_llm.requests[0]["model"] == "env-model"
    assert stub_llm.headers[0]["Authorization"] == "Bearer sk-from-env"


def test_litellm_mock_response_records_cost():
    judge = LLMJudge(model="gpt-4o-mini", completion_kwargs={"mock_response": answers_json(no=("loc_namespace",))})
    verdict = run(judge)
    assert verdict.passed and verdict.answer("loc_namespace") is False
    assert verdict.cost is not None and verdict.cost > 0
    assert verdict.tokens["prompt"] > 0


def test_configuration_errors(monkeypatch):
    monkeypatch.delenv("JUDGE_MODEL", raising=False)
    with pytest.raises(ConfigError) as info:
        LLMJudge()
    assert any("JUDGE_MODEL" in h for h in info.value.hints)
    with pytest.raises(ConfigError, match="max_attempts"):
        LLMJudge(model="x", max_attempts=0)
    with pytest.raises(ConfigError, match="threshold"):
        LLMJudge(model="x", threshold=3)
    with pytest.raises(ConfigError, match="does not take temperature"):
        make_llm_judge(model="x", temperature=1)
