"""The topology in one place: services, ports, peers, flags and their owners.

``manifests.py`` renders the Kubernetes objects from it and ``app.py`` the component inventory, so
the two cannot drift apart (the tests check the shipped YAML equals the rendering).
"""

from __future__ import annotations

NAMESPACE = "astronomy-shop"
WORKLOAD_NAMESPACE = "astronomy-workload"
ADMIN_PORT = 9464

#: Python services: port (None for queue consumers), protocol, peers (by Service name)
SERVICES: dict[str, tuple[int | None, str, tuple[str, ...]]] = {
    "frontend": (8080, "http", ("ad", "cart", "checkout", "currency", "product-catalog", "recommendation")),
    "ad": (9555, "grpc", ()),
    "cart": (7070, "grpc", ("valkey",)),
    "checkout": (5050, "grpc", ("cart", "currency", "email", "payment", "product-catalog", "shipping", "queue")),
    "currency": (7001, "grpc", ()),
    "email": (6060, "http", ()),
    "payment": (50051, "grpc", ()),
    "product-catalog": (3550, "grpc", ()),
    "quote": (8090, "http", ()),
    "recommendation": (9001, "grpc", ("product-catalog",)),
    "shipping": (50050, "http", ("quote",)),
    "image-provider": (8081, "http", ()),
    "accounting": (None, "queue-consumer", ("queue",)),
    "fraud-detection": (None, "queue-consumer", ("queue",)),
    "flagd": (8016, "http", ()),
}
#: a peer name → its Service and port
PEER_SERVICES = {"valkey": ("valkey-cart", 6379), "queue": ("queue", 6379)}

#: the demo's flags: name → (variants, the component whose behaviour it changes, the "on" variant)
FLAGS: dict[str, tuple[dict[str, object], str, str]] = {
    "adFailure": ({"on": True, "off": False}, "ad", "on"),
    "adHighCpu": ({"on": True, "off": False}, "ad", "on"),
    "adManualGc": ({"on": True, "off": False}, "ad", "on"),
    "cartFailure": ({"on": True, "off": False}, "cart", "on"),
    "failedReadinessProbe": ({"on": True, "off": False}, "cart", "on"),
    "imageSlowLoad": ({"10sec": 10000, "5sec": 5000, "off": 0}, "image-provider", "10sec"),
    "kafkaQueueProblems": ({"on": 100, "off": 0}, "checkout", "on"),
    "loadGeneratorFloodHomepage": ({"on": 100, "off": 0}, "frontend", "on"),
    "paymentFailure": ({"100%": 1.0, "90%": 0.95, "75%": 0.75, "50%": 0.5, "25%": 0.25, "10%": 0.1, "off": 0.0},
                       "payment", "100%"),
    "paymentUnreachable": ({"on": True, "off": False}, "checkout", "on"),
    "productCatalogFailure": ({"on": True, "off": False}, "product-catalog", "on"),
    "recommendationCacheFailure": ({"on": True, "off": False}, "recommendation", "on"),
}
FLAG_DESCRIPTIONS = {
    "adFailure": "Fail ad service", "adHighCpu": "Triggers high cpu load in the ad service",
    "adManualGc": "Triggers full manual garbage collections in the ad service",
    "cartFailure": "Fail cart service", "failedReadinessProbe": "Cart service readiness probe fails",
    "imageSlowLoad": "slow loading images in the frontend",
    "kafkaQueueProblems": "Overloads the order queue while consumers slow down",
    "loadGeneratorFloodHomepage": "Flood the frontend with a large amount of requests.",
    "paymentFailure": "Fail payment service charge requests n%",
    "paymentUnreachable": "Payment service is unavailable",
    "productCatalogFailure": "Fail product catalog service on a specific product",
    "recommendationCacheFailure": "Fail recommendation service cache",
}
