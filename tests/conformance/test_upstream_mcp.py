"""Conformance: the MCP servers as upstream's drivers reach them (upstream-parity.md §2.2, §2.3).

Each mount is driven with the official SDK's SSE client (``mcp.client.sse.sse_client``), the
transport upstream's drivers use; the project's unified ``/mcp`` endpoint is checked to remain.
"""

from __future__ import annotations

import asyncio
import json

from fake_conductor import FakeAttempt, RecordingKubectl, serving
from mcp import ClientSession
from mcp.client.sse import sse_client

from sregym_core.types import ObservabilityEndpoints, ToolSpec

#: (mount, tool) -> (parameters, required, defaults), as in the facts file's tool table.
UPSTREAM_TOOLS = {
    ("kubectl", "exec_kubectl_cmd_safely"): ({"cmd"}, {"cmd"}, {}),
    ("kubectl", "rollback_command"): (set(), set(), {}),
    ("kubectl", "get_previous_rollbackable_cmd"): (set(), set(), {}),
    ("prometheus", "get_metrics"): ({"query"}, {"query"}, {}),
    ("prometheus", "get_alerts"): (set(), set(), {}),
    ("loki", "get_logs"): ({"query", "last_n_minutes"}, {"query"}, {"last_n_minutes": 15}),
    ("loki", "get_labels"): (set(), set(), {}),
    ("loki", "get_label_values"): ({"label"}, {"label"}, {}),
    ("jaeger", "get_services"): (set(), set(), {}),
    ("jaeger", "get_operations"): ({"service"}, {"service"}, {}),
    ("jaeger", "get_traces"): ({"service", "last_n_minutes"}, {"service", "last_n_minutes"}, {}),
    ("jaeger", "get_dependency_graph"): ({"last_n_minutes"}, set(), {"last_n_minutes": 30}),
    ("submit", "submit"): ({"ans"}, {"ans"}, {}),
}


def run(coro):
    return asyncio.run(coro)


async def call(url: str, tool: str, arguments: dict, headers: dict | None = None):
    async with sse_client(url, headers=headers) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool(tool, arguments)


async def list_tools(url: str):
    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return {tool.name: tool for tool in (await session.list_tools()).tools}


def echo_tool(name):
    return ToolSpec(name=name, call=lambda endpoints, **kwargs: f"{name} {json.dumps(kwargs, sort_keys=True)}",
                    upstream_call=lambda endpoints, **kwargs: f"upstream:{name} {json.dumps(kwargs, sort_keys=True)}")


def test_m1_m5_every_mount_has_upstreams_tools_parameters_and_defaults():
    async def scenario():
        async with serving() as server:
            for mount in ("kubectl", "prometheus", "jaeger", "loki", "submit"):
                tools = await list_tools(f"{server.mcp_base_url}/{mount}/sse")
                expected = {tool for (m, tool) in UPSTREAM_TOOLS if m == mount}
                assert set(tools) == expected, mount
                for name, tool in tools.items():
                    params, required, defaults = UPSTREAM_TOOLS[(mount, name)]
                    schema = tool.input_schema
                    assert set(schema.get("properties", {})) == params, name
                    assert set(schema.get("required", [])) == required, name
                    for key, value in defaults.items():
                        assert schema["properties"][key]["default"] == value, name

    run(scenario())


def test_m1_submit_mcp_on_the_api_port_and_the_unified_endpoint_remain():
    async def scenario():
        async with serving() as server:
            assert set(await list_tools(f"{server.api_url}/submit_mcp/sse")) == {"submit"}
            unified = await list_tools(server.sse_url)
            assert {name for (_m, name) in UPSTREAM_TOOLS} <= set(unified)
            from mcp import Client

            async with Client(server.mcp_url) as client:  # streamable HTTP, the project's addition
                names = {t.name for t in (await client.list_tools()).tools}
            assert names == set(unified)

    run(scenario())


def test_submit_returns_upstreams_shapes():
    async def scenario():
        attempt = FakeAttempt()
        async with serving() as server:
            server.attach(attempt, RecordingKubectl)
            # MCP port: {"status": "<http code>", "text": "<http body>"}
            early = await call(f"{server.mcp_base_url}/submit/sse", "submit", {"ans": "x"})
            assert early.structured_content == {"status": "400",
                                                "text": json.dumps({"detail": "Cannot submit at stage: 'setup'"})}
            attempt.desk.open()
            accepted = await call(f"{server.mcp_base_url}/submit/sse", "submit", {"ans": "geo is broken"})
            assert accepted.structured_content["status"] == "200"
            assert json.loads(accepted.structured_content["text"]) == {"status": "200", "message": "Submission received"}
            assert json.loads(accepted.content[0].text) == accepted.structured_content  # an object, not a string
            # API port (/submit_mcp and the unified server): {"status": "200"|"done"|"error", "text": ...}
            again = await call(f"{server.api_url}/submit_mcp/sse", "submit", {"ans": "dup"})
            # upstream's two keys as upstream answers them; absorbed while the diagnosis is graded, it also says
            # so, as the HTTP answer does (red-team round 8: an MCP client could not tell it was dropped)
            assert {k: again.structured_content[k] for k in ("status", "text")} == {"status": "200",
                                                                                      "text": "Submission received"}
            assert again.structured_content["graded"] == "false" and "not graded" in again.structured_content["detail"]
            attempt.desk.done()
            done = await call(server.sse_url, "submit", {"ans": "more"})
            assert done.structured_content["status"] == "done"
            attempt.desk.stage = "tearing_down"
            error = await call(f"{server.api_url}/submit_mcp/sse", "submit", {"ans": "late"})
            assert error.structured_content == {"status": "error", "text": "Cannot submit at stage: 'tearing_down'"}
            assert attempt.desk.submissions == {"diagnosis": "geo is broken"}
            attempt.judge.release.set()

    run(scenario())


def test_m4_kubectl_sessions_are_keyed_by_sregym_ssid_or_session_id():
    async def scenario():
        RecordingKubectl.made.clear()
        async with serving() as server:
            server.attach(FakeAttempt(), RecordingKubectl)
            url = f"{server.mcp_base_url}/kubectl/sse"
            a1 = await call(url, "exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"}, {"sregym_ssid": "alpha"})
            a2 = await call(url, "exec_kubectl_cmd_safely", {"cmd": "kubectl get svc"}, {"sregym_ssid": "alpha"})
            b1 = await call(url, "exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"}, {"sregym_ssid": "beta"})
            # same header across connections: one session (its history grows); another header: its own
            assert "session=ssid:alpha" in a1.content[0].text and "history=1" in a1.content[0].text
            assert "session=ssid:alpha" in a2.content[0].text and "history=2" in a2.content[0].text
            assert "session=ssid:beta" in b1.content[0].text and "history=1" in b1.content[0].text
            listed = await call(url, "get_previous_rollbackable_cmd", {}, {"sregym_ssid": "alpha"})
            assert listed.content[0].text == "1. kubectl get pods\n2. kubectl get svc"
            # without the header, the SSE transport's session_id names the session: one per connection
            async with sse_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                one = await session.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"})
                two = await session.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"})
            assert one.content[0].text.split()[0] == two.content[0].text.split()[0]
            assert one.content[0].text.split()[0].startswith("session=sse:") and "history=2" in two.content[0].text
            other = await call(url, "exec_kubectl_cmd_safely", {"cmd": "kubectl get pods"})
            assert other.content[0].text.split()[0] != one.content[0].text.split()[0]

    run(scenario())


def test_observability_mounts_call_the_upstream_variants_with_upstreams_defaults():
    names = ["get_metrics", "get_alerts", "get_logs", "get_labels", "get_label_values", "get_services",
             "get_operations", "get_traces", "get_dependency_graph"]
    tools = {n: echo_tool(n) for n in names}

    async def scenario():
        async with serving(tools=tools, endpoints=ObservabilityEndpoints()) as server:
            server.attach(FakeAttempt(), RecordingKubectl)
            base = server.mcp_base_url
            logs = await call(f"{base}/loki/sse", "get_logs", {"query": '{app="geo"}'})
            assert logs.content[0].text == 'upstream:get_logs {"last_n_minutes": 15, "query": "{app=\\"geo\\"}"}'
            graph = await call(f"{base}/jaeger/sse", "get_dependency_graph", {})
            assert graph.content[0].text == 'upstream:get_dependency_graph {"last_n_minutes": 30}'
            values = await call(f"{base}/loki/sse", "get_label_values", {"label": "app"})
            assert values.content[0].text == 'upstream:get_label_values {"label": "app"}'
            missing = await call(f"{base}/jaeger/sse", "get_traces", {"service": "geo"})
            assert missing.is_error  # last_n_minutes is required upstream
            native = await call(server.sse_url, "get_dependency_graph", {})
            assert native.content[0].text == 'get_dependency_graph {"last_n_minutes": 15}'

    run(scenario())
