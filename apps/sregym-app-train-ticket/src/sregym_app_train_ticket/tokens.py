"""Login tokens as TrainTicket has them: ts-auth-service signs a JWT, the services behind it check it.

The token is an HS256 JWT (PyJWT) with the user's name (``sub``), id, roles, ``iat``, ``nbf`` and an
``exp`` an hour later, signed with the key every service reads from ``JWT_SECRET`` (the ``ts-jwt``
Secret). A service whose route needs a login checks the ``Authorization: Bearer`` header on every
request: the signature, then the validity window against *its own* wall clock, with no allowed skew
(as jjwt's default parser in the original). So a node whose clock is off makes the tokens either
side of it look expired or not yet valid; the refusal says both times, as jjwt's message does.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import os
import time
from typing import Any

import jwt

#: how long a login lasts (TrainTicket: one hour)
TOKEN_TTL_S = 3600
ALGORITHM = "HS256"
#: the caller's ``Authorization`` header while a request is handled: calls to peers carry it on,
#: as TrainTicket's services pass the user's token to the services they call
CURRENT_AUTHORIZATION: contextvars.ContextVar[str | None] = contextvars.ContextVar("authorization", default=None)


class TokenRejected(Exception):
    """A request's token is missing, forged or outside its validity window (``status``: 401 or 403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def secret() -> str:
    value = os.environ.get("JWT_SECRET", "")
    if not value:
        raise TokenRejected(500, "JWT_SECRET is not set: this service cannot sign or check login tokens")
    return value


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def issue(user_id: str, username: str, key: str, now: float | None = None) -> str:
    """A token for the user, valid from ``now`` (this process' wall clock) for TOKEN_TTL_S."""
    issued = int(time.time() if now is None else now)
    return jwt.encode({"sub": username, "id": user_id, "roles": ["ROLE_USER"], "iat": issued, "nbf": issued,
                       "exp": issued + TOKEN_TTL_S}, key, algorithm=ALGORITHM)


def check(authorization: str | None, key: str, now: float | None = None) -> dict[str, Any]:
    """The token's claims when ``authorization`` carries a valid one at ``now``; TokenRejected otherwise."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRejected(401, "Full authentication is required to access this resource (no Bearer token)")
    try:
        claims = jwt.decode(token.strip(), key, algorithms=[ALGORITHM],
                            options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                                     "require": ["exp", "nbf", "sub"]})
    except jwt.InvalidTokenError as exc:
        raise TokenRejected(401, f"invalid JWT: {exc}") from None
    current = time.time() if now is None else now
    if current >= float(claims["exp"]):
        raise TokenRejected(403, f"JWT expired at {_iso(claims['exp'])}. Current time: {_iso(current)}, a difference "
                                 f"of {int((current - float(claims['exp'])) * 1000)} milliseconds. Allowed clock skew: "
                                 "0 milliseconds.")
    if current < float(claims["nbf"]):
        raise TokenRejected(403, f"JWT must not be accepted before {_iso(claims['nbf'])}. Current time: "
                                 f"{_iso(current)}, a difference of {int((float(claims['nbf']) - current) * 1000)} "
                                 "milliseconds. Allowed clock skew: 0 milliseconds.")
    return claims
