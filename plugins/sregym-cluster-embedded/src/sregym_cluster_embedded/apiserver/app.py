"""The aiohttp application: authentication, routing, discovery, CRUD, watch and Tables.

Every response to an API path is either the requested object or a Kubernetes ``Status``; nothing
the client sends can produce anything else.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from . import account_admission, discovery, fieldcheck, grant_admission, identity_admission, openapi, podsecurity, printers, proxy, subresources, webhooks
from .auth import Authenticator
from .core import ApiCore
from .errors import ApiError, bad_request, forbidden, method_not_allowed, server_not_found
from .rbac import ADMIN_USER as ADMIN_NAME
from .rbac import MASTERS as MASTERS_GROUP
from .rbac import Attributes, Authorizer, UserInfo
from .request import (
    MAX_BODY,
    PATCH_TYPES,
    USER_KEY,
    Target,
    bool_param,
    check_json_object,
    decode_body,
    dry_run_param,
    int_param,
    json_response,
    media_type,
    parse_resource_path,
    RECHECK_KEY,
    read_body,
    success_status,
    wants_partial,
    wants_table,
)
from .selectors import ObjectFilter
from .store import Obj

if TYPE_CHECKING:
    from .admin_faults import FaultHooks

log = logging.getLogger(__name__)

ANONYMOUS = UserInfo(name="system:anonymous", groups=("system:unauthenticated",))
PUBLIC_PATHS = {"/healthz", "/livez", "/readyz", "/version", "/version/"}
DEFAULT_WATCH_TIMEOUT = 1800
BOOKMARK_INTERVAL = 60.0
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


SERVER_KEY: web.AppKey[ApiServer] = web.AppKey("server")
#: how often an open watch asks again whether its identity and its right to watch still hold
WATCH_RECHECK_S = 1.0
#: the authorization decisions the request being served was granted so far, asked again once its body has
#: arrived and while a watch streams (see _recheck)
_DECISIONS: contextvars.ContextVar[list[tuple[UserInfo, Attributes]] | None] = contextvars.ContextVar(
    "sregym_authz_decisions", default=None)
TIMING_KEY: web.RequestKey[str] = web.RequestKey("timing_key")
PSA_AUDIT_KEY: web.RequestKey[str] = web.RequestKey("pod_security_audit")


def list_response(core: ApiCore, rt: Any, list_meta: dict[str, Any], items: list[Obj]) -> web.Response:
    """A List whose items are spliced in from the store's serialization cache."""
    head = _dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": list_meta})
    encoded = b",".join(core.store.encoded(rt.storage_key, o) for o in items)
    body = head[:-1].encode() + b',"items":[' + encoded + b"]}"
    return web.Response(body=body, headers={"Content-Type": "application/json"})


def status_response(exc: ApiError) -> web.Response:
    return json_response(exc.status, exc.code)


class ApiServer:
    """State shared by the handlers of one API server."""

    def __init__(self, core: ApiCore, authn: Authenticator) -> None:
        self.core = core
        self.authn = authn
        self.authz = Authorizer(core)
        self.started = time.monotonic()
        self._openapi: tuple[int, dict[str, Any], dict[str, dict[str, Any]]] | None = None
        # server-side latency per (method, kind of request), for the benchmark
        self.timings: dict[str, list[float]] = {}
        self.record_timings = False
        #: labelled store snapshots for fast resets (see admin_request)
        self.snapshots: dict[str, bytes] = {}
        self._http: Any = None
        #: JSON lines, one per write request (who did what, with which outcome)
        self.audit_file: Any = None
        #: the node fault endpoints (/sregym/faults), set by the cluster process once its parts run
        self.fault_hooks: FaultHooks | None = None

    def audit(self, request: web.Request, code: int) -> None:
        user = request.get(USER_KEY)
        entry = {"ts": time.time(), "user": user.name if user else None, "method": request.method,
                 "path": request.path, "query": request.query_string, "code": code}
        if request.get(PSA_AUDIT_KEY):
            entry["annotations"] = {podsecurity.AUDIT_ANNOTATION: request[PSA_AUDIT_KEY]}
        try:
            self.audit_file.write(_dumps(entry) + "\n")
            self.audit_file.flush()
        except (OSError, ValueError):
            self.audit_file = None  # a full disk must not take the API down

    def http_session(self) -> Any:
        """The client session the service/pod proxy dials with (created on first use)."""
        import aiohttp

        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(auto_decompress=False)
        return self._http

    async def close(self) -> None:
        if self.audit_file is not None:
            self.audit_file.close()
            self.audit_file = None
        if self._http is not None:
            await self._http.close()
            self._http = None
        await webhooks.close(self.core)

    @property
    def settings(self) -> Any:
        return self.core.settings

    # ------------------------------------------------------------------------------------------
    # authorization helpers
    # ------------------------------------------------------------------------------------------
    def authorize(self, user: UserInfo, verb: str, target: Target, name: str | None = None) -> None:
        rt = target.rt
        attrs_ = Attributes(verb=verb, group=rt.group, resource=rt.plural, subresource=target.subresource,
                            namespace=target.namespace or "", name=name or target.name or "")
        if not self.authz.allowed(user, attrs_):
            raise forbidden(user.name, verb, rt.plural, rt.group, target.namespace, name or target.name,
                            target.subresource)
        _remember(user, attrs_)

    def authorize_path(self, user: UserInfo, verb: str, path: str) -> None:
        attrs_ = Attributes(verb=verb, path=path)
        if not self.authz.allowed(user, attrs_):
            raise ApiError(403, f'forbidden: User "{user.name}" cannot {verb} path "{path}"', "Forbidden",
                           details={})
        _remember(user, attrs_)

    # ------------------------------------------------------------------------------------------
    # openapi
    # ------------------------------------------------------------------------------------------
    def openapi(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        gen = self.core.registry.generation
        if self._openapi is None or self._openapi[0] != gen:
            resources = []
            for rt in self.core.registry.types():
                res: dict[str, Any] = {"group": rt.group, "version": rt.version, "kind": rt.kind,
                                       "plural": rt.plural, "namespaced": rt.namespaced}
                if rt.crd is not None:
                    res["custom"] = True
                    for ver in (rt.crd.get("spec") or {}).get("versions") or []:
                        if ver.get("name") == rt.version and (ver.get("schema") or {}).get("openAPIV3Schema"):
                            res["schema"] = ver["schema"]["openAPIV3Schema"]
                resources.append(res)
            index, docs = openapi.build_openapi_v3(resources)
            self._openapi = (gen, index, docs)
        return self._openapi[1], self._openapi[2]


# ----------------------------------------------------------------------------------------------
# middleware
# ----------------------------------------------------------------------------------------------
@web.middleware
async def errors_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    server: ApiServer = request.app[SERVER_KEY]
    t0 = time.perf_counter()
    try:
        response = await handler(request)
    except ApiError as exc:
        response = status_response(exc)
    except web.HTTPRequestEntityTooLarge:
        response = status_response(ApiError(413, "the request body is too large", "RequestEntityTooLarge"))
    except web.HTTPException as exc:
        response = status_response(ApiError(exc.status, exc.reason or "error"))
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as exc:  # a bug: report it as a Status, never drop the connection
        log.exception("internal error on %s %s", request.method, request.path)
        response = status_response(ApiError(500, f"Internal error occurred: {exc}", "InternalError"))
    if server.audit_file is not None and request.method not in ("GET", "HEAD", "OPTIONS"):
        server.audit(request, response.status)
    if server.record_timings:
        server.timings.setdefault(request.get(TIMING_KEY, request.method), []).append(time.perf_counter() - t0)
    return response


def _remember(user: UserInfo, attrs_: Attributes) -> None:
    decisions = _DECISIONS.get()
    if decisions is not None:
        decisions.append((user, attrs_))


def _recheck(request: web.Request, decisions: list[tuple[UserInfo, Attributes]]) -> None:
    """Raise what the request would get now: 401 once its identity is gone (a revoked ServiceAccount's token),
    403 once a right it was granted is gone. The API server decides from the headers; a client may hold the
    body back for minutes, or keep a watch open, past the end of the attempt that gave it the identity."""
    server: ApiServer = request.app[SERVER_KEY]
    header = request.headers.get("Authorization")
    if header is not None:
        now = server.authn.authenticate(header)
        if now is None or now.name != request[USER_KEY].name:
            raise ApiError(401, "Unauthorized", "Unauthorized")
    for user, attrs_ in decisions:
        if not server.authz.allowed(user, attrs_):
            raise ApiError(403, f'forbidden: User "{user.name}" may no longer {attrs_.verb} this', "Forbidden",
                           details={})


def _user(request: web.Request) -> UserInfo:
    server: ApiServer = request.app[SERVER_KEY]
    header = request.headers.get("Authorization")
    if header is None:
        return ANONYMOUS
    user = server.authn.authenticate(header)
    if user is None:
        raise ApiError(401, "Unauthorized", "Unauthorized")
    return user


# ----------------------------------------------------------------------------------------------
# the one dispatcher
# ----------------------------------------------------------------------------------------------
async def dispatch(request: web.Request) -> web.StreamResponse:
    server: ApiServer = request.app[SERVER_KEY]
    path = request.path
    user = _user(request)
    request[USER_KEY] = user
    if MASTERS_GROUP not in user.groups:  # the cluster's own identities (benchmark, controllers, nodes) stay
        decisions: list[tuple[UserInfo, Attributes]] = []
        _DECISIONS.set(decisions)  # this request's task only (aiohttp serves each request in its own task)
        request[RECHECK_KEY] = lambda: _recheck(request, decisions)
    parts = [p for p in path.split("/")][1:]
    if parts and parts[-1] == "" and path not in ("/version/",):
        parts = parts[:-1]
    head = parts[0] if parts else ""

    if path in ("/healthz", "/livez", "/readyz") or head in ("healthz", "livez", "readyz"):
        return health_response(head, parts, request.query)
    if request.method != "GET" and head in ("version", "api", "apis", "openapi", ""):
        if head in ("version", "openapi", "") or len(parts) < (3 if head == "api" else 4):
            raise method_not_allowed()
    if head == "version":
        if len(parts) > 1 and parts[1]:
            raise server_not_found()
        return json_response(version_info(server.settings))
    if head == "":
        server.authorize_path(user, "get", "/")
        return json_response({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v3",
                                        "/readyz", "/version"]})
    if head == "sregym":
        return await admin_request(request, server, parts)
    if head == "openapi":
        server.authorize_path(user, "get", path)
        return openapi_response(server, parts)
    if head == "api":
        if len(parts) == 1:
            server.authorize_path(user, "get", "/api")
            return discovery_response(request, server, legacy=True)
        if parts[1] != "v1":
            raise server_not_found()
        if len(parts) == 2:
            server.authorize_path(user, "get", "/api/v1")
            return json_response(discovery.api_resource_list(server.core.registry, "", "v1"))
        return await resource_request(request, server, "", "v1", parts[2:])
    if head == "apis":
        registry = server.core.registry
        if len(parts) == 1:
            server.authorize_path(user, "get", "/apis")
            return discovery_response(request, server, legacy=False)
        if len(parts) == 2:
            server.authorize_path(user, "get", path)
            doc = discovery.api_group(registry, parts[1])
            if doc is None:
                raise server_not_found()
            return json_response(doc)
        if len(parts) == 3:
            server.authorize_path(user, "get", path)
            doc = discovery.api_resource_list(registry, parts[1], parts[2])
            if doc is None:
                raise server_not_found()
            return json_response(doc)
        return await resource_request(request, server, parts[1], parts[2], parts[3:])
    raise server_not_found()


async def admin_request(request: web.Request, server: ApiServer, parts: list[str]) -> web.Response:
    """Cluster administration for the benchmark (system:masters only):
    ``POST /sregym/snapshots/<label>`` saves the store, ``POST /sregym/snapshots/<label>/restore``
    brings it back, ``DELETE /sregym/snapshots/<label>`` forgets it, ``GET /sregym/snapshots`` lists."""
    user: UserInfo = request[USER_KEY]
    if not user.is_master:
        raise ApiError(403, f'forbidden: User "{user.name}" cannot {request.method.lower()} path "{request.path}"',
                       "Forbidden", details={})
    if len(parts) >= 2 and parts[1] in ("faults", "nodes"):  # node-level fault hooks
        from .admin_faults import handle as fault_hooks_request

        return await fault_hooks_request(request, getattr(server, "fault_hooks", None), parts)
    snapshots = server.snapshots
    if parts[1:] == ["tokens"] and request.method == "POST":
        # a new identity for one agent: {"user": "agent-7", "groups": ["sregym:agents"]} -> {"token": ...}
        try:
            spec = json.loads(await request.read() or b"{}")
        except ValueError:
            raise bad_request("the body must be JSON: {\"user\": ..., \"groups\": [...]}") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("user"), str) or not spec["user"] \
                or not isinstance(spec.get("groups", []), list) or not all(isinstance(g, str) for g in spec.get("groups", [])):
            raise bad_request("expected {\"user\": <name>, \"groups\": [<group>...]}")
        if spec["user"] == ADMIN_NAME or MASTERS_GROUP in spec.get("groups", []):
            raise ApiError(403, "agent identities may not be administrators", "Forbidden")
        token = server.authn.mint(spec["user"], spec.get("groups", []))
        return json_response({"user": spec["user"], "groups": spec.get("groups", []), "token": token}, 201)
    if parts[1:] == ["snapshots"] and request.method == "GET":
        return json_response({"snapshots": sorted(snapshots)})
    if len(parts) >= 3 and parts[1] == "snapshots" and parts[2]:
        label = parts[2]
        if len(parts) == 3 and request.method == "POST":
            snapshots[label] = server.core.store.snapshot()
            return json_response({"label": label, "bytes": len(snapshots[label])}, 201)
        if len(parts) == 3 and request.method == "DELETE":
            if snapshots.pop(label, None) is None:
                raise ApiError(404, f'snapshot "{label}" not found')
            return json_response(success_status())
        if len(parts) == 4 and parts[3] == "restore" and request.method == "POST":
            blob = snapshots.get(label)
            if blob is None:
                raise ApiError(404, f'snapshot "{label}" not found')
            server.core.store.restore(blob)
            return json_response({"label": label, "resourceVersion": str(server.core.store.rv)})
    raise server_not_found()


HEALTH_CHECKS = ("ping", "log", "etcd", "informer-sync", "poststarthook/start-apiextensions-controllers",
                 "poststarthook/crd-informer-synced", "poststarthook/rbac/bootstrap-roles",
                 "poststarthook/bootstrap-controller", "shutdown")


def health_response(head: str, parts: list[str], query: Any) -> web.Response:
    checks = [c for c in HEALTH_CHECKS if head == "readyz" or c not in ("informer-sync", "shutdown")]
    if len(parts) > 1:  # a single check: /readyz/ping
        name = "/".join(parts[1:])
        if name not in checks:
            raise server_not_found()
        return web.Response(text="ok", content_type="text/plain")
    if "verbose" in query:
        lines = [f"[+]{c} ok" for c in checks] + [f"{head} check passed"]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")
    return web.Response(text="ok", content_type="text/plain")


def version_info(settings: Any) -> dict[str, Any]:
    version = settings.kubernetes_version
    major, minor = version.lstrip("v").split(".")[:2]
    return {
        "major": major, "minor": minor, "gitVersion": version, "gitCommit": "sregym-embedded",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.8",
        "compiler": "gc", "platform": "linux/amd64",
    }


def discovery_response(request: web.Request, server: ApiServer, *, legacy: bool) -> web.Response:
    registry = server.core.registry
    agg = discovery.wants_aggregated(request.headers.get("Accept", ""))
    if agg is not None:
        ctype = discovery.AGG_V2 if agg == "v2" else discovery.AGG_V2BETA1
        return json_response(discovery.aggregated(registry, legacy, agg), content_type=ctype)
    if legacy:
        return json_response(discovery.api_versions(f"{server.settings.api_host}:{server.settings.api_port}"))
    return json_response(discovery.api_group_list(registry))


def openapi_response(server: ApiServer, parts: list[str]) -> web.Response:
    if len(parts) < 2 or parts[1] != "v3":
        raise server_not_found()
    index, docs = server.openapi()
    if len(parts) == 2:
        return json_response(index)
    doc = docs.get("/".join(parts[2:]))
    if doc is None:
        raise server_not_found()
    return json_response(doc)


# ----------------------------------------------------------------------------------------------
# resources
# ----------------------------------------------------------------------------------------------
async def resource_request(request: web.Request, server: ApiServer, group: str, version: str,
                           rest: list[str]) -> web.StreamResponse:
    core = server.core
    user: UserInfo = request[USER_KEY]
    if group == "" and proxy.is_proxy_path(rest):
        return await proxy.handle(request, server, rest)
    target = parse_resource_path(core.registry, group, version, rest)
    rt = target.rt
    query = request.query
    method = request.method
    accept = request.headers.get("Accept", "")
    request[TIMING_KEY] = f"{method} {'item' if target.name else 'list'}"
    if target.subresource in subresources.HANDLED:
        return await subresources.handle(request, server, target)
    if rt.key in subresources.VIRTUAL_HANDLERS:
        return await subresources.virtual(request, server, target)

    if method == "GET":
        is_watch = target.watch_prefix or bool_param(query, "watch")
        if target.name is None and target.namespace is None and rt.namespaced:
            verb = "watch" if is_watch else "list"
            server.authorize(user, verb, target)
        else:
            server.authorize(user, "watch" if is_watch else ("get" if target.name else "list"), target)
        if is_watch:
            return await watch_response(request, server, target)
        if target.name is not None:
            if target.subresource == "scale":
                return json_response(core.get_scale(rt, target.namespace, target.name))
            obj = core.get(rt, target.namespace, target.name)
            if wants_table(accept):
                return json_response(_table(server, target, [obj], query))
            if wants_partial(accept):
                return json_response(printers.partial_metadata(obj))
            return web.Response(body=core.store.encoded(rt.storage_key, obj),
                                headers={"Content-Type": "application/json"})
        request[TIMING_KEY] = "GET list"
        items, rv, cont, remaining = core.list(
            rt, target.namespace, label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"), limit=int_param(query, "limit"),
            continue_token=query.get("continue"))
        list_meta: dict[str, Any] = {"resourceVersion": rv}
        if cont:
            list_meta["continue"] = cont
            list_meta["remainingItemCount"] = remaining
        if wants_table(accept):
            table = _table(server, target, items, query)
            table["metadata"] = list_meta
            return json_response(table)
        if wants_partial(accept):
            return json_response({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                  "metadata": list_meta, "items": [printers.partial_metadata(o) for o in items]})
        return list_response(core, rt, list_meta, items)

    dry_run = dry_run_param(query)
    if method == "POST":
        if target.name is not None:
            raise method_not_allowed()
        if rt.namespaced and target.namespace is None:
            raise method_not_allowed()
        server.authorize(user, "create", target)
        body = check_json_object(decode_body(await read_body(request), request.headers.get("Content-Type")),
                                 rt.kind)
        warnings = fieldcheck.check(rt, body, query)
        if webhooks.configured(core):
            body, hook_warnings = await webhooks.on_create(core, rt, target.namespace, body, user, dry_run)
            warnings += hook_warnings
        identity_admission.admit(core, server.authz, user, rt.group, rt.kind, target.namespace, body)
        created = core.create(rt, target.namespace, body, dry_run=dry_run)
        warnings += _pod_security(request, core, target.namespace, created)
        return _warn(json_response(created, 201), warnings)
    if method == "PUT":
        if target.name is None:
            raise method_not_allowed()
        server.authorize(user, "update", target)
        body = decode_body(await read_body(request), request.headers.get("Content-Type"))
        if target.subresource == "scale":
            return json_response(core.update(rt, target.namespace, target.name, body, subresource="scale",
                                             dry_run=dry_run))
        body = check_json_object(body, rt.kind)
        warnings = fieldcheck.check(rt, body, query) if not target.subresource else []
        before = _namespace_labels(core, rt, target)
        if webhooks.configured(core) and not target.subresource:
            preview = core.update(rt, target.namespace, target.name, body, dry_run=True)
            mutated, hook_warnings = await webhooks.on_write(core, rt, target.namespace, target.name, preview, user,
                                                             dry_run)
            warnings += hook_warnings
            body = mutated if mutated is not None else body
        if target.subresource == "ephemeralcontainers" and rt.kind == "Pod":  # kubectl debug: the pod's token
            account_admission.check_entry(server.authz, user, target.namespace or "",
                                          core.store.get(rt.storage_key, target.namespace, target.name),
                                          target.subresource)
        if not target.subresource:
            stored = core.store.get(rt.storage_key, target.namespace if rt.namespaced else None, target.name)
            grant = None if user.is_master else grant_admission.grant_for(core, rt.group, rt.plural,
                                                                           target.namespace, target.name)
            guarded = stored is not None and not user.is_master and identity_admission.guarded(rt.group, rt.kind)
            # judged as it would be stored (defaults applied), as a PATCH is: a manifest that leaves out a
            # defaulted field (a volume's defaultMode) changes nothing the admissions compare
            as_stored = core.update(rt, target.namespace, target.name, body, dry_run=True) \
                if guarded or grant is not None else None
            identity_admission.admit(core, server.authz, user, rt.group, rt.kind, target.namespace,
                                     as_stored if guarded else body, stored)
            if grant is not None:
                grant_admission.admit(grant, user.name, stored, as_stored)
        updated = core.update(rt, target.namespace, target.name, body, subresource=target.subresource or None,
                              dry_run=dry_run)
        if not target.subresource:
            warnings += _pod_security(request, core, target.namespace, updated, before)
        return _warn(json_response(updated), warnings)
    if method == "PATCH":
        if target.name is None:
            raise method_not_allowed()
        ctype = media_type(request.headers.get("Content-Type"))
        if ctype not in PATCH_TYPES:
            raise ApiError(415, f'the body of the request was in an unknown format - accepted media types '
                                f'include: {", ".join(PATCH_TYPES)}', "UnsupportedMediaType")
        server.authorize(user, "patch", target)
        existed = core.store.get(rt.storage_key, target.namespace if rt.namespaced else None, target.name)
        if existed is None and ctype == "application/apply-patch+yaml" and not target.subresource:
            server.authorize(user, "create", target)
        patch_body = await read_body(request)
        warnings = []
        if not target.subresource:
            warnings, patch_body = fieldcheck.check_patch(rt, patch_body, ctype, query)
        before = _namespace_labels(core, rt, target)
        mutated = None
        if webhooks.configured(core) and not target.subresource:
            preview = core.patch(rt, target.namespace, target.name, patch_body, ctype, dry_run=True)
            mutated, hook_warnings = await webhooks.on_write(core, rt, target.namespace, target.name, preview, user,
                                                             dry_run)
            warnings += hook_warnings
        if target.subresource == "ephemeralcontainers" and rt.kind == "Pod":  # kubectl debug: the pod's token
            account_admission.check_entry(server.authz, user, target.namespace or "", existed, target.subresource)
        if not target.subresource and user.is_master:  # the account the benchmark wrote may be put back
            account_admission.remember(core, rt.group, rt.kind, target.namespace or "", existed)
        if not target.subresource and not user.is_master and identity_admission.guarded(rt.group, rt.kind):
            # who may write this depends on the result: judge the patched object before storing it
            outcome = mutated if mutated is not None else \
                core.patch(rt, target.namespace, target.name, patch_body, ctype, dry_run=True)
            identity_admission.admit(core, server.authz, user, rt.group, rt.kind, target.namespace, outcome,
                                     existed)
        grant = None if target.subresource or user.is_master or existed is None else \
            grant_admission.grant_for(core, rt.group, rt.plural, target.namespace, target.name)
        if grant is not None:
            outcome = mutated if mutated is not None else \
                core.patch(rt, target.namespace, target.name, patch_body, ctype, dry_run=True)
            grant_admission.admit(grant, user.name, existed, outcome)
        if mutated is not None:  # a mutating webhook changed the patched object: store it as changed
            result = webhooks.store_mutated(core, rt, target.namespace, target.name, mutated,
                                            existed=existed is not None, dry_run=dry_run)
        else:
            result = core.patch(rt, target.namespace, target.name, patch_body, ctype,
                                subresource=target.subresource or None, dry_run=dry_run)
        if not target.subresource:
            warnings += _pod_security(request, core, target.namespace, result, before)
        return _warn(json_response(result, 201 if existed is None and target.subresource != "scale" else 200),
                     warnings)
    if method == "DELETE":
        raw = await read_body(request)
        options: dict[str, Any] = {}
        if raw.strip():
            decoded = decode_body(raw, request.headers.get("Content-Type"))
            if not isinstance(decoded, dict):
                raise bad_request("DeleteOptions must be an object")
            options = decoded
        grace = int_param(query, "gracePeriodSeconds")
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
        if options.get("propagationPolicy") not in (None, "", "Orphan", "Background", "Foreground"):
            raise bad_request(f"invalid propagationPolicy: {options['propagationPolicy']!r}")
        dry_run = dry_run or options.get("dryRun") == ["All"]
        if target.name is None:
            if rt.namespaced and target.namespace is None:
                server.authorize(user, "deletecollection", target)
            server.authorize(user, "deletecollection", target)
            deleted = core.delete_collection(rt, target.namespace, label_selector=query.get("labelSelector"),
                                             field_selector=query.get("fieldSelector"), options=options,
                                             dry_run=dry_run)
            return json_response({"kind": rt.list_kind, "apiVersion": rt.api_version,
                                  "metadata": {"resourceVersion": str(core.store.rv)}, "items": deleted})
        if target.subresource:
            raise method_not_allowed()
        server.authorize(user, "delete", target)
        result = core.delete(rt, target.namespace, target.name, options, dry_run=dry_run)
        return json_response(result)
    raise method_not_allowed()


def _namespace_labels(core: Any, rt: Any, target: Target) -> dict[str, str] | None:
    """A namespace's labels before an update (to warn about pods a new enforce level refuses)."""
    if rt.key != "namespaces" or target.name is None or target.subresource:
        return None
    return core.namespace_labels(target.name)


def _pod_security(request: web.Request, core: Any, namespace: str | None, obj: Any,
                  old_labels: dict[str, str] | None = None) -> list[str]:
    """Pod Security admission's warn mode (Warning headers) and audit mode (the audit log), for a
    pod or a workload's pod template; for a namespace, its existing pods under a new enforce level."""
    if not isinstance(obj, dict):
        return []
    if obj.get("kind") == "Namespace":
        if old_labels is None:
            return []
        name = obj["metadata"]["name"]
        pods = list(core.store.list("pods", name))
        warnings = podsecurity.namespace_update_warnings(old_labels, (obj.get("metadata") or {}).get("labels"), pods)
    else:
        warnings, audit = podsecurity.warnings_and_audit(core.namespace_labels(namespace), obj,
                                                         core.namespace_annotations(namespace))
        if audit:
            request[PSA_AUDIT_KEY] = audit
    # the header's warn-code form (RFC 7234), which kubectl prints as "Warning: <text>"
    return ['299 - "' + json.dumps(w, ensure_ascii=True)[1:-1] + '"' for w in warnings]


def _warn(response: web.Response, warnings: list[str]) -> web.Response:
    for warning in warnings:
        response.headers.add("Warning", warning)
    return response


def _table(server: ApiServer, target: Target, objects: list[Obj], query: Any) -> dict[str, Any]:
    include = query.get("includeObject") or "Metadata"
    if include not in ("None", "Metadata", "Object"):
        raise bad_request(f"invalid includeObject: {include!r}")
    return printers.build_table(target.rt.plural, target.rt.group, objects, include_object=include,
                                crd=target.rt.crd)


# ----------------------------------------------------------------------------------------------
# watch
# ----------------------------------------------------------------------------------------------
async def watch_response(request: web.Request, server: ApiServer, target: Target) -> web.StreamResponse:
    core = server.core
    rt = target.rt
    query = request.query
    request[TIMING_KEY] = "WATCH"
    field_selector = query.get("fieldSelector")
    if target.name is not None:
        name_sel = f"metadata.name={target.name}"
        field_selector = f"{field_selector},{name_sel}" if field_selector else name_sel
    flt = ObjectFilter(target.namespace if rt.namespaced else None, query.get("labelSelector"), field_selector,
                       rt.key)
    send_initial = bool_param(query, "sendInitialEvents")
    if send_initial and query.get("resourceVersionMatch") not in ("NotOlderThan",):
        raise ApiError(422, "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to "
                            "NotOlderThan", "Invalid")
    rv_text = query.get("resourceVersion") or ""
    since: int | None = None
    if rv_text not in ("", "0") and not send_initial:
        try:
            since = int(rv_text)
        except ValueError:
            raise bad_request(f'invalid resource version "{rv_text}"') from None
    timeout = int_param(query, "timeoutSeconds")
    timeout = DEFAULT_WATCH_TIMEOUT if timeout is None or timeout <= 0 else timeout
    table = wants_table(request.headers.get("Accept", ""))
    include = query.get("includeObject") or "Metadata"
    bookmarks = bool_param(query, "allowWatchBookmarks")

    store = core.store
    watcher = store.watch(rt.storage_key, flt, since)
    initial = [] if since is not None else [o for o in store.list(rt.storage_key, flt.namespace) if flt(o)]
    initial_rv = store.rv

    def encode(event_type: str, obj: Obj) -> bytes:
        if table and event_type != "BOOKMARK":
            obj = printers.build_table(rt.plural, rt.group, [core.external(rt, obj)], include_object=include,
                                       crd=rt.crd)
        elif event_type != "BOOKMARK":
            # every watcher of an object shares one serialization of it
            return b'{"type":"' + event_type.encode() + b'","object":' + \
                store.encoded(rt.storage_key, core.external(rt, obj)) + b"}\n"
        return _dumps({"type": event_type, "object": obj}).encode() + b"\n"

    def bookmark(rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return encode("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta})

    response = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    deadline = time.monotonic() + timeout
    try:
        await response.prepare(request)
        chunk = b"".join(encode("ADDED", o) for o in initial)
        if send_initial:
            chunk += bookmark(initial_rv, True)
        if chunk:
            await response.write(chunk)
        last_bookmark = time.monotonic()
        recheck = request.get(RECHECK_KEY)
        checked = [time.monotonic()]

        def revoked() -> bool:
            """A watch ends with its identity or its right to watch (red-team round 9: one streamed on for 21
            minutes after its attempt's identity was revoked, into the next attempts); asked once a second."""
            if recheck is None or time.monotonic() - checked[0] < WATCH_RECHECK_S:
                return False
            checked[0] = time.monotonic()
            try:
                recheck()
            except ApiError:
                return True
            return False

        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            transport = request.transport
            if transport is None or transport.is_closing() or revoked():
                break
            try:
                item = await asyncio.wait_for(watcher.queue.get(),
                                              timeout=min(remaining, 5.0 if recheck is None else WATCH_RECHECK_S))
            except TimeoutError:
                if bookmarks and time.monotonic() - last_bookmark > BOOKMARK_INTERVAL:
                    await response.write(bookmark(store.rv))
                    last_bookmark = time.monotonic()
                continue
            if item is None or revoked():
                break
            out = [encode(*item)]
            while not watcher.queue.empty() and len(out) < 500:
                nxt = watcher.queue.get_nowait()
                if nxt is None:
                    watcher.queue.put_nowait(None)
                    break
                out.append(encode(*nxt))
            await response.write(b"".join(out))
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        store.unwatch(watcher)
    try:
        await response.write_eof()
    except (ConnectionResetError, ConnectionError, RuntimeError):
        pass
    return response


def build_app(server: ApiServer) -> web.Application:
    app = web.Application(middlewares=[errors_middleware], client_max_size=MAX_BODY + 1024)
    app[SERVER_KEY] = server
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app
