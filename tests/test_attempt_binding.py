"""A request or MCP session belongs to the attempt it began in (red-team round 10, attacks 2 and 2b; issue #34).

Driven over real HTTP and the official MCP client against a real AgentServer: a submission whose body is held back
until the next attempt has attached is not graded for that attempt, and an MCP session opened in one attempt neither
runs kubectl nor submits for the next."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import httpx

from sregym_core.agent_api.kubectl_tool import KubectlTool
from sregym_core.agent_api.server import AgentServer


class Sink:
    """A minimal stage machine standing in for an attempt (the code around the server)."""

    def __init__(self, name: str):
        self.name = name
        self.stage = "diagnosis"
        self.received: list[str] = []

    def submit(self, solution: str):
        self.received.append(solution)
        self.stage = "mitigation" if self.stage == "diagnosis" else "done"
        return 200, {"status": "accepted", "attempt": self.name}

    def app_info(self):
        return {"app_name": "fake-app", "namespace": "fake", "descriptions": "A fake app."}


def _tool(tmp_path: Path, name: str) -> KubectlTool:
    script = tmp_path / f"kubectl-{name}"
    script.write_text(f"#!/bin/sh\necho \"{name}: $*\"\n")
    script.chmod(0o755)
    return KubectlTool(kubeconfig=tmp_path / f"{name}.kubeconfig", kubectl=str(script), isolation="none")


async def _held_submit(port: int, text: str, release: asyncio.Event) -> tuple[int, dict]:
    """POST /submit with every byte of the body but the last, the last one only once ``release`` is set."""
    body = json.dumps({"solution": text}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST /submit HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body[:-1])
    await writer.drain()
    await release.wait()
    writer.write(body[-1:])
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), timeout=30)
    writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(payload or b"{}")


def test_a_held_back_submission_is_not_graded_for_the_next_attempt(tmp_path):
    first, second = Sink("first"), Sink("second")

    async def scenario():
        server = AgentServer(first, _tool(tmp_path, "first"))
        await server.start()
        try:
            port = int(server.api_url.rsplit(":", 1)[1])
            release = asyncio.Event()
            held = asyncio.create_task(_held_submit(port, "the Ingress of frontend is misrouted", release))
            await asyncio.sleep(0.3)  # the request line and headers are in: it began in the first attempt
            server.attach(second, lambda _session: _tool(tmp_path, "second"))
            release.set()
            code, body = await held
            assert code == 409 and "ended" in body["detail"]
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False) as http:
                fresh = await http.post("/submit", json={"solution": "rate's Service has targetPort 9999"})
                assert fresh.status_code == 200 and fresh.json()["attempt"] == "second"
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert first.received == [] and second.received == ["rate's Service has targetPort 9999"]


@contextlib.asynccontextmanager
async def _sse_session(url: str):
    """An MCP session over SSE (a long-lived connection, the session an agent keeps open)."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def test_an_mcp_session_does_not_act_for_the_next_attempt(tmp_path):
    first, second = Sink("first"), Sink("second")

    async def scenario():
        server = AgentServer(first, _tool(tmp_path, "first"))
        await server.start()
        try:
            async with _sse_session(server.sse_url) as old:
                out = await old.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n fake"})
                assert out.content[0].text.startswith("first:")
                server.attach(second, lambda _session: _tool(tmp_path, "second"))
                refused = await old.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n fake"})
                assert refused.content[0].text.startswith("Command Rejected:") and "ended" in refused.content[0].text
                late = await old.call_tool("submit", {"ans": "a text sent by the earlier attempt's session"})
                assert "ended" in late.content[0].text
                # nor reads the current attempt's metrics, logs or traces (red-team round 12)
                for tool, args in (("get_metrics", {"query": "up"}), ("get_logs", {"query": "{}"}),
                                   ("get_traces", {"service": "geo"})):
                    read = await old.call_tool(tool, args)
                    assert "ended" in read.content[0].text, (tool, read.content[0].text)
                async with _sse_session(server.sse_url) as new:  # the current attempt's agent opens its own
                    out = await new.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl get pods -n fake"})
                    assert out.content[0].text.startswith("second:")
                    metrics = await new.call_tool("get_metrics", {"query": "up"})
                    assert "ended" not in metrics.content[0].text  # (no observability here: "not available")
                    answer = await new.call_tool("submit", {"ans": "rate's Service has targetPort 9999"})
                    assert "accepted" in answer.content[0].text
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert first.received == [] and second.received == ["rate's Service has targetPort 9999"]


def test_an_sse_session_opened_before_the_attempt_does_not_act_for_it(tmp_path):
    """Red-team round 11, finding 2: a session opened (initialized) in one attempt and first called in the next ran as
    the next attempt's identity. A session belongs to the attempt it was opened in, whether it made a call there or not."""
    first, second = Sink("first"), Sink("second")

    async def scenario():
        server = AgentServer(first, _tool(tmp_path, "first"))
        await server.start()
        try:
            async with _sse_session(server.sse_url) as old:  # opened, initialized, no call
                server.attach(second, lambda _session: _tool(tmp_path, "second"))
                refused = await old.call_tool("exec_kubectl_cmd_safely", {"cmd": "kubectl auth whoami"})
                assert refused.content[0].text.startswith("Command Rejected:") and "ended" in refused.content[0].text
                late = await old.call_tool("submit", {"ans": "sent by a session of the earlier attempt"})
                assert "ended" in late.content[0].text
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert first.received == [] and second.received == []


def test_an_sse_message_held_back_past_its_attempt_is_not_the_next_ones(tmp_path):
    """Red-team round 11, finding 1: ``POST .../messages/?session_id=`` with its last byte held back was taken by the
    attempt current when the body completed. Over the raw SSE protocol, as an outside harness would send it."""
    first, second = Sink("first"), Sink("second")

    async def scenario():
        server = AgentServer(first, _tool(tmp_path, "first"))
        await server.start()
        port = int(server.api_url.rsplit(":", 1)[1])
        try:
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False, timeout=30) as http, \
                    http.stream("GET", "/sse") as stream:
                lines = stream.aiter_lines()
                endpoint = ""
                async for line in lines:
                    if line.startswith("data:") and "session_id=" in line:
                        endpoint = line.split(":", 1)[1].strip()
                        break

                async def rpc(payload: dict) -> None:
                    assert (await http.post(endpoint, json=payload)).status_code == 202

                await rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
                await rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
                call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "submit", "arguments": {"ans": "held back past the attempt"}}}).encode()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(f"POST {endpoint} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(call)}\r\nConnection: close\r\n\r\n".encode() + call[:-1])
                await writer.drain()
                await asyncio.sleep(0.3)
                server.attach(second, lambda _session: _tool(tmp_path, "second"))
                writer.write(call[-1:])
                await writer.drain()
                await asyncio.wait_for(reader.read(), timeout=30)
                writer.close()
                result = ""
                async for line in lines:
                    if line.startswith("data:") and '"id":2' in line.replace(" ", ""):
                        result = line
                        break
                assert "ended" in result
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert first.received == [] and second.received == []


def test_a_caller_gone_before_its_body_arrived_is_no_server_error(tmp_path, capfd):
    """Red-team round 11: a held ``POST /submit`` cut when the CLI sandbox ended left an unhandled ASGI traceback in the
    run log. The request was never whole: nothing is submitted, nothing crashes, the server keeps answering."""
    sink = Sink("first")
    seen: list[str] = []

    async def scenario():
        server = AgentServer(sink, _tool(tmp_path, "first"))
        await server.start()
        port = int(server.api_url.rsplit(":", 1)[1])
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"POST /submit HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                         "Content-Length: 100\r\n\r\n".encode() + b'{"solution": "cut')
            await writer.drain()
            writer.close()
            async with httpx.AsyncClient(base_url=server.api_url, trust_env=False, timeout=30) as http:
                for _ in range(100):  # until the server has read the cut request; it answers /status meanwhile
                    assert (await http.get("/status")).json() == {"stage": "diagnosis"}
                    seen.append("".join(capfd.readouterr()))  # the run log: structlog on stdout, uvicorn on stderr
                    if any("client_gone" in e or "Exception in ASGI" in e for e in seen):
                        break
                    await asyncio.sleep(0.1)
        finally:
            await server.stop()

    asyncio.run(scenario())
    err = "".join(seen) + "".join(capfd.readouterr())
    assert sink.received == []
    assert "agent_api_client_gone" in err and "Exception in ASGI application" not in err and "Traceback" not in err
