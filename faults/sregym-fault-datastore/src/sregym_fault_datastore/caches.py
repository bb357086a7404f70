"""memcached and Redis/Valkey faults."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from sregym_core.errors import FaultError, TemporaryFaultError
from sregym_core.faultkit import function_fault, kube, schema

from sregym_core.types import FaultSpec, TargetSelector

from .sql import running_pod

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faultkit import TruthValues
    from sregym_core.faults import FaultContext, FaultMethod
    from sregym_core.types import Target

MEMCACHED = TargetSelector(roles=("cache:memcached",))
REDIS = TargetSelector(roles=("cache:redis", "cache:valkey"))
ANY_CACHE = TargetSelector(roles=("cache:*",))


def _args(ctx: FaultContext, target: Target) -> list[str]:
    obj = kube.workload(ctx, target)
    container = obj["spec"]["template"]["spec"]["containers"][0]
    return list(container.get("args") or container.get("command") or [])


def _memory_flag(args: list[str]) -> str | None:
    """The ``-m`` value of a memcached command line (None when it runs with the default)."""
    return args[args.index("-m") + 1] if "-m" in args[:-1] else None


def tiny_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    container = obj["spec"]["template"]["spec"]["containers"][0]
    field = "args" if "args" in container else "command"
    values = list(container.get(field) or ["memcached"])
    ctx.state.update(field=field, original=list(values))
    if "-m" in values:
        values[values.index("-m") + 1] = str(params["megabytes"])
    else:
        values += ["-m", str(params["megabytes"])]
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "add", "path": f"/spec/template/spec/containers/0/{field}", "value": values}], type="json")


#: asks a memcached for its ``stats`` through its own protocol, from inside its pod (argv: ip, port)
_STATS = ("import socket, sys, time; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
          "s.sendall(b'stats\\r\\n'); time.sleep(0.3); s.settimeout(1); data = b''\n"
          "try:\n    while not data.endswith(b'END\\r\\n'):\n        chunk = s.recv(65536)\n"
          "        if not chunk: break\n        data += chunk\n"
          "except OSError: pass\nprint(data.decode(errors='replace'))")


def limit_maxbytes(stats: str) -> int | None:
    """``limit_maxbytes`` from a memcached ``stats`` answer; None when the answer is not memcached's."""
    match = re.search(r"^STAT limit_maxbytes (\d+)\s*$", stats, re.MULTILINE)
    return int(match.group(1)) if match else None


def _serving_caps(ctx: FaultContext, target: Target) -> list[int | None]:
    """The memory cap each running pod of the cache reports (None: it does not answer as a memcached:
    still starting, or something else in its place)."""
    obj = kube.workload(ctx, target)
    labels = obj["spec"]["selector"].get("matchLabels", {})
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    port = target.component.ports[0] if target.component.ports else 11211
    caps = []
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
            continue
        ip = pod["status"].get("podIP") or "127.0.0.1"
        out = ctx.kubectl("exec", pod["metadata"]["name"], "-n", ctx.namespace, "--", "python3", "-c", _STATS, ip,
                          str(port), check=False)
        caps.append(limit_maxbytes(out))
    return caps


def tiny_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The cache is configured tiny (a restart keeps it), or a running cache pod holds at most the tiny
    cap, or does not answer as a memcached at all (a cache of nothing: its clients fall back to the
    database on every read, as with the tiny one)."""
    values = _args(ctx, target)
    if "-m" in values and int(values[values.index("-m") + 1]) <= params["megabytes"]:
        return True
    return any(cap is None or cap <= params["megabytes"] << 20 for cap in _serving_caps(ctx, target))


def tiny_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "add", "path": f"/spec/template/spec/containers/0/{ctx.state['field']}",
                 "value": ctx.state["original"]}], type="json")


def tiny_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Give the cache its memory back, and wait until the rolled-out cache serves with it."""
    tiny_recover(ctx, target, params)
    _wait_rolled_out(ctx, target)
    if not kube.wait_until(lambda: not tiny_present(ctx, target, params), timeout=60.0, interval=1.0):
        raise TemporaryFaultError(f"cache-tiny: {target.component.name} still serves with a tiny memory cap",
                                  delay=2.0)


_FLOOD_MEMCACHED = r'''
import os, socket, time, random
host, port = os.environ["CACHE_HOST"], int(os.environ["CACHE_PORT"])
blob = os.urandom(int(os.environ.get("VALUE_BYTES", "60000"))).hex()[:int(os.environ.get("VALUE_BYTES", "60000"))]
while True:
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            while True:
                key = "warm:%d" % random.randrange(10**9)
                s.sendall(("set %s 0 0 %d\r\n%s\r\n" % (key, len(blob), blob)).encode())
                s.recv(64)
    except OSError:
        time.sleep(1)
'''


def flood_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    service = target.component.service_name or target.component.name
    port = target.component.ports[0] if target.component.ports else 11211
    ctx.state["writer"] = params["writer"]
    kube.apply(ctx, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": params["writer"], "namespace": ctx.namespace, "labels": {"app": params["writer"]}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": params["writer"]}},
                 "template": {"metadata": {"labels": {"app": params["writer"]}}, "spec": {"containers": [{
                     "name": "warmer", "image": "python:3.11", "command": ["python", "-c", _FLOOD_MEMCACHED],
                     "env": [{"name": "CACHE_HOST", "value": service}, {"name": "CACHE_PORT", "value": str(port)}]}]}}}})


def flood_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "deployment", params["writer"])


def flood_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "deployment", params["writer"])
    # flush the junk the writer left behind, through the cache's own protocol from inside its pod
    pod = running_pod(ctx, target)
    port = target.component.ports[0] if target.component.ports else 11211
    ctx.kubectl("exec", pod, "-n", ctx.namespace, "--", "python3", "-c",
                "import os,socket; s=socket.create_connection((os.environ.get('POD_IP','127.0.0.1'), "
                f"{port}), timeout=5); s.sendall(b'flush_all\\r\\n'); print(s.recv(64))", check=False)


# --- cache-auth: a password turned on in the cache's own configuration ---------------------------
#
# Someone enables ``requirepass`` on the cache's command line (its Deployment's args) without giving
# the password to the clients, and the change rolls out as any configuration change does: the cache
# pod is replaced, every client connection to the old one is cut, and each reconnecting client is
# answered ``NOAUTH Authentication required``. The password is in the workload's spec, so restarting
# the cache keeps it (a runtime ``CONFIG SET`` would be undone by a restart and would leave open,
# already authenticated connections working). The fix takes the option out of the arguments again.

REQUIREPASS = "--requirepass"
#: how long the cache's rollout may take (image already on the node; a loaded 2-core machine)
ROLLOUT_TIMEOUT_S = 180


def launch_field(container: dict) -> str:
    """The container field that carries the server's options: ``args`` when set, else ``command``
    when set, else ``args`` (the image's entrypoint then starts the server with them)."""
    if container.get("args") is not None:
        return "args"
    return "command" if container.get("command") else "args"


def requirepass_of(values: list[str] | None) -> str | None:
    """The password ``--requirepass`` sets on a redis-server/valkey-server command line, or None."""
    values = list(values or [])
    found = None
    for index, value in enumerate(values[:-1]):
        if value == REQUIREPASS:
            found = values[index + 1]
    return found


def without_requirepass(values: list[str] | None) -> list[str]:
    """The command line with every ``--requirepass <password>`` pair taken out."""
    out: list[str] = []
    skip = False
    for value in values or []:
        if skip:
            skip = False
        elif value == REQUIREPASS:
            skip = True
        else:
            out.append(value)
    return out


def with_requirepass(values: list[str] | None, password: str) -> list[str]:
    """The command line with ``--requirepass <password>`` as its last option (one occurrence)."""
    return without_requirepass(values) + [REQUIREPASS, password]


def _cache_container(obj: dict, target: Target) -> tuple[int, dict]:
    index = kube.container_index(obj, target.component.container_name)
    return index, kube.pod_spec(obj)["containers"][index]


def _wait_rolled_out(ctx: FaultContext, target: Target) -> None:
    kind, name = target.component.kind.lower(), target.component.name
    ctx.kubectl("rollout", "status", f"{kind}/{name}", "-n", ctx.namespace, f"--timeout={ROLLOUT_TIMEOUT_S}s",
                timeout=ROLLOUT_TIMEOUT_S + 20.0)


def _redis(ctx: FaultContext, target: Target, *command: str, password: str | None = None) -> str:
    pod = running_pod(ctx, target)
    auth = f'-a "{password}" --no-auth-warning ' if password else ""
    return ctx.kubectl("exec", pod, "-n", ctx.namespace, "--", "sh", "-c",
                       f'redis-cli -h "${{POD_IP:-127.0.0.1}}" {auth}' + " ".join(command), check=False)


def _refuses_anonymous(ctx: FaultContext, target: Target) -> bool | None:
    """Whether the running cache answers an unauthenticated PING with NOAUTH (None: no ready pod)."""
    try:
        return "NOAUTH" in _redis(ctx, target, "PING")
    except TemporaryFaultError:
        return None


def redis_auth_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    index, container = _cache_container(obj, target)
    field = launch_field(container)
    ctx.state.update(container=index, field=field, original=container.get(field))
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "add", "path": f"/spec/template/spec/containers/{index}/{field}",
                 "value": with_requirepass(container.get(field), params["password"])}], type="json")
    _wait_rolled_out(ctx, target)
    if not kube.wait_until(lambda: _refuses_anonymous(ctx, target) is True, timeout=60.0, interval=1.0):
        raise FaultError(f"cache-auth: {target.component.name} rolled out with {REQUIREPASS} but still answers "
                         "clients without a password",
                         hints=("is the container's entrypoint a redis-server/valkey-server that takes options?",))


def redis_auth_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The cache demands a password: its spec sets ``--requirepass`` (a restart keeps it), or the running
    server refuses an unauthenticated client."""
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return False  # a deleted cache is another problem (baseline_preserved), not this one
    _index, container = _cache_container(obj, target)
    if any(requirepass_of(container.get(field)) is not None for field in ("args", "command")):
        return True
    return bool(_refuses_anonymous(ctx, target))


def redis_auth_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Take ``--requirepass`` out of the cache's arguments, as the SRE who finds it there would, and wait
    until the rolled-out cache answers clients without a password."""
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return
    index, container = _cache_container(obj, target)
    ops: list[dict[str, Any]] = []
    for field in ("args", "command"):
        values = container.get(field)
        if requirepass_of(values) is None:
            continue
        cleaned = without_requirepass(values)
        path = f"/spec/template/spec/containers/{index}/{field}"
        if not cleaned and ctx.state.get("field") == field and ctx.state.get("original") is None:
            ops.append({"op": "remove", "path": path})  # the field was not there before the fault
        else:
            ops.append({"op": "add", "path": path, "value": cleaned})
    if ops:
        kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
        _wait_rolled_out(ctx, target)
    # no ready pod (scaled to zero by someone) is nothing to wait for: the spec no longer has the password
    if not kube.wait_until(lambda: _refuses_anonymous(ctx, target) is not True, timeout=60.0, interval=1.0):
        raise TemporaryFaultError(f"cache-auth: {target.component.name} still refuses clients without a password",
                                  delay=2.0, hints=("is a runtime CONFIG SET requirepass left on the server?",
                                                    f"kubectl rollout status {target.component.kind.lower()}/"
                                                    f"{target.component.name} shows whether the fix rolled out"))


def _f(name: str, summary: str, selector: TargetSelector, inject: FaultMethod, recover: FaultMethod,
       present: FaultMethod, fix: FaultMethod | None = None, *, mechanism: str, resource_kind: str,
       symptoms: tuple[str, ...] = (), keywords: tuple[str, ...] = (), params: Mapping[str, Any] | None = None,
       values: TruthValues | None = None) -> FaultSpec:
    return function_fault(name=name, summary=summary, layer="datastore", selector=selector,
                          params_schema=params or schema(), inject=inject, recover=recover, is_present=present,
                          reference_fix=fix, resource_kind=resource_kind, mechanism=mechanism, symptoms=symptoms,
                          keywords=keywords, values=values)


FAULTS = [
    _f("cache-tiny", "memcached memory cap set tiny: constant evictions push load onto the database", MEMCACHED,
       tiny_inject, tiny_recover, tiny_present, tiny_fix,
       mechanism="memcached memory limit (-m) set far too small, causing evictions",
       resource_kind="memcached configuration", symptoms=("cache miss rate high", "evictions", "database load"),
       keywords=("memcached", "memory", "-m", "evictions", "cache"),
       # memcached refuses to start below 2 MB (its 1 MB item limit must fit twice)
       params=schema(megabytes={"type": "integer", "minimum": 2, "default": 2}),
       values=lambda t, p, s: {"-m": {"before": _memory_flag(s.get("original") or []), "after": p.get("megabytes")}}),
    _f("cache-flood", "a hidden writer floods the cache with junk keys", ANY_CACHE, flood_inject, flood_fix,
       flood_present, mechanism="a rogue cache-warming Deployment floods the cache with large junk keys, evicting real entries",
       resource_kind="Deployment", symptoms=("evictions", "cache hit ratio collapse", "latency"),
       keywords=("flood", "writer", "evict", "cache", "junk"),
       params=schema(writer={"type": "string", "default": "session-warmer"}),
       values=lambda t, p, s: {"writer": p.get("writer")}),
    _f("cache-auth", "Redis requirepass turned on in the cache's arguments: its clients get NOAUTH", REDIS,
       redis_auth_inject, redis_auth_fix, redis_auth_present, redis_auth_fix,
       mechanism="Redis requirepass was turned on in the cache's startup arguments (its Deployment), "
                 "and its clients were not given the password",
       resource_kind="Redis configuration", symptoms=("NOAUTH Authentication required",),
       keywords=("requirepass", "auth", "NOAUTH", "redis", "password"),
       params=schema(password={"type": "string", "default": "s3cr3t-rotation"}),
       values=lambda t, p, s: {"requirepass": "set"}),
]
