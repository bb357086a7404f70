"""The judge's twenty-third round (issue #35): correct answers about platform faults that failed. The cluster's own
object a fault changed (the kubelet's configuration, the Calico BGPPeer, the pod IP pool, the admission webhook, the
quota) named by its kind localizes the fault, whose app component is only where it shows, when the sentence also says
what was changed in it; the kind alone, or what the object does ("every kubelet stopped posting status", "all nodes
NotReady"), does not. Each reading is tested on texts written for these tests (never the blind sets' own items, which
stay measurement material)."""

from __future__ import annotations

from sregym_judge_rules.rules import _kind_patterns


def test_a_platform_kind_is_named_by_its_parts_and_its_head_noun():
    def names(kind: str, phrase: str) -> bool:
        return any(p.search(phrase) for p in _kind_patterns(kind))

    assert names("BGPPeer", "the calico bgp peer") and names("BGPPeer", "the bgppeer")
    assert names("IPPool", "the pod ip pool") and names("ValidatingWebhookConfiguration", "the admission webhook")
    assert names("ResourceQuota", "a quota on limits") and names("Node", "the kubelet config")
    # the app's own workloads are not platform objects: their component must be named
    assert not _kind_patterns("Deployment") and not _kind_patterns("Service")


def test_the_kubelet_configuration_with_what_was_changed_in_it(passes):
    pid = "astronomy-kubelet-crash-frontend"
    assert passes(pid, "The cluster-wide kubelet configuration has its image GC thresholds swapped (low 90 above high "
                       "85), so every kubelet refuses to start and all nodes go NotReady.")
    assert passes(pid, "Root cause: in the kubelet config imageGCLowThresholdPercent is 90 and "
                       "imageGCHighThresholdPercent 85; every kubelet crash-loops, so all nodes are NotReady.")
    # what the kubelet does, or where it shows, is what any of its faults shows
    assert not passes(pid, "Every kubelet stopped posting node status, so all nodes went NotReady.")
    assert not passes(pid, "The nodes are NotReady: the kubelet exited on every node.")
    # another field of the kubelet's configuration is another fault
    assert not passes(pid, "The kubelet configuration's evictionHard threshold is set too aggressively, so the kubelet "
                           "evicts everything and nodes go NotReady.")


def test_the_bgp_peer_with_what_was_changed_in_it(passes):
    pid = "hotel-calico-route-reflector-drift-frontend"
    assert passes(pid, "Root cause: the Calico BGPPeer selects route reflectors by the deprecated master label, which "
                       "no node carries any more, so no routes between nodes are learned and cross-node calls time out.")
    # the object said to be broken, or a node named, says where, not what was changed
    assert not passes(pid, "The Calico BGPPeer is broken, so cross-node calls time out.")
    assert not passes(pid, "node-2 is the problem: cross-node calls time out.")


def test_a_field_of_the_object_with_its_number_says_what_was_changed(passes):
    pid = "astronomy-kubelet-crash-frontend"
    assert passes(pid, "kube-system/kubelet-config has imageGCLowThresholdPercent 90 and imageGCHighThresholdPercent "
                       "85, so every kubelet exits at start and all nodes go NotReady.")
    # the field named with no value, said to be normal, is no statement of the change
    assert not passes(pid, "kube-system/kubelet-config: imageGCLowThresholdPercent and imageGCHighThresholdPercent look "
                           "normal; the nodes are NotReady because of a kernel bug.")
