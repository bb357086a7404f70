"""What an SRE looks at, as small probes for the live fault contract.

A probe is a callable ``probe(live) -> str | None``: the evidence it saw (a pod's waiting reason, an
event message, a failed request, a log line, a metric) or ``None`` while the symptom is not (yet)
visible. Everything goes through the real kubectl, the Services' real addresses, the pods' real
``/metrics`` and the workload generator's stats API. Requests "as a user" go to the app's frontend
Service, built by the app's own ``request_for(kind, rng) -> (method, path)``.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

Probe = Callable[["Live"], "str | None"]
#: ``request_for(kind, rng) -> (method, path)``: one real request of a kind of the app's workload mix
RequestFor = Callable[[str, random.Random], tuple[str, str]]

#: latencies of healthy requests (ms) per app namespace, measured once per session by the live contract.
#: Keyed by app because apps differ tenfold in latency: one app's baseline would hide another's symptom.
HEALTHY_MS: dict[str, list[float]] = {}
HEALTHY_BURST_MS: dict[str, list[float]] = {}


def healthy_ms(live: Live) -> float:
    """The median healthy latency of one request to ``live``'s app (50 ms until measured)."""
    measured = HEALTHY_MS.get(live.namespace)
    return statistics.median(measured) if measured else 50.0


def healthy_burst_ms(live: Live) -> float:
    """The median healthy latency of a request inside a burst to ``live``'s app (200 ms until measured)."""
    measured = HEALTHY_BURST_MS.get(live.namespace)
    return statistics.median(measured) if measured else 200.0


class Live:
    """The deployed app as the probes see it, for one primitive's run (``since`` = injection time)."""

    def __init__(self, kubeconfig: Path, kubectl: str, namespace: str, components: dict[str, Any],
                 workload: Any, since: float, *, request_for: RequestFor | None = None,
                 frontend: tuple[str, int] = ("frontend", 5000)) -> None:
        self.kubeconfig, self.kubectl_path, self.namespace = kubeconfig, kubectl, namespace
        self.components, self.workload, self.since = components, workload, since
        self.request_for, self.frontend = request_for, frontend
        self.rng = random.Random(7)

    # ------------------------------------------------------------------ kubectl
    def kubectl(self, *args: str, timeout: float = 60) -> str:
        proc = subprocess.run([self.kubectl_path, "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, errors="replace", timeout=timeout)
        return proc.stdout + proc.stderr

    def get_json(self, *args: str) -> dict:
        out = self.kubectl("get", *args, "-n", self.namespace, "-o", "json")
        try:
            return json.loads(out)
        except ValueError:
            return {"items": []}

    def pods(self, component: str) -> list[dict]:
        labels = self.components[component].labels
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return [p for p in self.get_json("pods", "-l", selector).get("items", [])
                if not p["metadata"].get("deletionTimestamp")]

    def recent_events(self) -> list[dict]:
        out = []
        for event in self.get_json("events").get("items", []):
            stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""
            if stamp and _epoch(stamp) >= self.since - 1.0:
                out.append(event)
        return out

    def logs(self, component: str) -> str:
        labels = self.components[component].labels
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        since = f"{max(1, int(time.time() - self.since) + 2)}s"
        return self.kubectl("logs", "-n", self.namespace, "-l", selector, "--all-containers", "--tail=400",
                            f"--since={since}")

    def service_url(self, service: str, port: int) -> str | None:
        ip = self.kubectl("get", "svc", service, "-n", self.namespace, "-o", "jsonpath={.spec.clusterIP}").strip()
        return f"http://{ip}:{port}" if ip.startswith("127.") else None

    def metrics(self, component: str, port: int = 9090) -> str:
        """The /metrics of the component's pods created since the injection (fresh counters only)."""
        text = ""
        for pod in self.pods(component):
            if _epoch(pod["metadata"]["creationTimestamp"]) < self.since - 1:
                continue
            ip = pod.get("status", {}).get("podIP")
            if ip and ip.startswith("127."):
                try:
                    with urllib.request.urlopen(f"http://{ip}:{port}/metrics", timeout=5) as resp:
                        text += resp.read().decode()
                except OSError:
                    pass
        return text

    # ------------------------------------------------------------------ the frontend, as a user
    def call(self, endpoint: str, timeout: float = 5.0) -> tuple[int, float]:
        """One real request of the workload mix's ``endpoint`` kind; (status, seconds), status 0 = no answer."""
        if self.request_for is None:
            raise RuntimeError("this app's live contract sets no request_for: requests as a user are not available")
        base = self.service_url(*self.frontend)
        method, path = self.request_for(endpoint, self.rng)
        started = time.monotonic()
        try:
            request = urllib.request.Request(f"{base}{path}", method=method, data=b"" if method == "POST" else None)
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                resp.read()
                return resp.status, time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, time.monotonic() - started
        except OSError:
            return 0, time.monotonic() - started

    def burst(self, endpoint: str, requests: int, concurrency: int) -> list[tuple[int, float]]:
        """A bounded burst of concurrent requests (the transient trigger of metastable faults)."""
        results: list[tuple[int, float]] = []
        lock = threading.Lock()
        todo = iter(range(requests))

        def worker() -> None:
            while True:
                with lock:
                    if next(todo, None) is None:
                        return
                outcome = self.call(endpoint, timeout=5.0)
                with lock:
                    results.append(outcome)

        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        return results

    def stats(self, window: float) -> dict:
        return self.workload.stats(window)


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


# ---------------------------------------------------------------------- probes

def waiting(component: str, *reasons: str) -> Probe:
    """A container (or init container) of the component waiting or terminated with one of ``reasons``."""
    def probe(live: Live) -> str | None:
        for pod in live.pods(component):
            status = pod.get("status", {})
            for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
                for state in (c.get("state") or {}, c.get("lastState") or {}):
                    for kind in ("waiting", "terminated"):
                        reason = (state.get(kind) or {}).get("reason")
                        if reason in reasons:
                            return f"{pod['metadata']['name']}/{c['name']} {kind}: {reason}"
        return None
    return probe


def crashing(component: str) -> Probe:
    """The component's containers exit and are restarted (CrashLoopBackOff, Error, restarts)."""
    return waiting(component, "CrashLoopBackOff", "Error", "OOMKilled")


def init_stuck(component: str) -> Probe:
    def probe(live: Live) -> str | None:
        for pod in live.pods(component):
            for c in pod.get("status", {}).get("initContainerStatuses") or []:
                if "running" in (c.get("state") or {}) and not c.get("ready"):
                    if time.time() - _epoch(c["state"]["running"].get("startedAt") or "1970-01-01T00:00:00Z") > 3:
                        return f"{pod['metadata']['name']} stuck in init container {c['name']}"
        return None
    return probe


def not_ready(component: str) -> Probe:
    """Pods of the component Running, created after the injection, but not Ready for a while."""
    def probe(live: Live) -> str | None:
        for pod in live.pods(component):
            if _epoch(pod["metadata"]["creationTimestamp"]) < live.since - 1:
                continue
            status = pod.get("status", {})
            conditions = {c["type"]: c for c in status.get("conditions") or []}
            ready = conditions.get("Ready", {})
            started = [c for c in status.get("containerStatuses") or [] if "running" in (c.get("state") or {})]
            if status.get("phase") == "Running" and started and ready.get("status") == "False" \
                    and time.time() - _epoch(pod["metadata"]["creationTimestamp"]) > 8:
                return f"{pod['metadata']['name']} Running but not Ready"
        return None
    return probe


def event(reason: str, text: str = "", component: str | None = None) -> Probe:
    """A recent event with that reason (and text), about the component's objects when given."""
    def probe(live: Live) -> str | None:
        for item in live.recent_events():
            message = item.get("message") or item.get("note") or ""
            about = (item.get("involvedObject") or item.get("regarding") or {}).get("name", "")
            if component and not (about == component or about.startswith(component + "-")):
                continue
            if item.get("reason") == reason and text.lower() in message.lower():
                return f"event {reason}: {message[:160]}"
        return None
    return probe


def unschedulable(component: str, text: str) -> Probe:
    """A pod of the component Pending with a scheduling message containing ``text``."""
    def probe(live: Live) -> str | None:
        for pod in live.pods(component):
            for condition in pod.get("status", {}).get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition["status"] == "False" \
                        and text.lower() in (condition.get("message") or "").lower():
                    return f"{pod['metadata']['name']} Pending: {condition['message'][:160]}"
        return event("FailedScheduling", text)(live)
    return probe


def no_endpoints(service: str) -> Probe:
    def probe(live: Live) -> str | None:
        out = live.kubectl("get", "endpoints", service, "-n", live.namespace, "-o", "json")
        try:
            subsets = json.loads(out).get("subsets") or []
        except ValueError:
            return f"endpoints {service}: {out.strip()[:120]}"
        if not any(s.get("addresses") for s in subsets):
            return f"Service {service} has no ready endpoints"
        return None
    return probe


def foreign_endpoints(service: str, component: str) -> Probe:
    """The Service's endpoints include pods that are not the component's."""
    def probe(live: Live) -> str | None:
        own = {p.get("status", {}).get("podIP") for p in live.pods(component)}
        out = live.kubectl("get", "endpoints", service, "-n", live.namespace, "-o", "json")
        try:
            addresses = [a.get("ip") for s in json.loads(out).get("subsets") or [] for a in s.get("addresses") or []]
        except ValueError:
            return None
        strangers = [a for a in addresses if a not in own]
        return f"Service {service} routes to foreign pods {strangers}" if strangers else None
    return probe


def fails(endpoint: str, tries: int = 4) -> Probe:
    """Real requests of that kind fail (non-2xx or no answer)."""
    def probe(live: Live) -> str | None:
        outcomes = [live.call(endpoint) for _ in range(tries)]
        bad = [status for status, _ in outcomes if not 200 <= status < 300]
        return f"{len(bad)}/{tries} {endpoint} requests failed (status {bad})" if bad else None
    return probe


def slower(endpoint: str, factor: float, baseline_ms: Callable[[Live], float], tries: int = 6) -> Probe:
    """Median latency of real requests at least ``factor`` x the healthy median."""
    def probe(live: Live) -> str | None:
        times = sorted(seconds * 1000 for _, seconds in (live.call(endpoint, timeout=10) for _ in range(tries)))
        median, healthy = times[len(times) // 2], baseline_ms(live)
        return f"{endpoint} median {median:.0f} ms vs healthy {healthy:.0f} ms" if median >= factor * healthy else None
    return probe


def under_burst(endpoint: str, requests: int, concurrency: int, *, min_failed: int = 1) -> Probe:
    """Fire a bounded burst; the symptom is failed requests during it."""
    def probe(live: Live) -> str | None:
        outcomes = live.burst(endpoint, requests, concurrency)
        bad = [s for s, _ in outcomes if not 200 <= s < 300]
        return f"{len(bad)}/{len(outcomes)} {endpoint} requests failed under a burst" if len(bad) >= min_failed else None
    return probe


def log_line(component: str, *texts: str) -> Probe:
    def probe(live: Live) -> str | None:
        logs = live.logs(component)
        for line in logs.splitlines():
            if any(t.lower() in line.lower() for t in texts):
                return f"{component} log: {line.strip()[:200]}"
        return None
    return probe


def metric_above(component: str, name: str, threshold: float, labels: str = "") -> Probe:
    """The sum of a Prometheus counter/gauge on the component's pods started since the injection is
    above ``threshold``."""
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})?\s+([0-9.eE+-]+)$")

    def probe(live: Live) -> str | None:
        total = 0.0
        for line in live.metrics(component).splitlines():
            match = pattern.match(line)
            if match and all(part in (match.group(1) or "") for part in labels.split(",") if part):
                total += float(match.group(2))
        return f"{component} {name}{{{labels}}} = {total:g}" if total > threshold else None
    return probe


def memcached_stat(component: str, stat: str, check: Callable[[int], bool]) -> Probe:
    """A memcached ``stats`` value, read through the cache's own protocol from inside its pod."""
    script = ("import socket; s=socket.create_connection(('127.0.0.1', 11211), timeout=5); "
              "s.sendall(b'stats\\r\\n'); import time; time.sleep(0.3); print(s.recv(65536).decode())")

    def probe(live: Live) -> str | None:
        pods = [p for p in live.pods(component) if p.get("status", {}).get("phase") == "Running"]
        for pod in pods:
            ip = pod["status"].get("podIP", "127.0.0.1")
            out = live.kubectl("exec", pod["metadata"]["name"], "-n", live.namespace, "--", "python3", "-c",
                               script.replace("127.0.0.1", ip))
            match = re.search(rf"STAT {stat} (\d+)", out)
            if match and check(int(match.group(1))):
                return f"{pod['metadata']['name']} memcached {stat} = {match.group(1)}"
        return None
    return probe


def any_of(*probes: Probe) -> Probe:
    def probe(live: Live) -> str | None:
        for p in probes:
            found = p(live)
            if found:
                return found
        return None
    return probe


def all_of(*probes: Probe) -> Probe:
    """Evidence from every probe, or None while one of them has none."""
    def probe(live: Live) -> str | None:
        found = []
        for each in probes:
            evidence = each(live)
            if evidence is None:
                return None
            found.append(evidence)
        return "; ".join(found)
    return probe


def workload_errors(endpoint: str, minimum: int = 1) -> Probe:
    """The workload generator recorded failed requests of that kind since the injection."""
    def probe(live: Live) -> str | None:
        window = max(2.0, time.time() - live.since)
        stats = (live.stats(window).get("by_endpoint") or {}).get(endpoint) or {}
        errors = stats.get("errors") or 0
        if errors >= minimum:
            return f"workload: {errors}/{stats.get('count')} {endpoint} requests failed ({stats.get('error_kinds')})"
        return None
    return probe


def slower_under_burst(endpoint: str, requests: int, concurrency: int, factor: float,
                       baseline_ms: Callable[[Live], float]) -> Probe:
    """Median latency of a bounded concurrent burst at least ``factor`` x the healthy sequential median
    (a CPU-starved service keeps up with a trickle but not with a burst)."""
    def probe(live: Live) -> str | None:
        outcomes = live.burst(endpoint, requests, concurrency)
        times = sorted(seconds * 1000 if 200 <= status < 300 else 5000.0 for status, seconds in outcomes)
        median, healthy = times[len(times) // 2], baseline_ms(live)
        return (f"{endpoint} median {median:.0f} ms under a burst vs healthy {healthy:.0f} ms"
                if median >= factor * healthy else None)
    return probe


def cpu_throttled(component: str) -> Probe:
    """The container's CFS statistics (read from inside it, as ``cat /sys/fs/cgroup/cpu.stat`` would on
    a node) show most scheduling periods throttled."""
    script = ('cg=$(grep -E "^[0-9]+:(cpu|cpu,cpuacct|cpuacct,cpu):" /proc/self/cgroup | head -1 | cut -d: -f3); '
              'for f in /sys/fs/cgroup/cpu$cg/cpu.stat /sys/fs/cgroup/cpu,cpuacct$cg/cpu.stat /sys/fs/cgroup/cpu.stat; '
              'do [ -r "$f" ] && cat "$f" && break; done')

    def probe(live: Live) -> str | None:
        for pod in live.pods(component):
            if _epoch(pod["metadata"]["creationTimestamp"]) < live.since - 1:
                continue
            out = live.kubectl("exec", pod["metadata"]["name"], "-n", live.namespace, "--", "sh", "-c", script)
            stats = dict(re.findall(r"^(\w+) (\d+)$", out, re.M))
            periods, throttled = int(stats.get("nr_periods", 0)), int(stats.get("nr_throttled", 0))
            if periods >= 10 and throttled >= periods // 2:
                return f"{pod['metadata']['name']} throttled in {throttled}/{periods} CFS periods"
        return None
    return probe
