"""priority-preemption sizes its batch pods around what the batch cannot preempt."""

from sregym_fault_k8s.objects import BATCH_PRIORITY, _staying_memory


def pod(node, memory, priority=None, klass=None, phase="Running"):
    spec = {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"memory": memory}}}]}
    if priority is not None:
        spec["priority"] = priority
    if klass:
        spec["priorityClassName"] = klass
    return {"spec": spec, "status": {"phase": phase}}


def test_only_pods_at_or_above_the_batch_priority_stay():
    pods = [pod("n1", "64Mi", priority=100_000_000),           # infrastructure: stays
            pod("n1", "128Mi", klass="sregym-infrastructure"),  # priority resolved from its class
            pod("n1", "256Mi", priority=0),                     # app: preempted
            pod("n1", "1Gi", priority=BATCH_PRIORITY),          # an equal priority is never preempted
            pod("n1", "64Mi", priority=2_000_000_000, phase="Succeeded"),  # finished: holds nothing
            pod("n2", "512Mi", priority=100_000_000)]           # another node
    classes = {"sregym-infrastructure": 100_000_000}
    assert _staying_memory(pods, classes, "n1") == (64 + 128 + 1024) * 2**20
    assert _staying_memory(pods, classes, "n2") == 512 * 2**20
    assert _staying_memory(pods, classes, "n3") == 0
