"""The Loki HTTP API subset agents use, served from a :class:`LogStore`.

Shapes follow Loki's documentation: ``{"status": "success", "data": {"resultType": "streams",
"result": [{"stream": {...}, "values": [["<ns>", "line"], ...]}]}}``; errors are plain-text 400s
as Loki sends them.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from aiohttp import web

from .logql import LogQLError, LogQuery, MetricQuery, parse_query
from .logstore import LogStore, evaluate_metric
from .timeparse import parse_duration, parse_loki_time

STORE_KEY: web.AppKey[LogStore] = web.AppKey("log_store", LogStore)
MAX_LIMIT = 5000
DEFAULT_LIMIT = 100


class BadRequest(Exception):
    """A query parameter problem reported to the client as a 400."""


def _bad(text: str) -> web.Response:
    return web.Response(status=400, text=text + "\n", content_type="text/plain")


def _now_ns() -> int:
    return time.time_ns()


def _query_of(params: Any, *, required: bool = True, metric_ok: bool = True) -> LogQuery | MetricQuery | None:
    text = params.get("query")
    if text is None or not text.strip():
        if required:
            raise BadRequest("query parameter is required, e.g. query={namespace=\"default\"} |= \"error\"")
        return None
    try:
        parsed = parse_query(text)
    except LogQLError as err:
        raise BadRequest(str(err)) from None
    if isinstance(parsed, MetricQuery) and not metric_ok:
        raise BadRequest("a metric query is not allowed here; use a stream selector such as {app=\"geo\"}")
    return parsed


MAX_POINTS = 11_000


def _step_ns(params: Any, start: int, end: int) -> int:
    raw = params.get("step")
    if raw in (None, ""):
        return max(1_000_000_000, (end - start) // 250)
    try:
        seconds = float(raw) if re.fullmatch(r"\d+(\.\d+)?", raw) else parse_duration(raw)
    except ValueError as err:
        raise BadRequest(f"invalid parameter 'step': {err}") from None
    if seconds <= 0:
        raise BadRequest("zero or negative query resolution step widths are not accepted. Try a positive integer")
    step = int(seconds * 1e9)
    if (end - start) // step > MAX_POINTS:
        raise BadRequest("exceeded maximum resolution of 11,000 points per timeseries. Try increasing the value "
                         "of the step parameter")
    return step


def _metric_body(store: LogStore, query: MetricQuery, steps: list[int], *, instant: bool) -> dict:
    series = []
    for labels, points in evaluate_metric(store, query, steps):
        kept = [(ts, value) for ts, value in points if value != 0.0]  # Loki has no sample without log lines
        if not kept:
            continue
        if instant:
            ts, value = kept[-1]
            series.append({"metric": labels, "value": [ts / 1e9, _fmt(value)]})
        else:
            series.append({"metric": labels, "values": [[ts / 1e9, _fmt(v)] for ts, v in kept]})
    return {"status": "success", "data": {"resultType": "vector" if instant else "matrix", "result": series,
                                          "stats": {}}}


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _time_param(params: Any, name: str, default: int) -> int:
    if name not in params or params[name] == "":
        return default
    try:
        return parse_loki_time(params[name])
    except ValueError as err:
        raise BadRequest(f"invalid parameter {name!r}: {err}") from None


def _range(params: Any) -> tuple[int, int]:
    end = _time_param(params, "end", _now_ns())
    if "since" in params and "start" not in params:
        try:
            since = parse_duration(params["since"])
        except ValueError as err:
            raise BadRequest(f"invalid parameter 'since': {err}") from None
        start = end - int(since * 1e9)
    else:
        start = _time_param(params, "start", end - 3600 * 1_000_000_000)
    if end < start:
        raise BadRequest("end timestamp must not be before or equal to start time")
    return start, end


def _limit(params: Any) -> int:
    raw = params.get("limit", str(DEFAULT_LIMIT))
    try:
        limit = int(raw)
    except ValueError:
        raise BadRequest(f"invalid parameter 'limit': {raw!r} is not an integer") from None
    if limit <= 0:
        raise BadRequest("limit must be a positive value")
    if limit > MAX_LIMIT:
        raise BadRequest(f"max entries limit per query exceeded, limit > max_entries_limit ({limit} > {MAX_LIMIT})")
    return limit


def _direction(params: Any) -> bool:
    raw = params.get("direction", "backward").lower()
    if raw not in ("backward", "forward"):
        raise BadRequest(f"invalid parameter 'direction': {raw!r} (use forward or backward)")
    return raw == "backward"


def _streams_body(store: LogStore, query: LogQuery, start: int, end: int, limit: int, backward: bool) -> dict:
    started = time.perf_counter()
    selected = store.select(query, start, end + 1, limit=limit, backward=backward)
    result = [
        {"stream": labels, "values": [[str(ts), line] for ts, line in values]}
        for labels, values in selected
    ]
    entries = sum(len(v) for _, v in selected)
    took = time.perf_counter() - started
    stats = {"summary": {"execTime": took, "totalEntriesReturned": entries, "queueTime": 0}}
    return {"status": "success", "data": {"resultType": "streams", "result": result, "stats": stats}}


async def query_range(request: web.Request) -> web.Response:
    params = request.query
    try:
        query = _query_of(params)
        assert query is not None
        start, end = _range(params)
        if isinstance(query, MetricQuery):
            step = _step_ns(params, start, end)
            body = _metric_body(request.app[STORE_KEY], query, list(range(start, end + 1, step)), instant=False)
        else:
            body = _streams_body(request.app[STORE_KEY], query, start, end, _limit(params), _direction(params))
    except BadRequest as err:
        return _bad(str(err))
    return web.json_response(body)


async def query_instant(request: web.Request) -> web.Response:
    params = request.query
    try:
        query = _query_of(params)
        assert query is not None
        at = _time_param(params, "time", _now_ns())
        if isinstance(query, MetricQuery):
            return web.json_response(_metric_body(request.app[STORE_KEY], query, [at], instant=True))
        # An instant log query looks back over the default range ending at `time`.
        body = _streams_body(request.app[STORE_KEY], query, at - 3600 * 1_000_000_000, at, _limit(params),
                             _direction(params))
    except BadRequest as err:
        return _bad(str(err))
    return web.json_response(body)


async def labels(request: web.Request) -> web.Response:
    try:
        start, end = _range(request.query) if request.query else (None, None)
    except BadRequest as err:
        return _bad(str(err))
    names = request.app[STORE_KEY].label_names(start, end)
    return web.json_response({"status": "success", "data": names})


async def label_values(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    try:
        start, end = _range(request.query) if ("start" in request.query or "end" in request.query
                                               or "since" in request.query) else (None, None)
        query = _query_of(request.query, required=False, metric_ok=False)
    except BadRequest as err:
        return _bad(str(err))
    if isinstance(query, MetricQuery):  # metric_ok=False refuses them above
        return _bad("a metric query selects no label values")
    values = request.app[STORE_KEY].label_values(name, start, end, query)
    return web.json_response({"status": "success", "data": values})


async def push(request: web.Request) -> web.Response:
    content_type = request.content_type
    if content_type != "application/json":
        return web.Response(
            status=415,
            text=f"unsupported Content-Type {content_type!r}: this log store accepts Loki push requests as "
            "application/json only\n",
        )
    try:
        payload = json.loads(await request.read())
        streams = payload["streams"]
        if not isinstance(streams, list):
            raise TypeError("'streams' must be a list")
        decoded = []
        for item in streams:
            labels_ = item["stream"]
            if not isinstance(labels_, dict) or not labels_:
                raise TypeError("each stream needs a non-empty 'stream' label object")
            values = [(int(v[0]), str(v[1])) for v in item["values"]]
            decoded.append(({str(k): str(v) for k, v in labels_.items()}, values))
    except (ValueError, KeyError, TypeError, IndexError) as err:
        return _bad(f"loki push: malformed JSON body ({err}); expected "
                    '{"streams": [{"stream": {"label": "value"}, "values": [["<unix ns>", "line"]]}]}')
    store = request.app[STORE_KEY]
    for labels_, values in decoded:
        store.append(labels_, values)
    return web.Response(status=204)


async def ready(request: web.Request) -> web.Response:
    return web.Response(text="ready\n")


async def store_stats(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    return web.json_response({
        "streams": store.stream_count(), "entries": store.entry_count(), "bytes": store.total_bytes,
        "max_bytes": store.retention.max_bytes, "dropped_entries": store.dropped_entries,
        "ingested_entries": store.ingested_entries,
    })


def add_loki_routes(app: web.Application, store: LogStore) -> None:
    """Mount the Loki API on ``app`` backed by ``store``."""
    app[STORE_KEY] = store
    app.router.add_get("/loki/api/v1/query_range", query_range)
    app.router.add_get("/loki/api/v1/query", query_instant)
    app.router.add_get("/loki/api/v1/labels", labels)
    app.router.add_get("/loki/api/v1/label", labels)
    app.router.add_get("/loki/api/v1/label/{name}/values", label_values)
    app.router.add_post("/loki/api/v1/push", push)
    app.router.add_get("/ready", ready)
    app.router.add_get("/stats", store_stats)
    app.router.add_post("/admin/clear", clear)


async def clear(request: web.Request) -> web.Response:
    """Drop everything stored (between problems, so one problem's errors do not mislead the next)."""
    request.app[STORE_KEY].clear()
    return web.json_response({"cleared": True})
