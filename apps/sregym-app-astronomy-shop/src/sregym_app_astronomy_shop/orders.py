"""checkout and the order queue: PlaceOrder, publishing to a Redis Streams broker, and the
``accounting`` and ``fraud-detection`` consumer groups.

The broker is a real ``redis-server`` (the ``queue`` Deployment) holding the stream ``orders``;
each consumer service is a consumer group reading it in order, acknowledging each message after
processing it, and always retrying its oldest unacknowledged message first (a Kafka consumer at its
committed offset), so a message it cannot process blocks everything behind it. Lag and pending
counts come from the broker itself (``XINFO GROUPS``) as ``shop_queue_consumer_lag``. The trace
context travels in each message, so producer and consumer spans share one trace.

An order is *confirmed* once fraud-detection has checked it: it writes the verdict to the broker
(``order-status:<orderId>``, kept for an hour) and checkout's ``GetOrder`` reads it, so the shop's
order page (``GET /api/orders/<id>``) says ``processing`` until then. A consumer that lags behind
therefore leaves users' orders unconfirmed, as a shop whose fraud check lags does.
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
#: the stream's length cap (approximate trimming): 20 000 orders of about 1.5 kB stay far below the
#: broker's 128 MB maxmemory, however long a flood lasts
MAX_LEN = 20_000
STATUS_KEY = "order-status:{}"
STATUS_TTL_S = 3600
#: orders above this total (in US cents, whatever their currency) are held for review by fraud-detection
FRAUD_REVIEW_USD_CENTS = 5_000_000
#: how many new messages a consumer takes per read (processed in order, acknowledged together)
BATCH = 100
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
                    pipe.xadd(STREAM, fields, maxlen=MAX_LEN, approximate=True)
                pipe.execute()
                telemetry.QUEUE_PUBLISHED.labels(svc, STREAM).inc(1 + min(extra, 1000))
                if extra:
                    span.set_attribute("app.queue.extra_messages", extra)
            except Exception as exc:  # noqa: BLE001 - a broker failure must not fail a paid order
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                logs.error("queue_publish_failed", peer="queue", addr=queue_addr, stream=STREAM, error=str(exc))

    def get_order(req: dict[str, Any]) -> dict[str, Any]:
        order_id = str(req.get("orderId", ""))
        if not order_id:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "orderId is required")
        try:
            verdict = broker.get(STATUS_KEY.format(order_id))
        except Exception as exc:  # noqa: BLE001 - the broker is down: the order page cannot say
            raise RpcError(grpc.StatusCode.UNAVAILABLE, f"order status store {queue_addr}: {exc}") from exc
        # no verdict yet: fraud-detection has not reached the order in the stream
        status = verdict.decode() if isinstance(verdict, bytes) else (verdict or "processing")
        return {"orderId": order_id, "status": status}

    return GrpcServer(svc, PORTS["checkout"], {"PlaceOrder": place_order, "GetOrder": get_order}), lambda: (True, {})


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
        self.verdicts: dict[str, str] = {}  # order id -> fraud verdict, written with the next acknowledgement
        self._slow, self._slow_checked = False, 0.0

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
            if self._slowed():
                time.sleep(0.05)  # the demo's consumer slows down while the topic is flooded
            total = order.get("total") or {}
            verdict = "confirmed"
            usd_cents = data.convert_cents(data.cents_of(total), str(total.get("currencyCode", "USD")), "USD")
            if usd_cents > FRAUD_REVIEW_USD_CENTS:
                verdict = "review"
                logs.warning("order_flagged", order_id=order["orderId"], total_usd_cents=usd_cents)
            self.verdicts[str(order["orderId"])] = verdict
        else:
            total = order.get("total") or {}
            code = str(total.get("currencyCode", "USD"))
            self.revenue_cents[code] = self.revenue_cents.get(code, 0) + data.cents_of(total)
            logs.info("order_recorded", order_id=order["orderId"], currency=code, total_cents=data.cents_of(total))

    def _slowed(self) -> bool:
        """kafkaQueueProblems, asked of flagd at most once a second (not once per message)."""
        now = time.monotonic()
        if now - self._slow_checked >= 1.0:
            self._slow_checked = now
            self._slow = flags.integer("kafkaQueueProblems", 0) > 0
        return self._slow

    def _ack(self, ids: list[bytes]) -> None:
        """Acknowledge processed messages and publish their verdicts, in one round trip."""
        pipe = self.broker.pipeline(transaction=False)
        for order_id, verdict in self.verdicts.items():
            pipe.set(STATUS_KEY.format(order_id), verdict, ex=STATUS_TTL_S)
        if ids:
            pipe.xack(STREAM, self.group, *ids)
        pipe.execute()
        self.verdicts.clear()
        self.processed += len(ids)
        telemetry.QUEUE_CONSUMED.labels(self.service, STREAM, "ok").inc(len(ids))

    def _handle(self, msg_id: bytes, fields: dict[bytes, bytes] | None) -> bool | None:
        """Process one message: True when processed (the caller acknowledges it, see :meth:`_ack`), False
        when it failed (it stays pending), None when it was gone from the stream (acknowledged here)."""
        if fields is None:  # deleted from the stream while pending (an operator removed it): nothing to process
            self.broker.xack(STREAM, self.group, msg_id)
            logs.warning("message_deleted_skipped", stream=STREAM, group=self.group, message_id=msg_id.decode())
            return None
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
                    outcome = self._handle(msg_id, fields)
                    if outcome:
                        self._ack([msg_id])
                    elif outcome is False:
                        stop.wait(1.0)
                else:
                    fresh = self.broker.xreadgroup(self.group, self.name, {STREAM: ">"}, count=BATCH, block=1000)
                    done: list[bytes] = []
                    for msg_id, fields in (fresh[0][1] if fresh else []):
                        outcome = self._handle(msg_id, fields)
                        if outcome is False:
                            break  # the rest stay pending behind it
                        if outcome:
                            done.append(msg_id)
                    if done:
                        self._ack(done)
                if time.monotonic() - last_gauge > 2:
                    self._gauges()
                    last_gauge = time.monotonic()
            except redis.RedisError as exc:
                if self.connected:
                    logs.error("consumer_disconnected", peer="queue", addr=self.queue_addr, error=str(exc))
                self.connected = False
                stop.wait(2.0)


