"""The conductor HTTP API and MCP server, driven over real HTTP with httpx and the official MCP client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from sregym_core.agent_api.kubectl_tool import KubectlTool, RefusedCommand, parse_command
from sregym_core.agent_api.server import AgentServer
from sregym_core.types import ObservabilityEndpoints, ToolSpec


class Sink:
    """A minimal stage machine standing in for an attempt (the code around the server)."""

    def __init__(self):
        self.stage = "diagnosis"
        self.received: list[str] = []

    def submit(self, solution: str):
        if self.stage == "diagnosis":
            self.received.append(solution)
            self.stage = "mitigation"
            return 200, {"status": "accepted", "stage": self.stage}
        if self.stage == "mitigation":
            self.received.append(solution)
            self.stage = "tearing_down"
            return 200, {"status": "accepted", "stage": self.stage}
        return 409, {"error": f"no submission is expected in stage {self.stage!r}"}

    def app_info(self):
        return {"app_name": "fake-app", "namespace": "fake", "descriptions": "A fake app."}


def fake_kubectl(tmp_path: Path) -> Path:
    script = tmp_path / "kubectl"
    script.write_text("#!/bin/sh\necho \"kubectl-called: $*\"\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("cmd", ["kubectl get pods | grep x", "kubectl get pods > /tmp/x", "kubectl get pods; rm -rf /",
                                 "kubectl edit deploy x", "kubectl exec -it p -- sh", "kubectl get pods -w",
                                 "kubectl get pods --kubeconfig /etc/admin", "kubectl logs -f p",
                                 "kubectl port-forward p 80", "", "bash -c ls", "kubectl get pods --token=abc"])
def test_refused_commands(cmd):
    with pytest.raises(RefusedCommand):
        parse_command(cmd)


def test_accepted_commands():
    assert parse_command("kubectl get pods -n hotel -o wide").argv == ("get", "pods", "-n", "hotel", "-o", "wide")
    assert parse_command("kubectl logs deploy/geo --tail=20").verb == "logs"
    assert parse_command("kubectl exec geo-1 -- cat /etc/config.yaml").remote == ("cat", "/etc/config.yaml")


def test_http_api_and_mcp(tmp_path):
    sink = Sink()
    tool = KubectlTool(kubeconfig=tmp_path / "kubeconfig", kubectl=str(fake_kubectl(tmp_path)), isolation="none")
    metrics = ToolSpec(name="get_metrics", summary="x", call=lambda endpoints, query: f"{endpoints.prometheus_url} {query}")

    async def scenario():
        server = AgentServer(sink, tool, tools={"get_metrics": metrics},
                             endpoints=ObservabilityEndpoints(prometheus_url="http://prom"))
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http:
                assert (await http.get("/status")).json() == {"stage": "diagnosis"}
                assert (await http.get("/get_app")).json()["app_name"] == "fake-app"
                empty = await http.post("/submit", content=b"")
                garbage = await http.post("/submit", content=b"{not json")
                missing = await http.post("/submit", json={"answer": "x"})
                assert [r.status_code for r in (empty, garbage, missing)] == [422, 422, 422]
                assert missing.json()["detail"][0]["loc"] == ["body", "solution"]
                assert sink.stage == "diagnosis" and sink.received == []  # bad submissions change nothing

            from mcp import Client

            async with Client(server.mcp_url) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"exec_kubectl_cmd_safely", "get_metrics", "get_logs", "get_traces", "submit",
                        "rollback_command", "get_previous_rollbackable_cmd", "get_dependency_graph"} <= names
                out = await client.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n fake"})
                assert "kubectl-called:" in out.content[0].text and "get pods -n fake" in out.content[0].text
                refused = await client.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods | head"})
                assert refused.content[0].text.startswith("Command Rejected:")
                metric = await client.call_tool("get_metrics", {"query": "up"})
                assert metric.content[0].text == "http://prom up"
                logs = await client.call_tool("get_logs", {"query": "geo", "last_n_minutes": 5})
                assert "not available" in logs.content[0].text
                first = await client.call_tool("submit", {"ans": "geo has a wrong image"})
                assert json.loads(first.content[0].text)["status"] == "accepted"  # the sink's own status
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http:
                done = await http.post("/submit", json={"solution": "done"})
                assert done.status_code == 200
                late = await http.post("/submit", json={"solution": "again"})
                assert late.status_code == 409  # whatever the attached attempt answers
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert sink.received == ["geo has a wrong image", "done"]
