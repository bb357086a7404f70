"""The order queue against a real redis-server (no cluster): in-order consumer groups, a poison record
blocking them head-of-line, and the fix (delete + acknowledge) letting them drain the backlog."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time

import pytest
from sregym_app_astronomy_shop import data
from sregym_app_astronomy_shop.orders import GROUPS, STREAM, Consumer

redis = pytest.importorskip("redis")
pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs Debian's redis-server")


@pytest.fixture
def broker(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield port, client
    proc.terminate()
    proc.wait(5)


def _order(i: int) -> dict[str, str]:
    return {"order": json.dumps({"orderId": f"o{i}", "total": data.money("USD", 100 * i)})}


def _wait(predicate, timeout=120.0):  # an outer bound against hangs: every use waits for an event
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_poison_record_blocks_every_group_until_deleted_and_acknowledged(broker):
    port, client = broker
    stop = threading.Event()
    consumers = [Consumer(group, {"QUEUE_ADDR": f"127.0.0.1:{port}"}) for group in GROUPS]
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    try:
        for i in range(3):
            client.xadd(STREAM, _order(i))
        assert _wait(lambda: all(c.processed == 3 for c in consumers))
        poison = client.xadd(STREAM, {"order": "not-an-order"})
        for i in range(3, 8):
            client.xadd(STREAM, _order(i))
        # every group has read the poison record (it stays pending: processing it fails) ...
        assert _wait(lambda: all(client.xpending(STREAM, g)["pending"] == 1 for g in GROUPS))
        time.sleep(2.5)  # ... and retries it: a while in which nothing behind it may be processed
        # head-of-line: nothing after the poison record is processed, in any group
        assert [c.processed for c in consumers] == [3, 3]
        for group in GROUPS:
            pending = client.xpending(STREAM, group)
            assert pending["pending"] == 1 and pending["min"] == poison
        client.xdel(STREAM, poison)
        for group in GROUPS:
            client.xack(STREAM, group, poison)
        assert _wait(lambda: all(c.processed == 8 for c in consumers)), [c.processed for c in consumers]
        assert consumers[0].revenue_cents["USD"] == sum(100 * i for i in range(8))
    finally:
        stop.set()
        for t in threads:
            t.join(5)


class _PodCtx:
    """A fault context whose queue pod is the local redis-server: ``kubectl exec`` runs the command here."""

    namespace = "astronomy-shop"

    def __init__(self, port: int) -> None:
        self.port, self.state = port, {}

    def kubectl(self, *args, input=None, check=True, timeout=60.0):
        if args[:2] == ("get", "pods"):
            return json.dumps({"items": [{"metadata": {"name": "queue-0"},
                                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]})
        assert args[0] == "exec" and args[-3:-1] == ("sh", "-c"), args
        command = args[-1].replace("redis-cli", f"redis-cli -p {self.port}", 1)
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env={"POD_IP": "127.0.0.1",
                              "PATH": "/usr/bin:/bin"}, timeout=timeout).stdout


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs Debian's redis-cli")
def test_the_poison_fault_is_fixed_by_skipping_the_pill_not_by_losing_the_orders_behind_it(broker):
    """inject → present → reference fix → gone and the backlog drains; a wiped stream (the broker
    restarted: its data is in memory) is no fix, although the pill is gone with it."""
    from types import SimpleNamespace

    from sregym_app_astronomy_shop.faults import poison_fix, poison_inject, poison_present

    port, client = broker
    ctx, target = _PodCtx(port), SimpleNamespace(component=SimpleNamespace(name="queue", labels={"app": "queue"}))
    stop = threading.Event()
    consumers = [Consumer(group, {"QUEUE_ADDR": f"127.0.0.1:{port}"}) for group in GROUPS]
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    try:
        for i in range(3):
            client.xadd(STREAM, _order(i))
        assert _wait(lambda: all(c.processed == 3 for c in consumers))
        poison_inject(ctx, target, {})
        for i in range(3, 6):
            client.xadd(STREAM, _order(i))
        assert _wait(lambda: all(client.xpending(STREAM, g)["pending"] == 1 for g in GROUPS))
        assert poison_present(ctx, target, {}) is True
        poison_fix(ctx, target, {})
        assert _wait(lambda: all(c.processed == 6 for c in consumers)), [c.processed for c in consumers]
        assert poison_present(ctx, target, {}) is False

        wiped = _PodCtx(port)
        poison_inject(wiped, target, {})
        client.xadd(STREAM, _order(6))
        client.delete(STREAM)  # what a restart of the in-memory broker does; the consumers recreate their groups
        assert _wait(lambda: {g["name"].decode() for g in _groups(client)} == set(GROUPS))
        assert poison_present(wiped, target, {}) is True
    finally:
        stop.set()
        for t in threads:
            t.join(5)


def _groups(client):
    try:
        return client.xinfo_groups(STREAM)
    except redis.ResponseError:
        return []


def test_fraud_detection_confirms_orders_and_a_flood_leaves_them_unconfirmed_until_the_flag_is_off(broker, monkeypatch):
    """kafkaQueueProblems: 100 copies per order and a 50 ms fraud check leave a new order's status at
    processing for longer than a user waits; with the flag off the backlog drains in batches, fast."""
    from sregym_app_astronomy_shop import flags, orders

    port, client = broker
    flag = {"kafkaQueueProblems": 0}
    monkeypatch.setattr(flags, "integer", lambda key, default=0: flag.get(key, default))
    stop = threading.Event()
    fraud = Consumer("fraud-detection", {"QUEUE_ADDR": f"127.0.0.1:{port}"})
    thread = threading.Thread(target=fraud.run, args=(stop,), daemon=True)
    thread.start()

    def status(i):
        value = client.get(orders.STATUS_KEY.format(f"o{i}"))
        return value.decode() if value else "processing"

    try:
        client.xadd(STREAM, _order(0))
        assert _wait(lambda: status(0) == "confirmed")
        assert client.ttl(orders.STATUS_KEY.format("o0")) > 3000
        flag["kafkaQueueProblems"] = 100
        time.sleep(1.1)  # the consumer asks flagd at most once a second
        for i in (1, 2):  # what checkout publishes with the flag on: each order 101 times
            pipe = client.pipeline()
            for _ in range(101):
                pipe.xadd(STREAM, _order(i))
            pipe.execute()
        time.sleep(2.5)  # as long as a user watches the order page
        assert status(2) == "processing"
        flag["kafkaQueueProblems"] = 0
        pipe = client.pipeline()
        for _ in range(2000):  # a backlog of twenty flooded orders
            pipe.xadd(STREAM, _order(3))
        pipe.execute()
        started = time.monotonic()
        # the backlog drains once the flag is off (the wait is an outer bound against a hang, not a pace)
        assert _wait(lambda: status(3) == "confirmed", 120.0), time.monotonic() - started
        assert status(2) == "confirmed"
    finally:
        stop.set()
        thread.join(10)


class _LeakCtx(_PodCtx):
    """_PodCtx plus checkout's Deployment in memory (get, JSON patch, rollout status)."""

    def __init__(self, port: int, deployment: dict) -> None:
        super().__init__(port)
        self.deployment = deployment

    def kubectl(self, *args, input=None, check=True, timeout=60.0):
        from sregym_core.testing.recording import apply_json_patch

        if args[0] == "get" and args[1].lower() == "deployment":
            return json.dumps(self.deployment)
        if args[0] == "patch":
            body = json.loads(args[args.index("-p") + 1])
            self.deployment = apply_json_patch(self.deployment, body)
            return ""
        if args[0] == "rollout":
            return ""
        return super().kubectl(*args, input=input, check=check, timeout=timeout)


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs Debian's redis-cli")
def test_the_leaking_exporter_fills_the_broker_until_orders_cannot_be_published_and_the_fix_frees_it(broker, tmp_path):
    import os
    import sys
    from types import SimpleNamespace

    from sregym_app_astronomy_shop import leak
    from sregym_app_astronomy_shop.app import app_spec
    from sregym_app_astronomy_shop.manifests import load_documents

    port, client = broker
    client.config_set("maxmemory", "12mb")
    client.config_set("maxmemory-policy", "noeviction")
    deployment = next(d for d in load_documents() if d["kind"] == "Deployment" and d["metadata"]["name"] == "checkout")
    ctx = _LeakCtx(port, deployment)
    ctx.app, ctx.namespace = app_spec(), "astronomy-shop"
    target = SimpleNamespace(component=SimpleNamespace(name="checkout", kind="Deployment"))
    leak.inject(ctx, target, {})
    (side,) = [c for c in ctx.deployment["spec"]["template"]["spec"]["containers"] if c["name"] == leak.SIDECAR]
    assert side["args"] == ["order-exporter"] and side["image"].startswith("sregym/astronomy-shop:")
    leak.inject(ctx, target, {})  # idempotent
    assert len(ctx.deployment["spec"]["template"]["spec"]["containers"]) == 2

    env = {**{e["name"]: e["value"] for e in side["env"]}, "QUEUE_ADDR": f"127.0.0.1:{port}",
           "EXPORT_MESSAGE_BYTES": str(1 << 20), "EXPORT_INTERVAL_S": "0.2", "PATH": os.environ.get("PATH", "")}
    log = tmp_path / "order-exporter.log"  # read while it runs: its next try after the broker filled fails
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "sregym_app_astronomy_shop.serve", "order-exporter"], env=env,
                                stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        def refused():
            try:
                client.xadd(STREAM, {"order": json.dumps({"orderId": "o1", "pad": "x" * 1200})})  # an order's size
                return False
            except redis.ResponseError as exc:
                return "maxmemory" in str(exc)  # redis-py drops the OOM prefix (OutOfMemoryError)
        assert _wait(refused), client.info("memory")["used_memory_human"]
        assert leak.is_present(ctx, target, {})
        assert _wait(lambda: "export_failed" in log.read_text()), log.read_text()[-800:]
    finally:
        proc.terminate()
        proc.wait(30)
    out = log.read_text()
    assert '"event": "export_failed"' in out or '"event":"export_failed"' in out, out[-800:]
    leak.fix(ctx, target, {})
    assert [c["name"] for c in ctx.deployment["spec"]["template"]["spec"]["containers"]] == ["checkout"]
    assert not leak.is_present(ctx, target, {})
    client.xadd(STREAM, _order(2))  # the broker takes orders again


def test_the_cache_flood_job_writes_bounded_large_keys(broker):
    """cache-memory-flood's program: N writers SET new large keys at a bounded pace, and stop at the deadline."""
    import os
    import sys

    port, client = broker
    env = {"CACHE_ADDR": f"127.0.0.1:{port}", "CACHE_FLOOD_THREADS": "3", "CACHE_FLOOD_KEYS_PER_S": "5",
           "CACHE_FLOOD_VALUE_BYTES": str(64 << 10), "CACHE_FLOOD_DURATION_S": "2", "PATH": os.environ.get("PATH", "")}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sregym_app_astronomy_shop.serve", "cache-flood"], env=env,
                          capture_output=True, text=True, timeout=30)
    # it stops by itself at its deadline (a program that ran on would meet subprocess's timeout)
    assert proc.returncode == 0, (time.monotonic() - started, proc.stdout[-500:] + proc.stderr[-500:])
    keys = client.keys("loadtest:*")
    # bounded: never more than 3 writers x 5 keys/s x 2 s (a slow machine writes fewer, never more)
    assert 1 <= len(keys) <= 3 * 5 * 2 + 3, len(keys)
    assert client.strlen(keys[0]) == 64 << 10


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs Debian's redis-cli")
def test_recovering_the_leak_frees_the_broker_even_when_checkout_was_deleted(broker):
    from types import SimpleNamespace

    from sregym_app_astronomy_shop import leak
    from sregym_app_astronomy_shop.app import app_spec

    port, client = broker
    client.xadd(leak.STREAM, {"snapshot": "x" * 1000})

    class Gone(_LeakCtx):
        def kubectl(self, *args, input=None, check=True, timeout=60.0):
            if args[0] == "get" and args[1].lower() == "deployment":
                return ""  # --ignore-not-found: the Deployment was deleted
            return super().kubectl(*args, input=input, check=check, timeout=timeout)

    ctx = Gone(port, {})
    ctx.app, ctx.namespace = app_spec(), "astronomy-shop"
    leak.fix(ctx, SimpleNamespace(component=SimpleNamespace(name="checkout", kind="Deployment")), {})
    assert not client.exists(leak.STREAM)


def test_fraud_detection_reviews_orders_by_their_value_in_dollars_not_by_their_currency_units():
    """An order of 500 dollars in yen is over 5 000 000 yen-"cents": it is still confirmed."""
    from sregym_app_astronomy_shop.orders import FRAUD_REVIEW_USD_CENTS

    fraud = Consumer.__new__(Consumer)
    fraud.service, fraud.verdicts, fraud._slow, fraud._slow_checked = "fraud-detection", {}, False, time.monotonic()
    yen = data.convert_cents(500_00, "USD", "JPY")
    assert yen > FRAUD_REVIEW_USD_CENTS
    fraud.process({b"order": json.dumps({"orderId": "jpy", "total": data.money("JPY", yen)}).encode()})
    fraud.process({b"order": json.dumps({"orderId": "big", "total": data.money("USD", 60_000_00)}).encode()})
    assert fraud.verdicts == {"jpy": "confirmed", "big": "review"}
