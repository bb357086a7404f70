"""The cluster DNS reads the Corefile in kube-system/coredns: template NXDOMAIN, rewrite, reload
on change, a broken Corefile keeps the running one (parser units, then the real DNS server)."""

from __future__ import annotations

import pytest
from _fixtures_ctrl import FakeKubelet, anyio_backend, settle  # noqa: F401
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.network import corefile, start_network
from sregym_cluster_embedded.network import dnswire as w
from sregym_cluster_embedded.settings import ClusterSettings
from test_net_dns import ask, in_thread

NXDOMAIN_GEO = """.:53 {
    errors
    template IN A hotel.svc.cluster.local {
        match "^geo\\.hotel\\.svc\\.cluster\\.local\\.$"
        rcode NXDOMAIN
        fallthrough
    }
    rewrite name exact alias.hotel.svc.cluster.local web.hotel.svc.cluster.local
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
    }
    forward . /etc/resolv.conf
}
"""


def test_default_corefile_changes_nothing():
    config = corefile.parse(corefile.DEFAULT_COREFILE)
    assert config.template_rcode("web.hotel.svc.cluster.local", w.TYPE_A) is None
    assert config.rewrite("web.hotel.svc.cluster.local") == "web.hotel.svc.cluster.local"


def test_template_matches_only_its_name_class_and_type():
    config = corefile.parse(NXDOMAIN_GEO)
    assert config.template_rcode("geo.hotel.svc.cluster.local", w.TYPE_A) == w.NXDOMAIN
    assert config.template_rcode("GEO.hotel.svc.cluster.local.", w.TYPE_A) == w.NXDOMAIN
    assert config.template_rcode("geo.hotel.svc.cluster.local", w.TYPE_AAAA) is None
    assert config.template_rcode("rate.hotel.svc.cluster.local", w.TYPE_A) is None  # fallthrough
    assert config.rewrite("alias.hotel.svc.cluster.local") == "web.hotel.svc.cluster.local"


def test_template_without_fallthrough_answers_its_whole_zone():
    config = corefile.parse('.:53 {\n template ANY ANY svc.cluster.local {\n  match "^x\\."\n  rcode SERVFAIL\n }\n}\n')
    assert config.template_rcode("x.a.svc.cluster.local", w.TYPE_A) == 2
    assert config.template_rcode("y.a.svc.cluster.local", w.TYPE_A) == w.NXDOMAIN  # CoreDNS: no match, no fall
    assert config.template_rcode("kubernetes.default.pod.cluster.local", w.TYPE_A) is None  # other zone


@pytest.mark.parametrize("text, message", [
    (".:53 {\n template IN\n}\n", "CLASS and TYPE"),
    (".:53 {\n errors\n", "missing '}'"),
    (".:53 {\n template IN A {\n rcode MAYBE\n }\n}\n", "rcode must be one of"),
    (".:53 {\n rewrite name only-one\n}\n", "FROM and TO"),
])
def test_bad_corefiles_are_refused_with_the_reason(text, message):
    with pytest.raises(corefile.CorefileError, match=message):
        corefile.parse(text)


@pytest.mark.anyio
async def test_the_dns_server_follows_the_coredns_configmap(tmp_path):
    settings = ClusterSettings(state_dir=tmp_path, pod_cidr_prefix="127.203", service_cidr_prefix="127.204")
    client = new_local_cluster(settings)
    kubelet = FakeKubelet(client)
    await kubelet.start()
    ctrl = start_controllers(client, settings, only=["scheduler", "endpoints"])
    network = await start_network(client, settings)
    try:
        await client.create("namespaces", {"metadata": {"name": "hotel"}})
        for name in ("web", "geo"):
            await client.create("services", {"metadata": {"name": name}, "spec": {
                "selector": {"app": name}, "ports": [{"port": 80}]}}, "hotel")
        stock = await client.get("configmaps", "coredns", "kube-system")
        assert "kubernetes cluster.local" in stock["data"]["Corefile"]
        server = network.dns
        rcode, answers = await in_thread(ask, server, "geo.hotel.svc.cluster.local")
        assert rcode == w.NOERROR and answers
        stock["data"]["Corefile"] = NXDOMAIN_GEO
        stock = await client.update("configmaps", stock)

        async def nx():
            return (await in_thread(ask, server, "geo.hotel.svc.cluster.local"))[0] == w.NXDOMAIN
        await settle(nx)
        web = await in_thread(ask, server, "web.hotel.svc.cluster.local")
        alias = await in_thread(ask, server, "alias.hotel.svc.cluster.local")
        assert alias[0] == w.NOERROR and alias[1] == web[1]
        # a Corefile that does not parse leaves the running configuration in force
        broken = await client.get("configmaps", "coredns", "kube-system")
        broken["data"]["Corefile"] = ".:53 {\n template IN A {\n"
        broken = await client.update("configmaps", broken)
        await settle(lambda: network.view.configmaps.get("kube-system", "coredns")["metadata"]["resourceVersion"]
                     == broken["metadata"]["resourceVersion"])
        assert (await in_thread(ask, server, "geo.hotel.svc.cluster.local"))[0] == w.NXDOMAIN
    finally:
        await network.stop()
        await ctrl.stop()
        await kubelet.stop()
