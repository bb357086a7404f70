"""Benchmark the embedded cluster's controllers and network, in process (no HTTP, no real pods).

* apply -> pods: time from creating a set of Deployments totalling N pods (default 10 x 3 = 30) to
  every pod created, every pod scheduled, and (with a stand-in kubelet marking pods Ready at once)
  every Deployment reporting a complete rollout. This isolates the controllers' and scheduler's share
  of the "apply to all Ready" budget (< 20 s for hotel-reservation on 2 cores).
* proxy overhead: median/p95 round trip of a small request/response through the service proxy vs
  directly to the backend, over fresh connections.
* DNS: median latency of an A query to the cluster DNS server.

* --real: the same apply against a real cluster process (`cluster up`, real kubectl, pods run as real
  busybox `sleep` processes by the node agents): apply -> all pods created, scheduled, Ready.

    python benchmarks/bench_controllers.py [--deployments 10] [--replicas 3] [--nodes 3] [--rounds 3]
                                           [--requests 200] [--real] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import struct
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "sregym-cluster-embedded" / "src"))

from sregym_cluster_embedded.client import new_local_cluster  # noqa: E402
from sregym_cluster_embedded.controllers import start_controllers  # noqa: E402
from sregym_cluster_embedded.network import start_network  # noqa: E402
from sregym_cluster_embedded.settings import ClusterSettings  # noqa: E402


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def add_nodes(client, count: int) -> None:
    for i in range(count):
        name = f"node-{i + 1}"
        await client.create("nodes", {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        await client.patch("nodes", name, {"status": {
            "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": stamp()}]}}, subresource="status")


async def instant_kubelet(client, ip_prefix: str, stop: asyncio.Event) -> None:
    """Marks every bound pod Running and Ready straight away (what kwok does), from a pod watch."""
    counter = 0
    seen: set[str] = set()
    async for event, pod in client.watch("pods"):
        if stop.is_set():
            return
        meta = pod["metadata"]
        if event == "DELETED" or not pod["spec"].get("nodeName") or meta["uid"] in seen:
            continue
        if meta.get("deletionTimestamp"):
            await client.delete("pods", meta["name"], meta["namespace"], grace_period=0)
            continue
        seen.add(meta["uid"])
        counter += 1
        now = stamp()
        await client.patch("pods", meta["name"], {"status": {
            "phase": "Running", "podIP": f"{ip_prefix}.{counter // 250}.{counter % 250 + 2}", "startTime": now,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]}},
            meta["namespace"], subresource="status")


def deployment(i: int, replicas: int) -> dict:
    name = f"svc-{i}"
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
            "name": "main", "image": "python:3.11", "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}}}]}}}}


async def wait_until(check, timeout: float = 60.0) -> float:
    start = time.perf_counter()
    while not await check():
        if time.perf_counter() - start > timeout:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.002)
    return time.perf_counter() - start


async def rollout_round(deployments: int, replicas: int, nodes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = ClusterSettings(state_dir=tmp, nodes=nodes, pod_cidr_prefix="127.211", service_cidr_prefix="127.212")
        client = new_local_cluster(settings)
        await add_nodes(client, nodes)
        ctrl = start_controllers(client, settings)
        await ctrl.wait_synced()
        stop = asyncio.Event()
        kubelet = asyncio.create_task(instant_kubelet(client, "127.211", stop))
        total = deployments * replicas
        t0 = time.perf_counter()
        for i in range(deployments):
            await client.create("deployments.apps", deployment(i, replicas), "default")

        async def created() -> bool:
            return len(client.list_nocopy("pods", "default")) >= total

        async def scheduled() -> bool:
            pods = client.list_nocopy("pods", "default")
            return len(pods) >= total and all(p["spec"].get("nodeName") for p in pods)

        async def available() -> bool:
            ds = client.list_nocopy("deployments.apps", "default")
            return all((d.get("status") or {}).get("availableReplicas") == replicas
                       and (d.get("status") or {}).get("updatedReplicas") == replicas for d in ds)

        await wait_until(created)
        t_created = time.perf_counter() - t0
        await wait_until(scheduled)
        t_scheduled = time.perf_counter() - t0
        await wait_until(available)
        t_available = time.perf_counter() - t0
        stop.set()
        kubelet.cancel()
        await ctrl.stop()
        return {"created_s": t_created, "scheduled_s": t_scheduled, "available_s": t_available}


async def proxy_round(requests: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = ClusterSettings(state_dir=tmp, pod_cidr_prefix="127.213", service_cidr_prefix="127.214")
        client = new_local_cluster(settings)
        await add_nodes(client, 1)
        ctrl = start_controllers(client, settings, only=["endpoints"])
        network = await start_network(client, settings)
        backend_ip = "127.213.0.2"

        async def reply(reader, writer):
            await reader.read(64)
            writer.write(b"pong")
            await writer.drain()
            writer.close()
        server = await asyncio.start_server(reply, backend_ip, 8080)
        await client.create("pods", {"metadata": {"name": "echo", "labels": {"app": "echo"}}, "spec": {
            "nodeName": "node-1", "containers": [{"name": "m", "image": "x"}]}}, "default")
        await client.patch("pods", "echo", {"status": {"phase": "Running", "podIP": backend_ip, "conditions": [
            {"type": "Ready", "status": "True"}]}}, "default", subresource="status")
        svc = await client.create("services", {"metadata": {"name": "echo"}, "spec": {
            "selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 8080}]}}, "default")
        ip = svc["spec"]["clusterIP"]

        async def once(host: str, port: int) -> float:
            start = time.perf_counter()
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"ping")
            await writer.drain()
            await reader.read()
            writer.close()
            return time.perf_counter() - start

        async def listening() -> bool:
            try:
                await once(ip, 80)
                return True
            except OSError:
                return False
        await wait_until(listening, timeout=10)
        direct = [await once(backend_ip, 8080) for _ in range(requests)]
        proxied = [await once(ip, 80) for _ in range(requests)]
        query = struct.pack("!6H", 1, 0x100, 1, 0, 0, 0) + b"".join(
            bytes([len(p)]) + p.encode() for p in "echo.default.svc.cluster.local".split(".")) + b"\0" + struct.pack("!2H", 1, 1)
        loop = asyncio.get_running_loop()

        def dns_once() -> float:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.settimeout(2)
                start = time.perf_counter()
                sock.sendto(query, (network.dns.host, network.dns.port))
                sock.recv(512)
                return time.perf_counter() - start
        dns = [await loop.run_in_executor(None, dns_once) for _ in range(min(requests, 100))]
        server.close()
        await network.stop()
        await ctrl.stop()

    def pct(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000

    return {"direct_median_ms": statistics.median(direct) * 1000, "direct_p95_ms": pct(direct, 0.95),
            "proxy_median_ms": statistics.median(proxied) * 1000, "proxy_p95_ms": pct(proxied, 0.95),
            "proxy_overhead_median_ms": (statistics.median(proxied) - statistics.median(direct)) * 1000,
            "dns_median_ms": statistics.median(dns) * 1000}


def real_round(deployments: int, replicas: int, nodes: int) -> dict[str, float]:
    """apply -> created / scheduled / all Ready on a real cluster process with real pod processes."""
    import os
    import subprocess

    import yaml
    from sregym_cluster_embedded import cluster

    kubectl = Path(sys.executable).parent / "kubectl"
    with tempfile.TemporaryDirectory() as home:
        os.environ["SREGYM_HOME"] = home
        info = cluster.up("benchctrl", nodes)
        try:
            docs = []
            for i in range(deployments):
                d = deployment(i, replicas)
                d["spec"]["template"]["spec"]["containers"][0].update(image="busybox", command=["sleep", "3600"])
                docs.append(d)
            manifest = yaml.safe_dump_all(docs)
            base = [str(kubectl), f"--kubeconfig={info.kubeconfig}", f"--cache-dir={home}/kc"]
            total = deployments * replicas
            t0 = time.perf_counter()
            subprocess.run(base + ["apply", "-f", "-"], input=manifest, text=True, check=True, capture_output=True)
            marks: dict[str, float] = {"apply_returned_s": time.perf_counter() - t0}
            while "ready_s" not in marks and time.perf_counter() - t0 < 120:
                out = subprocess.run(base + ["get", "pods", "-o", "json"], text=True, capture_output=True, check=True)
                pods = json.loads(out.stdout)["items"]
                now = time.perf_counter() - t0
                if len(pods) >= total:
                    marks.setdefault("created_s", now)
                    if all(p["spec"].get("nodeName") for p in pods):
                        marks.setdefault("scheduled_s", now)
                    if all(any(c["type"] == "Ready" and c["status"] == "True"
                               for c in (p.get("status") or {}).get("conditions") or []) for p in pods):
                        marks["ready_s"] = now
                time.sleep(0.05)
            return {f"real_{k}": v for k, v in marks.items()}
        finally:
            cluster.down("benchctrl")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--real", action="store_true", help="also measure on a real cluster process")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = [await rollout_round(args.deployments, args.replicas, args.nodes) for _ in range(args.rounds)]
    result = {"pods": args.deployments * args.replicas,
              **{k: statistics.median(r[k] for r in rounds) for k in rounds[0]},
              **await proxy_round(args.requests)}
    if args.real:
        result.update(await asyncio.get_running_loop().run_in_executor(
            None, real_round, args.deployments, args.replicas, args.nodes))
    for key, value in result.items():
        print(f"{key:28s} {value:.4f}" if isinstance(value, float) else f"{key:28s} {value}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
