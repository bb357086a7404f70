"""Prometheus metrics apps define alike: the latency buckets and an RPC client's four series.

Every app names its metrics with its own prefix (``hotel_``, ``sn_``...), so agents see which app
a series belongs to; what the series are is the same wherever a service calls peers with timeouts
and retries (Hotel Reservation over gRPC, Social Network over Thrift): one sample per attempt, the
calls that failed after the retries, the retries, and the time a call took with its retries.
"""

from __future__ import annotations

import dataclasses

from prometheus_client import Counter, Histogram

#: seconds; fine below 10 ms, where a healthy in-cluster hop is
FINE_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclasses.dataclass(frozen=True)
class RpcClientMetrics:
    """``<prefix>_rpc_client_{requests,errors,retries}_total`` and ``<prefix>_rpc_client_latency_seconds``."""

    requests: Counter  # (service, peer, method, code): one per attempt
    errors: Counter  # (service, peer, method, code): failed after the retries
    retries: Counter  # (service, peer, method)
    latency: Histogram  # (service, peer, method): including the retries


def rpc_client_metrics(prefix: str, protocol: str, buckets: tuple[float, ...] = FINE_LATENCY_BUCKETS) -> RpcClientMetrics:
    """Register the RPC client series of an app (``prefix`` without the underscore; ``protocol`` as
    the help texts name it, e.g. ``gRPC``). Call once per process, as Prometheus registers a name once."""
    peer_call = ["service", "peer", "method"]
    return RpcClientMetrics(
        requests=Counter(f"{prefix}_rpc_client_requests_total", f"{protocol} calls to peers (one per attempt)",
                         [*peer_call, "code"]),
        errors=Counter(f"{prefix}_rpc_client_errors_total", f"{protocol} calls to peers that failed after retries",
                       [*peer_call, "code"]),
        retries=Counter(f"{prefix}_rpc_client_retries_total", f"{protocol} retries to peers", peer_call),
        latency=Histogram(f"{prefix}_rpc_client_latency_seconds", f"{protocol} call time including retries", peer_call,
                          buckets=buckets))
