"""The embedded provider says whether a cluster has several nodes (faults that need two declare it)."""

from __future__ import annotations

from sregym_cluster_embedded.plugin import EmbeddedCluster, sregym_clusters


def test_multi_node_follows_the_node_count(tmp_path, monkeypatch):
    monkeypatch.setenv("SREGYM_HOME", str(tmp_path))  # no cluster of these names runs there
    assert "multi-node" not in EmbeddedCluster("capa-one", nodes=1).capabilities
    assert "multi-node" in EmbeddedCluster("capa-three", nodes=3).capabilities
    assert {"embedded", "multi-node"} <= sregym_clusters()[0].capabilities
