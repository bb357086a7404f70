"""The HTTP processes: the Thrift gateway behind nginx, and media-frontend.

The gateway plays the part of DeathStarBench's nginx-thrift Lua scripts: the same ``/wrk2-api/...``
endpoints, each turned into Thrift calls. nginx (``nginx.py``) is the web server in front of it.
media-frontend stores and serves uploaded media (PostgreSQL ``media`` collection, memcached cache).
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from opentelemetry import trace

from sregym_appkit import logs

from . import idl, telemetry
from .rpc import Client, RpcError
from .services import Context, db_call, next_req_id


def _status(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, RpcError):
        if exc.kind == "service":
            return (401 if exc.code == idl.SE_UNAUTHORIZED else 500), exc.message
        return 502, f"{exc.peer} ({exc.addr}) {exc.kind}: {exc.message}"
    if isinstance(exc, idl.ServiceException):
        return 500, exc.message
    return 500, f"{type(exc).__name__}: {exc}"


def instrumented(service: str, endpoint: str,
                 fn: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Callable[..., Any]:
    async def handler(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        with telemetry.tracer().start_as_current_span(
                f"{request.method} {endpoint}", context=telemetry.extract(dict(request.headers)),
                kind=trace.SpanKind.SERVER, attributes={"http.method": request.method, "http.route": endpoint}) as span:
            try:
                response = await fn(request)
                code = response.status
                return response
            except web.HTTPException as exc:
                code = exc.status
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is answered with its cause
                code, message = _status(exc)
                span.set_status(trace.Status(trace.StatusCode.ERROR, message))
                logs.error("request_failed", endpoint=endpoint, status=code, error=message,
                           **({"peer": exc.peer, "addr": exc.addr} if isinstance(exc, RpcError) else {}))
                return web.json_response({"error": message}, status=code)
            finally:
                span.set_attribute("http.status_code", code)
                telemetry.HTTP_REQUESTS.labels(service, endpoint, str(code)).inc()
                telemetry.HTTP_LATENCY.labels(service, endpoint).observe(time.perf_counter() - started)
    return handler


async def _blocking(fn: Callable[[], Any]) -> Any:
    """Run a blocking Thrift call off the event loop, inside the current trace context."""
    return await asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, fn)


def _int(value: str | None, name: str) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise web.HTTPBadRequest(text=json.dumps({"error": f"{name} must be an integer"}),
                                 content_type="application/json") from None


def gateway_app(ctx: Context) -> web.Application:
    peers: dict[str, Client] = ctx.peers

    async def compose(request: web.Request) -> web.Response:
        # DeathStarBench's Lua reads POST arguments; query arguments are accepted too (curl -X POST '...?a=b')
        form = {**request.query, **(await request.post())}
        username, text = str(form.get("username", "")), str(form.get("text", ""))
        user_id = _int(str(form.get("user_id", "")), "user_id")
        media_ids = [int(x) for x in json.loads(str(form.get("media_ids") or "[]"))]
        media_types = [str(x) for x in json.loads(str(form.get("media_types") or "[]"))]
        post_type = _int(str(form.get("post_type", "0")), "post_type")
        if not username or not text:
            raise web.HTTPBadRequest(text='{"error":"username and text are required"}', content_type="application/json")
        await _blocking(lambda: peers["compose-post-service"].ComposePost(
            next_req_id(), username, user_id, text, media_ids, media_types, post_type))
        return web.Response(text="Successfully upload post")

    def timeline(peer: str, method: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def read(request: web.Request) -> web.Response:
            q = request.query
            user_id = _int(q.get("user_id"), "user_id")
            start, stop = _int(q.get("start", "0"), "start"), _int(q.get("stop", "10"), "stop")
            posts = await _blocking(lambda: getattr(peers[peer], method)(next_req_id(), user_id, start, stop))
            return web.json_response(idl.to_dict(posts))
        return read

    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        token = await _blocking(lambda: peers["user-service"].Login(next_req_id(), str(form.get("username", "")),
                                                                    str(form.get("password", ""))))
        return web.json_response({"token": token})

    async def follow(request: web.Request) -> web.Response:
        form = await request.post()
        uid, fid = _int(str(form.get("user_id", "")), "user_id"), _int(str(form.get("followee_id", "")), "followee_id")
        await _blocking(lambda: peers["social-graph-service"].Follow(next_req_id(), uid, fid))
        return web.Response(text="Success!")

    async def register(request: web.Request) -> web.Response:
        form = await request.post()
        await _blocking(lambda: peers["user-service"].RegisterUserWithId(
            next_req_id(), str(form.get("first_name", "")), str(form.get("last_name", "")),
            str(form.get("username", "")), str(form.get("password", "")), _int(str(form.get("user_id", "")), "user_id")))
        return web.Response(text="Success!")

    app = web.Application()
    svc = "nginx-thrift"
    app.router.add_post("/wrk2-api/post/compose", instrumented(svc, "/wrk2-api/post/compose", compose))
    app.router.add_get("/wrk2-api/user-timeline/read", instrumented(
        svc, "/wrk2-api/user-timeline/read", timeline("user-timeline-service", "ReadUserTimeline")))
    app.router.add_get("/wrk2-api/home-timeline/read", instrumented(
        svc, "/wrk2-api/home-timeline/read", timeline("home-timeline-service", "ReadHomeTimeline")))
    app.router.add_post("/wrk2-api/user/login", instrumented(svc, "/wrk2-api/user/login", login))
    app.router.add_post("/wrk2-api/user/follow", instrumented(svc, "/wrk2-api/user/follow", follow))
    app.router.add_post("/wrk2-api/user/register", instrumented(svc, "/wrk2-api/user/register", register))
    return app


MAX_MEDIA_BYTES = 1 << 20


def media_app(ctx: Context) -> web.Application:
    counter = {"next": int(time.time() * 1000) << 8}

    async def upload(request: web.Request) -> web.Response:
        media_type = request.query.get("media_type", "png")
        body = await request.read()
        if not body or len(body) > MAX_MEDIA_BYTES:
            raise web.HTTPBadRequest(text='{"error":"media body must be 1 byte to 1 MiB"}',
                                     content_type="application/json")
        counter["next"] += 1
        media_id = counter["next"]
        doc = {"media_id": media_id, "media_type": media_type, "data": base64.b64encode(body).decode()}
        await _blocking(lambda: db_call(lambda: ctx.documents.insert("media", media_id, doc)))
        return web.json_response({"media_id": media_id, "media_type": media_type})

    async def get(request: web.Request) -> web.Response:
        media_id = _int(request.query.get("media_id"), "media_id")
        doc = ctx.cache.get(f"media:{media_id}") if ctx.cache else None
        if doc is None:
            doc = await _blocking(lambda: db_call(lambda: ctx.documents.find("media", media_id)))
            if doc is None:
                raise web.HTTPNotFound(text='{"error":"no such media"}', content_type="application/json")
            if ctx.cache:
                ctx.cache.set(f"media:{media_id}", doc)
        return web.Response(body=base64.b64decode(doc["data"]), content_type="application/octet-stream",
                            headers={"X-Media-Type": doc["media_type"]})

    app = web.Application(client_max_size=MAX_MEDIA_BYTES + 1024)
    app.router.add_post("/upload-media", instrumented("media-frontend", "/upload-media", upload))
    app.router.add_get("/get-media", instrumented("media-frontend", "/get-media", get))
    return app
