"""Issue 34 attack 4, the host side: a CLI agent shared the host's network, so from its sandbox it
resolved hidden Services through the cluster DNS (127.47.0.10), read the workload generator's
``/stats`` and wrote its ``/control`` and Prometheus' ``/-/reload`` at their ClusterIPs.

The sandbox now has a network namespace of its own (loopback only) and reaches just the agent API,
the MCP server, the cluster's API server (each forwarded at its own address) and, through an
allowlisting CONNECT proxy, the model provider's hosts.

* without a cluster, twice (as this process runs, root in CI, and as a non-root conductor): an
  allowed listener answers at its own address, a listener on another loopback address and a DNS
  query to 127.47.0.10 get nothing, the proxy tunnels to an allowlisted host and refuses any other
  without connecting;
* live, on the deployed Hotel Reservation: a stand-in CLI run through the claude-code adapter (as
  the conductor runs one) with a restricted agent identity. With ``network: host`` (what every CLI
  had before) its probes resolve the generator's name and connect to it and to Prometheus; in the
  isolated sandbox the same probes fail, and the write to ``/control`` is refused, while the agent
  API answers and ``kubectl get pods`` works.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from sregym_agent_cli.netrelay import Endpoint, NetworkRelay
from sregym_agent_cli.sandbox import Sandbox, bwrap_path

HERE = Path(__file__).parent
KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"
NORMAL_USER = 1000

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not usable here")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = f"hello from {self.server.server_address[0]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def listeners():
    """An allowed listener on 127.0.0.1 and a 'hidden' one on 127.0.0.2, both answering on the host."""
    servers = [http.server.ThreadingHTTPServer((host, 0), _Hello) for host in ("127.0.0.1", "127.0.0.2")]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["this-process", "non-root-conductor"])
def conductor(request, monkeypatch):
    """The uid bubblewrap is started as (None: as this process does it)."""
    if request.param == "non-root-conductor":
        if os.geteuid() != 0:
            pytest.skip("this process is the non-root conductor already")
        import sregym_agent_cli.sandbox as module

        monkeypatch.setattr(module, "_dropping", lambda: False)
        return NORMAL_USER
    return None


def _probe_script(allowed: int, hidden: int, proxy: int) -> str:
    return f"""
import json, socket, urllib.request, time
out = {{}}
plain = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
def fetch(url):
    try:
        return plain.open(url, timeout=5).read().decode()
    except Exception as exc:
        return "failed: " + type(exc).__name__
out["allowed"] = fetch("http://127.0.0.1:{allowed}/")
out["hidden"] = fetch("http://127.0.0.2:{hidden}/")
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.settimeout(2)
try:
    udp.sendto(b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x00\\x01", ("127.47.0.10", 53))
    out["dns"] = "answered"
except OSError as exc:
    out["dns"] = "failed: " + type(exc).__name__
else:
    try:
        udp.recvfrom(512)
    except OSError as exc:
        out["dns"] = "failed: " + type(exc).__name__
def tunnel(target, then=b""):
    conn = socket.create_connection(("127.0.0.1", {proxy}), timeout=5)
    conn.sendall(b"CONNECT " + target + b" HTTP/1.1\\r\\nHost: " + target + b"\\r\\n\\r\\n" + then)
    data = b""
    conn.settimeout(5)
    try:
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data.decode(errors="replace")
out["proxy_other"] = tunnel(b"127.0.0.2:{hidden}", b"GET / HTTP/1.0\\r\\n\\r\\n")
out["proxy_allowed"] = tunnel(b"localhost:{allowed}", b"GET / HTTP/1.0\\r\\n\\r\\n")
print(json.dumps(out))
"""


def test_only_the_listed_endpoints_and_the_providers_hosts_are_reachable(listeners, conductor):
    allowed, hidden = listeners
    base = Path(tempfile.mkdtemp(prefix="sregym-net-"))
    base.chmod(0o755)  # reachable by the sandbox's unprivileged host user
    workdir = base / "work"
    workdir.mkdir()
    if conductor is not None:
        os.chown(workdir, conductor, conductor)
    relay = NetworkRelay(workdir / ".sregym-net", [Endpoint("127.0.0.1", allowed.server_port, "agent API")],
                         provider_hosts=[f"localhost:{allowed.server_port}"])
    try:
        relay.start()
        box = Sandbox(workdir=workdir, network="isolated", relay=relay)
        script = _probe_script(allowed.server_port, hidden.server_port, relay.proxy_port)
        argv, env = box.wrap(["/usr/bin/python3", "-c", script], {"PATH": "/usr/bin:/bin"})
        if conductor is not None:
            argv = ["setpriv", f"--reuid={conductor}", f"--regid={conductor}", "--clear-groups", "--", *argv]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90)
    finally:
        relay.stop()
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["allowed"] == "hello from 127.0.0.1"
    # from the host both answer: only the namespace keeps the second one out
    assert seen["hidden"].startswith("failed"), seen
    assert seen["dns"].startswith("failed"), seen
    assert seen["proxy_other"].startswith("HTTP/1.1 403"), seen
    assert "hello from" not in seen["proxy_other"]
    assert seen["proxy_allowed"].startswith("HTTP/1.1 200") and seen["proxy_allowed"].endswith("hello from 127.0.0.1")
    assert relay.refused == [f"CONNECT 127.0.0.2:{hidden.server_port} HTTP/1.1"]


# ------------------------------------------------------------------------------------------- live


def _installed(*modules: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


@pytest.fixture(scope="module")
def hotel(deployed_app):
    if not _installed("sregym_cluster_embedded", "sregym_app_hotel_reservation"):
        pytest.skip("needs the embedded cluster and hotel-reservation")
    return deployed_app("hotel-reservation")


def _admin(live, *args: str) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={live.env.cluster.kubeconfig()}", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


class _Sink:
    stage = "diagnosis"

    async def submit(self, solution):
        return 200, {"status": "200", "message": "Submission received"}

    def report_stage(self):
        return self.stage

    def app_info(self):
        return {"app_name": "Hotel Reservation", "namespace": NS}


def _run_probe(live, base: Path, targets: dict, network: str) -> dict:
    """The stand-in CLI through the claude-code adapter, with a fresh restricted agent identity."""
    from sregym_agent_cli.agent import CLIAgent

    from sregym_core.agent_api.server import AgentServer
    from sregym_core.agents import AgentTask
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    kube = Kube(live.env.cluster.kubeconfig())
    account = f"agent-netprobe-{network}"
    kubeconfig = grant_agent_access(kube, [NS], base / f"{network}.kubeconfig", account=account)
    workdir = base / network
    workdir.mkdir()
    previous = os.environ.get("PROBE_TARGETS")
    os.environ["PROBE_TARGETS"] = json.dumps(targets)

    async def scenario():
        async with AgentServer(_Sink(), None) as server:
            task = AgentTask(attempt_id="netprobe", app_name="hotel-reservation", app_namespace=NS,
                             app_description="Hotel Reservation.", api_url=server.api_url, mcp_url=server.mcp_url,
                             kubeconfig=kubeconfig, workdir=workdir, timeout=120, kubectl=KUBECTL)
            return await CLIAgent("claude-code", binary=str(base / "tools" / "claude"), network=network,
                                  pass_env=["PROBE_TARGETS"]).run(task)

    try:
        outcome = asyncio.run(scenario())
    finally:
        revoke_agent_access(kube, [NS], account)
        if previous is None:
            os.environ.pop("PROBE_TARGETS", None)
        else:
            os.environ["PROBE_TARGETS"] = previous
    probe = workdir / "claude-code" / "probe.json"
    assert probe.exists(), (outcome.status, outcome.error)
    return json.loads(probe.read_text())


@pytest.mark.slow
def test_the_cli_sandbox_reaches_the_agent_api_and_the_cluster_but_no_hidden_service(hotel):
    live = hotel
    workload = live.app.workload
    generator_ip = _admin(live, "get", "svc", workload.service, "-n", workload.namespace, "-o",
                          "jsonpath={.spec.clusterIP}")
    dns_ip = _admin(live, "get", "svc", "kube-dns", "-n", "kube-system", "-o",
                    "jsonpath={.spec.clusterIP}")
    prometheus_ip = _admin(live, "get", "svc", "prometheus", "-n", "observability", "-o",
                           "jsonpath={.spec.clusterIP}")
    assert generator_ip.startswith("127.") and dns_ip.startswith("127.") and prometheus_ip.startswith("127.")
    hidden_name = f"{workload.service}.{workload.namespace}.svc.cluster.local"
    base = Path(tempfile.mkdtemp(prefix="sregym-netprobe-"))
    base.chmod(0o755)
    (base / "tools").mkdir()
    fake = base / "tools" / "claude"
    shutil.copyfile(HERE / "fake_netprobe_cli.py", fake)
    fake.chmod(0o755)
    reach = [[generator_ip, workload.port], [prometheus_ip, 9090]]
    control_path = (f"/api/v1/namespaces/{workload.namespace}/services/{workload.service}:{workload.port}"
                    f"/proxy{workload.control_path}")
    live.run(live.env.resume_users(live.app.name))  # a run idles the users as it ends: running, to be stopped
    before = json.loads(_admin(live, "get", "--raw", control_path))
    assert before.get("rate"), before
    try:
        # what a CLI on the host's network reaches (the probes work: this is what the attack used)
        shared = _run_probe(live, base, {"dns": [dns_ip, 53, hidden_name], "tcp": reach}, "host")
        # the sandbox as the CLI agent builds it now
        isolated = _run_probe(live, base, {"dns": [dns_ip, 53, hidden_name], "tcp": reach,
                                           "control": f"http://{generator_ip}:{workload.port}/control"}, "isolated")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert shared["dns"]["answered"] and shared["dns"]["answers"] >= 1, shared
    assert all(t["connected"] for t in shared["tcp"]), shared
    assert not isolated["dns"]["answered"], isolated
    assert not any(t["connected"] for t in isolated["tcp"]), isolated
    assert isolated["control"]["status"] is None and "error" in isolated["control"], isolated
    for seen in (shared, isolated):
        assert seen["api_status"]["status"] == 200 and '"stage"' in seen["api_status"]["body"], seen
        assert seen["kubectl"]["code"] == 0 and "pod/" in seen["kubectl"]["out"], seen["kubectl"]
    # the generator was not stopped by the refused write
    control = json.loads(_admin(live, "get", "--raw", control_path))
    assert control.get("rate") == before.get("rate") and control.get("rate") != 0, (before, control)


def test_the_relay_cannot_be_rewired_or_talked_past(listeners):
    """Variants: replace the relay's sockets (they are mounted read-only), tunnel to an allowed host
    on another port or to a name that only starts like it, send a plain proxy request for a hidden
    URL, or dial the relay's Unix socket directly: each gets nowhere but the one allowed endpoint."""
    allowed, hidden = listeners
    base = Path(tempfile.mkdtemp(prefix="sregym-net-"))
    base.chmod(0o755)
    workdir = base / "work"
    workdir.mkdir()
    relay = NetworkRelay(workdir / ".sregym-net", [Endpoint("127.0.0.1", allowed.server_port, "agent API")],
                         provider_hosts=[f"localhost:{allowed.server_port}"])
    net = relay.directory
    script = f"""
import json, os, socket
out = {{}}
for name, action in (("unlink", lambda: os.unlink("{net}/ep-0.sock")),
                     ("rename", lambda: os.rename("{net}", "{workdir}/moved")),
                     ("plant", lambda: open("{net}/forwards.json", "w").write("{{}}"))):
    try:
        action()
        out[name] = "done"
    except OSError as exc:
        out[name] = "failed: " + type(exc).__name__
def ask(request):
    conn = socket.create_connection(("127.0.0.1", {relay.proxy_port}), timeout=5)
    conn.sendall(request)
    conn.settimeout(5)
    data = b""
    try:
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data.decode(errors="replace").split("\\r\\n")[0]
out["other_port"] = ask(b"CONNECT localhost:{hidden.server_port} HTTP/1.1\\r\\n\\r\\n")
out["lookalike"] = ask(b"CONNECT localhost.evil:{allowed.server_port} HTTP/1.1\\r\\n\\r\\n")
out["plain_get"] = ask(b"GET http://127.0.0.2:{hidden.server_port}/ HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
unix.connect("{net}/ep-0.sock")
unix.sendall(b"GET / HTTP/1.0\\r\\nHost: 127.0.0.2\\r\\n\\r\\n")
unix.settimeout(5)
reply = b""
while True:
    chunk = unix.recv(4096)
    if not chunk:
        break
    reply += chunk
out["unix"] = reply.decode(errors="replace").split("\\r\\n\\r\\n")[-1]
print(json.dumps(out))
"""
    try:
        relay.start()
        box = Sandbox(workdir=workdir, network="isolated", relay=relay)
        argv, env = box.wrap(["/usr/bin/python3", "-c", script], {"PATH": "/usr/bin:/bin"})
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90)
        spec_after = json.loads(relay.spec.read_text())
    finally:
        relay.stop()
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(seen[name].startswith("failed") for name in ("unlink", "rename", "plant")), seen
    assert spec_after["forwards"][0]["port"] == allowed.server_port
    for name in ("other_port", "lookalike", "plain_get"):
        assert seen[name].startswith("HTTP/1.1 403"), seen
    assert seen["unix"] == "hello from 127.0.0.1"  # the socket leads to its one endpoint, whatever is asked


def test_a_deep_work_directory_gets_a_short_relay_directory(listeners):
    """A Unix socket path holds at most 107 bytes; results directories can be deeper than that."""
    allowed, _hidden = listeners
    base = Path(tempfile.mkdtemp(prefix="sregym-net-"))
    base.chmod(0o755)
    workdir = base / ("deep-" * 20) / "results" / ".work" / "0123456789ab" / "agent" / "claude-code"
    workdir.mkdir(parents=True)
    for parent in workdir.relative_to(base).parents:
        (base / parent).chmod(0o755)
    relay = NetworkRelay(workdir / ".sregym-net", [Endpoint("127.0.0.1", allowed.server_port, "agent API")])
    try:
        relay.start()
        assert len(str(relay.directory / "ep-0.sock")) < 100 and relay.directory.exists()
        box = Sandbox(workdir=workdir, network="isolated", relay=relay)
        argv, env = box.wrap(["/usr/bin/python3", "-c", "import urllib.request; print(urllib.request.urlopen("
                              f"'http://127.0.0.1:{allowed.server_port}/', timeout=5).read().decode())"],
                             {"PATH": "/usr/bin:/bin"})
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        relay.stop()
        shutil.rmtree(base, ignore_errors=True)
    assert done.stdout.strip() == "hello from 127.0.0.1", done.stderr[-2000:]
    assert not relay.directory.exists()  # its own temporary directory goes with it
