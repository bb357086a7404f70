"""Issue 14 item 3: the kubectl tool reads and writes host files, changes identity, crashes.

Driven through the real MCP server (the official client) with a real agent identity on the shared
embedded cluster, as an agent would: host files cannot be read into the cluster or written from
it, identity cannot change in any spelling (including through a command run in a pod), and bad
input gets a clear refusal instead of an error.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"


@pytest.fixture(scope="module")
def agent(deployed, tmp_path_factory):
    """A fresh agent identity (as an attempt gets), a KubectlTool and an MCP server over it."""
    from sregym_core.agent_api.kubectl_sandbox import bwrap_usable
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    if bwrap_usable(KUBECTL) is None:
        pytest.skip("bubblewrap cannot build the kubectl sandbox here")
    kube = Kube(deployed.kubeconfig, kubectl=KUBECTL)
    account = f"agent-{uuid.uuid4().hex[:12]}"
    work = tmp_path_factory.mktemp("kubectl-attacks")
    kubeconfig = grant_agent_access(kube, [NS], work / "agent.kubeconfig", account=account, expiration_seconds=600)
    try:
        yield {"kubeconfig": kubeconfig, "work": work, "admin": deployed.kubeconfig}
    finally:
        revoke_agent_access(kube, [NS], account)
        kube.kubectl("delete", "configmap", "stolen", "-n", NS, "--ignore-not-found", check=False)


def _mcp_calls(agent, commands: list) -> list[str]:
    """Each command through exec_kubectl_cmd_safely of a real MCP server, in one session (a tuple
    ``(tool, arguments)`` calls another tool)."""
    from mcp import Client

    from sregym_core.agent_api.kubectl_tool import KubectlTool
    from sregym_core.agent_api.server import AgentServer

    class Sink:
        stage = "diagnosis"

        def submit(self, solution):
            return 200, {"status": "accepted"}

        def app_info(self):
            return {"app_name": "x", "namespace": NS, "descriptions": ""}

    async def scenario():
        server = AgentServer(Sink(), KubectlTool(kubeconfig=agent["kubeconfig"], kubectl=KUBECTL, namespace=NS))
        await server.start()
        try:
            async with Client(server.mcp_url) as client:
                calls = [c if isinstance(c, tuple) else ("exec_kubectl_cmd_safely", {"cmd": c}) for c in commands]
                return [(await client.call_tool(tool, arguments)).content[0].text for tool, arguments in calls]
        finally:
            await server.stop()

    return asyncio.run(scenario())


def _admin(agent, *args: str) -> subprocess.CompletedProcess:
    """kubectl as the cluster admin; a failure is an error (its empty output would pass an absence check)."""
    done = subprocess.run([KUBECTL, "--kubeconfig", str(agent["admin"]), *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (args, done.stderr)
    return done


def _a_pod(agent) -> str:
    # Hotel Reservation's pods carry app.kubernetes.io/name (an `app=` selector matched nothing, so the
    # attacks below ran against a pod named "")
    pod = _admin(agent, "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o",
                 "jsonpath={.items[0].metadata.name}").stdout
    assert pod.startswith("frontend-"), pod
    return pod


def test_host_files_cannot_be_read_into_the_cluster(agent):
    secret = agent["work"] / "ground-truth.txt"
    secret.write_text("THE-ANSWER")
    manifest = agent["work"] / "cm.yaml"
    manifest.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: stolen, namespace: {NS}}}\n"
                        "data: {answer: THE-ANSWER}\n")
    outs = _mcp_calls(agent, [f"kubectl create configmap stolen --from-file={secret}",
                              "kubectl create configmap stolen --from-file=/etc/shadow",
                              f"kubectl create secret generic stolen --from-env-file={secret}",
                              f"kubectl apply -f {manifest}", f"kubectl create -f {manifest}",
                              f"kubectl get pods -o go-template-file={secret}"])
    for out in outs:
        assert out.startswith("Command Rejected: Error executing kubectl command:") and "THE-ANSWER" not in out, out
    assert _admin(agent, "get", "configmap", "stolen", "-n", NS, "--ignore-not-found", "-o", "name").stdout == ""


def test_nothing_is_written_on_the_host(agent):
    pod = _a_pod(agent)
    target = agent["work"] / "written"
    outs = _mcp_calls(agent, [f"kubectl cp {NS}/{pod}:/etc/hostname {target}",
                              f"kubectl get pods --profile=cpu --profile-output={target}",
                              f"kubectl cluster-info dump --output-directory={agent['work']}/dump"])
    assert outs[0].startswith("Command Rejected: `kubectl cp` is not allowed")
    assert not target.exists() and not (agent["work"] / "dump").exists()


def test_identity_cannot_change(agent):
    admin_kubeconfig = str(agent["admin"])
    pod = _a_pod(agent)
    outs = _mcp_calls(agent, [
        "kubectl get secrets -n kube-system",  # the agent's own rights: refused by RBAC
        f"kubectl create token default -n {NS}",  # no tokens for other accounts either
        f"kubectl get secrets -n kube-system --kubeconfig {admin_kubeconfig}",
        "kubectl get secrets -n kube-system -shttps://127.0.0.1:1",
        "kubectl get secrets -n kube-system -As https://127.0.0.1:1",
        "kubectl get secrets -n kube-system --as=system:admin", "kubectl get secrets --as_group=system:masters",
        "kubectl get secrets --insecure_skip_tls_verify", "kubectl get secrets --context=admin",
        f"kubectl exec {pod} -n {NS} -- env KUBECONFIG={admin_kubeconfig} kubectl get secrets -A",
        f"kubectl exec {pod} -n {NS} -- cat /var/run/secrets/kubernetes.io/serviceaccount/token",
    ])
    assert "Forbidden" in outs[0] and "forbidden" in outs[1].lower() and "eyJ" not in outs[1]
    for out in outs[2:]:
        assert out.startswith("Command Rejected:") and "Error executing" not in out, out
    assert all("kube-root-ca" not in out and "token" not in out.split(":", 1)[0] for out in outs)


def test_oversized_and_malformed_commands_get_a_clear_refusal(agent):
    outs = _mcp_calls(agent, ["kubectl get pods " + "x" * 200_000, "kubectl get pods 'unbalanced",
                              "kubectl get pods\x00", "kubectl get pods | head", "kubectl logs -f deploy/frontend"])
    assert outs[0].startswith("Command Rejected: the command is") and "16384" in outs[0]
    assert all(out.startswith("Command Rejected:") for out in outs)
    # and the server still answers
    assert "frontend" in _mcp_calls(agent, [f"kubectl get deploy -n {NS}"])[0]


def test_mutations_are_dry_run_on_the_server_first_and_roll_back(agent):
    def label():
        return _admin(agent, "get", "deploy", "frontend", "-n", NS, "-o", "jsonpath={.metadata.labels.probe}").stdout

    outs = _mcp_calls(agent, [
        f"kubectl scale deploy no-such-deploy -n {NS} --replicas=2",
        f"kubectl label deploy frontend -n {NS} probe=1",
        f"kubectl label deploy frontend -n {NS} probe=2 --overwrite",
        ("get_previous_rollbackable_cmd", {}), ("rollback_command", {}), ("rollback_command", {}),
        ("get_previous_rollbackable_cmd", {}),
    ])
    assert outs[0].startswith("Command Rejected: Error executing kubectl command:\n") and "not found" in outs[0]
    assert "labeled" in outs[1] and "labeled" in outs[2]
    assert outs[3] == (f"1. kubectl label deploy frontend -n {NS} probe=1\n"
                       f"2. kubectl label deploy frontend -n {NS} probe=2 --overwrite")
    assert outs[4].endswith(f"action_stack: ['kubectl label deploy frontend -n {NS} probe=1']")
    assert outs[5].endswith("action_stack: []") and outs[6].startswith("No rollbackable command")
    assert label() == ""  # both labels undone, the deployment as it was
