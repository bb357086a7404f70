"""The agent grants of the node-OS problems: grantable, and confined to the fields the fix changes."""

from __future__ import annotations

from importlib.resources import files

import pytest

from sregym_core.conductor.grants import check_grant, violations
from sregym_core.problems import load_problem_file


def _grants(package: str, problem: str):
    pytest.importorskip(package)
    return load_problem_file(files(package) / "problems" / f"{problem}.yaml").agent_access


def _cm(name: str, data: dict, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "kube-system",
                                                                 **({"labels": labels} if labels else {})},
            "data": data}


def test_eviction_problem_grants_the_drop_ins_kubelet_key_only():
    grants = _grants("sregym_app_hotel_reservation", "hotel-kubelet-eviction-threshold-postgres-rate")
    assert all(check_grant(g) is None for g in grants)
    by_name = {g.name: g for g in grants}
    assert list(by_name["kubelet-config"].verbs) == ["get"]  # the cluster-wide file: read only
    drop_in = by_name["kubelet-config-node-2"]
    before = _cm("kubelet-config-node-2", {"kubelet": "evictionHard:\n  nodefs.available: 90%\n"})
    fixed = _cm("kubelet-config-node-2", {"kubelet": "evictionHard:\n  nodefs.available: 10%\n"})
    assert violations(before, fixed, drop_in) == []
    extra_key = _cm("kubelet-config-node-2", {**before["data"], "other": "x"})
    assert violations(before, extra_key, drop_in)
    relabelled = _cm("kubelet-config-node-2", before["data"], labels={"a": "b"})
    assert violations(before, relabelled, drop_in)


def test_conntrack_problem_grants_kube_proxys_data_only():
    (grant,) = _grants("sregym_app_hotel_reservation", "hotel-conntrack-exhaustion-frontend")
    assert check_grant(grant) is None and grant.namespace == "kube-system" and grant.name == "kube-proxy"
    before = _cm("kube-proxy", {"config.conf": "conntrack:\n  maxPerCore: 16\n  min: 32\n"})
    fixed = _cm("kube-proxy", {"config.conf": "conntrack:\n  maxPerCore: 32768\n  min: 131072\n"})
    assert violations(before, fixed, grant) == []
    assert violations(before, _cm("kube-proxy", fixed["data"], labels={"x": "y"}), grant)
    assert violations(before, None, grant)  # deleting it is never within the grant


@pytest.mark.parametrize("package, problem", [
    ("sregym_app_hotel_reservation", "hotel-kubelet-crash-frontend"),
    ("sregym_app_astronomy_shop", "astronomy-kubelet-crash-frontend")])
def test_kubelet_crash_problems_grant_the_cluster_configs_kubelet_key_only(package, problem):
    (grant,) = _grants(package, problem)
    assert check_grant(grant) is None and (grant.namespace, grant.name) == ("kube-system", "kubelet-config")
    before = _cm("kubelet-config", {"kubelet": "imageGCHighThresholdPercent: 85\nimageGCLowThresholdPercent: 90\n"})
    fixed = _cm("kubelet-config", {"kubelet": "imageGCHighThresholdPercent: 85\nimageGCLowThresholdPercent: 80\n"})
    assert violations(before, fixed, grant) == []
    assert violations(before, _cm("kubelet-config", fixed["data"], labels={"x": "y"}), grant)
    assert violations(before, None, grant)
