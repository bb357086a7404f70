"""``--parallel N`` without a cluster: per-environment ports, cluster names, clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.agent_api.server import ServeSettings
from sregym_core.cli._select import parallel_cluster_names
from sregym_core.conductor.runner import serve_settings_for

SREGYM = str(Path(sys.executable).parent / "sregym")


def _sregym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([SREGYM, *args], capture_output=True, text=True, timeout=60)


def test_one_environment_keeps_the_runs_ports():
    settings = ServeSettings.from_env({})
    assert serve_settings_for(settings, 0, 1) == settings  # upstream's :8000/:9954


def test_side_by_side_the_default_ports_become_free_ones():
    settings = ServeSettings.from_env({})
    for index in range(3):
        each = serve_settings_for(settings, index, 3)
        assert (each.api_port, each.mcp_port, each.strict) == (0, 0, True)
        assert each.bind_host == settings.bind_host


def test_side_by_side_explicit_ports_are_offset_by_the_environment():
    settings = ServeSettings.from_env({}, api_port=18000, mcp_port=19954)
    ports = [(s.api_port, s.mcp_port) for s in (serve_settings_for(settings, i, 3) for i in range(3))]
    assert ports == [(18000, 19954), (18001, 19955), (18002, 19956)]
    free = ServeSettings.from_env({}, api_port=0, mcp_port=0)
    assert serve_settings_for(free, 2, 3).api_port == 0


def test_parallel_cluster_names():
    assert parallel_cluster_names("sregym", 1) == ["sregym"]
    assert parallel_cluster_names("lab", 3) == ["lab", "lab-2", "lab-3"]


@pytest.mark.parametrize("command", ["run", "validate"])
def test_parallel_on_a_provider_that_does_not_start_clusters_is_a_clear_error(command):
    pytest.importorskip("sregym_cluster_kubeconfig")
    args = [command, "--problem", "hotel-scale-zero-rate", "--parallel", "2", "--provider", "kubeconfig"]
    if command == "run":
        args += ["--agent", "noop"]
    result = _sregym(*args)
    assert result.returncode != 0
    assert "--parallel 2 needs 2 clusters" in result.stderr and "Traceback" not in result.stderr


def test_parallel_is_bounded():
    result = _sregym("validate", "--problem", "hotel-scale-zero-rate", "--parallel", "0")
    assert result.returncode == 2 and "--parallel" in result.stderr


def test_a_problem_needing_missing_capabilities_is_skipped_with_the_reason(tmp_path):
    """The runner skips (and says why) what the cluster cannot run, and goes on; nothing is recorded."""
    import asyncio

    from sregym_core.conductor.runner import RunPlan, run_plan
    from sregym_core.plugins import new_plugin_host
    from sregym_core.progress import RunProgress

    host = new_plugin_host()
    problems = host.get_problems()
    if "hotel-network-delay-geo" not in problems:
        pytest.skip("needs hotel-reservation and the node faults")

    class RealCluster:  # stands in for a cluster reached through a kubeconfig: no embedded capabilities
        name = "elsewhere"
        capabilities = frozenset({"any", "real"})
        ups = 0

        def up(self):
            RealCluster.ups += 1

        def kubeconfig(self, agent=False):
            return tmp_path / "kubeconfig"

    said: list[str] = []
    progress = RunProgress(2, per_problem=2, interactive=False, stream=open(tmp_path / "progress", "w"))
    plan = RunPlan(problems=[problems["hotel-network-delay-geo"]], agents=["noop", "reference"],
                   results_dir=tmp_path / "results", observability=False,
                   serve=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True))
    records = asyncio.run(run_plan(host, RealCluster(), plan,
                                   progress=lambda line: (said.append(line), progress(line))))
    assert records == []
    assert ("hotel-network-delay-geo: skipped: fault 'network-delay' needs embedded, node-agent "
            "(cluster 'elsewhere' provides any, real)") in said
    assert progress.done == 2 and progress.skipped == 2  # the status line counts them as done
    assert RealCluster.ups == 1
