"""Issue 34, round 5, attack 9: acting as the FleetCast operator. A pod may name any ServiceAccount of
its namespace, so the agent ran one as ``datastore-operator`` (whose Role writes
``datastoreclusters/status``, deletes claims and StatefulSets, which the agent's own identity may
not) and forged the DatastoreCluster's status from inside it.

Tried with a fresh attempt identity's kubeconfig and real kubectl on the embedded cluster running
FleetCast (the app whose baseline holds such an account), the API server's admission
(``apiserver/account_admission.py``) must refuse the pod (``kubectl run --overrides``), a Deployment
naming the account, a token request and a legacy token Secret for it; fixing the operator's
Deployment (its image put back) must keep working, and an account the agent makes and binds within
its own rights may still be named.

The follow-up (the operator's own pod and Deployment): ``kubectl exec`` into the operator's pod (which
read its mounted token), ``kubectl cp``, ``kubectl attach`` and a ``kubectl debug`` ephemeral container
are refused while its logs stay readable, and a command or args written into the operator's
Deployment are refused while the image fix still works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.second_lane]  # FleetCast: the second live lane (conftest.py)

KUBECTL = str(Path(sys.executable).parent / "kubectl")
OPERATOR = "datastore-operator"
IMAGE = "sregym/fleetcast-operator:1.0"


@pytest.fixture(scope="module")
def fleet(deployed_app, tmp_path_factory, attempt_identity):
    """FleetCast on the session's cluster and a fresh attempt identity (as ``sregym run`` makes one)."""
    pytest.importorskip("sregym_app_fleetcast", reason="needs the FleetCast app")
    from sregym_appkit.testing import deployment_for_module

    deployment = deployment_for_module(deployed_app, "fleetcast")
    app = next(deployment)
    ns = app.app.namespace
    c = {"admin": Path(app.env.cluster.kubeconfig()), "ns": ns}
    try:
        with attempt_identity(c["admin"], [ns], tmp_path_factory.mktemp("operator-account")) as c["agent"]:
            yield c
    finally:
        for kind, name in (("pod", "atkop"), ("pod", "helper-pod"), ("deployment", "atkop"),
                           ("deployment", "helper-app"), ("secret", "op-token"), ("rolebinding", "config-reader"),
                           ("role", "config-reader"), ("serviceaccount", "helper")):
            admin(c, "delete", kind, name, "-n", ns, "--ignore-not-found", "--wait=false")
        admin(c, "set", "image", f"deployment/{OPERATOR}", f"operator={IMAGE}", "-n", ns)
        next(deployment, None)  # the app leaves the session's cluster


def kubectl(config: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={config}", *args], capture_output=True, text=True, timeout=200,
                          input=input, env={"PATH": os.environ.get("PATH", ""), "HOME": str(config.parent)})


def agent(c, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return kubectl(c["agent"], *args, input=input)


def admin(c, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return kubectl(c["admin"], *args, input=input)


def _refused(done: subprocess.CompletedProcess, field: str) -> None:
    assert done.returncode != 0, done.stdout
    assert "Forbidden" in done.stderr and field in done.stderr, done.stderr
    assert f'ServiceAccount "{OPERATOR}" holds rights' in done.stderr, done.stderr


def _deployment(ns: str, name: str, account: str, replicas: int = 1) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "serviceAccountName": account,
                         "containers": [{"name": "c", "image": "postgres:15", "command": ["sleep", "3600"]}]}}}}


def test_the_agent_cannot_run_a_pod_or_get_a_token_as_the_operators_account(fleet):
    c, ns = fleet, fleet["ns"]
    # the agent's own identity may not write the status the operator's may
    can = agent(c, "auth", "can-i", "patch", "datastoreclusters.fleetcast.sregym.io", "--subresource=status", "-n", ns)
    assert can.stdout.strip() == "no"
    # (1) the attack of round 5: a pod naming the operator's account
    run = agent(c, "run", "atkop", "--image=postgres:15", "--restart=Never", "-n", ns,
                f'--overrides={{"apiVersion":"v1","spec":{{"serviceAccountName":"{OPERATOR}"}}}}',
                "--command", "--", "sleep", "3600")
    _refused(run, "spec.serviceAccountName")
    # (2) a Deployment naming it
    made = agent(c, "apply", "-f", "-", input=json.dumps(_deployment(ns, "atkop", OPERATOR)))
    _refused(made, "spec.template.spec.serviceAccountName")
    assert agent(c, "get", "pod,deployment", "atkop", "-n", ns, "--ignore-not-found", "-o", "name").stdout == ""
    # no token for it either: a TokenRequest, or a legacy token Secret the cluster would fill
    token = agent(c, "create", "token", OPERATOR, "-n", ns)
    assert token.returncode != 0 and "forbidden" in token.stderr.lower()
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
              "metadata": {"name": "op-token", "namespace": ns,
                           "annotations": {"kubernetes.io/service-account.name": OPERATOR}}}
    legacy = agent(c, "apply", "-f", "-", input=json.dumps(secret))
    _refused(legacy, "metadata.annotations[kubernetes.io/service-account.name]")


def _operator_pod(c) -> str:
    pods = json.loads(agent(c, "get", "pods", "-n", c["ns"], "-l", f"app.kubernetes.io/name={OPERATOR}", "-o",
                            "json").stdout)["items"]
    running = [p["metadata"]["name"] for p in pods
               if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    assert running, pods
    return running[0]


def _entry_refused(done: subprocess.CompletedProcess, sub: str, pod: str) -> None:
    assert done.returncode != 0, done.stdout
    assert f'pods "{pod}" is forbidden: pods/{sub}: Forbidden: ServiceAccount "{OPERATOR}" holds rights' \
        in done.stderr, done.stderr


def test_the_agent_cannot_enter_the_operators_pod_but_can_read_its_logs(fleet, tmp_path):
    """(5) the follow-up: exec into the operator's pod read its mounted token, which could patch the status."""
    c, ns = fleet, fleet["ns"]
    pod = _operator_pod(c)
    token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    _entry_refused(agent(c, "exec", pod, "-n", ns, "--", "cat", token), "exec", pod)
    _entry_refused(agent(c, "cp", f"{ns}/{pod}:{token}", str(tmp_path / "token")), "exec", pod)
    _entry_refused(agent(c, "attach", pod, "-c", "operator", "-n", ns), "attach", pod)
    debug = agent(c, "debug", pod, "-n", ns, "--image=postgres:15", "--container=dbg", "--", "sleep", "600")
    _entry_refused(debug, "ephemeralcontainers", pod)
    stored = json.loads(agent(c, "get", "pod", pod, "-n", ns, "-o", "json").stdout)
    assert not stored["spec"].get("ephemeralContainers")
    assert not (tmp_path / "token").exists()
    # diagnosis stays open: logs and describe
    logs = agent(c, "logs", pod, "-n", ns, "--tail=5")
    assert logs.returncode == 0 and logs.stdout.strip(), logs.stderr
    described = agent(c, "describe", "pod", pod, "-n", ns)
    assert described.returncode == 0 and f"Service Account:  {OPERATOR}" in described.stdout


def test_the_operators_deployment_can_still_be_fixed(fleet):
    """(3) fleetcast-operator-wrong-image's fix: the agent puts the operator's image back; (6) its command
    and args stay the benchmark's."""
    c, ns = fleet, fleet["ns"]
    broken = admin(c, "set", "image", f"deployment/{OPERATOR}", "operator=sregym/fleetcast-operator:9.9-missing",
                   "-n", ns)
    assert broken.returncode == 0, broken.stderr
    for field, value in (("command", ["sh", "-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/token"]),
                         ("args", ["--forge-status"])):
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "operator", field: value}]}}}}
        done = agent(c, "patch", "deployment", OPERATOR, "-n", ns, "-p", json.dumps(patch))
        _refused(done, f"spec.template.spec.containers[0].{field}")
    rs = json.loads(agent(c, "get", "replicasets", "-n", ns, "-l", f"app.kubernetes.io/name={OPERATOR}", "-o",
                          "json").stdout)["items"]
    assert rs, "the operator has a ReplicaSet"
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "operator", "command": ["sleep", "600"]}]}}}}
    _refused(agent(c, "patch", "replicaset", rs[0]["metadata"]["name"], "-n", ns, "-p", json.dumps(patch)),
             "spec.template.spec.containers[0].command")
    fixed = agent(c, "set", "image", f"deployment/{OPERATOR}", f"operator={IMAGE}", "-n", ns)
    assert fixed.returncode == 0, fixed.stderr
    rolled = agent(c, "rollout", "status", f"deployment/{OPERATOR}", "-n", ns, "--timeout=150s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    pods = json.loads(agent(c, "get", "pods", "-n", ns, "-l", f"app.kubernetes.io/name={OPERATOR}", "-o",
                            "json").stdout)["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    assert running and all(p["spec"]["serviceAccountName"] == OPERATOR for p in running), pods
    assert all(c_["image"] == IMAGE and not c_.get("command") and not c_.get("args")
               for p in running for c_ in p["spec"]["containers"])


def test_an_account_the_agent_makes_and_binds_can_still_be_named(fleet):
    """(4) an account of the agent's own, bound within the agent's rights (escalation prevention)."""
    c, ns = fleet, fleet["ns"]
    for args in (("create", "serviceaccount", "helper"),
                 ("create", "role", "config-reader", "--verb=get", "--resource=configmaps"),
                 ("create", "rolebinding", "config-reader", "--role=config-reader", f"--serviceaccount={ns}:helper")):
        done = agent(c, *args, "-n", ns)
        assert done.returncode == 0, done.stderr
    run = agent(c, "run", "helper-pod", "--image=postgres:15", "--restart=Never", "-n", ns,
                '--overrides={"apiVersion":"v1","spec":{"serviceAccountName":"helper"}}', "--command", "--",
                "sleep", "3600")
    assert run.returncode == 0, run.stderr
    stored = json.loads(agent(c, "get", "pod", "helper-pod", "-n", ns, "-o", "json").stdout)
    assert stored["spec"]["serviceAccountName"] == "helper"
    made = agent(c, "apply", "-f", "-", input=json.dumps(_deployment(ns, "helper-app", "helper", replicas=0)))
    assert made.returncode == 0, made.stderr
    agent(c, "delete", "pod", "helper-pod", "-n", ns, "--grace-period=0", "--force", "--wait=false")
