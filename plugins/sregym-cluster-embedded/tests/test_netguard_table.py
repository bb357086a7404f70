"""The reachability table the kernel program reads (netguard.py), from a cluster view."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from _fixtures_net import Items, connects_from, listening, release
from sregym_cluster_embedded.network import netguard as ng


def view() -> SimpleNamespace:
    namespaces = [{"metadata": {"name": "app"}},
                  {"metadata": {"name": "workload", "labels": {"sregym.dev/hidden": "true"}}},
                  {"metadata": {"name": "observability", "labels": {"sregym.io/hidden": "true"}}}]
    pods = [{"metadata": {"name": "a", "namespace": "app"}, "status": {"podIP": "127.44.1.2"}},
            {"metadata": {"name": "g", "namespace": "workload"}, "status": {"podIP": "127.44.1.3"}},
            {"metadata": {"name": "h", "namespace": "workload"}, "spec": {"hostNetwork": True},
             "status": {"podIP": "127.44.0.1"}}]
    services = [{"metadata": {"name": "gen", "namespace": "workload"}, "spec": {"clusterIP": "127.43.0.20"}},
                {"metadata": {"name": "jaeger", "namespace": "observability",
                              "annotations": {ng.REACHABLE_ANNOTATION: "4318, x"}}, "spec": {"clusterIP": "127.43.0.4"}},
                {"metadata": {"name": "web", "namespace": "app"}, "spec": {"clusterIP": "127.43.0.9"}}]
    return SimpleNamespace(namespaces=Items(namespaces), pods=Items(pods), services=Items(services),
                           node_ips=lambda: ["127.44.0.1"])


def test_hidden_addresses_are_refused_and_cluster_ranges_allowed() -> None:
    settings = SimpleNamespace(pod_cidr_prefix="127.44", service_cidr_prefix="127.43")
    table = ng.table(view(), settings)
    assert table[ng.key("127.44.1.3", 0)] == ng.DENY  # the generator's pod
    assert table[ng.key("127.43.0.20", 0)] == ng.DENY  # its Service
    assert table[ng.key("127.43.0.4", 0)] == ng.DENY and table[ng.key("127.43.0.4", 4318)] == ng.ALLOW
    assert table[ng.key("127.44.0.0", ng.PREFIX16)] == ng.ALLOW and table[ng.key("127.43.0.0", ng.PREFIX16)] == ng.ALLOW
    assert table[ng.key("127.44.0.1", 0)] == ng.ALLOW  # the node (a host-network pod keeps its node IP)
    assert ng.key("127.44.1.2", 0) not in table and ng.key("127.43.0.9", 0) not in table  # app: by range


def test_keys_match_what_the_kernel_sees() -> None:
    # struct bpf_sock_addr: user_ip4 and user_port in network byte order, as 32-bit words
    assert ng.key("127.0.0.1", 8080) == bytes([127, 0, 0, 1]) + (8080).to_bytes(2, "big") + b"\0\0"
    assert ng.key("127.43.9.9", ng.PREFIX16) == bytes([127, 43, 0, 0]) + (0x10000).to_bytes(4, "little")


def test_the_program_is_whole_instructions() -> None:
    for ipv4 in (True, False):
        assert len(ng.program(3, ipv4=ipv4)) % 8 == 0


# ---------------------------------------------------------------- apps isolated from each other

def two_apps() -> SimpleNamespace:
    namespaces = [{"metadata": {"name": "hotel", "labels": {"sregym.io/app": "hotel-reservation"}}},
                  {"metadata": {"name": "social", "labels": {"sregym.io/app": "social-network"}}},
                  {"metadata": {"name": "hotel-workload", "labels": {"sregym.io/app": "hotel-reservation",
                                                                    "sregym.dev/hidden": "true"}}},
                  {"metadata": {"name": "ingress-nginx"}}]
    pods = [{"metadata": {"name": "db", "namespace": "hotel", "uid": "u-db"}, "status": {"podIP": "127.44.1.2"}},
            {"metadata": {"name": "web", "namespace": "social", "uid": "u-web"}, "status": {"podIP": "127.44.1.3"}},
            {"metadata": {"name": "gen", "namespace": "hotel-workload", "uid": "u-gen"}, "status": {"podIP": "127.44.1.4"}},
            {"metadata": {"name": "ctl", "namespace": "ingress-nginx", "uid": "u-ctl"}, "status": {"podIP": "127.44.1.5"}}]
    services = [{"metadata": {"name": "db", "namespace": "hotel"}, "spec": {"clusterIP": "127.43.0.7"}},
                {"metadata": {"name": "web", "namespace": "social"}, "spec": {"clusterIP": "127.43.0.8"}},
                {"metadata": {"name": "headless", "namespace": "social"}, "spec": {"clusterIP": "None"}},
                {"metadata": {"name": "ctl", "namespace": "ingress-nginx"}, "spec": {"clusterIP": "127.43.0.9"}}]
    return SimpleNamespace(namespaces=Items(namespaces), pods=Items(pods), services=Items(services),
                           node_ips=lambda: ["127.44.0.1"])


def test_an_apps_addresses_name_their_app_and_no_apps_stay_open() -> None:
    groups = ng.AppGroups()
    table = ng.table(two_apps(), SimpleNamespace(pod_cidr_prefix="127.44", service_cidr_prefix="127.43"), groups)
    hotel, social = groups.id("hotel-reservation"), groups.id("social-network")
    assert hotel != social and min(hotel, social) >= ng.FIRST_GROUP  # never read as a plain verdict
    assert table[ng.key("127.44.1.2", 0)] == table[ng.key("127.43.0.7", 0)] == hotel  # pod and Service
    assert table[ng.key("127.44.1.3", 0)] == table[ng.key("127.43.0.8", 0)] == social
    assert table[ng.key("127.44.1.4", 0)] == ng.DENY  # hidden wins over the app label
    # no app's namespace (the ingress controller's): by range, as before
    assert ng.key("127.44.1.5", 0) not in table and ng.key("127.43.0.9", 0) not in table


def test_callers_are_the_pod_cgroups_by_their_namespaces_app(tmp_path) -> None:
    groups = ng.AppGroups()
    for uid in ("u-db", "u-web", "u-ctl", "u-new", "u-gone"):
        (tmp_path / f"pod-{uid}").mkdir()
    cid = {uid: ng._cgroup_id(tmp_path / f"pod-{uid}") for uid in ("u-db", "u-web", "u-ctl", "u-new", "u-gone")}
    known = {cid["u-new"]: 7, cid["u-db"]: ng.CALLER_ANY}  # registered at start; u-db's namespace got labelled since
    (tmp_path / "pod-u-gone").rmdir()
    callers = ng.callers(two_apps(), tmp_path, groups, known)
    assert callers[cid["u-db"]] == groups.id("hotel-reservation")
    assert callers[cid["u-web"]] == groups.id("social-network")
    assert callers[cid["u-ctl"]] == ng.CALLER_ANY  # the ingress controller reaches every app
    assert callers[cid["u-new"]] == 7  # not in the view yet: what the node agent registered stays
    assert cid["u-gone"] not in callers


def test_the_program_decides_by_the_callers_app_in_the_kernel(tmp_path) -> None:
    """The loaded program on real processes in pod cgroups, no cluster: a pod reaches its own app
    and no app's addresses, is refused (EPERM) another app's; a pod of no app reaches every app; a
    cgroup the guard was not told about reaches no app."""
    if os.geteuid() != 0 or ng.cgroup2_root() is None:
        pytest.skip("the guard needs root and cgroup v2")
    guard = ng.NetGuard(tmp_path)
    try:
        pods = {name: guard.cgroup / f"pod-{name}" for name in ("hotel", "social", "ingress", "unknown")}
        for path in pods.values():
            path.mkdir()
        guard.admit(pods["hotel"], {"sregym.io/app": "hotel-reservation"})
        guard.admit(pods["social"], {"sregym.io/app": "social-network"})
        guard.admit(pods["ingress"], {})
        addresses = {"hotel": "127.44.1.2", "social": "127.44.1.3", "no app": "127.44.1.4"}
        with listening(addresses) as targets:
            guard.update({ng.key("127.44.0.0", ng.PREFIX16): ng.ALLOW,
                          ng.key(addresses["hotel"], 0): guard.groups.id("hotel-reservation"),
                          ng.key(addresses["social"], 0): guard.groups.id("social-network")})
            seen = {pod: connects_from(path, targets) for pod, path in pods.items()}
    finally:
        release(guard)
    assert seen["hotel"] == {"hotel": "open", "social": "errno 1", "no app": "open"}
    assert seen["social"] == {"hotel": "errno 1", "social": "open", "no app": "open"}
    assert seen["ingress"] == {"hotel": "open", "social": "open", "no app": "open"}
    assert seen["unknown"] == {"hotel": "errno 1", "social": "errno 1", "no app": "open"}


def test_the_policy_other_clusters_get_admits_whom_the_guard_admits() -> None:
    """conductor/app_isolation.py's NetworkPolicy, read by this cluster's own NetworkPolicy code, lets
    into the hotel app's pod exactly the callers the guard lets: the same app, no app's namespaces (the
    ingress controller's), hidden namespaces (outside the guard's cgroup); not another app."""
    from sregym_cluster_embedded.network import policy

    from sregym_core.conductor.app_isolation import isolation_policy

    apps = two_apps()
    labels = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in apps.namespaces.list()}
    labels["hotel-2"] = {"sregym.io/app": "hotel-reservation"}  # a second namespace of the same app
    labels["observability"] = {"sregym.io/hidden": "true"}
    rules = [isolation_policy("hotel-reservation", "hotel")]
    target = {"metadata": {"name": "db", "namespace": "hotel", "labels": {"app": "db"}}}
    admitted = {}
    for namespace in labels:
        caller = {"metadata": {"name": "c", "namespace": namespace, "labels": {}}}
        admitted[namespace] = policy.allowed(rules, src_ip="127.44.2.2", src_pod=caller, dst_ip="127.44.1.2",
                                             dst_pod=target, port=5432, protocol="TCP", ns_labels=labels.__getitem__)
    groups = ng.AppGroups()
    owner = groups.id("hotel-reservation")
    guard = {namespace: ng.is_hidden_namespace(ns_labels) or ng.caller_group(ns_labels, groups) in (ng.CALLER_ANY, owner)
             for namespace, ns_labels in labels.items()}
    assert admitted == guard == {"hotel": True, "hotel-2": True, "social": False, "hotel-workload": True,
                                 "ingress-nginx": True, "observability": True}
