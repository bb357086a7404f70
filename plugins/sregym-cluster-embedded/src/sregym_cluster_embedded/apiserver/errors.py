"""Kubernetes ``Status`` errors.

Every failure the API server reports is an :class:`ApiError`; its :attr:`status` is the exact
``meta.k8s.io/v1`` ``Status`` body a real API server would send, so kubectl prints the same text.
"""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error with a Kubernetes ``Status`` body (the contract's ``ApiError``)."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason or REASONS.get(code, "Unknown")
        self.message = message
        self.details = details

    @property
    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason}, {self.message!r})"


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, f'{_qualified(plural, group)} "{name}" not found', details=_details(name, group, plural)
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        f'{_qualified(plural, group)} "{name}" already exists',
        "AlreadyExists",
        details=_details(name, group, plural),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
        "Conflict",
        details=_details(name, group, plural),
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid. ``causes`` are (reason, message, field) triples like ``FieldValueRequired``."""
    parts = [f"{field}: {msg}" if field else msg for _reason, msg, field in causes]
    # one cause reads "field: message"; several are bracketed, as the real server prints them
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(name, group, kind)
    details["causes"] = [{"reason": r, "message": m, "field": f} for r, m, f in causes]
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(422, f'{qualified} "{name}" is invalid: {text}', "Invalid", details=details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, "BadRequest")


def forbidden(
    user: str, verb: str, plural: str, group: str, namespace: str | None, name: str | None = None,
    subresource: str = "",
) -> ApiError:
    """403 with the real API server's wording."""
    resource = f"{plural}/{subresource}" if subresource else plural
    qual = _qualified(resource, group)
    subject = f'{qual} "{name}"' if name else qual
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = (
        f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
        f'in API group "{group}" {scope}'
    )
    return ApiError(403, message, "Forbidden", details=_details(name, group, plural))


def method_not_allowed() -> ApiError:
    return ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")


def server_not_found() -> ApiError:
    return ApiError(404, "the server could not find the requested resource", "NotFound", details={})


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        f'the body of the request was in an unknown format - accepted media types include: '
        f'application/json, application/yaml, application/vnd.kubernetes.protobuf (got "{content_type}")',
        "UnsupportedMediaType",
    )
