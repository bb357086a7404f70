"""`sregym run` harness options: agent or external harness, --stages, --agent-timeout, ports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.cli.run import _stages

SREGYM = str(Path(sys.executable).parent / "sregym")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SREGYM, "run", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SREGYM_HOME": "/nonexistent-sregym-home"})


@pytest.mark.parametrize("args", [("--problem", "hotel-wrong-image-geo"),
                                  ("--problem", "hotel-wrong-image-geo", "--agent", "noop", "--external-harness")])
def test_an_agent_or_the_external_harness_exactly(args):
    proc = run(*args)
    assert proc.returncode != 0 and "--agent NAME (repeatable) or --external-harness" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_port_is_a_usage_error():
    proc = run("--problem", "hotel-wrong-image-geo", "--agent", "noop", "--api-port", "70000")
    assert proc.returncode != 0 and "70000" in proc.stderr and "Traceback" not in proc.stderr


def test_help_names_upstreams_defaults():
    text = subprocess.run([SREGYM, "run", "--help"], capture_output=True, text=True, timeout=60).stdout
    for needle in ("--agent-timeout", "1800", "--stages", "API_PORT; 8000", "MCP_SERVER_PORT; 9954",
                   "API_BIND_HOST; 127.0.0.1", "--api-token", "--external-harness"):
        assert needle in text, needle


def test_stage_choices():
    assert _stages(None) is None
    assert _stages("both") == ("diagnosis", "mitigation")
    assert _stages("mitigation") == ("mitigation",)
