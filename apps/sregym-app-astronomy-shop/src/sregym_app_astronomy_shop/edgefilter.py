"""The ``edge-filter-redos`` fault: a request filter with a catastrophic regular expression in the
edge proxy, and a scanner whose probes make it backtrack.

Inject adds a request filter to frontend-proxy's nginx configuration (the ConfigMap
``frontend-proxy-config``): API paths must be ``/api`` followed by segments of word characters joined
by single dashes, written as ``^/api(/(\\w+-?)+)*/?$``. The nested quantifier ``(\\w+-?)+`` can split a
run of word characters in exponentially many ways, so a path that *almost* matches (a long product id
followed by ``' OR 1=1``) makes PCRE2 backtrack until its match limit: about 0.2 s of CPU per request
in nginx's single worker (``pcre2_match() failed: -47`` in its error log, status 500). The proxy is
restarted so nginx loads the filter, and a bounded scanner (``edge-scanner``, a Deployment in the
hidden workload namespace, :mod:`scanner`) sends such probes a few times a second: the proxy's CPU
is pinned at its limit and real users wait behind the probes.

The fix an SRE makes: rewrite the regex so it cannot backtrack (``^/api(/[\\w-]+)*/?$``: each segment
starts at a slash, so there is one way to match) in the ConfigMap and restart the proxy; the probes
are then rejected in microseconds (400). The fault is present while the ConfigMap still holds the
catastrophic pattern; a ConfigMap fixed but never loaded (no restart) still fails the functional
SLO. ``recover`` restores the original configuration and removes the scanner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sregym_core.errors import FaultError, TemporaryFaultError
from sregym_core.faultkit import kube
from sregym_core.faultkit.functions import function_fault
from sregym_core.types import TargetSelector

from . import IMAGE_REPO, IMAGE_TAG
from .topology import NAMESPACE, WORKLOAD_NAMESPACE

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

CONFIG_MAP, KEY = "frontend-proxy-config", "nginx.conf"
SCANNER = "edge-scanner"
#: the filter's regex as the fault writes it (nested quantifier: exponential backtracking) ...
BAD_PATTERN = r"^/api(/(\w+-?)+)*/?$"
#: ... and as the fix writes it (each segment starts at a slash: one way to match, linear time)
GOOD_PATTERN = r"^/api(/[\w-]+)*/?$"
ANCHOR = "    location / {"


def filter_block(pattern: str) -> str:
    return ("    # request filter: API paths are /api/<segment>/..., segments of word characters joined by\n"
            "    # single dashes; anything else (injection probes, traversal) is rejected at the edge\n"
            "    location /api/ {\n"
            f'      if ($uri !~ "{pattern}") {{ return 400; }}\n'
            "      proxy_pass http://frontend;\n"
            "    }\n")


def with_filter(conf: str, pattern: str = BAD_PATTERN) -> str:
    """``conf`` with the request filter in front of the catch-all location."""
    if ANCHOR not in conf:
        raise FaultError(f"edge-filter-redos: no '{ANCHOR.strip()}' block in {CONFIG_MAP}/{KEY}",
                         hints=("the shipped nginx.conf routes / to frontend; was the ConfigMap rewritten?",))
    return conf.replace(ANCHOR, filter_block(pattern) + ANCHOR, 1)


def _conf(ctx: FaultContext) -> str:
    cm = kube.get(ctx, "configmap", CONFIG_MAP)
    assert cm is not None
    return str((cm.get("data") or {}).get(KEY, ""))


def _write(ctx: FaultContext, conf: str) -> None:
    kube.patch(ctx, "configmap", CONFIG_MAP, {"data": {KEY: conf}})


def _image(ctx: FaultContext) -> str:
    """The shop's image as deployed (its tag is a deploy parameter): the load generator runs it."""
    gen = kube.get(ctx, "deployment", "load-generator", namespace=WORKLOAD_NAMESPACE, missing_ok=True)
    for c in ((gen or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []):
        if str(c.get("image", "")).startswith(IMAGE_REPO + ":"):
            return str(c["image"])
    return f"{IMAGE_REPO}:{IMAGE_TAG}"


def scanner_deployment(image: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": SCANNER, "app.kubernetes.io/part-of": "astronomy-shop", "tier": "workload"}
    env = {"SCANNER_TARGET": f"http://frontend-proxy.{namespace}.svc.cluster.local:8080", "SCANNER_CONCURRENCY": "2",
           "SCANNER_RPS": "5", "SCANNER_TIMEOUT_S": "10", "SCANNER_DURATION_S": "3600"}
    container = {"name": SCANNER, "image": image, "args": [SCANNER],
                 "env": [{"name": k, "value": v} for k, v in env.items()],
                 "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                               "limits": {"cpu": "200m", "memory": "128Mi"}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": SCANNER, "namespace": WORKLOAD_NAMESPACE, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": SCANNER}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 5, "containers": [container]}}}}


def _pods(ctx: FaultContext, target: Target) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in target.component.labels.items())
    return list(json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"])


def _restart_proxy(ctx: FaultContext, target: Target) -> None:
    """Replace the proxy's pods (nginx reads its configuration at start) and wait until a new one is Ready,
    so what users see next is the configuration's doing, not the restart's."""
    old = {p["metadata"]["name"] for p in _pods(ctx, target)}
    kube.delete_pods(ctx, target)

    def replaced() -> bool:
        pods = [p for p in _pods(ctx, target) if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in pods if p["metadata"]["name"] not in old and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in p.get("status", {}).get("conditions", []))]
        return bool(ready)

    if not kube.wait_until(replaced, timeout=120, interval=1.0):
        raise TemporaryFaultError(f"edge-filter-redos: no new {target.component.name} pod became Ready", delay=5.0)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    conf = _conf(ctx)
    if BAD_PATTERN not in conf:
        ctx.state["original"] = conf
        _write(ctx, with_filter(conf))
    _restart_proxy(ctx, target)
    kube.apply(ctx, scanner_deployment(_image(ctx), ctx.namespace))
    ctx.state["injected_at"] = time.time()


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return BAD_PATTERN in _conf(ctx)


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Rewrite the regex so it cannot backtrack and restart the proxy (the scanner keeps probing)."""
    _write(ctx, _conf(ctx).replace(BAD_PATTERN, GOOD_PATTERN))
    kube.restart(ctx, target)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "deployment", SCANNER, namespace=WORKLOAD_NAMESPACE)
    conf = _conf(ctx)
    original = ctx.state.get("original")
    if original is not None and conf != original:
        _write(ctx, original)
        kube.delete_pods(ctx, target)
    elif BAD_PATTERN in conf:  # no saved original (another process injected): take the filter out
        _write(ctx, conf.replace(filter_block(BAD_PATTERN), ""))
        kube.delete_pods(ctx, target)


def _values(target: Target, params: dict, state: dict) -> dict:
    return {"configmap": CONFIG_MAP, "key": KEY, "filter": "location /api/ (if $uri !~ regex: return 400)",
            "regex": {"before": "(none)", "after": BAD_PATTERN},
            "catastrophic_part": "(\\w+-?)+ (a nested quantifier over the same characters)",
            "crafted_requests": "/api/products/<40 digits>' OR 1=1 (SQL-injection probes)",
            "nginx_error": "pcre2_match() failed: -47 (PCRE2_ERROR_MATCHLIMIT)"}


VOCABULARY = ("redos", "regular expression denial of service", "catastrophic backtracking", "backtracking",
              "regex + catastrophic", "regex + backtrack*", "regex + cpu", "regular expression + cpu",
              "regex + exponential", "nested quantifier", "pcre + match limit", "match limit", "pcre2_match",
              "request filter + regex", "filter + regex")
MECHANISM = ("a request filter in the edge proxy's nginx configuration uses a regular expression with "
             "catastrophic backtracking (ReDoS); crafted requests saturate the proxy's CPU")
SYMPTOMS = ("high latency", "timeouts", "cpu saturation", "errors")


def faults() -> list[Any]:
    return [function_fault(
        name="edge-filter-redos",
        summary="a catastrophically backtracking regex in the edge proxy's request filter, driven by crafted requests",
        layer="app", selector=TargetSelector(kinds=("Deployment",), roles=("proxy:nginx",)),
        inject=inject, is_present=is_present, recover=recover, reference_fix=reference_fix,
        resource_kind="ConfigMap", mechanism=MECHANISM, symptoms=SYMPTOMS,
        keywords=("regex", "backtracking", "ReDoS", "request filter", "frontend-proxy-config", "nginx", "cpu"),
        values=_values, vocabulary=VOCABULARY,
        prose="The request filter in {component}'s nginx configuration (ConfigMap {configmap}) matches API paths "
              "with a catastrophically backtracking regular expression, {regex}; scanner requests like "
              "{crafted_requests} make each match run into PCRE2's match limit ({nginx_error}), pinning the proxy's "
              "CPU so real users' requests wait and time out. Rewriting the regex without the nested quantifier "
              "(e.g. ^/api(/[\\w-]+)*/?$) and restarting the proxy fixes it.")]


__all__ = ["BAD_PATTERN", "GOOD_PATTERN", "faults", "filter_block", "scanner_deployment", "with_filter"]
