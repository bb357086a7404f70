"""Which pod templates the scheduler could put back on a node (the network faults' mitigation check)."""

from __future__ import annotations

from sregym_fault_node.placement import schedulable_for


def node(name: str = "node-1", labels: dict | None = None, **spec) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}, "spec": spec}


def required(*terms: dict) -> dict:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}}


def test_an_open_node_takes_a_plain_template() -> None:
    assert schedulable_for(node(), {})


def test_a_missing_or_cordoned_node_does_not() -> None:
    assert not schedulable_for(None, {})
    assert not schedulable_for(node(unschedulable=True), {})


def test_taints_keep_pods_off_unless_tolerated() -> None:
    tainted = node(taints=[{"key": "bad-nic", "value": "yes", "effect": "NoSchedule"}])
    assert not schedulable_for(tainted, {})
    assert schedulable_for(tainted, {"tolerations": [{"key": "bad-nic", "operator": "Exists"}]})
    assert schedulable_for(tainted, {"tolerations": [{"key": "bad-nic", "value": "yes", "effect": "NoSchedule"}]})
    assert not schedulable_for(tainted, {"tolerations": [{"key": "bad-nic", "value": "no"}]})
    assert not schedulable_for(tainted, {"tolerations": [{"key": "bad-nic", "operator": "Exists", "effect": "NoExecute"}]})
    assert schedulable_for(tainted, {"tolerations": [{"operator": "Exists"}]})
    assert schedulable_for(node(taints=[{"key": "k", "effect": "PreferNoSchedule"}]), {})


def test_node_selector_node_name_and_required_affinity_exclude_it() -> None:
    assert not schedulable_for(node(), {"nodeSelector": {"disk": "ssd"}})
    assert schedulable_for(node(labels={"disk": "ssd"}), {"nodeSelector": {"disk": "ssd"}})
    assert not schedulable_for(node(), {"nodeName": "node-2"})
    away = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-1"]}]}
    assert not schedulable_for(node(), required(away))
    assert schedulable_for(node("node-2"), required(away))
    by_field = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}
    assert not schedulable_for(node(), required(by_field))
    assert schedulable_for(node(), required(away, {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}))
    assert not schedulable_for(node(labels={"cpus": "4"}), required({"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["8"]}]}))
    assert schedulable_for(node(labels={"cpus": "16"}), required({"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["8"]}]}))
    assert not schedulable_for(node(), required({}))  # an empty term selects nothing
