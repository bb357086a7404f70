"""Users through an Ingress: the TLS the app gets at deploy and the generator's route switch."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import socket

import pytest
import yaml
from cryptography import x509

from sregym_appkit import ingress
from sregym_appkit.workload import PinnedResolver, validate_route

INGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"tls": [{"hosts": ["shop.test"], "secretName": "web-tls"}], "rules": []}}


class FakeKubectl:
    """Secrets by (namespace, name); ``create`` stores a new one (no last-applied annotation, issue #34),
    ``get`` answers as kubectl does."""

    def __init__(self):
        self.secrets: dict[tuple[str, str], dict] = {}

    def run(self, *args, stdin=None, timeout=60, check=True):
        if args[:2] == ("get", "secret"):
            found = self.secrets.get((args[4], args[2]))
            return json.dumps(found) if found else ""
        if args[:2] == ("create", "-f"):
            obj = json.loads(stdin)
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            assert key not in self.secrets, f"create of an existing Secret {key}"
            self.secrets[key] = obj
            return ""
        raise AssertionError(args)


def _cert(secret: dict, key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def test_ensure_tls_issues_from_the_apps_ca_once():
    k = FakeKubectl()
    made = ingress.ensure_tls(k, yaml.safe_dump(INGRESS), "shop-workload")
    assert made == ["shop-workload/ingress-ca", "shop/web-tls"]
    ca, leaf = _cert(k.secrets[("shop-workload", "ingress-ca")]), _cert(k.secrets[("shop", "web-tls")])
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert names == ["shop.test"] and leaf.not_valid_after_utc > dt.datetime.now(dt.UTC)
    before = dict(k.secrets)
    assert ingress.ensure_tls(k, yaml.safe_dump(INGRESS), "shop-workload") == []  # a redeploy keeps both
    assert k.secrets == before


def test_issue_can_backdate_a_certificate():
    ca_cert, ca_key = ingress.new_ca("test CA")
    now = dt.datetime.now(dt.UTC)
    cert, _ = ingress.issue(ca_cert, ca_key, ["a.test"], not_before=now - dt.timedelta(days=400),
                            not_after=now - dt.timedelta(days=5))
    assert x509.load_pem_x509_certificate(cert).not_valid_after_utc < now


@pytest.mark.parametrize("route", [{"url": "ftp://x", "connect": "a:1"}, {"url": "https://x", "connect": "a"},
                                   {"url": "https://x", "connect": "a:1", "ca": "junk"}, {"url": "https://x"},
                                   {"url": "https://x", "connect": "a:1", "extra": 1}, "https://x"])
def test_bad_routes_are_refused(route):
    with pytest.raises(ValueError):
        validate_route(route)


def test_a_pinned_name_resolves_to_the_load_balancer_and_keeps_its_name():
    async def go():
        resolver = PinnedResolver({"shop.test": ("localhost", 8443)})
        try:
            pinned = await resolver.resolve("shop.test", 443, socket.AF_INET)
            other = await resolver.resolve("localhost", 80, socket.AF_INET)
        finally:
            await resolver.close()
        return pinned, other

    pinned, other = asyncio.run(go())
    assert pinned and all(a["host"] == "127.0.0.1" and a["port"] == 8443 and a["hostname"] == "shop.test" for a in pinned)
    assert other[0]["port"] == 80


def test_the_generator_goes_through_the_route_and_verifies_its_certificate(tmp_path):
    """/control's route: users ask https://shop.test (pinned to a local TLS server) and trust only the
    app's CA; an expired certificate there fails every request; route null goes back."""
    import ssl

    from aiohttp import web
    from sregym_appkit import workload
    from sregym_appkit.workload import Outcome, RunSpec, Settings

    class Gen(workload.Generator):
        endpoints = ("ok",)
        metrics_prefix = "appkit_route_test_"

        def choose(self, rng):
            return "ok"

        async def send(self, endpoint, request):
            async with self.session.get(self.settings.target + "/ok") as resp:
                return Outcome(resp.status, wrong="" if await resp.text() == "right" else "wrong_body")

    ca_cert, ca_key = ingress.new_ca("test CA")
    now = dt.datetime.now(dt.UTC)

    async def tls_server(expired: bool):
        cert, key = ingress.issue(ca_cert, ca_key, ["shop.test"], **(
            {"not_before": now - dt.timedelta(days=40), "not_after": now - dt.timedelta(days=3)} if expired else {}))
        (tmp_path / "c.pem").write_bytes(cert + key)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tmp_path / "c.pem")
        async def ok(request):
            return web.Response(text="right" if request.host == "shop.test" else "wrong host")

        app = web.Application()
        app.router.add_get("/ok", ok)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        return runner, site._server.sockets[0].getsockname()[1]

    async def run(gen, requests=20):
        # a count-bounded run, waited for until its requests are answered (60 s only bounds a hang): how
        # many a fixed second gets through depends on the machine's load, which this test does not grade
        await gen.start(RunSpec(rate=40.0, duration=60, max_requests=requests, distribution="constant", seed=1))
        deadline = asyncio.get_running_loop().time() + 60
        while gen.log.stats(600)["count"] < requests and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        return gen.log.stats(600)

    async def scenario():
        results = []
        for expired in (False, True):
            runner, port = await tls_server(expired)
            gen = Gen(Settings(target="http://127.0.0.1:9", host="127.0.0.1", port=0, run=RunSpec(
                rate=1, duration=1, max_requests=1), timeout_s=3, max_inflight=64, buffer=1000, autostart=False))
            await gen.open()
            try:
                await gen.set_route({"url": "https://shop.test", "connect": f"127.0.0.1:{port}", "ca": ca_cert.decode()})
                assert gen.settings.target == "https://shop.test" and gen.progress()["route"]["url"] == "https://shop.test"
                results.append(await run(gen))
                await gen.set_route(None)
                assert gen.settings.target == "http://127.0.0.1:9" and gen.progress()["route"] is None
            finally:
                await gen.close()
                await runner.cleanup()
        return results

    good, expired = asyncio.run(scenario())
    assert good["count"] == 20 and good["success_rate"] == 1.0
    assert expired["count"] == 20 and expired["success_rate"] == 0.0
    assert set(expired["error_kinds"]) == {"ClientConnectorCertificateError"}
