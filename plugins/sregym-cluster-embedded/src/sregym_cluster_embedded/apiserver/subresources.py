"""Subresources and virtual resources: logs, exec/attach, eviction, binding, tokens, access reviews,
and metrics.k8s.io. Logs, exec and metrics go to the node agents' PodRuntime."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from . import account_admission
from .core import now_iso
from .errors import ApiError, bad_request, method_not_allowed, not_found, server_not_found
from .rbac import Attributes
from .request import (
    RECHECK_KEY,
    USER_KEY,
    Target,
    bool_param,
    check_json_object,
    decode_body,
    int_param,
    json_response,
    media_type,
    read_body,
    success_status,
)
from .selectors import ObjectFilter, selector_from_match_labels

if TYPE_CHECKING:
    from .app import ApiServer

HANDLED = {"log", "exec", "attach", "eviction", "token", "binding", "portforward", "proxy"}
VIRTUAL_HANDLERS = {
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "subjectaccessreviews.authorization.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectreviews.authentication.k8s.io",
    "tokenreviews.authentication.k8s.io",
    "pods.metrics.k8s.io",
    "nodes.metrics.k8s.io",
    "bindings",
    "componentstatuses",
}
COMPONENTS = ("controller-manager", "etcd-0", "scheduler")
EXEC_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


def _json(body: Any, status: int = 200) -> web.Response:
    return json_response(body, status)


async def _body(request: web.Request, kind: str) -> dict[str, Any]:
    raw = await read_body(request)
    return check_json_object(decode_body(raw, request.headers.get("Content-Type")), kind)


def _verb_for(method: str, sub: str) -> str:
    if sub in ("exec", "attach", "portforward"):
        return "create"  # websocket GETs are authorized as create, like the real server
    return {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "get")


async def handle(request: web.Request, server: ApiServer, target: Target) -> web.StreamResponse:
    sub = target.subresource
    if target.name is None:
        raise server_not_found()
    server.authorize(request[USER_KEY], _verb_for(request.method, sub), target)
    if sub == "log":
        if request.method != "GET":
            raise method_not_allowed()
        return await pod_log(request, server, target)
    if sub in ("exec", "attach"):
        # not into a pod whose account holds rights the caller lacks: its token is mounted there
        account_admission.check_entry(server.authz, request[USER_KEY], target.namespace or "",
                                      server.core.store.get("pods", target.namespace, target.name), sub)
        return await pod_exec(request, server, target)
    if sub == "eviction":
        if request.method != "POST":
            raise method_not_allowed()
        return await evict(request, server, target)
    if sub == "token":
        if request.method != "POST":
            raise method_not_allowed()
        return await token_request(request, server, target)
    if sub == "binding":
        if request.method != "POST":
            raise method_not_allowed()
        body = await _body(request, "Binding")
        return _json(bind_pod(server, target.namespace or "default", target.name, body), 201)
    raise ApiError(400, f"{sub} is not supported by this server", "BadRequest")


# ----------------------------------------------------------------------------------------------
# pods/log
# ----------------------------------------------------------------------------------------------
def _pod_and_container(server: ApiServer, target: Target, container: str | None) -> tuple[dict[str, Any], str]:
    pod = server.core.get(target.rt, target.namespace, target.name or "")
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    init_names = [c.get("name") for c in spec.get("initContainers") or []]
    eph_names = [c.get("name") for c in spec.get("ephemeralContainers") or []]
    name = target.name
    if not container:
        default = ((pod["metadata"].get("annotations") or {}).get("kubectl.kubernetes.io/default-container"))
        if default in names:
            container = default
        elif len(names) == 1:
            container = names[0]
        else:
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            if init_names:
                msg += f" or one of the init containers: [{' '.join(init_names)}]"
            raise bad_request(msg)
    if not isinstance(container, str) or container not in names + init_names + eph_names:
        raise bad_request(f"container {container} is not valid for pod {name}")
    return pod, container


def _waiting_reason(pod: dict[str, Any], container: str) -> str | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("name") == container:
                waiting = (cs.get("state") or {}).get("waiting")
                if waiting and not cs.get("lastState", {}).get("terminated"):
                    return waiting.get("reason") or "ContainerCreating"
                return None
    return "ContainerCreating"


#: how often a followed log looks again at who reads it (as a watch does)
LOG_RECHECK_S = 1.0


async def pod_log(request: web.Request, server: ApiServer, target: Target) -> web.StreamResponse:
    q = request.query
    pod, container = _pod_and_container(server, target, q.get("container"))
    previous = bool_param(q, "previous")
    tail = int_param(q, "tailLines")
    since = int_param(q, "sinceSeconds")
    limit_bytes = int_param(q, "limitBytes")
    if q.get("sinceTime"):
        try:
            when = datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
            since = max(1, math.ceil((datetime.now(UTC) - when).total_seconds()))
        except ValueError:
            raise bad_request(f"invalid sinceTime: {q['sinceTime']!r}") from None
    if tail is not None and tail < 0:
        tail = None
    if since is not None and since < 1:
        raise bad_request("sinceSeconds: Invalid value: must be greater than 0")
    runtime = server.core.runtime
    name = target.name
    if runtime is None or not (pod.get("spec") or {}).get("nodeName"):
        reason = _waiting_reason(pod, container)
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason or "ContainerCreating"}')
    follow = bool_param(q, "follow")
    stream = await _maybe_await(runtime.read_log(
        target.namespace, name, container, previous=previous, tail_lines=tail, since_seconds=since,
        timestamps=bool_param(q, "timestamps"), limit_bytes=limit_bytes, follow=follow))
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    started = False
    recheck = request.get(RECHECK_KEY) if follow else None
    chunks = stream.__aiter__()
    pending: asyncio.Future[Any] | None = None
    try:
        while True:
            # a followed log streams as long as the caller likes: its identity and rights are looked at again every
            # second, as a watch's are, so a revoked identity reads no later attempt's logs (red-team round 10). The
            # next chunk is awaited in a task of its own: a timeout must not cancel the log's generator.
            if pending is None:
                pending = asyncio.ensure_future(chunks.__anext__())
            if recheck is not None:
                done, _ = await asyncio.wait({pending}, timeout=LOG_RECHECK_S)
                recheck()
                if not done:
                    continue
            try:
                chunk = await pending
            except StopAsyncIteration:
                break
            finally:
                if pending.done():
                    pending = None
            if not started:
                await response.prepare(request)
                started = True
            await response.write(chunk if isinstance(chunk, bytes) else str(chunk).encode())
            transport = request.transport
            if transport is None or transport.is_closing():
                break
    except ApiError:
        if started:
            return response
        raise
    except (ConnectionResetError, ConnectionError):
        return response
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    if not started:
        await response.prepare(request)
    with contextlib.suppress(ConnectionResetError, ConnectionError, RuntimeError):
        await response.write_eof()
    return response


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value):
        return await value
    return value


# ----------------------------------------------------------------------------------------------
# pods/exec and pods/attach over websocket (v5/v4 channel protocol)
# ----------------------------------------------------------------------------------------------
def _exit_status(code: int) -> dict[str, Any]:
    if code < 0:  # killed by a signal: the runtime reports 128 + signal, as a shell would
        code = 128 - code
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command [{code}]",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


async def pod_exec(request: web.Request, server: ApiServer, target: Target) -> web.StreamResponse:
    q = request.query
    sub = target.subresource
    pod, container = _pod_and_container(server, target, q.get("container"))
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise bad_request(f"cannot exec into a container in a completed pod; current phase is {phase}")
    command = q.getall("command", [])
    if sub == "exec" and not command:
        raise bad_request("you must specify at least 1 command")
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise ApiError(400, "Upgrade request required", "BadRequest")
    runtime = server.core.runtime
    if runtime is None or not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f'container "{container}" in pod "{target.name}" is waiting to start: '
                          f'{_waiting_reason(pod, container) or "ContainerCreating"}')
    tty = bool_param(q, "tty")
    want_stdin = bool_param(q, "stdin")
    if not request[USER_KEY].is_master and (note := getattr(runtime, "note_entered", None)) is not None:
        # anyone but the cluster's own (the benchmark, its faults) may leave a process behind in
        # here: the node agent counts it, and the benchmark's reset starts such a pod afresh
        note(target.namespace, target.name)
    ws = web.WebSocketResponse(protocols=EXEC_PROTOCOLS, heartbeat=None, max_msg_size=16 * 1024 * 1024)
    await ws.prepare(request)
    v5 = ws.ws_protocol == "v5.channel.k8s.io"
    try:
        if sub == "attach":
            await _attach(ws, runtime, target, container)
            return ws
        try:
            proc = await runtime.exec(target.namespace, target.name, container, command, tty=tty)
        except ApiError as exc:
            await ws.send_bytes(b"\x03" + json.dumps(exc.status).encode())
            return ws
        except (OSError, ValueError) as exc:
            status = {"metadata": {}, "status": "Failure", "reason": "InternalError",
                      "message": f'failed to exec in container: {exc}'}
            await ws.send_bytes(b"\x03" + json.dumps(status).encode())
            return ws

        async def pump(stream: Any, channel: int) -> None:
            if stream is None:
                return
            while True:
                data = await stream.read(32768)
                if not data:
                    return
                await ws.send_bytes(bytes([channel]) + data)

        async def feed() -> None:
            stdin = getattr(proc, "stdin", None)
            async for msg in ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    if msg.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                        break
                    continue
                channel, payload = msg.data[0], msg.data[1:]
                if channel == 0 and stdin is not None and want_stdin:
                    stdin.write(payload)
                    with contextlib.suppress(ConnectionError):
                        await stdin.drain()
                elif channel == 255 and v5 and payload[:1] == b"\x00" and stdin is not None:
                    with contextlib.suppress(OSError):
                        stdin.close()
            if stdin is not None:
                with contextlib.suppress(OSError):
                    stdin.close()

        feeder = asyncio.create_task(feed())
        guard = asyncio.create_task(_end_with_identity(request, proc, ws))
        if not want_stdin and getattr(proc, "stdin", None) is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        await asyncio.gather(pump(getattr(proc, "stdout", None), 1), pump(getattr(proc, "stderr", None), 2))
        code = await proc.wait()
        await ws.send_bytes(b"\x03" + json.dumps(_exit_status(code or 0)).encode())
        feeder.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await feeder
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        guard_ref = locals().get("guard")
        if guard_ref is not None:
            guard_ref.cancel()
        proc_ref = locals().get("proc")
        if proc_ref is not None and getattr(proc_ref, "returncode", 0) is None:
            with contextlib.suppress(ProcessLookupError, OSError, AttributeError):
                proc_ref.kill()
        with contextlib.suppress(Exception):
            await ws.close()
    return ws


async def _end_with_identity(request: web.Request, proc: Any, ws: web.WebSocketResponse) -> None:
    """An exec session lasts as long as its identity: looked at every second, as a followed log and a watch are; once
    the identity is revoked (the attempt ended) the command is killed and the session closed (red-team round 10)."""
    recheck = request.get(RECHECK_KEY)
    if recheck is None:
        return
    while True:
        await asyncio.sleep(LOG_RECHECK_S)
        try:
            recheck()
        except ApiError:
            with contextlib.suppress(ProcessLookupError, OSError, AttributeError):
                proc.kill()
            with contextlib.suppress(Exception):
                await ws.close()
            return


async def _attach(ws: web.WebSocketResponse, runtime: Any, target: Target, container: str) -> None:
    attach = getattr(runtime, "attach", None)
    if attach is not None:
        proc = await attach(target.namespace, target.name, container)
        while True:
            data = await proc.stdout.read(32768)
            if not data:
                break
            await ws.send_bytes(b"\x01" + data)
        return
    # no attach support in the runtime: follow the container's output, as a read-only attach
    stream = await _maybe_await(runtime.read_log(target.namespace, target.name, container, follow=True,
                                                 tail_lines=0))
    async for chunk in stream:
        if ws.closed:
            break
        await ws.send_bytes(b"\x01" + chunk)


# ----------------------------------------------------------------------------------------------
# eviction (with PodDisruptionBudget checks) and binding
# ----------------------------------------------------------------------------------------------
def _pod_ready(pod: dict[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _int_or_percent(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = int(value[:-1])
        except ValueError:
            return 0
        raw = pct * total / 100
        return math.ceil(raw) if round_up else math.floor(raw)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def pdb_allowance(server: ApiServer, pdb: dict[str, Any], namespace: str) -> tuple[int, int, int]:
    """(disruptions allowed, desired healthy, current healthy) computed from the live pods."""
    spec = pdb.get("spec") or {}
    matcher = selector_from_match_labels(spec.get("selector"))
    pods = [p for p in server.core.store.list("pods", namespace)
            if matcher is not None and matcher(p["metadata"].get("labels") or {})
            and not p["metadata"].get("deletionTimestamp")]
    healthy = sum(1 for p in pods if _pod_ready(p))
    expected = len(pods)
    if "minAvailable" in spec and spec["minAvailable"] is not None:
        desired = _int_or_percent(spec["minAvailable"], expected, True)
    elif "maxUnavailable" in spec and spec["maxUnavailable"] is not None:
        desired = max(0, expected - _int_or_percent(spec["maxUnavailable"], expected, True))
    else:
        desired = 0
    return max(0, healthy - desired), desired, healthy


async def evict(request: web.Request, server: ApiServer, target: Target) -> web.Response:
    body = await _body(request, "Eviction")
    core = server.core
    namespace, name = target.namespace or "default", target.name or ""
    body_name = (body.get("metadata") or {}).get("name")
    if body_name and body_name != name:
        raise bad_request(f"name in URL does not match name in Eviction object: {name} != {body_name}")
    pod = core.get(target.rt, namespace, name)
    phase = (pod.get("status") or {}).get("phase")
    labels = pod["metadata"].get("labels") or {}
    if phase not in ("Succeeded", "Failed", "Pending") and not pod["metadata"].get("deletionTimestamp"):
        pdbs = [p for p in core.store.list("poddisruptionbudgets.policy", namespace)
                if (m := selector_from_match_labels((p.get("spec") or {}).get("selector"))) is not None and m(labels)]
        if len(pdbs) > 1:
            raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                "does not support.", "InternalError")
        if pdbs and _pod_ready(pod):
            allowed, desired, healthy = pdb_allowance(server, pdbs[0], namespace)
            if allowed <= 0:
                pdb_name = pdbs[0]["metadata"]["name"]
                raise ApiError(
                    429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                    details={"causes": [{"reason": "DisruptionBudget",
                                         "message": f"The disruption budget {pdb_name} needs {desired} healthy pods "
                                                    f"and has {healthy} currently"}]},
                )
    options = body.get("deleteOptions") or {}
    if not isinstance(options, dict):
        raise bad_request("deleteOptions must be an object")
    core.delete(target.rt, namespace, name, options)
    return _json(success_status(code=201), 201)


def bind_pod(server: ApiServer, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    core = server.core
    node = ((body.get("target") or {}).get("name")) if isinstance(body.get("target"), dict) else None
    if not node:
        raise bad_request("Binding.target.name is required")
    pods = core.registry.by_key("pods")
    pod = core.get(pods, namespace, name)
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already '
                            f'assigned to node "{current}"', "Conflict")
    new = json.loads(json.dumps(pod))
    new["spec"]["nodeName"] = node
    conds = [c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
    conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso(), "lastProbeTime": None})
    core.update(pods, namespace, name, new)
    fresh = core.get(pods, namespace, name)
    status = dict(fresh)
    status["status"] = dict(fresh.get("status") or {}, conditions=conds)
    core.update(pods, namespace, name, status, subresource="status")
    return success_status(code=201)


# ----------------------------------------------------------------------------------------------
# serviceaccounts/token
# ----------------------------------------------------------------------------------------------
async def token_request(request: web.Request, server: ApiServer, target: Target) -> web.Response:
    body = await _body(request, "TokenRequest")
    namespace, name = target.namespace or "default", target.name or ""
    sa = server.core.store.get("serviceaccounts", namespace, name)
    if sa is None:
        raise not_found("serviceaccounts", "", name)
    # a token of an account with rights its requester lacks is those rights (account_admission.py)
    account_admission.check_token_request(server.authz, request[USER_KEY], namespace, name)
    spec = body.get("spec") or {}
    expiration = spec.get("expirationSeconds") or 3600
    if not isinstance(expiration, int) or expiration < 600:
        raise ApiError(422, f'TokenRequest.authentication.k8s.io "{name}" is invalid: spec.expirationSeconds: '
                            "Invalid value: may not specify a duration less than 10 minutes", "Invalid")
    token, exp = server.authn.issue_sa_token(namespace, sa, expiration, spec.get("audiences") or None)
    stamp = datetime.fromtimestamp(exp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return _json({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_iso()},
        "spec": {"audiences": spec.get("audiences") or [server.authn.issuer], "expirationSeconds": expiration,
                 "boundObjectRef": spec.get("boundObjectRef")},
        "status": {"token": token, "expirationTimestamp": stamp},
    }, 201)


# ----------------------------------------------------------------------------------------------
# virtual resources: access reviews, whoami, metrics, bindings
# ----------------------------------------------------------------------------------------------
async def virtual(request: web.Request, server: ApiServer, target: Target) -> web.StreamResponse:
    rt = target.rt
    user = request[USER_KEY]
    if rt.group == "metrics.k8s.io":
        if request.method != "GET":
            raise method_not_allowed()
        server.authorize(user, "get" if target.name else "list", target)
        return metrics(request, server, target)
    if rt.key == "componentstatuses":
        if request.method != "GET":
            raise method_not_allowed()
        server.authorize(user, "get" if target.name else "list", target)
        return component_statuses(request, target)
    if request.method != "POST" or target.name is not None:
        raise method_not_allowed()
    server.authorize(user, "create", target)
    body = await _body(request, rt.kind)
    if rt.key == "bindings":
        name = (body.get("metadata") or {}).get("name", "")
        return _json(bind_pod(server, target.namespace or "default", name, body), 201)
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise bad_request("spec must be an object")
    out = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": {"creationTimestamp": None}, "spec": spec}
    if rt.kind == "SelfSubjectReview":
        out.pop("spec")
        out["status"] = {"userInfo": user.to_json()}
    elif rt.kind == "SelfSubjectAccessReview":
        out["status"] = _access_status(server, user, spec)
    elif rt.kind in ("SubjectAccessReview", "LocalSubjectAccessReview"):
        from .rbac import UserInfo

        subject = UserInfo(name=spec.get("user") or "", groups=tuple(spec.get("groups") or ()))
        if rt.kind == "LocalSubjectAccessReview":
            ra = dict(spec.get("resourceAttributes") or {}, namespace=target.namespace)
            spec = dict(spec, resourceAttributes=ra)
        out["status"] = _access_status(server, subject, spec)
    elif rt.kind == "SelfSubjectRulesReview":
        out["status"] = server.authz.rules_review(user, spec.get("namespace") or "")
    elif rt.kind == "TokenReview":
        who = server.authn.authenticate(f"Bearer {spec.get('token', '')}")
        out["status"] = {"authenticated": True, "user": who.to_json()} if who else {"authenticated": False}
    return _json(out, 201)


def component_statuses(request: web.Request, target: Target) -> web.Response:
    """The deprecated ComponentStatus API agents still use to check the control plane."""
    names = [target.name] if target.name else list(COMPONENTS)
    if target.name and target.name not in COMPONENTS:
        raise not_found("componentstatuses", "", target.name)
    items: list[dict[str, Any]] = [{"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": n},
              "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]} for n in names]
    warning = '299 - "v1 ComponentStatus is deprecated in v1.19+"'
    if "as=Table" in request.headers.get("Accept", ""):
        body: dict[str, Any] = {
            "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "columnDefinitions": [
                {"name": n, "type": "string", "format": "name" if n == "Name" else "", "description": d,
                 "priority": 0}
                for n, d in (("Name", "Name"), ("Status", "Status of the component conditions"),
                             ("Message", "Message of the component conditions"),
                             ("Error", "Error of the component conditions"))],
            "rows": [{"cells": [i["metadata"]["name"], "Healthy", "ok", ""],
                      "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                 "metadata": i["metadata"]}} for i in items],
        }
    elif target.name:
        body = items[0]
    else:
        body = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
    response = _json(body)
    response.headers.add("Warning", warning)
    return response


def _access_status(server: ApiServer, user: Any, spec: dict[str, Any]) -> dict[str, Any]:
    ra = spec.get("resourceAttributes")
    nra = spec.get("nonResourceAttributes")
    if isinstance(ra, dict):
        attrs_ = Attributes(verb=ra.get("verb") or "", group=ra.get("group") or "", resource=ra.get("resource") or "",
                            subresource=ra.get("subresource") or "", namespace=ra.get("namespace") or "",
                            name=ra.get("name") or "")
    elif isinstance(nra, dict):
        attrs_ = Attributes(verb=nra.get("verb") or "", path=nra.get("path") or "/")
    else:
        raise ApiError(422, "spec.resourceAttributes: Invalid value: exactly one of nonResourceAttributes or "
                            "resourceAttributes must be specified", "Invalid")
    if server.authz.allowed(user, attrs_):
        return {"allowed": True, "reason": "RBAC: allowed"}
    return {"allowed": False}


def _cpu(nanocores: int) -> str:
    return f"{int(nanocores)}n"


def _mem(num_bytes: int) -> str:
    return f"{int(num_bytes) // 1024}Ki"


def metrics(request: web.Request, server: ApiServer, target: Target) -> web.Response:
    runtime = server.core.runtime
    if runtime is None:
        raise ApiError(503, "the server is currently unable to handle the request", "ServiceUnavailable")
    rt = target.rt
    core = server.core
    stamp = now_iso()
    q = request.query
    if rt.plural == "nodes":
        nodes = core.store.list("nodes")
        if target.name:
            nodes = [n for n in nodes if n["metadata"]["name"] == target.name]
            if not nodes:
                raise not_found("nodes", "metrics.k8s.io", target.name)
        flt = ObjectFilter(None, q.get("labelSelector"), None, "nodes")
        items: list[dict[str, Any]] = []
        for node in nodes:
            if not flt(node):
                continue
            cpu, mem = runtime.node_usage(node["metadata"]["name"])
            items.append({"metadata": {"name": node["metadata"]["name"], "creationTimestamp": stamp,
                                       "labels": node["metadata"].get("labels") or {}},
                          "timestamp": stamp, "window": "20s", "usage": {"cpu": _cpu(cpu), "memory": _mem(mem)}})
        kind = "NodeMetrics"
    else:
        flt = ObjectFilter(target.namespace, q.get("labelSelector"), None, "pods")
        pods = [p for p in core.store.list("pods", target.namespace) if flt(p)]
        if target.name:
            pods = [p for p in pods if p["metadata"]["name"] == target.name]
        items = []
        for pod in pods:
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            meta = pod["metadata"]
            usage = runtime.pod_usage(meta["namespace"], meta["name"]) or {}
            items.append({
                "metadata": {"name": meta["name"], "namespace": meta["namespace"], "creationTimestamp": stamp,
                             "labels": meta.get("labels") or {}},
                "timestamp": stamp, "window": "20s",
                "containers": [{"name": c, "usage": {"cpu": _cpu(u[0]), "memory": _mem(u[1])}}
                               for c, u in usage.items()],
            })
        if target.name and not items:
            raise not_found("pods", "metrics.k8s.io", target.name)
        kind = "PodMetrics"
    for item in items:
        item.update({"kind": kind, "apiVersion": "metrics.k8s.io/v1beta1"})
    if target.name:
        return _json(items[0])
    return _json({"kind": f"{kind}List", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items})


__all__ = ["HANDLED", "VIRTUAL_HANDLERS", "handle", "virtual", "media_type"]
