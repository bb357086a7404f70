"""Astronomy Shop: the OpenTelemetry demo's topology as an SREGym application.

Our own implementation: an nginx edge proxy in front of an HTTP ``frontend``; ``ad``, ``cart``
(with a Redis cache), ``checkout``, ``currency``, ``payment``, ``product-catalog`` and
``recommendation`` speaking gRPC; ``email``, ``quote``, ``shipping`` and ``image-provider`` speaking
HTTP; ``accounting`` and ``fraud-detection`` consuming checkout's orders from a Redis Streams broker;
feature flags served over OFREP by a flagd-compatible ``flagd`` from a ConfigMap in flagd's JSON
format. One package, one image; ``python -m sregym_app_astronomy_shop.serve <name>`` picks the
service.
"""

from __future__ import annotations

__version__ = "0.2.0"
IMAGE_REPO = "sregym/astronomy-shop"
IMAGE_TAG = "1.0"
