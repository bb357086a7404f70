"""The service path's connection-tracking table: kube-proxy's sizing, entries held in TIME_WAIT,
new connections dropped when a node's table is full, and the demand a fix must cover."""

from __future__ import annotations

from sregym_cluster_embedded.network import conntrack
from sregym_cluster_embedded.network.conntrack import ConntrackTable, table_max


class _Nodes:
    def __init__(self, cpu: str) -> None:
        self.obj = {"metadata": {"name": "node-1", "uid": "u"}, "status": {"capacity": {"cpu": cpu}}}

    def get(self, _ns, name):
        return self.obj if name == "node-1" else None

    def list(self):
        return [self.obj]


class _View:
    def __init__(self, cpu: str = "2") -> None:
        self.nodes = _Nodes(cpu)


def test_kube_proxy_sizing():
    assert table_max({}, 2) == 131072  # min wins over 32768 per core on a 2-core node
    assert table_max({"maxPerCore": 32768, "min": None}, 8) == 262144
    assert table_max({"maxPerCore": 8, "min": 16}, 4) == 32
    assert table_max({"maxPerCore": 0, "min": 1}, 4) == conntrack.KERNEL_DEFAULT


def test_full_table_drops_new_connections_and_entries_linger(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(conntrack.time, "monotonic", lambda: clock[0])
    table = ConntrackTable(_View("2"))
    table.conntrack = {"maxPerCore": 1, "min": 3}
    nodes = {"node-1"}
    for _ in range(3):
        assert table.admit(nodes) is None
    assert table.admit(nodes) == "node-1"  # full: dropped
    table.release(nodes)
    assert table.count("node-1") == 3  # closed, but in TIME_WAIT
    assert table.admit(nodes) == "node-1"
    clock[0] += conntrack.TIME_WAIT_S + 1
    assert table.count("node-1") == 2
    status = table.status()["node-1"]
    assert status["max"] == 3 and status["drops"] == 2
    assert table.admit(nodes) is None
    # what the node's traffic needs: the entries plus the connections it dropped
    for _ in range(5):
        table.admit(nodes)
    assert table.status()["node-1"]["demand"] == 8
    table.conntrack = {}
    assert table.status()["node-1"]["max"] == 131072


def test_the_benchmarks_own_pods_are_on_no_node():
    view = _View("2")
    view.namespace_labels = lambda ns: {"sregym.io/hidden": "true"} if ns == "hotel-workload" else {}
    table = ConntrackTable(view)
    app = {"metadata": {"namespace": "hotel-reservation"}, "spec": {"nodeName": "node-1"}}
    generator = {"metadata": {"namespace": "hotel-workload"}, "spec": {"nodeName": "node-2"}}
    assert table.nodes_for(generator, app) == {"node-1"}
    assert table.nodes_for(None, generator) == set()  # the harness reading the generator's stats
    assert table.nodes_for(app, {"metadata": {"namespace": "x"}, "spec": {"nodeName": "node-3"}}) == {"node-1", "node-3"}
