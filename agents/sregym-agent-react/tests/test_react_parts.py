"""Fast checks of the react agent's parts: settings, truncation, context trimming, health parsing."""

from __future__ import annotations

import pytest
import sregym_agent_react.plugin
from sregym_agent_react.agent import parse_arguments
from sregym_agent_react.config import ReactConfig
from sregym_agent_react.context import Conversation
from sregym_agent_react.health import HealthReport, error_lines, firing_alerts, unready_pods
from sregym_agent_react.llm import is_retryable
from sregym_agent_react.tools import truncate

from sregym_core.errors import AgentError, ConfigError
from sregym_core.testing.contracts import AgentContract


class TestReactAgentContract(AgentContract):
    plugin = sregym_agent_react.plugin


def test_settings_merge_config_over_environment():
    env = {"AGENT_MODEL": "openai/env", "AGENT_API_BASE": "http://127.0.0.1:8000/v1", "AGENT_API_KEY": "sk-secret-123"}
    assert ReactConfig.from_settings({}, env).model == "openai/env"
    config = ReactConfig.from_settings({"model": "gpt-4o-mini", "max_steps_diagnosis": 5}, env)
    assert (config.model, config.api_base, config.api_key, config.budget("diagnosis")[0]) == (
        "gpt-4o-mini", "http://127.0.0.1:8000/v1", "sk-secret-123", 5)
    assert "sk-secret-123" not in repr(config)  # keys never end up in logs


@pytest.mark.parametrize("settings", [{"max_steps_diagnosis": 0}, {"max_retries": -1}, {"observation_chars": "many"},
                                      {"max_tokens_mitigation": True}])
def test_bad_settings_are_config_errors(settings):
    with pytest.raises(ConfigError):
        ReactConfig.from_settings(settings, {})


def test_unknown_settings_list_the_known_ones():
    with pytest.raises(ConfigError) as info:
        ReactConfig.from_settings({"modle": "x"}, {})
    assert "modle" in str(info.value) and "model" in info.value.hints[0]


def test_missing_model_is_an_agent_error_with_hints():
    with pytest.raises(AgentError) as info:
        ReactConfig.from_settings({}, {}).require_model()
    assert any("AGENT_MODEL" in hint for hint in info.value.hints)


def test_truncate_keeps_head_and_tail():
    text = "HEAD" + "x" * 10_000 + "TAIL"
    cut = truncate(text, 1000)
    assert len(cut) <= 1000 and cut.startswith("HEAD") and cut.endswith("TAIL") and "characters cut" in cut
    assert truncate("short", 1000) == "short"


def test_parse_arguments():
    assert parse_arguments('{"cmd": "kubectl get pods"}') == ({"cmd": "kubectl get pods"}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments('{"cmd": ')[1].startswith("not valid JSON")
    assert parse_arguments("[1]")[1] == "expected a JSON object, got list"


def _exchange(conversation, n, size):
    conversation.add({"role": "assistant", "content": None,
                      "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "t", "arguments": "{}"}}]})
    conversation.add({"role": "tool", "tool_call_id": f"c{n}", "content": "o" * size})


def test_trim_shortens_old_outputs_first_and_keeps_pins():
    conversation = Conversation()
    conversation.add({"role": "system", "content": "S" * 500}, pin=True)
    conversation.add({"role": "user", "content": "task"}, pin=True)
    for n in range(6):
        _exchange(conversation, n, 3000)
    cut = conversation.trim(12_000)
    assert cut > 0 and conversation.chars() <= 12_000
    assert conversation.messages[0]["content"] == "S" * 500 and conversation.messages[1]["content"] == "task"
    assert "older tool output shortened" in conversation.messages[3]["content"]
    assert conversation.messages[-1]["content"] == "o" * 3000  # the newest output is intact


def test_trim_drops_whole_exchanges_without_orphans():
    conversation = Conversation()
    conversation.add({"role": "system", "content": "S"}, pin=True)
    for n in range(20):
        _exchange(conversation, n, 250)
    conversation.trim(1500, keep_recent=4)
    assert conversation.chars() <= 1500
    messages = conversation.messages
    assert messages[0]["role"] == "system"
    for index, message in enumerate(messages):
        if message["role"] == "tool":  # every tool result follows the call that asked for it
            previous = messages[index - 1]
            assert previous.get("tool_calls") and previous["tool_calls"][0]["id"] == message["tool_call_id"]


def test_health_parsing():
    table = "a-1   Running   true,true   0\nb-1   Running   true,false   3\nc-1   Pending   <none>   0\njob-1   Succeeded   false   0\n"
    bad, note = unready_pods(table)
    assert bad == ["b-1 (Running, not ready)", "c-1 (Pending)"] and note is None
    assert unready_pods("Refused: nope")[1].startswith("could not list pods")
    assert firing_alerts("No alerts are firing or pending.") == 0
    assert firing_alerts("2 firing, 1 pending alerts:\n[firing] X") == 2
    assert firing_alerts("get_alerts is not available: ...") is None
    assert error_lines("12 lines from 2 streams for x over the last 1 min (3 look like errors); oldest first:") == 3
    report = HealthReport(healthy=False, unready_pods=("geo-1 (Pending)",), firing_alerts=1)
    assert "geo-1 (Pending)" in report.text() and "1 alert(s) firing" in report.text()


def test_retryable_classification():
    class RateLimitError(Exception):
        status_code = 429

    class AuthenticationError(Exception):
        status_code = 401

    class APIConnectionError(Exception):
        pass

    assert is_retryable(RateLimitError()) and is_retryable(APIConnectionError())
    assert not is_retryable(AuthenticationError()) and not is_retryable(ValueError())
