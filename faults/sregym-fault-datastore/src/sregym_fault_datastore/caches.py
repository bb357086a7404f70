"""memcached and Redis/Valkey faults."""

from __future__ import annotations

from sregym_core.faultkit import function_fault, kube, schema

from sregym_core.types import FaultSpec, TargetSelector

from .sql import running_pod

MEMCACHED = TargetSelector(roles=("cache:memcached",))
REDIS = TargetSelector(roles=("cache:redis", "cache:valkey"))
ANY_CACHE = TargetSelector(roles=("cache:*",))


def _args(ctx, target) -> list[str]:
    obj = kube.workload(ctx, target)
    container = obj["spec"]["template"]["spec"]["containers"][0]
    return list(container.get("args") or container.get("command") or [])


def _memory_flag(args: list[str]) -> str | None:
    """The ``-m`` value of a memcached command line (None when it runs with the default)."""
    return args[args.index("-m") + 1] if "-m" in args[:-1] else None


def tiny_inject(ctx, target, params):
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


def tiny_present(ctx, target, params):
    values = _args(ctx, target)
    return "-m" in values and int(values[values.index("-m") + 1]) <= params["megabytes"]


def tiny_recover(ctx, target, params):
    kube.patch(ctx, target.component.kind, target.component.name,
               [{"op": "add", "path": f"/spec/template/spec/containers/0/{ctx.state['field']}",
                 "value": ctx.state["original"]}], type="json")


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


def flood_inject(ctx, target, params):
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


def flood_present(ctx, target, params):
    return kube.exists(ctx, "deployment", params["writer"])


def flood_fix(ctx, target, params):
    kube.delete(ctx, "deployment", params["writer"])
    # flush the junk the writer left behind, through the cache's own protocol from inside its pod
    pod = running_pod(ctx, target)
    port = target.component.ports[0] if target.component.ports else 11211
    ctx.kubectl("exec", pod, "-n", ctx.namespace, "--", "python3", "-c",
                "import os,socket; s=socket.create_connection((os.environ.get('POD_IP','127.0.0.1'), "
                f"{port}), timeout=5); s.sendall(b'flush_all\\r\\n'); print(s.recv(64))", check=False)


def redis_auth_inject(ctx, target, params):
    pod = running_pod(ctx, target)
    ctx.state["pod"] = pod
    ctx.kubectl("exec", pod, "-n", ctx.namespace, "--", "sh", "-c",
                f'redis-cli -h "${{POD_IP:-127.0.0.1}}" CONFIG SET requirepass "{params["password"]}"')


def _redis(ctx, target, *command: str, password: str | None = None) -> str:
    pod = running_pod(ctx, target)
    auth = f'-a "{password}" --no-auth-warning ' if password else ""
    return ctx.kubectl("exec", pod, "-n", ctx.namespace, "--", "sh", "-c",
                       f'redis-cli -h "${{POD_IP:-127.0.0.1}}" {auth}' + " ".join(command), check=False)


def redis_auth_present(ctx, target, params):
    return "NOAUTH" in _redis(ctx, target, "PING")


def redis_auth_recover(ctx, target, params):
    _redis(ctx, target, "CONFIG", "SET", "requirepass", '""', password=params["password"])


def _f(name, summary, selector, inject, recover, present, fix=None, *, mechanism, resource_kind, symptoms=(),
       keywords=(), params=None, values=None) -> FaultSpec:
    return function_fault(name=name, summary=summary, layer="datastore", selector=selector,
                          params_schema=params or schema(), inject=inject, recover=recover, is_present=present,
                          reference_fix=fix, resource_kind=resource_kind, mechanism=mechanism, symptoms=symptoms,
                          keywords=keywords, values=values)


FAULTS = [
    _f("cache-tiny", "memcached memory cap set tiny: constant evictions push load onto the database", MEMCACHED,
       tiny_inject, tiny_recover, tiny_present, mechanism="memcached memory limit (-m) set far too small, causing evictions",
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
    _f("cache-auth", "Redis requirepass set at runtime: clients get NOAUTH", REDIS, redis_auth_inject,
       redis_auth_recover, redis_auth_present, mechanism="Redis requirepass was set at runtime, clients are not authenticated",
       resource_kind="Redis configuration", symptoms=("NOAUTH Authentication required",),
       keywords=("requirepass", "auth", "NOAUTH", "redis"),
       params=schema(password={"type": "string", "default": "s3cr3t-rotation"}),
       values=lambda t, p, s: {"requirepass": "set"}),
]
