"""NetworkPolicy evaluation: selectors, namespaces, ipBlocks, named ports, egress, default deny."""

from __future__ import annotations

from sregym_cluster_embedded.network.policy import allowed

NS_LABELS = {"shop": {"kubernetes.io/metadata.name": "shop", "team": "a"},
             "ops": {"kubernetes.io/metadata.name": "ops", "team": "ops"}}


def pod(name, ns, labels, ports=()):
    return {"metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in ports]}]}}


def policy(ns, selector, ingress=None, egress=None, types=None):
    spec = {"podSelector": {"matchLabels": selector}}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    if types:
        spec["policyTypes"] = types
    return {"metadata": {"name": "p", "namespace": ns}, "spec": spec}


DB = pod("db", "shop", {"app": "db"}, [("pg", 5432)])
API = pod("api", "shop", {"app": "api"})
MON = pod("mon", "ops", {"app": "prom"})


def check(policies, src, dst, port, src_ip="127.42.0.9", dst_ip="127.42.0.5"):
    return allowed(policies, src_ip=src_ip, src_pod=src, dst_ip=dst_ip, dst_pod=dst, port=port, protocol="TCP",
                   ns_labels=lambda n: NS_LABELS.get(n, {}))


def test_no_policy_allows_everything():
    assert check([], None, DB, 5432)


def test_default_deny_and_pod_selector_with_named_port():
    deny = policy("shop", {"app": "db"}, ingress=[])
    assert not check([deny], API, DB, 5432)
    allow_api = policy("shop", {"app": "db"}, ingress=[{"from": [{"podSelector": {"matchLabels": {"app": "api"}}}],
                                                        "ports": [{"port": "pg"}]}])
    assert check([deny, allow_api], API, DB, 5432)
    assert not check([allow_api], API, DB, 6000)  # port not listed
    assert not check([allow_api], MON, DB, 5432)  # podSelector alone means the policy's namespace


def test_namespace_selector_and_combined_peer():
    by_ns = policy("shop", {"app": "db"}, ingress=[{"from": [{"namespaceSelector": {"matchLabels": {"team": "ops"}}}]}])
    assert check([by_ns], MON, DB, 5432) and not check([by_ns], API, DB, 5432)
    both = policy("shop", {"app": "db"}, ingress=[{"from": [{"namespaceSelector": {"matchLabels": {"team": "ops"}},
                                                             "podSelector": {"matchLabels": {"app": "other"}}}]}])
    assert not check([both], MON, DB, 5432)


def test_ip_block_with_except_and_unknown_sources():
    block = policy("shop", {"app": "db"}, ingress=[{"from": [{"ipBlock": {"cidr": "127.0.0.0/8", "except": ["127.0.0.1/32"]}}]}])
    assert check([block], None, DB, 5432, src_ip="127.9.9.9")
    assert not check([block], None, DB, 5432, src_ip="127.0.0.1")
    selector_only = policy("shop", {"app": "db"}, ingress=[{"from": [{"podSelector": {}}]}])
    assert not check([selector_only], None, DB, 5432, src_ip="127.0.0.1")  # not a pod: selectors never match


def test_egress_of_the_source_pod():
    egress = policy("shop", {"app": "api"}, egress=[{"to": [{"podSelector": {"matchLabels": {"app": "db"}}}]}], types=["Egress"])
    assert check([egress], API, DB, 5432)
    assert not check([egress], API, pod("cache", "shop", {"app": "cache"}), 11211)
    assert check([egress], MON, DB, 5432)  # the policy does not select the monitoring pod
