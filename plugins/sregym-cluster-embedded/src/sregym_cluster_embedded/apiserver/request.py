"""Parsing of API request paths, query parameters and bodies."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import yaml
from aiohttp import web

from . import protobuf
from .errors import ApiError, bad_request, server_not_found, unsupported_media_type
from .registry import Registry, ResourceType
from .yamlbody import load_json_compatible

if TYPE_CHECKING:
    from .rbac import UserInfo

MAX_BODY = 3 * 1024 * 1024
# the authenticated user of a request, set by the API server's authentication middleware
USER_KEY: web.RequestKey[UserInfo] = web.RequestKey("user")
#: called once a request's body has arrived, before anything acts on it: raises the ApiError the request
#: would get now (its identity revoked or its rights taken while the body was still on its way)
RECHECK_KEY: web.RequestKey[Callable[[], None]] = web.RequestKey("recheck")
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def json_response(body: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
    return web.Response(body=_dumps(body).encode(), status=status, headers={"Content-Type": content_type})


def success_status(details: dict[str, Any] | None = None, code: int = 200) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    if code != 200:
        body["code"] = code
    return body


async def read_body(request: web.Request) -> bytes:
    """The whole body, once its identity and rights still hold: a client that sends the headers in time and
    holds the last byte back must not write after its identity was revoked (red-team round 9)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "the request body is too large", "RequestEntityTooLarge")
    body = await request.read()
    recheck = request.get(RECHECK_KEY)
    if recheck is not None:
        recheck()
    return body

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
PROTOBUF = "application/vnd.kubernetes.protobuf"


@attrs.define(kw_only=True)
class Target:
    """What a resource request is about."""

    rt: ResourceType
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    watch_prefix: bool = False


def parse_resource_path(registry: Registry, group: str, version: str, rest: list[str]) -> Target:
    """Resolve ``rest`` (the path after /api/v1 or /apis/g/v) to a :class:`Target` (404 if unknown)."""
    watch_prefix = False
    if rest and rest[0] == "watch":
        watch_prefix, rest = True, rest[1:]
    if not rest or any(part == "" for part in rest):
        raise server_not_found()
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rt = registry.lookup(group, version, rest[2])
        if rt is not None and rt.namespaced:
            namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise server_not_found()
    rt = registry.lookup(group, version, rest[0])
    if rt is None:
        raise server_not_found()
    if rt.namespaced is False and namespace is not None:
        raise server_not_found()
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else ""
    if sub and rt.subresource(sub) is None:
        raise server_not_found()
    return Target(rt=rt, namespace=namespace, name=name, subresource=sub, watch_prefix=watch_prefix)


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def decode_body(raw: bytes, content_type: str | None) -> Any:
    """Decode a create/update body: JSON (also with no Content-Type), YAML or protobuf."""
    ctype = media_type(content_type)
    if ctype in ("", "application/json", "*/*", "text/plain"):
        if not raw.strip():
            raise bad_request("the request body is empty")
        try:
            return json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise bad_request(f"the body of the request could not be decoded as JSON: {exc}") from None
    if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return load_json_compatible(raw.decode("utf-8"))
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise bad_request(f"the body of the request could not be decoded as YAML: {exc}") from None
    if ctype == PROTOBUF:
        try:
            return protobuf.decode_object(raw)
        except protobuf.ProtobufError as exc:
            raise bad_request(f"failed to decode protobuf body: {exc}") from exc
    raise unsupported_media_type(ctype)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's json accepts NaN and Infinity; JSON does not


def int_param(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"invalid value for {name}: {value!r}: must be an integer") from None


def bool_param(query: Any, name: str) -> bool:
    return str(query.get(name, "")).lower() in ("true", "1", "yes")


def dry_run_param(query: Any) -> bool:
    values = query.getall("dryRun", []) if hasattr(query, "getall") else [query.get("dryRun")]
    values = [v for v in values if v]
    for v in values:
        if v != "All":
            raise bad_request(f'Invalid dryRun value: "{v}" (supported values: "All")')
    return bool(values)


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def wants_partial(accept: str) -> bool:
    return "as=PartialObjectMetadata" in accept


def check_json_object(body: Any, kind: str) -> dict[str, Any]:
    """The request's object; a top-level field that is ``null`` is left out, as the real server's decoder
    reads it (a null ``spec`` decodes to an empty one, which validation then judges)."""
    if not isinstance(body, dict):
        raise ApiError(400, f"the body of the request must be a {kind} object", "BadRequest")
    for field in [k for k, v in body.items() if v is None]:
        del body[field]
    return body
