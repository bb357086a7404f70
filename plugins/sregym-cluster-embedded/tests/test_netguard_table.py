"""The reachability table the kernel program reads (netguard.py), from a cluster view."""

from __future__ import annotations

from types import SimpleNamespace

from sregym_cluster_embedded.network import netguard as ng


class Items:
    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def list(self) -> list[dict]:
        return self.items


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
