"""Issue #34 attack 5: the agent API and MCP listened on 0.0.0.0 without a credential, and an app
pod submitted a diagnosis in external-harness mode. Now they listen on 127.0.0.1 by default, refuse
callers from cluster pod ranges (on the embedded cluster those are loopback addresses too, so the
bind address alone keeps no pod out) and, with a run token, refuse requests without it.

A real server is started and real HTTP/MCP clients call it; the "pod" is a client socket bound to
an address of a registered pod range, which is exactly what a pod's connection looks like on the
embedded cluster (see tests/adversarial/test_oracle_and_reset_attacks.py for one from a real pod)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from sregym_core.agent_api.server import (DEFAULT_BIND_HOST, AgentServer, ServeSettings, refuse_callers_from,
                                          refused_caller)
from sregym_core.errors import UsageError

POD_RANGE = "127.42.0.0/16"  # the first embedded cluster's pods
POD_ADDRESS = "127.42.3.7"


class _Sink:
    stage = "diagnosis"

    def __init__(self) -> None:
        self.received: list[str] = []

    async def submit(self, solution):
        self.received.append(solution)
        return 200, {"status": "200", "message": "Submission received"}

    def app_info(self):
        return {"app_name": "x"}


def _client(server: AgentServer, source: str | None = None, **headers) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=source) if source else None
    return httpx.AsyncClient(base_url=server.api_url, trust_env=False, transport=transport, headers=headers)


def test_default_bind_is_loopback_and_from_env_reads_the_token():
    assert DEFAULT_BIND_HOST == "127.0.0.1" and ServeSettings().bind_host == "127.0.0.1"
    assert ServeSettings.from_env({}).bind_host == "127.0.0.1"
    settings = ServeSettings.from_env({"SREGYM_API_TOKEN": "t" * 20})
    assert settings.token == "t" * 20 and "tttt" not in repr(settings)
    with pytest.raises(UsageError):
        ServeSettings.from_env({}, token="short")


def test_embedded_pod_ranges_cover_every_cluster_on_the_host_but_not_the_harness():
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    refuse_callers_from(EmbeddedCluster("any").pod_networks())
    assert refused_caller("127.40.0.9") and refused_caller("127.42.1.2") and refused_caller("127.239.255.1")
    assert refused_caller("::ffff:127.43.0.10")  # a service address, IPv4-mapped
    assert not refused_caller("127.0.0.1") and not refused_caller("::1")


def test_a_caller_from_a_pod_range_is_refused_on_the_api_and_the_mcp_port():
    refuse_callers_from([POD_RANGE])
    sink = _Sink()

    async def main():
        server = AgentServer(sink, None)
        await server.start()
        try:
            async with _client(server, POD_ADDRESS) as pod:
                submitted = await pod.post("/submit", json={"solution": "read from the rules file"})
                status = await pod.get("/status")
                mcp = await pod.get(f"{server.mcp_base_url}/submit/sse")
            async with _client(server) as harness:
                ok = await harness.get("/status")
            return submitted, status, mcp, ok
        finally:
            await server.stop()

    submitted, status, mcp, ok = asyncio.run(main())
    assert (submitted.status_code, status.status_code, mcp.status_code) == (403, 403, 403)
    assert "pods" in submitted.json()["detail"]
    assert ok.status_code == 200 and sink.received == []


def test_with_a_run_token_requests_without_it_are_refused():
    token = "run-token-0123456789abcdef"
    sink = _Sink()

    async def main():
        server = AgentServer(settings=ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True,
                                                    token=token))
        server.attach(sink, lambda _key: None)
        await server.start()
        try:
            async with _client(server) as anonymous:
                refused = await anonymous.post("/submit", json={"solution": "x"})
                wrong = await anonymous.post("/submit", json={"solution": "x"}, headers={"Authorization": "Bearer nope"})
                app_info = await anonymous.get("/get_app")
                stage = await anonymous.get("/status")  # the conductor's own waiter reads the stage without it
                mcp = await anonymous.get(f"{server.mcp_base_url}/submit/sse")
            async with _client(server, Authorization=f"Bearer {token}") as harness:
                accepted = await harness.post("/submit", json={"solution": "geo runs a missing image"})
            async with _client(server, **{"X-SREGym-Token": token}) as other:
                app_ok = await other.get("/get_app")
            from mcp import ClientSession
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, streamable_http_client(server.mcp_url, http_client=http) as (read, write, *_), \
                    ClientSession(read, write) as session:
                await session.initialize()
                via_mcp = await session.call_tool("submit", {"ans": "over mcp"})
            return refused, wrong, app_info, stage, mcp, accepted, app_ok, via_mcp
        finally:
            await server.stop()

    refused, wrong, app_info, stage, mcp, accepted, app_ok, via_mcp = asyncio.run(main())
    assert (refused.status_code, wrong.status_code, app_info.status_code, mcp.status_code) == (401, 401, 401, 401)
    assert stage.status_code == 200
    assert accepted.status_code == 200 and app_ok.status_code == 200
    assert sink.received == ["geo runs a missing image", "over mcp"]
