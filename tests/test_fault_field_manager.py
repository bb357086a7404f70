"""A fault's kubectl writes name the deploy's field manager (issue #34, red-team round 14 finding 7):
a real API server's ``managedFields`` would otherwise show the fault's own manager on exactly the
fields it changed. Each rewritten command is given to the real kubectl, which must know the flag
(it parses flags before it dials the unreachable server of this kubeconfig)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.faults import FAULT_FIELD_MANAGER, with_fault_field_manager

KUBECTL = Path(sys.executable).parent / "kubectl"
FLAG = f"--field-manager={FAULT_FIELD_MANAGER}"

#: the write forms the fault packs use (grep 'kubectl("' faults/*/src apps/*/src sregym_core/faultkit)
WRITES = [
    ("patch", "service", "reservation", "-n", "ns", "--type", "json", "-p", "[]"),
    ("apply", "-f", "-"),
    ("create", "-f", "-", "-o", "json"),
    ("create", "job", "x-manual", "--from=cronjob/x", "-n", "ns"),
    ("annotate", "-f", "-", "kubectl.kubernetes.io/last-applied-configuration-"),
    ("label", "node", "node-1", "a=b"),
    ("taint", "nodes", "node-1", "k=v:NoSchedule"),
    ("set", "image", "deployment/geo", "geo=x:1", "-n", "ns"),
    ("set", "env", "deployment/user", "A-", "-n", "ns"),
    ("rollout", "restart", "deployment/geo", "-n", "ns"),
    ("replace", "-f", "-"),
]
#: reads, and the writes whose kubectl has no such flag: left as they are
UNCHANGED = [
    ("get", "pods", "-n", "ns"),
    ("rollout", "status", "deployment/geo"),
    ("delete", "pod", "x", "--wait=false"),
    ("create", "--raw", "/api/v1/namespaces/ns/pods/x/eviction", "-f", "-"),
    ("create", "token", "sa"),
    ("exec", "pod/x", "--", "sh", "-c", "kubectl patch x"),
    ("scale", "deployment/geo", "--replicas=0"),
    ("patch", "service", "x", "--field-manager=other", "-p", "{}"),
]


@pytest.mark.parametrize("args", WRITES, ids=lambda a: " ".join(a[:2]))
def test_a_write_names_the_deploys_field_manager_and_kubectl_takes_it(args, tmp_path):
    argv = with_fault_field_manager(args)
    assert argv == [*args, FLAG]
    if not KUBECTL.exists():
        pytest.skip("the venv has no kubectl")
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                      "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n")
    done = subprocess.run([str(KUBECTL), "--kubeconfig", str(config), "--request-timeout=2s", *argv],
                          input='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}',
                          capture_output=True, text=True, timeout=60)
    assert "unknown flag" not in done.stderr and "unknown command" not in done.stderr, done.stderr


@pytest.mark.parametrize("args", UNCHANGED, ids=lambda a: " ".join(a[:2]))
def test_reads_and_writes_without_the_flag_are_left_alone(args):
    assert with_fault_field_manager(args) == list(args)


def test_the_flag_goes_before_a_double_dash():
    args = ("label", "node", "node-1", "a=b", "--", "extra")
    assert with_fault_field_manager(args) == ["label", "node", "node-1", "a=b", FLAG, "--", "extra"]
