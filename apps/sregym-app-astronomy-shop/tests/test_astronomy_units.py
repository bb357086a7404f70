"""Unit tests: money and catalog, the load generator's content checks, flagd's file format and
evaluation, the manifests and inventory, and the flagd-flag fault's parameters."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest
import yaml
from sregym_app_astronomy_shop import content, data
from sregym_app_astronomy_shop.app import app_spec
from sregym_app_astronomy_shop.faults import _flag
from sregym_app_astronomy_shop.flagd import FlagFile, parse
from sregym_app_astronomy_shop.loadgen import ENDPOINTS, MIX, Stats, choose
from sregym_app_astronomy_shop.manifests import build, flagd_json, load_documents, render
from sregym_app_astronomy_shop.topology import FLAGS, SERVICES

from sregym_core.errors import FaultError


def test_money_and_conversion():
    assert data.cents_of(data.money("EUR", 12345)) == 12345
    assert data.convert_cents(10000, "USD", "EUR") == 9200
    assert data.convert_cents(9200, "EUR", "USD") == 10000
    with pytest.raises(ValueError, match="unsupported currency 'XXX'"):
        data.convert_cents(1, "USD", "XXX")
    assert data.luhn_ok("4432-8015-6152-0454") and not data.luhn_ok("4432-8015-6152-0455")


def _product(pid, code):
    p = data.product(pid)
    return {**p, "priceUsd": data.money(code, data.convert_cents(data.cents_of(p["priceUsd"]), "USD", code))}


def test_content_checks_accept_the_truth_and_reject_stubs():
    pid = data.PRODUCT_IDS[3]
    good = json.dumps(_product(pid, "JPY")).encode()
    assert content.check_product(good, pid, "JPY") is None
    wrong_price = _product(pid, "JPY")
    wrong_price["priceUsd"] = data.money("JPY", 1)
    assert content.check_product(json.dumps(wrong_price).encode(), pid, "JPY") == "wrong price"
    assert content.check_product(b"{}", pid, "USD") == "wrong product"
    assert content.check_recommendations(b"[]", [pid], "USD") == "no recommendations"
    recs = [_product(x, "USD") for x in data.PRODUCT_IDS[:3]]
    assert content.check_recommendations(json.dumps(recs).encode(), [data.PRODUCT_IDS[0]], "USD") == \
        "recommended the product being viewed"
    assert content.check_recommendations(json.dumps(recs).encode(), [data.PRODUCT_IDS[5]], "USD") is None
    assert content.check_ads(json.dumps(data.ads_for(["books"])).encode(), ["books"]) is None
    assert content.check_ads(json.dumps(data.ads_for(["books"])).encode(), ["binoculars"]) == "wrong ads"
    assert content.check_home(b"<html></html>") == "home page lacks 10 products"
    assert content.check_image(data.image_bytes(pid), pid) is None
    assert content.check_image(data.image_bytes(pid), data.PRODUCT_IDS[0]) == "wrong image bytes"
    assert data.image_bytes(pid).startswith(b"\x89PNG")


def test_order_check_recomputes_every_amount():
    added = {"L9ECAV7KIM": 2, "HQTGWGPNH4": 1}
    lines = [{"item": {"productId": k, "quantity": q},
              "cost": data.money("EUR", q * data.convert_cents(data.cents_of(data.product(k)["priceUsd"]), "USD", "EUR"))}
             for k, q in added.items()]
    ship = data.convert_cents(3 * data.QUOTE_PER_ITEM_CENTS, "USD", "EUR")
    order = {"orderId": "o", "shippingTrackingId": "t", "items": lines, "shippingCost": data.money("EUR", ship),
             "total": data.money("EUR", ship + sum(data.cents_of(x["cost"]) for x in lines))}
    assert content.check_order(json.dumps(order).encode(), added, "EUR") is None
    assert content.check_order(json.dumps(order).encode(), {"L9ECAV7KIM": 2}, "EUR") == "order items differ from the cart"
    order["total"] = data.money("EUR", 1)
    assert content.check_order(json.dumps(order).encode(), added, "EUR") == "wrong order total"


def test_workload_mix_and_summary():
    assert abs(sum(w for _, w in MIX) - 1.0) < 1e-9
    rng = random.Random(1)
    seen = {choose(rng) for _ in range(2000)}
    assert seen == set(ENDPOINTS)
    log = Stats()
    log.add_request("ads", 200, 5.0, True)
    log.add_request("ads", 503, 9.0, False)
    log.add_request("ads", 200, 7.0, False, wrong="wrong ads")
    s = log.stats(60)["by_endpoint"]["ads"]
    assert s["count"] == 3 and s["success"] == 1 and s["error_kinds"] == {"503": 1}
    assert s["content_error_kinds"] == {"wrong ads": 1}


def test_flagd_file_format_errors_name_the_json_path():
    with pytest.raises(ValueError, match=r"\$.flags: must be an object"):
        parse("{}")
    with pytest.raises(ValueError, match=r"\$.flags.x.defaultVariant: 'maybe' is not one of"):
        parse(json.dumps({"flags": {"x": {"state": "ENABLED", "variants": {"on": True}, "defaultVariant": "maybe"}}}))
    with pytest.raises(ValueError, match="not JSON"):
        parse("{")


def test_flag_store_reloads_and_keeps_the_last_good_flags(tmp_path):
    path = tmp_path / "flags.json"
    path.write_text(flagd_json())
    store = FlagFile(str(path))
    assert store.reload()
    assert store.evaluate("adFailure") == (200, {"key": "adFailure", "value": False, "variant": "off",
                                                 "reason": "STATIC", "metadata": {}})
    assert store.evaluate("nope")[1]["errorCode"] == "FLAG_NOT_FOUND"
    doc = json.loads(flagd_json())
    doc["flags"]["paymentFailure"]["defaultVariant"] = "50%"
    doc["flags"]["adFailure"]["state"] = "DISABLED"
    path.write_text(json.dumps(doc))
    assert store.reload() and not store.reload()
    assert store.evaluate("paymentFailure")[1]["value"] == 0.5
    assert store.evaluate("adFailure")[0] == 404
    path.write_text("{broken")
    assert not store.reload()
    assert store.evaluate("paymentFailure")[1]["value"] == 0.5


def test_shipped_manifests_are_the_rendering_and_flags_start_off():
    assert load_documents() == build()
    flags = json.loads(next(d for d in build() if d["metadata"]["name"] == "flagd-config")["data"]["demo.flagd.json"])
    assert set(flags["flags"]) == set(FLAGS)
    assert all(f["defaultVariant"] == "off" and f["state"] == "ENABLED" for f in flags["flags"].values())
    docs = render({"image_tag": "9.9", "otlp_endpoint": "http://otel:4318", "workload_rate": 7})
    images = {c["image"] for d in docs for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])}
    assert "sregym/astronomy-shop:9.9" in images and "sregym/astronomy-shop:1.0" not in images
    with pytest.raises(ValueError, match="unknown manifest parameters: replicas"):
        render({"replicas": 2})
    yaml.safe_dump_all(docs)


def test_inventory_matches_the_manifests():
    app = app_spec()
    docs = {(d["kind"], d["metadata"]["name"]): d for d in render()}
    assert {c.name for c in app.components} >= set(SERVICES) | {"frontend-proxy", "valkey-cart", "queue"}
    for c in app.components:
        workload = docs[(c.kind, c.name)]
        assert workload["metadata"]["namespace"] == app.namespace
        container = next(x for x in workload["spec"]["template"]["spec"]["containers"] if x["name"] == c.container_name)
        assert set(c.ports) == {p["containerPort"] for p in container["ports"]}
        assert set(c.env) <= {e["name"] for e in container.get("env", [])}
        if c.config_map:
            assert ("ConfigMap", c.config_map) in docs
        assert ("Service", c.service_name) in docs
    owners = {owner for _v, owner, _on in FLAGS.values()}
    assert {c.name for c in app.components if "flagd" in c.knobs} == owners


def test_images_resolve_only_published_tags():
    app = app_spec()
    for ref in ("sregym/astronomy-shop:1.0", "sregym/astronomy-shop:latest", "nginx:1.22"):
        assert [i for i in app.images if i.matches(ref)], ref
    for ref in ("sregym/astronomy-shop:v9.9.9-missing", "nginx:v9.9.9-missing"):
        assert not [i for i in app.images if i.matches(ref)], ref


def _target(name):
    return SimpleNamespace(component=SimpleNamespace(name=name))


def test_flag_fault_parameters():
    assert _flag(_target("ad"), {}) == ("adFailure", "on")
    assert _flag(_target("payment"), {"flag": "paymentFailure", "variant": "50%"}) == ("paymentFailure", "50%")
    with pytest.raises(FaultError, match="changes payment, not ad"):
        _flag(_target("ad"), {"flag": "paymentFailure"})
    with pytest.raises(FaultError, match="no faulty variant 'off'"):
        _flag(_target("ad"), {"flag": "adFailure", "variant": "off"})
    with pytest.raises(FaultError, match="unknown flag"):
        _flag(_target("ad"), {"flag": "nope"})


class _FlagdCtx:
    """A fault context whose kubectl answers OFREP evaluations from a scripted sequence of variants."""

    def __init__(self, answers):
        self.namespace, self.answers, self.calls = "astronomy-shop", list(answers), []

    def kubectl(self, *args, input=None, check=True, timeout=60.0):
        self.calls.append(args)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if answer is None:  # the service proxy's error while flagd restarts (kubectl exits non-zero)
            raise FaultError("kubectl create --raw failed: Error from server (ServiceUnavailable)")
        return json.dumps({"key": "adFailure", "variant": answer}) if answer in ("on", "off") else str(answer)


def test_the_flag_fault_waits_until_flagd_serves_the_change(monkeypatch):
    from sregym_app_astronomy_shop import faults
    from sregym_core.faultkit import kube

    monkeypatch.setattr(kube, "wait_until", lambda check, timeout, interval: any(check() for _ in range(5)))
    ctx = _FlagdCtx(["on", None, "not json", "off"])
    faults._wait_served(ctx, "adFailure", "off")  # flagd answered on, was down, answered garbage, then off
    assert ctx.calls[0][:2] == ("create", "--raw")
    assert ctx.calls[0][2].endswith("/services/flagd:8016/proxy/ofrep/v1/evaluate/flags/adFailure")
    assert faults.served_variant(_FlagdCtx(["not json"]), "adFailure") is None
    with pytest.raises(FaultError, match="returned nothing"):  # no flagd at all: fail at once, never wait
        faults.served_variant(_FlagdCtx([""]), "adFailure")
    with pytest.raises(FaultError, match="still does not serve adFailure=off"):
        faults._wait_served(_FlagdCtx(["on"]), "adFailure", "off")


def test_a_task_is_recorded_by_its_deadline_and_the_slo_window_knows_it():
    """A checkout is several requests: the whole task shares one deadline, so every record lands at most
    WORKLOAD_TIMEOUT_S after its task was sent, which the SLO window skips (``max_request_s``)."""
    import asyncio

    from sregym_app_astronomy_shop.loadgen import Generator
    from sregym_app_astronomy_shop.manifests import WORKLOAD_TIMEOUT_S

    gen = Generator("http://127.0.0.1:9", rate=1, duration=1, timeout_s=0.3)

    async def three_slow_requests(endpoint, rng):
        for _ in range(3):
            await asyncio.sleep(0.25)  # each under the per-request timeout, together over the deadline
        return 200, ""

    gen._task = three_slow_requests
    asyncio.run(gen.one("checkout", random.Random(1)))
    (record,) = gen.stats.window(60)
    # no earlier than the 0.3 s deadline (how much later depends on the machine's load)
    assert record.error == "timeout" and record.ok is False and record.latency_ms >= 300
    assert app_spec().workload.max_request_s > WORKLOAD_TIMEOUT_S


def test_the_flag_fault_round_trip_on_the_flag_configmap(monkeypatch, tmp_path):
    """inject, is_present, recover on a recorded cluster (flagd's answer is checked live)."""
    from sregym_app_astronomy_shop import faults

    from sregym_core.testing.recording import RecordingFaultContext
    from sregym_core.types import Target

    served = []
    monkeypatch.setattr(faults, "_wait_served", lambda ctx, flag, variant: served.append((flag, variant)))
    spec = app_spec()
    ctx = RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=spec.namespace, app=spec).child()
    ctx._store({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": spec.namespace},
                "data": {"demo.flagd.json": flagd_json()}})
    target = Target(app=spec, component=spec.component("image-provider"), namespace=spec.namespace)
    params = {"flag": "imageSlowLoad", "variant": "10sec"}
    faults.inject(ctx, target, params)
    assert faults.is_present(ctx, target, params) and served == [("imageSlowLoad", "10sec")]
    assert not faults.is_present(ctx, target, {"flag": "imageSlowLoad", "variant": "5sec"})
    faults.recover(ctx, target, params)
    assert not faults.is_present(ctx, target, params) and served[-1] == ("imageSlowLoad", "off")
    doc = json.loads(ctx.objects[("ConfigMap", spec.namespace, "flagd-config")]["data"]["demo.flagd.json"])
    assert doc["flags"]["imageSlowLoad"]["defaultVariant"] == "off" and doc["flags"]["adFailure"]["defaultVariant"] == "off"


def test_the_error_logs_probe_reads_the_queue_consumers_and_the_cache_client():
    """The poison pill's errors are logged by the consumers, not by the broker; valkey-cart's by cart.
    The error-logs probe reads the faulty workload and its clients, found in the shipped manifests."""
    from sregym_core.symptoms import clients_of, log_sources

    objects = [d for d in load_documents() if d["metadata"].get("namespace") == "astronomy-shop"]
    for doc in list(objects):  # one running pod per workload, labelled as its ReplicaSet labels it
        if doc["kind"] == "Deployment":
            objects.append({"kind": "Pod", "metadata": {
                "name": f"{doc['metadata']['name']}-5d8c9-x1", "namespace": "astronomy-shop",
                "labels": dict(doc["spec"]["template"]["metadata"]["labels"])}})
    queue = {"kind": "Deployment", "namespace": "astronomy-shop", "name": "queue", "service": "queue"}
    cache = {"kind": "Deployment", "namespace": "astronomy-shop", "name": "valkey-cart", "service": "valkey-cart"}
    assert clients_of(queue, objects) == ["accounting", "checkout", "fraud-detection"]
    assert clients_of(cache, objects) == ["cart"]
    pods = [pod for _ns, pod in log_sources([queue], objects)]
    assert pods[0] == "queue-5d8c9-x1"
    assert {"accounting-5d8c9-x1", "fraud-detection-5d8c9-x1"} <= set(pods)
    assert "frontend-5d8c9-x1" not in pods and "load-generator-5d8c9-x1" not in pods


def test_ad_manual_gc_stalls_a_request_in_full_collections_for_its_budget():
    """adManualGc: back-to-back full collections over a live heap, long enough that users feel it
    (the symptom check's p95 threshold is 1 s), at least three of them however fast the machine."""
    import gc
    import time

    from sregym_app_astronomy_shop.backends import GC_THRASH_S, _full_gc_pause

    assert GC_THRASH_S > 1.0
    before = gc.get_stats()[2]["collections"]
    start = time.monotonic()
    collections = _full_gc_pause(0.3, objects=50_000)
    assert time.monotonic() - start >= 0.3
    assert collections >= 3
    assert gc.get_stats()[2]["collections"] - before >= collections
    assert _full_gc_pause(0.0, objects=1_000) == 3


def test_recommendation_cache_failure_doubles_the_cache_and_scans_it():
    """recommendationCacheFailure: each request doubles the never-evicted cache and scans all of it, so
    memory and latency grow until the container meets its memory limit (about 24 requests at 256 Mi)."""
    from sregym_app_astronomy_shop.backends import _cache_miss

    cache: list = []
    sizes = []
    for _ in range(12):
        scanned = _cache_miss(cache)
        sizes.append(len(cache))
        assert scanned == len(cache) * len(data.PRODUCT_IDS)
    assert sizes == [2 ** k for k in range(12)]


def test_a_checkout_waits_for_the_order_confirmation_and_fails_without_it(monkeypatch):
    """The checkout task reloads the order page until it says confirmed; an order still processing
    after ORDER_CONFIRM_S is a failed checkout (content error), whatever the order itself said."""
    import asyncio

    from sregym_app_astronomy_shop import loadgen
    from sregym_app_astronomy_shop.loadgen import Generator

    monkeypatch.setattr(loadgen, "ORDER_CONFIRM_S", 0.3)
    monkeypatch.setattr(loadgen, "ORDER_POLL_S", 0.05)
    gen = Generator("http://127.0.0.1:9", rate=1, duration=1, timeout_s=5)
    answers: list[str] = []

    async def fake_get(path, method="GET", body=None):
        assert path == "/api/orders/o1"
        return 200, json.dumps({"orderId": "o1", "status": answers.pop(0) if len(answers) > 1 else answers[0]}).encode()

    gen._get = fake_get
    answers[:] = ["processing", "processing", "confirmed"]
    assert asyncio.run(gen._confirmed("o1")) == (200, "")
    answers[:] = ["processing"]
    assert asyncio.run(gen._confirmed("o1")) == (200, content.ORDER_PROCESSING)
    assert content.check_order_status(b'{"orderId": "o2", "status": "confirmed"}', "o1") == "wrong order status"
    assert content.check_order_status(b'{"orderId": "o1", "status": "review"}', "o1") == "order not confirmed"


def test_the_flagd_process_serves_ofrep_on_its_file_and_stops_on_sigterm(tmp_path, monkeypatch):
    """The real ``serve flagd`` process (the kit's flagd command with the shop's HTTP routes)."""
    import sys
    import urllib.error
    import urllib.request

    from sregym_core.testing.localservers import free_port, start_server, stop_server

    path = tmp_path / "demo.flagd.json"
    path.write_text(flagd_json())
    port, admin = free_port(), free_port()
    monkeypatch.setenv("FLAGD_OFREP_PORT", str(port))
    monkeypatch.setenv("ADMIN_PORT", str(admin))
    monkeypatch.setenv("FLAGD_FILE", str(path))

    def call(url: str, method: str = "POST") -> tuple[int, dict]:
        request = urllib.request.Request(url, data=b"{}" if method == "POST" else None, method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    proc = start_server([sys.executable, "-m", "sregym_app_astronomy_shop.serve", "flagd"], port, timeout=30)
    try:
        base = f"http://127.0.0.1:{port}/ofrep/v1/evaluate/flags"
        flag = next(iter(FLAGS))
        status, one = call(f"{base}/{flag}")
        assert status == 200 and one["key"] == flag and one["reason"] == "STATIC"
        assert call(f"{base}/no-such-flag")[0] == 404
        status, bulk = call(base)
        assert status == 200 and {f["key"] for f in bulk["flags"]} == set(FLAGS)
        assert call(f"http://127.0.0.1:{admin}/readyz", "GET") == (200, {"ready": True, "flags": len(FLAGS)})
    finally:
        assert stop_server(proc) == 0
