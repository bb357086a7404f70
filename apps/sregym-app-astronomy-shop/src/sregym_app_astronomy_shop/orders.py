"""checkout and the order queue: PlaceOrder, publishing to a Redis Streams broker, and the
``accounting`` and ``fraud-detection`` consumer groups.

The broker is a real ``redis-server`` (the ``queue`` Deployment) holding the stream ``orders``;
each consumer service is a consumer group reading it in order, acknowledging each message after
processing it, and always retrying its oldest unacknowledged message first (a Kafka consumer at its
committed offset), so a message it cannot process blocks everything behind it. Lag and pending
counts come from the broker itself (``XINFO GROUPS``) as ``shop_queue_consumer_lag``. The trace
context travels in each message, so producer and consumer spans share one trace.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace

from sregym_appkit import logs

from . import data, flags, telemetry
from .backends import PORTS, Ready, addr
from .rpc import GrpcPeer, GrpcServer, HttpPeer, RpcError

STREAM = "orders"
GROUPS = ("accounting", "fraud-detection")
#: where checkout sends payments while paymentUnreachable is on, as the demo does
BAD_PAYMENT_ADDR = "badaddress:50051"


def _broker(env: Mapping[str, str]) -> Any:
    import redis

    host, _, port = addr(env, "queue").partition(":")
    return redis.Redis(host=host, port=int(port or 6379), socket_timeout=3, socket_connect_timeout=2)


def build_checkout(env: Mapping[str, str]) -> tuple[Any, Ready]:
    svc = "checkout"
    cart = GrpcPeer(svc, "cart", addr(env, "cart"))
    catalog = GrpcPeer(svc, "product-catalog", addr(env, "product-catalog"))
    currency = GrpcPeer(svc, "currency", addr(env, "currency"))
    payment = GrpcPeer(svc, "payment", addr(env, "payment"))
    bad_payment = GrpcPeer(svc, "payment", BAD_PAYMENT_ADDR, timeout_s=1.0)
    shipping = HttpPeer(svc, "shipping", addr(env, "shipping"))
    email = HttpPeer(svc, "email", addr(env, "email"))
    broker = _broker(env)
    queue_addr = addr(env, "queue")

    def convert(m: dict[str, Any], to: str) -> dict[str, Any]:
        return m if m["currencyCode"] == to else currency.call("Convert", {"from": m, "toCode": to})

    def place_order(req: dict[str, Any]) -> dict[str, Any]:
        user, to = str(req.get("userId", "")), str(req.get("userCurrency", "USD"))
        address = req.get("address") or {}
        items = cart.call("GetCart", {"userId": user}).get("items", [])
        if not items:
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION, f"cart of user {user!r} is empty")
        lines, total = [], 0
        for item in items:
            product = catalog.call("GetProduct", {"id": item["productId"]})
            price = convert(product["priceUsd"], to)
            cost = data.cents_of(price) * int(item["quantity"])
            lines.append({"item": item, "cost": data.money(to, cost)})
            total += cost
        quote = shipping.call("POST", "/get-quote", {"address": address, "items": items})
        ship_cost = convert(quote["costUsd"], to)
        total += data.cents_of(ship_cost)
        pay = bad_payment if flags.enabled("paymentUnreachable") else payment
        tx = pay.call("Charge", {"amount": data.money(to, total), "creditCard": req.get("creditCard") or {}})
        tracking = shipping.call("POST", "/ship-order", {"address": address, "items": items})["trackingId"]
        cart.call("EmptyCart", {"userId": user})
        order = {"orderId": str(uuid.uuid4()), "shippingTrackingId": tracking, "shippingCost": ship_cost,
                 "shippingAddress": address, "items": lines, "transactionId": tx["transactionId"],
                 "total": data.money(to, total)}
        try:
            email.call("POST", "/send_order_confirmation", {"email": req.get("email", ""), "order": order})
        except RpcError as exc:  # the demo's checkout logs a failed confirmation and still succeeds
            logs.warning("order_confirmation_failed", order_id=order["orderId"], error=exc.message)
        publish(order)
        logs.info("order_placed", order_id=order["orderId"], items=len(lines), currency=to, total_cents=total)
        return order

    def publish(order: dict[str, Any]) -> None:
        extra = max(0, flags.integer("kafkaQueueProblems", 0))
        with telemetry.tracer().start_as_current_span(
                f"{STREAM} publish", kind=trace.SpanKind.PRODUCER,
                attributes={"messaging.system": "redis-streams", "messaging.destination.name": STREAM,
                            "messaging.operation": "publish", "net.peer.name": queue_addr}) as span:
            fields = {"order": json.dumps(order), **{f"ctx-{k}": v for k, v in telemetry.carrier().items()}}
            try:
                pipe = broker.pipeline()
                for _ in range(1 + min(extra, 1000)):  # kafkaQueueProblems: the demo floods the topic
                    pipe.xadd(STREAM, fields, maxlen=100_000, approximate=True)
                pipe.execute()
                telemetry.QUEUE_PUBLISHED.labels(svc, STREAM).inc(1 + min(extra, 1000))
                if extra:
                    span.set_attribute("app.queue.extra_messages", extra)
            except Exception as exc:  # noqa: BLE001 - a broker failure must not fail a paid order
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                logs.error("queue_publish_failed", peer="queue", addr=queue_addr, stream=STREAM, error=str(exc))

    return GrpcServer(svc, PORTS["checkout"], {"PlaceOrder": place_order}), lambda: (True, {})


class Consumer:
    """One consumer group member: in-order processing with redelivery of its own pending messages."""

    def __init__(self, service: str, env: Mapping[str, str]) -> None:
        self.service, self.group = service, service
        self.broker = _broker(env)
        self.queue_addr = addr(env, "queue")
        self.name = socket.gethostname()
        self.connected = False
        self.processed = 0
        self.revenue_cents: dict[str, int] = {}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        return self.connected, {"processed": self.processed}

    def _ensure_group(self) -> None:
        import redis

        try:
            self.broker.xgroup_create(STREAM, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def process(self, fields: dict[bytes, bytes]) -> None:
        order = json.loads(fields[b"order"])  # a record that is not an order raises: a poison pill
        if not isinstance(order, dict) or "orderId" not in order:
            raise ValueError("record has no orderId")
        if self.service == "fraud-detection":
            if flags.integer("kafkaQueueProblems", 0) > 0:
                time.sleep(0.05)  # the demo's consumer slows down while the topic is flooded
            total = order.get("total") or {}
            if data.cents_of(total) > 5_000_000:
                logs.warning("order_flagged", order_id=order["orderId"], total_cents=data.cents_of(total))
        else:
            total = order.get("total") or {}
            code = str(total.get("currencyCode", "USD"))
            self.revenue_cents[code] = self.revenue_cents.get(code, 0) + data.cents_of(total)
            logs.info("order_recorded", order_id=order["orderId"], currency=code, total_cents=data.cents_of(total))

    def _handle(self, msg_id: bytes, fields: dict[bytes, bytes] | None) -> bool:
        if fields is None:  # deleted from the stream while pending (an operator removed it): nothing to process
            self.broker.xack(STREAM, self.group, msg_id)
            logs.warning("message_deleted_skipped", stream=STREAM, group=self.group, message_id=msg_id.decode())
            return True
        carrier = {k.decode()[4:]: v.decode() for k, v in fields.items() if k.startswith(b"ctx-")}
        token = otel_context.attach(telemetry.extract(carrier))
        try:
            with telemetry.tracer().start_as_current_span(
                    f"{STREAM} process", kind=trace.SpanKind.CONSUMER,
                    attributes={"messaging.system": "redis-streams", "messaging.destination.name": STREAM,
                                "messaging.operation": "process", "messaging.consumer.group.name": self.group,
                                "messaging.message.id": msg_id.decode()}) as span:
                try:
                    self.process(fields)
                except (KeyError, ValueError, TypeError, AttributeError) as exc:
                    span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                    logs.error("message_processing_failed", stream=STREAM, group=self.group, message_id=msg_id.decode(),
                               error=f"{type(exc).__name__}: {exc}", action="will retry (in-order consumer)")
                    telemetry.QUEUE_CONSUMED.labels(self.service, STREAM, "error").inc()
                    return False
            self.broker.xack(STREAM, self.group, msg_id)
            self.processed += 1
            telemetry.QUEUE_CONSUMED.labels(self.service, STREAM, "ok").inc()
            return True
        finally:
            otel_context.detach(token)

    def _gauges(self) -> None:
        for info in self.broker.xinfo_groups(STREAM):
            name = info["name"].decode() if isinstance(info["name"], bytes) else info["name"]
            if name == self.group:
                telemetry.QUEUE_LAG.labels(self.service, STREAM, name).set(info.get("lag") or 0)
                telemetry.QUEUE_PENDING.labels(self.service, STREAM, name).set(info.get("pending") or 0)

    def run(self, stop: threading.Event) -> None:
        import redis

        last_gauge = 0.0
        while not stop.is_set():
            try:
                if not self.connected:
                    self._ensure_group()
                    self.connected = True
                    logs.info("consumer_connected", peer="queue", addr=self.queue_addr, stream=STREAM, group=self.group)
                # our own unacknowledged messages first, oldest first: nothing passes a failing one
                pending = self.broker.xreadgroup(self.group, self.name, {STREAM: "0"}, count=1)
                entries = pending[0][1] if pending else []
                if entries:
                    msg_id, fields = entries[0]
                    if not self._handle(msg_id, fields):
                        stop.wait(1.0)
                else:
                    fresh = self.broker.xreadgroup(self.group, self.name, {STREAM: ">"}, count=10, block=1000)
                    for msg_id, fields in (fresh[0][1] if fresh else []):
                        if not self._handle(msg_id, fields):
                            break  # the rest stay pending behind it
                if time.monotonic() - last_gauge > 2:
                    self._gauges()
                    last_gauge = time.monotonic()
            except redis.RedisError as exc:
                if self.connected:
                    logs.error("consumer_disconnected", peer="queue", addr=self.queue_addr, error=str(exc))
                self.connected = False
                stop.wait(2.0)


