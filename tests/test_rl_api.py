"""The RL environment API without a cluster: action parsing, rewards, the vector form's conventions,
and clear errors for bad arguments (the live episodes are in tests/e2e/test_rl_env_e2e.py)."""

from __future__ import annotations

import threading
import time

import attrs
import pytest

import sregym
from sregym_core.errors import UsageError
from sregym_core.rl import InvalidAction, ToolCall, default_reward, parse_action
from sregym_core.rl.vector import SregymVectorEnv


@pytest.mark.parametrize("action, expected", [
    ("kubectl get pods -n hotel", ToolCall("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n hotel"})),
    ("metrics  up{job='x'} ", ToolCall("get_metrics", {"query": "up{job='x'}"})),
    ("alerts", ToolCall("get_alerts")),
    ("logs frontend", ToolCall("get_logs", {"query": "frontend"})),
    ("traces search", ToolCall("get_traces", {"service": "search"})),
    ("dependencies", ToolCall("get_dependency_graph")),
    ("submit the rate deployment has zero replicas", ToolCall("submit", {"ans": "the rate deployment has zero replicas"})),
    ("wait 5", ToolCall("wait", {"seconds": 5})),
    ({"tool": "get_logs", "args": {"query": "geo", "last_n_minutes": 5}},
     ToolCall("get_logs", {"query": "geo", "last_n_minutes": 5})),
    ('{"tool": "submit", "args": {"ans": "done"}}', ToolCall("submit", {"ans": "done"})),
])
def test_actions_are_tool_calls(action, expected):
    assert parse_action(action) == expected


@pytest.mark.parametrize("action, says", [
    ("rm -rf /", "unknown verb 'rm'"),
    ("submit", "needs an argument"),
    ("alerts now", "takes no argument"),
    ("wait 600", "1..60"),
    ("wait soon", "whole seconds"),
    ({"tool": "shell", "args": {}}, "unknown tool 'shell'"),
    ({"tool": "get_metrics", "args": {}}, "missing ['query']"),
    ({"tool": "get_metrics", "args": {"query": "up", "host": "x"}}, "unexpected ['host']"),
    ({"tool": "get_logs", "args": {"query": "geo", "last_n_minutes": "5"}}, "must be int"),
    ({"tool": "wait", "args": {"seconds": True}}, "must be int"),
    ("{not json", "not JSON"),
    (42, "got int"),
])
def test_malformed_actions_say_what_is_wrong(action, says):
    with pytest.raises(InvalidAction, match=None) as caught:
        parse_action(action)
    assert says in str(caught.value)


@attrs.define
class _Record:
    diagnosis_passed: bool | None
    mitigation_passed: bool | None


@pytest.mark.parametrize("diagnosis, mitigation, reward", [
    (True, True, 1.0), (True, False, 0.5), (False, True, 0.5), (False, False, 0.0),
    (None, True, 1.0), (None, False, 0.0), (True, None, 1.0), (None, None, 0.0),
])
def test_reward_is_the_share_of_graded_stages_passed(diagnosis, mitigation, reward):
    assert default_reward(_Record(diagnosis, mitigation)) == reward


class _FakeEnv:
    """Stands in for SregymEnv: episodes of ``length`` steps, each step taking ``delay`` seconds."""

    def __init__(self, length: int, delay: float = 0.0) -> None:
        self.length, self.delay = length, delay
        self.resets: list[int | None] = []
        self.steps = 0
        self.closed = False
        self.threads: set[str] = set()
        self.entered: list[float] = []  # when each step began and ended (to see steps overlap)
        self.left: list[float] = []

    def reset(self, *, seed=None, options=None):
        self.resets.append(seed)
        self.steps = 0
        return f"episode {len(self.resets)}", {"episode": len(self.resets)}

    def step(self, action):
        self.threads.add(threading.current_thread().name)
        self.entered.append(time.monotonic())
        time.sleep(self.delay)
        self.left.append(time.monotonic())
        self.steps += 1
        done = self.steps >= self.length
        return f"did {action}", (1.0 if done else 0.0), done, False, {"step": self.steps}

    def close(self):
        self.closed = True


def test_vector_env_steps_side_by_side_and_autoresets_in_the_same_step():
    envs = [_FakeEnv(1, delay=0.3), _FakeEnv(2, delay=0.3)]
    vec = SregymVectorEnv(envs)
    observations, infos = vec.reset(seed=7)
    assert observations == ("episode 1", "episode 1") and [e.resets for e in envs] == [[7], [8]]
    observations, rewards, terminated, truncated, infos = vec.step(["a", "b"])
    # both steps at once, not one after the other: each began before the other ended
    assert envs[0].entered[-1] < envs[1].left[-1] and envs[1].entered[-1] < envs[0].left[-1]
    assert rewards == (1.0, 0.0) and terminated == (True, False) and truncated == (False, False)
    # env 0 ended: it was reset in the same step; its last observation and info ride along
    assert observations == ("episode 2", "did b")
    assert infos[0]["final_observation"] == "did a" and infos[0]["final_info"] == {"step": 1}
    assert infos[0]["episode"] == 2 and "final_info" not in infos[1]
    with pytest.raises(UsageError, match="expected 2 actions"):
        vec.step(["only one"])
    vec.close()
    assert all(e.closed for e in envs)
    with pytest.raises(UsageError, match="closed"):
        vec.reset()


def test_vector_env_checks_its_seeds():
    vec = SregymVectorEnv([_FakeEnv(1), _FakeEnv(1)])
    with pytest.raises(UsageError, match="expected 2 seeds"):
        vec.reset(seed=[1, 2, 3])
    vec.reset(seed=[None, 4])
    vec.close()


def test_make_rejects_unknown_problems_and_counts_clearly():
    with pytest.raises(UsageError, match="unknown problem"):
        sregym.make("no-such-problem")
    with pytest.raises(UsageError, match="num_envs"):
        sregym.make_vec("hotel-scale-zero-rate", num_envs=0)
    with pytest.raises(UsageError, match="needs a problem"):
        sregym.make([])
