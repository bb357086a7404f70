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


def test_side_by_side_each_environment_asks_for_its_own_token():
    """Red-team round 10, attack 3: with one token for the run, environment 1's agent submitted to environment 2's API.
    Each environment now asks for a token derived from the run's; one environment's token opens no other's API."""
    import asyncio

    import httpx

    from sregym_core.agent_api.server import AgentServer, environment_token

    class Sink:
        stage = "diagnosis"

        def __init__(self):
            self.received = []

        def submit(self, solution):
            self.received.append(solution)
            return 200, {"status": "accepted"}

        def app_info(self):
            return {"app_name": "fake", "namespace": "fake", "descriptions": ""}

    settings = ServeSettings.from_env({}, api_port=0, mcp_port=0, token="the-runs-token-0123456789")
    each = [serve_settings_for(settings, i, 2) for i in range(2)]
    assert [s.token for s in each] == [environment_token("the-runs-token-0123456789", 0), environment_token("the-runs-token-0123456789", 1)]
    assert len({s.token for s in each} | {"the-runs-token-0123456789"}) == 3
    sinks = [Sink(), Sink()]

    async def scenario():
        servers = [AgentServer(sink, None, settings=s) for sink, s in zip(sinks, each)]
        for server in servers:
            await server.start()
        try:
            async with httpx.AsyncClient(trust_env=False) as http:
                def auth(token):
                    return {"Authorization": f"Bearer {token}"}
                other = await http.post(f"{servers[1].api_url}/submit", json={"solution": "from env 1"},
                                        headers=auth(each[0].token))
                run = await http.post(f"{servers[1].api_url}/submit", json={"solution": "with the run's token"},
                                      headers=auth("the-runs-token-0123456789"))
                own = await http.post(f"{servers[1].api_url}/submit", json={"solution": "env 2's own"},
                                      headers=auth(each[1].token))
                assert (other.status_code, run.status_code, own.status_code) == (401, 401, 200)
        finally:
            for server in servers:
                await server.stop()

    asyncio.run(scenario())
    assert sinks[0].received == [] and sinks[1].received == ["env 2's own"]
