"""Pure logic of the kube-proxy addon, the IP pools and the caller lookup (fast, no cluster)."""

from __future__ import annotations

import socket

from sregym_cluster_embedded.network import callers, ipam, kubeproxy


# ---------------------------------------------------------------- IPAM


def _pool(cidr: str, name: str = "p", disabled: bool = False) -> dict:
    return {"metadata": {"name": name}, "spec": {"cidr": cidr, **({"disabled": True} if disabled else {})}}


def test_default_pool_allocates_as_before():
    pools = ipam.pools_from([ipam.default_pool("127.42")])
    assert ipam.allocate("127.42.1.0/24", pools, set()) == "127.42.1.2"
    assert ipam.allocate("127.42.1.0/24", pools, {"127.42.1.2", "127.42.1.3"}) == "127.42.1.4"
    assert ipam.allocate("127.42.3.0/24", pools, set()) == "127.42.3.2"
    assert ipam.free_count("127.42.1.0/24", pools, set()) == 253


def test_no_pool_resource_means_the_whole_block():
    assert ipam.allocate("127.42.2.0/24", None, set()) == "127.42.2.2"
    used = {f"127.42.2.{h}" for h in range(2, 255)}
    assert ipam.allocate("127.42.2.0/24", None, used) is None


def test_shrunk_pool_limits_one_node_and_starves_the_others():
    pools = ipam.pools_from([_pool("127.42.1.192/26")])
    assert ipam.allocate("127.42.1.0/24", pools, {"127.42.1.2"}) == "127.42.1.192"
    assert ipam.free_count("127.42.1.0/24", pools, set()) == 63  # .192-.254 (.255 is the broadcast)
    assert ipam.allocate("127.42.2.0/24", pools, set()) is None  # strict affinity: no borrowing
    full = {f"127.42.1.{h}" for h in range(192, 255)}
    assert ipam.allocate("127.42.1.0/24", pools, full) is None


def test_disabled_and_invalid_pools_give_nothing():
    assert ipam.allocate("127.42.1.0/24", ipam.pools_from([_pool("127.42.0.0/16", disabled=True)]), set()) is None
    assert ipam.pools_from([_pool("not-a-cidr"), _pool("")]) == []
    assert ipam.allocate("127.42.1.0/24", [], set()) is None  # the resource exists, every pool is gone


def test_sandbox_error_reads_like_calico_and_is_stable_per_pod():
    pools = ipam.pools_from([_pool("127.42.1.192/26", name="default-ipv4-ippool")])
    message = ipam.sandbox_error("node-1", pools, "uid-1")
    assert message.startswith("Failed to create pod sandbox:")
    assert 'plugin type="calico" failed (add)' in message
    assert "no IP addresses available" in message and "[default-ipv4-ippool]" in message and "node-1" in message
    assert message == ipam.sandbox_error("node-1", pools, "uid-1")
    assert message != ipam.sandbox_error("node-1", pools, "uid-2")


def test_crd_serves_the_calico_resource():
    crd = ipam.crd()
    assert crd["metadata"]["name"] == "ippools.crd.projectcalico.org"
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["names"]["kind"] == "IPPool"
    assert ipam.default_pool("127.44")["spec"]["cidr"] == "127.44.0.0/16"


def test_ipam_off_switch(monkeypatch):
    monkeypatch.setenv("SREGYM_EMBEDDED_IPAM", "0")
    assert not ipam.enabled()
    monkeypatch.delenv("SREGYM_EMBEDDED_IPAM")
    assert ipam.enabled()


# ---------------------------------------------------------------- kube-proxy


def test_only_a_buggy_build_drops():
    assert kubeproxy.drop_share("registry.k8s.io/kube-proxy:v1.32.4") == 0.0
    assert kubeproxy.drop_share("registry.k8s.io/kube-proxy:v1.31.0") == 0.0
    assert kubeproxy.drop_share("registry.k8s.io/kube-proxy") == 0.0
    assert kubeproxy.drop_share("registry.k8s.io/kube-proxy:v1.32.4-buggy") == kubeproxy.BUGGY_DROP_SHARE
    assert kubeproxy.drop_share("localhost:5000/kube-proxy:v1.32.4-buggy@sha256:abc") == kubeproxy.BUGGY_DROP_SHARE


def test_only_release_tags_of_kube_proxy_exist_on_the_node():
    """Red-team round 7, finding 2: a made-up tag ran as a sound build and passed mitigation; a
    registry has release tags only (and here the fault's -buggy builds), anything else is ErrImagePull."""
    from sregym_cluster_embedded.node import images

    catalog = images.default_catalog()
    for ref in ("registry.k8s.io/kube-proxy:v1.32.4", "registry.k8s.io/kube-proxy:v1.32.4-buggy",
                "registry.k8s.io/kube-proxy:v1.37.10"):
        assert catalog.resolve(ref) is not None, ref
    for ref in ("registry.k8s.io/kube-proxy:does-not-exist", "registry.k8s.io/kube-proxy:v1.32.4x",
                "registry.k8s.io/kube-proxy", "k8s.gcr.io/kube-proxy:v1.32.4"):
        assert catalog.resolve(ref) is None, ref


def test_daemonset_is_kubeadms():
    objs = {(resource, body["metadata"]["name"]): body for resource, _, body in kubeproxy.objects("v1.32.4")}
    ds = objs[("daemonsets.apps", "kube-proxy")]
    spec = ds["spec"]["template"]["spec"]
    assert ds["metadata"]["namespace"] == "kube-system" and spec["hostNetwork"] is True
    assert spec["containers"][0]["image"] == "registry.k8s.io/kube-proxy:v1.32.4"
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["volumes"] == [{"name": "kube-proxy", "configMap": {"name": "kube-proxy"}}]


class _Informer:
    def __init__(self):
        self.handlers = []

    def add_handler(self, handler):
        self.handlers.append(handler)


class _View:
    def __init__(self):
        self.pods = _Informer()

    def send(self, event, pod):
        for handler in self.pods.handlers:
            handler(event, pod, None)


def _proxy_pod(node: str, image: str, running: bool = True) -> dict:
    state = {"running": {}} if running else {"waiting": {"reason": "ContainerCreating"}}
    return {"metadata": {"namespace": "kube-system", "name": f"kube-proxy-{node}", "labels": {"k8s-app": "kube-proxy"}},
            "spec": {"nodeName": node, "containers": [{"name": "kube-proxy", "image": image}]},
            "status": {"phase": "Running" if running else "Pending",
                       "containerStatuses": [{"name": "kube-proxy", "state": state}]}}


def test_node_rules_follow_the_pod_that_last_ran_there():
    view = _View()
    rules = kubeproxy.NodeRules(view)
    good, bad = "registry.k8s.io/kube-proxy:v1.32.4", "registry.k8s.io/kube-proxy:v1.32.4-buggy"
    assert rules.drop_share("node-1") == 0.0 and not rules.any_defect()  # never programmed: sound
    view.send("ADDED", _proxy_pod("node-1", good))
    view.send("MODIFIED", _proxy_pod("node-2", bad, running=False))
    assert not rules.any_defect()  # a pod that does not run yet programmed nothing
    view.send("MODIFIED", _proxy_pod("node-2", bad))
    assert rules.any_defect() and rules.drop_share("node-2") > 0 and rules.drop_share("node-1") == 0.0
    view.send("DELETED", _proxy_pod("node-2", bad))
    assert rules.drop_share("node-2") > 0  # iptables rules outlive the process that wrote them
    view.send("ADDED", _proxy_pod("node-2", good))
    assert not rules.any_defect()
    other = _proxy_pod("node-1", bad)
    other["metadata"]["namespace"] = "default"
    view.send("ADDED", other)
    assert rules.drop_share("node-1") == 0.0  # only kube-system's kube-proxy programs nodes
    assert rules.drop_share(None) == 0.0


# ---------------------------------------------------------------- callers


def test_proc_net_tcp_addresses():
    assert callers._hex("127.0.0.1", 0x89A2) == "0100007F:89A2"


def test_a_connection_is_traced_to_this_process():
    """The client end of a real loopback connection is found in /proc and held by this process."""
    import os

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    try:
        peer, local = accepted.getpeername(), accepted.getsockname()
        inode = callers.socket_inode(peer, local)
        assert inode == os.fstat(client.fileno()).st_ino
        assert callers.locate(peer, local, [("node-9", "other", [1]), ("node-1", "app", [os.getpid()])]) == \
            ("node-1", "app")
        assert callers.locate(peer, local, [("node-1", "app", [])]) is None
        assert callers.socket_inode(("127.0.0.1", 1), ("127.0.0.1", 2)) is None
    finally:
        for sock in (client, accepted, server):
            sock.close()
