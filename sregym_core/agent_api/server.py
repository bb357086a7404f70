"""The agent surface: the conductor HTTP API and the MCP servers, laid out as upstream SREGym's.

Two listeners, both bound to ``API_BIND_HOST`` (default ``127.0.0.1``; upstream's ``0.0.0.0`` only when
asked for):

* the **API port** (``API_PORT``, default 8000): ``POST /submit`` ``{"solution": str}``,
  ``GET /status``, ``GET /get_app``, answered as :mod:`.stages` describes; upstream's
  ``/submit_mcp/sse`` (an MCP server with the one tool ``submit``); and, as additions of this
  project, one MCP server with every tool at ``/mcp`` (streamable HTTP) and ``/sse``.
* the **MCP port** (``MCP_SERVER_PORT``, default 9954): one MCP SSE server per tool family at
  ``/<family>/sse`` + ``/<family>/messages/`` for ``kubectl``, ``prometheus``, ``jaeger``,
  ``loki`` and ``submit``, with upstream's tool names, parameters, defaults and return shapes.

The server lives for a whole run; each attempt is attached while it runs (:meth:`attach`).
Before the first attempt every endpoint answers ``400 {"detail": "No problem has been started"}``.
kubectl rollback stacks are per agent session (:mod:`.sessions`).

Who may call (:class:`CallerGuard`, in front of both listeners): never a cluster pod. On the embedded
cluster pods have loopback addresses, so listening on 127.0.0.1 keeps nobody out: a caller whose
address lies in a pod range (:func:`refuse_callers_from`; the environment registers its cluster's
ranges as it comes up) gets ``403``. With a run token (``--api-token`` / ``SREGYM_API_TOKEN``) every
request but ``GET /status`` (the stage name, which the conductor's own waiter reads) must carry it as
``Authorization: Bearer <token>`` or ``X-SREGym-Token``, else ``401``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import ipaddress
import json
import os
import re
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import attrs
import structlog

from ..errors import UsageError
from ..types import ObservabilityEndpoints, ToolSpec
from .sessions import DEFAULT_SESSION, SessionTools, session_key
from .stages import NO_PROBLEM, WAITER_HEADER

#: a request or MCP session that began in an attempt which has since ended (red-team round 10, attacks 2 and 2b): a
#: submission whose body completed after its attempt ended is not graded for the next one, a session opened in one
#: attempt does not act for the next (the next attempt's agent opens its own)
ATTEMPT_ENDED = {"detail": "This request began in an attempt that has ended; it was not graded. "
                           "Submit again for the current attempt (open a new MCP session for it)."}
SESSION_ENDED = ("Command Rejected: this session was opened in an attempt that has ended. "
                 "Open a new session for the current attempt.")

log = structlog.get_logger()

DEFAULT_BIND_HOST = "127.0.0.1"
TOKEN_ENV = "SREGYM_API_TOKEN"
DEFAULT_API_PORT = 8000
DEFAULT_MCP_PORT = 9954

#: The project's own MCP tool descriptions (the unified ``/mcp`` server).
OBSERVABILITY_TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "get_metrics": ("Run a PromQL instant query against the cluster's Prometheus and return the series.",
                    {"query": "str"}),
    "get_alerts": ("List the alerts currently firing or pending in Prometheus.", {}),
    "get_logs": ("Query container logs (LogQL, or a bare service name) over the last N minutes.",
                 {"query": "str", "last_n_minutes": "int"}),
    "get_labels": ("List the log label names (Loki).", {}),
    "get_label_values": ("List the values of one log label (Loki).", {"label": "str"}),
    "get_services": ("List the services that reported traces.", {}),
    "get_operations": ("List the operations (span names) of a traced service.", {"service": "str"}),
    "get_traces": ("Summarize a service's traces over the last N minutes: errors first, then the slowest.",
                   {"service": "str", "last_n_minutes": "int"}),
    "get_dependency_graph": ("The service dependency graph (caller -> callee, call counts) from traces.",
                             {"last_n_minutes": "int"}),
}

#: Upstream's MCP mounts on the MCP port: family -> tool names.
UPSTREAM_FAMILIES: dict[str, tuple[str, ...]] = {
    "kubectl": ("exec_kubectl_cmd_safely", "rollback_command", "get_previous_rollbackable_cmd"),
    "prometheus": ("get_metrics", "get_alerts"),
    "jaeger": ("get_services", "get_operations", "get_traces", "get_dependency_graph"),
    "loki": ("get_logs", "get_labels", "get_label_values"),
    "submit": ("submit",),
}

#: Upstream's tool signatures where they differ from the project's: required / defaults.
UPSTREAM_DEFAULTS = {"get_logs": {"last_n_minutes": 15}, "get_dependency_graph": {"last_n_minutes": 30},
                     "get_traces": {}}  # get_traces: last_n_minutes is required upstream


class SubmissionSink(Protocol):
    """The attempt the API and MCP servers report to."""

    stage: str

    async def submit(self, solution: str) -> tuple[int, dict[str, Any]]: ...

    def app_info(self) -> dict[str, Any]: ...


def environment_token(token: str, index: int) -> str:
    """The token environment ``index`` (0-based) of a ``--parallel`` run asks for: an HMAC of the run's token, so a
    harness that knows the run's token computes every environment's, and an agent handed one environment's token
    cannot compute another's."""
    import hashlib

    return hmac.new(token.encode(), f"sregym-environment-{index + 1}".encode(), hashlib.sha256).hexdigest()[:40]


@attrs.frozen
class ServeSettings:
    """Where the agent surface listens.

    ``api_port``/``mcp_port`` 0 pick free ports. ``strict``: a port that is taken is an error
    (ports given explicitly); otherwise (upstream's defaults) a taken port falls back to a free one,
    so environments side by side each get their own ports, and the run prints which.
    """

    bind_host: str = DEFAULT_BIND_HOST
    api_port: int = DEFAULT_API_PORT
    mcp_port: int = DEFAULT_MCP_PORT
    strict: bool = False
    #: when set, callers must present it (see the module docs); never logged or recorded
    token: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, bind_host: str | None = None,
                 api_port: int | None = None, mcp_port: int | None = None, token: str | None = None) -> ServeSettings:
        """Flags first, then ``API_BIND_HOST``, ``API_PORT``, ``MCP_SERVER_PORT``, ``SREGYM_API_TOKEN``, then
        the defaults (upstream's ports, loopback, no token)."""
        environ = os.environ if environ is None else environ
        explicit = api_port is not None or mcp_port is not None or "API_PORT" in environ or "MCP_SERVER_PORT" in environ
        token = token if token is not None else environ.get(TOKEN_ENV) or None
        if token is not None and (len(token) < 16 or any(c.isspace() for c in token)):
            raise UsageError("the agent API token must be at least 16 characters without spaces",
                             hints=("e.g. --api-token \"$(python -c 'import secrets; print(secrets.token_urlsafe(24))')\"",))
        return cls(bind_host=bind_host or environ.get("API_BIND_HOST") or DEFAULT_BIND_HOST,
                   api_port=_port(api_port, environ, "API_PORT", DEFAULT_API_PORT),
                   mcp_port=_port(mcp_port, environ, "MCP_SERVER_PORT", DEFAULT_MCP_PORT), strict=explicit,
                   token=token)


def _port(value: int | None, environ: Mapping[str, str], name: str, default: int) -> int:
    if value is None:
        raw = environ.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{name}={raw!r} is not a port number", hints=(f"set {name} to 0..65535 (0: a free port)",)) from None
    if not 0 <= value <= 65535:
        raise UsageError(f"port {value} is out of range", hints=("ports are 0..65535 (0: a free port)",))
    return value


def connect_host(bind_host: str) -> str:
    """The address local clients use for a listen address (a wildcard is reached on loopback)."""
    return "127.0.0.1" if bind_host in ("0.0.0.0", "", "::") else bind_host


# ---------------------------------------------------------------------------------------- callers

#: address ranges of cluster pods (process-wide: every environment of a run registers its cluster's)
_POD_NETWORKS: set[ipaddress.IPv4Network | ipaddress.IPv6Network] = set()


def refuse_callers_from(networks: Any) -> None:
    """Refuse, on every agent server of this process, callers whose address is in ``networks``
    (CIDR strings or networks): the pod ranges of the clusters the run uses."""
    for network in networks:
        try:
            _POD_NETWORKS.add(ipaddress.ip_network(str(network), strict=False))
        except ValueError:
            log.warning("pod_network_ignored", network=str(network))


def refused_caller(host: str | None) -> bool:
    """Whether a caller at ``host`` is a cluster pod (an address we cannot parse is refused too)."""
    if not host:
        return False  # a Unix socket or an in-process test client: no network peer
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _POD_NETWORKS)


class CallerGuard:
    """ASGI middleware in front of the API and MCP apps: refuses pods, and without the run's token
    (when one is set) everything but ``GET /status``."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        client = scope.get("client") or (None, None)
        if refused_caller(client[0]):
            log.warning("agent_api_refused_pod", caller=client[0], path=scope.get("path"))
            return await _deny(scope, receive, send, 403, "callers from cluster pods are refused")
        if self.token and not (scope.get("path") == "/status" and scope.get("method") == "GET") \
                and not self._has_token(scope):
            return await _deny(scope, receive, send, 401, "this run's agent API requires its token "
                               "(Authorization: Bearer <token>, or X-SREGym-Token)")
        return await self.app(scope, receive, send)

    def _has_token(self, scope: dict) -> bool:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        given = headers.get("x-sregym-token") or ""
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = given or auth[7:].strip()
        return bool(given) and hmac.compare_digest(given.encode(), str(self.token).encode())


async def _deny(scope: dict, receive: Any, send: Any, status: int, detail: str) -> None:
    if scope.get("type") == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await _json(status, {"detail": detail})(scope, receive, send)


# ---------------------------------------------------------------------------------------- HTTP API


def _json(status: int, body: Any):
    from starlette.responses import JSONResponse

    return JSONResponse(body, status_code=status)


def validate_submission(raw: bytes) -> tuple[str | None, list[dict[str, Any]]]:
    """The ``solution`` of a ``/submit`` body, or the FastAPI/pydantic-style 422 errors."""
    if not raw.strip():
        return None, [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, [{"type": "json_invalid", "loc": ["body", getattr(exc, "pos", 0)], "msg": "JSON decode error",
                       "input": {}, "ctx": {"error": getattr(exc, "msg", str(exc))}}]
    if not isinstance(data, dict):
        return None, [{"type": "model_attributes_type", "loc": ["body"],
                       "msg": "Input should be a valid dictionary or object to extract fields from", "input": data}]
    if "solution" not in data:
        return None, [{"type": "missing", "loc": ["body", "solution"], "msg": "Field required", "input": data}]
    if not isinstance(data["solution"], str):
        return None, [{"type": "string_type", "loc": ["body", "solution"], "msg": "Input should be a valid string",
                       "input": data["solution"]}]
    return data["solution"], []


_REMEMBERED_SESSIONS = 4096


class _EndedSession:
    """The kubectl tool of a session opened in an attempt that has ended: every call is refused."""

    async def execute(self, _cmd: str) -> str:
        return SESSION_ENDED

    async def rollback(self) -> str:
        return SESSION_ENDED

    def previous_rollbackable(self) -> str:
        return SESSION_ENDED


class AgentSurface:
    """What the endpoints answer from: the attached attempt, its kubectl sessions, the tools."""

    def __init__(self, tools: Mapping[str, ToolSpec] | None = None,
                 endpoints: ObservabilityEndpoints | None = None) -> None:
        self.tools = dict(tools or {})
        self.endpoints = endpoints
        self.sink: SubmissionSink | None = None
        self.sessions: SessionTools | None = None
        #: how many attempts have attached; the attempt each named session (MCP, ``ssid``) was first seen in
        self.generation = 0
        self._session_generation: dict[str, int] = {}

    def attach(self, sink: SubmissionSink, kubectl_factory: Callable[[str], Any],
               endpoints: ObservabilityEndpoints | None = None) -> None:
        self.sink = sink
        self.sessions = SessionTools(kubectl_factory)
        self.generation += 1
        if endpoints is not None:
            self.endpoints = endpoints

    def session_born(self, key: str, generation: int) -> None:
        """Remember the attempt a named session was opened in (:class:`SessionBirth` sees it open), if not known yet."""
        if key == DEFAULT_SESSION or key in self._session_generation:
            return
        if len(self._session_generation) >= _REMEMBERED_SESSIONS:
            self._session_generation.pop(next(iter(self._session_generation)))  # the oldest first
        self._session_generation[key] = generation

    def session_current(self, key: str) -> bool:
        """Is a named session one of the current attempt's? A session first seen before the current attempt attached
        is not (its key is remembered from its first call); the default session of plain HTTP callers always is."""
        if key == DEFAULT_SESSION:
            return True
        self.session_born(key, self.generation)  # first seen now: it is the current attempt's
        return self._session_generation[key] == self.generation

    def kubectl(self, key: str):
        if self.sessions is None:
            return None
        if not self.session_current(key):
            return _EndedSession()
        return self.sessions.get(key)

    async def submit(self, solution: str, *, began: SubmissionSink | None = None,
                     session: str = DEFAULT_SESSION) -> tuple[int, dict[str, Any]]:
        """Hand ``solution`` to the attempt; ``began`` is the sink that was current when the request began (a body
        completing after that attempt ended is not the next attempt's), ``session`` the MCP session it came by."""
        if began is not None and began is not self.sink:
            return 409, dict(ATTEMPT_ENDED)
        if not self.session_current(session):
            return 409, dict(ATTEMPT_ENDED)
        if self.sink is None:
            return 400, dict(NO_PROBLEM)
        answer = self.sink.submit(solution)
        return await answer if inspect.isawaitable(answer) else answer

    async def call_tool(self, name: str, upstream: bool, **arguments: Any) -> str:
        spec = self.tools.get(name)
        if spec is None:
            return (f"{name} is not available: no observability plugin provides it on this cluster. "
                    "Use exec_kubectl_cmd_safely (logs, events, describe, top) instead.")
        function = (spec.upstream_call if upstream else None) or spec.call
        endpoints = self.endpoints or ObservabilityEndpoints()
        try:
            if inspect.iscoroutinefunction(function):
                result = await function(endpoints, **arguments)
            else:  # the tools speak blocking HTTP: keep the server's event loop free meanwhile
                result = await asyncio.to_thread(function, endpoints, **arguments)
                if asyncio.iscoroutine(result):
                    result = await result
            return str(result)
        except Exception as exc:  # a tool error is an answer the agent can read, not a crash
            return f"{name} failed: {type(exc).__name__}: {exc}"


_SSE_SESSION = re.compile(rb"session_id=([0-9a-fA-F-]{8,})")


class SessionBirth:
    """ASGI middleware binding each MCP session to the attempt current when it was opened, not at its first call (red-team
    round 11): the SSE stream's endpoint event and the streamable-HTTP ``mcp-session-id`` header name a new session as
    they go out; a request naming a session is counted from when its headers arrived (a message body held back past the
    end of its attempt is still that attempt's)."""

    def __init__(self, app: Any, surface: AgentSurface) -> None:
        self.app, self.surface = app, surface

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers, QueryParams
        from starlette.requests import ClientDisconnect

        generation = self.surface.generation
        key = session_key(Headers(scope=scope), QueryParams(scope.get("query_string", b"")))
        if key != DEFAULT_SESSION:
            self.surface.session_born(key, generation)
        pending = [True]  # the endpoint event comes first on an SSE stream: look until it has been seen

        async def watch(message: dict) -> None:
            if message.get("type") == "http.response.start":
                for name, value in message.get("headers") or []:
                    if name.lower() == b"mcp-session-id":
                        self.surface.session_born(f"mcp:{value.decode('latin-1')}", generation)
            elif message.get("type") == "http.response.body" and pending[0]:
                found = _SSE_SESSION.search(message.get("body") or b"")
                if found:
                    self.surface.session_born(f"sse:{found.group(1).decode()}", generation)
                    pending[0] = False
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except ClientDisconnect:  # the caller went away before its body had arrived (a sandbox ended): nobody to answer
            log.info("agent_api_client_gone", path=scope.get("path"))


def api_routes(surface: AgentSurface) -> list:
    from starlette.routing import Route

    async def submit(request):
        began = surface.sink  # the attempt this request began in, before its body arrives (which may be held back)
        solution, errors = validate_submission(await request.body())
        if errors:
            return _json(422, {"detail": errors})
        code, body = await surface.submit(solution, began=began)
        return _json(code, body)

    async def status(request):
        if surface.sink is None:
            return _json(400, dict(NO_PROBLEM))
        report = getattr(surface.sink, "report_stage", None)  # the desk learns the client saw the stage
        if request.headers.get(WAITER_HEADER):  # the conductor's own poller: no client saw anything
            report = None
        return _json(200, {"stage": report() if callable(report) else surface.sink.stage})

    async def get_app(_request):
        if surface.sink is None:
            return _json(400, dict(NO_PROBLEM))
        return _json(200, surface.sink.app_info())

    return [Route("/submit", submit, methods=["POST"]), Route("/status", status, methods=["GET"]),
            Route("/get_app", get_app, methods=["GET"])]


# ---------------------------------------------------------------------------------------- MCP


def _session(ctx: Any) -> str:
    request = getattr(ctx.request_context, "request", None)
    return session_key(getattr(request, "headers", None), getattr(request, "query_params", None))


async def _submit_as_api(surface: AgentSurface, ans: str, session: str = DEFAULT_SESSION) -> dict[str, str]:
    """``submit`` on the API port: ``{"status": "200"|"done"|"error", "text": ...}``."""
    code, body = await surface.submit(ans, session=session)
    if code == 200:
        answer = {"status": str(body.get("status", "200")), "text": str(body.get("message", ""))}
        if body.get("graded") is False:  # absorbed while its stage is graded: say so, as the HTTP answer does
            answer.update(graded="false", detail=str(body.get("detail", "")))
        return answer
    detail = body.get("detail", body.get("error"))
    return {"status": "error", "text": detail if isinstance(detail, str) else json.dumps(detail)}


async def _submit_as_http(surface: AgentSurface, ans: str, session: str = DEFAULT_SESSION) -> dict[str, str]:
    """``submit`` on the MCP port: ``{"status": "<http code>", "text": "<http body>"}``."""
    code, body = await surface.submit(ans, session=session)
    return {"status": str(code), "text": json.dumps(body)}


def _register_kubectl(server: Any, surface: AgentSurface) -> None:
    async def exec_kubectl_cmd_safely(cmd: str, ctx) -> str:
        tool = surface.kubectl(_session(ctx))
        if tool is None:
            return "Command Rejected: No problem has been started"
        return await tool.execute(cmd)

    async def rollback_command(ctx) -> str:
        tool = surface.kubectl(_session(ctx))
        return "No problem has been started" if tool is None else await tool.rollback()

    async def get_previous_rollbackable_cmd(ctx) -> str:
        tool = surface.kubectl(_session(ctx))
        return "No problem has been started" if tool is None else tool.previous_rollbackable()

    descriptions: dict[Callable[..., Any], str] = {
        exec_kubectl_cmd_safely: "Run one kubectl command (no pipes or shell) with your credentials and return its output.",
        rollback_command: "Undo the last mutating kubectl command of this session.",
        get_previous_rollbackable_cmd: "Show the commands of this session that rollback_command can undo.",
    }
    for function, description in descriptions.items():
        _with_context(function)
        server.tool(name=function.__name__, description=description)(function)


def _with_context(function: Callable[..., Any]) -> None:
    """Let MCP inject the request context into ``function``'s ``ctx`` parameter (the session it came by)."""
    from mcp.server.mcpserver import Context

    function.__annotations__["ctx"] = Context  # a class, not a string: mcp is imported only here


def _register_observability(server: Any, surface: AgentSurface, names: tuple[str, ...], *, upstream: bool) -> None:
    for name in names:
        description = OBSERVABILITY_TOOLS[name][0]
        server.tool(name=name, description=description)(_observability_tool(surface, name, upstream=upstream))


def _observability_tool(surface: AgentSurface, name: str, *, upstream: bool):
    """One tool function per name: MCP derives the input schema (and defaults) from the signature."""

    async def call(ctx: Any, **arguments: Any) -> str:
        # a session opened in an earlier attempt reads nothing of this one's (red-team round 12: the metrics, logs and
        # traces tools answered such a session, though they carry no identity)
        if not surface.session_current(_session(ctx)):
            return SESSION_ENDED
        return await surface.call_tool(name, upstream, **arguments)

    minutes = (UPSTREAM_DEFAULTS if upstream else {}).get(name, {}).get("last_n_minutes", 15)
    tool: Callable[..., Awaitable[str]]  # one signature per tool name, below
    if name == "get_metrics":
        async def tool(query: str, *, ctx) -> str:
            return await call(ctx, query=query)
    elif name == "get_logs":
        async def tool(query: str, last_n_minutes: int = 15, *, ctx) -> str:
            return await call(ctx, query=query, last_n_minutes=last_n_minutes)
    elif name == "get_label_values":
        async def tool(label: str, *, ctx) -> str:
            return await call(ctx, label=label)
    elif name == "get_operations":
        async def tool(service: str, *, ctx) -> str:
            return await call(ctx, service=service)
    elif name == "get_traces" and upstream:
        async def tool(service: str, last_n_minutes: int, *, ctx) -> str:
            return await call(ctx, service=service, last_n_minutes=last_n_minutes)
    elif name == "get_traces":
        async def tool(service: str, last_n_minutes: int = 15, *, ctx) -> str:
            return await call(ctx, service=service, last_n_minutes=last_n_minutes)
    elif name == "get_dependency_graph":
        async def tool(last_n_minutes: int = minutes, *, ctx) -> str:
            return await call(ctx, last_n_minutes=last_n_minutes)
    else:
        async def tool(*, ctx) -> str:
            return await call(ctx)
    tool.__name__ = name
    _with_context(tool)
    return tool


def build_unified_mcp(surface: AgentSurface):
    """The project's single MCP server with every tool (``/mcp`` and ``/sse`` on the API port)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="sregym", instructions=(
        "Tools for investigating and repairing a Kubernetes application. Use exec_kubectl_cmd_safely for "
        "kubectl, the get_* tools for metrics, alerts, logs and traces, and submit(ans) to submit your "
        "diagnosis (first call) and then to declare the mitigation done (second call)."), log_level="WARNING")
    _register_kubectl(server, surface)
    _register_observability(server, surface, tuple(OBSERVABILITY_TOOLS), upstream=False)

    async def submit(ans: str, ctx) -> dict[str, str]:
        return await _submit_as_api(surface, ans, _session(ctx))

    _with_context(submit)
    server.tool(name="submit", description="Submit your diagnosis (stage diagnosis), then 'done' when mitigated "
                                           "(stage mitigation).")(submit)
    return server


def build_family_mcp(surface: AgentSurface, family: str, *, on_api_port: bool = False):
    """One of upstream's per-family MCP servers."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name=f"{family}-mcp-server", log_level="WARNING")
    if family == "kubectl":
        _register_kubectl(server, surface)
    elif family == "submit":
        async def submit(ans: str, ctx) -> dict[str, str]:
            return await (_submit_as_api if on_api_port else _submit_as_http)(surface, ans, _session(ctx))

        _with_context(submit)
        server.tool(name="submit", description="Submit your answer for the current stage (diagnosis, then mitigation).")(submit)
    else:
        _register_observability(server, surface, UPSTREAM_FAMILIES[family], upstream=True)
    return server


# ---------------------------------------------------------------------------------------- listeners


class _Listener:
    """One uvicorn server on an already-bound socket."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.app, self.socket = app, sock
        # a uvicorn.Server; Any: which signal hooks it has differs between uvicorn versions (start())
        self.server: Any = None
        self.task: asyncio.Task | None = None

    @property
    def port(self) -> int:
        return self.socket.getsockname()[1]

    async def start(self) -> None:
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        # the conductor owns signals: uvicorn would take SIGINT for itself, close this socket and let
        # the run go on with a dead agent API (older uvicorn installs handlers, newer captures them)
        self.server.install_signal_handlers = lambda: None
        self.server.capture_signals = contextlib.nullcontext
        self.task = asyncio.create_task(self.server.serve(sockets=[self.socket]))
        for _ in range(500):
            if self.server.started:
                return
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, 10)
            except (TimeoutError, asyncio.CancelledError):
                self.task.cancel()
        self.socket.close()


def bind(host: str, port: int, *, strict: bool, what: str, env_name: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        if strict or port == 0:
            sock.close()
            raise UsageError(f"cannot listen for the {what} on {host}:{port}: {exc.strerror}",
                             hints=(f"another environment may use it: give this one its own port ({env_name}=<port> "
                                    f"or the flag), or 0 for a free port",)) from None
        log.warning("port_taken_using_free_port", what=what, port=port)
        sock.bind((host, 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class AgentServer:
    """The API listener and the MCP listener for a run (see the module docs)."""

    def __init__(self, sink: SubmissionSink | None = None, kubectl: Any = None, *,
                 tools: Mapping[str, ToolSpec] | None = None, endpoints: ObservabilityEndpoints | None = None,
                 host: str | None = None, settings: ServeSettings | None = None) -> None:
        """``sink``/``kubectl`` attach one attempt (and one kubectl tool shared by every session)
        right away; without ``settings`` the server listens on free ports of ``host`` (loopback)."""
        self.surface = AgentSurface(tools, endpoints)
        self.settings = settings or ServeSettings(bind_host=host or "127.0.0.1", api_port=0, mcp_port=0, strict=True)
        if sink is not None:
            self.attach(sink, getattr(kubectl, "for_session", None) or (lambda _session: kubectl))
        self._api: _Listener | None = None
        self._mcp: _Listener | None = None

    @property
    def host(self) -> str:
        return connect_host(self.settings.bind_host)

    @property
    def api_port(self) -> int | None:
        return self._api.port if self._api else None

    @property
    def mcp_port(self) -> int | None:
        return self._mcp.port if self._mcp else None

    @property
    def api_url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.api_port}"

    @property
    def mcp_url(self) -> str:
        """The project's unified MCP endpoint (streamable HTTP)."""
        return f"{self.api_url}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.api_url}/sse"

    @property
    def mcp_base_url(self) -> str:
        """Upstream's MCP port: ``<this>/kubectl/sse``, ``<this>/prometheus/sse``, ..."""
        return f"http://{_url_host(self.host)}:{self.mcp_port}"

    def attach(self, sink: SubmissionSink, kubectl_factory: Callable[[str], Any],
               endpoints: ObservabilityEndpoints | None = None) -> None:
        self.surface.attach(sink, kubectl_factory, endpoints)

    def build_api_app(self):
        from starlette.applications import Starlette
        from starlette.routing import Mount

        host = self.settings.bind_host
        unified = build_unified_mcp(self.surface)
        streamable = unified.streamable_http_app(host=host)
        sse = unified.sse_app(host=host)
        submit_mcp = build_family_mcp(self.surface, "submit", on_api_port=True).sse_app(host=host)
        return Starlette(routes=[*api_routes(self.surface), *streamable.routes, *sse.routes,
                                 Mount("/submit_mcp", app=submit_mcp)],
                         lifespan=streamable.router.lifespan_context, exception_handlers=_json_errors())

    def build_mcp_app(self):
        from starlette.applications import Starlette
        from starlette.routing import Mount

        mounts = [Mount(f"/{family}", app=build_family_mcp(self.surface, family).sse_app(host=self.settings.bind_host))
                  for family in UPSTREAM_FAMILIES]
        return Starlette(routes=mounts, exception_handlers=_json_errors())

    async def start(self) -> None:
        s = self.settings
        api_sock = bind(s.bind_host, s.api_port, strict=s.strict, what="agent API", env_name="API_PORT")
        try:
            mcp_sock = bind(s.bind_host, s.mcp_port, strict=s.strict, what="MCP server", env_name="MCP_SERVER_PORT")
        except Exception:
            api_sock.close()
            raise
        token = s.token
        self._api = _Listener(CallerGuard(SessionBirth(self.build_api_app(), self.surface), token), api_sock)
        self._mcp = _Listener(CallerGuard(SessionBirth(self.build_mcp_app(), self.surface), token), mcp_sock)
        await self._api.start()
        await self._mcp.start()
        log.info("agent_server_started", api=self.api_url, mcp=self.mcp_base_url)

    async def stop(self) -> None:
        for listener in (self._mcp, self._api):
            if listener is not None:
                await listener.stop()

    async def __aenter__(self) -> AgentServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _json_errors() -> dict:
    """FastAPI-style JSON bodies for routing errors (404, 405), as upstream's API answers them."""
    from starlette.exceptions import HTTPException

    async def handler(_request, exc: HTTPException):
        return _json(exc.status_code, {"detail": exc.detail})

    return {HTTPException: handler}
