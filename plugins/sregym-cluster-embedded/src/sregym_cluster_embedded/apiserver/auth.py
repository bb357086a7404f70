"""Bearer-token authentication: static tokens (admin, agents) and service-account tokens.

Service-account tokens are JWTs signed with a per-cluster HMAC key; they authenticate only while
the service account they were issued for still exists with the same uid.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from .rbac import UserInfo

if TYPE_CHECKING:
    from .core import ApiCore

AUTHENTICATED = "system:authenticated"
SA_GROUP = "system:serviceaccounts"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_token() -> str:
    return secrets.token_urlsafe(32)


class Authenticator:
    def __init__(self, core: ApiCore, signing_key: bytes | None = None, issuer: str = "https://kubernetes.default.svc.cluster.local") -> None:
        self.core = core
        self.static: dict[str, UserInfo] = {}
        self.signing_key = signing_key or secrets.token_bytes(32)
        self.issuer = issuer
        #: called with (token, user, groups) after :meth:`mint`, to persist the token
        self.on_mint: Any = None

    def add_token(self, token: str, user: str, groups: list[str] | tuple[str, ...] = ()) -> None:
        all_groups = tuple(dict.fromkeys([*groups, AUTHENTICATED]))
        self.static[token] = UserInfo(name=user, groups=all_groups)

    def mint(self, user: str, groups: list[str] | tuple[str, ...] = ()) -> str:
        """A new static token for ``user`` (kept across restarts when a token file is set)."""
        token = new_token()
        self.add_token(token, user, groups)
        if self.on_mint is not None:
            self.on_mint(token, user, list(groups))
        return token

    def authenticate(self, header: str | None) -> UserInfo | None:
        if not header or not header.lower().startswith("bearer "):
            return None
        token = header[7:].strip()
        user = self.static.get(token)
        if user is not None:
            return user
        if token.count(".") == 2:
            return self._verify_jwt(token)
        return None

    # -- service-account tokens -----------------------------------------------------------------
    def issue_sa_token(self, namespace: str, sa: dict[str, Any], expiration_seconds: int,
                       audiences: list[str] | None = None) -> tuple[str, int]:
        now = int(time.time())
        exp = now + max(600, int(expiration_seconds))
        name = sa["metadata"]["name"]
        claims = {
            "aud": audiences or [self.issuer],
            "exp": exp,
            "iat": now,
            "nbf": now,
            "iss": self.issuer,
            "jti": secrets.token_hex(8),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": sa["metadata"]["uid"]}},
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = _b64(hmac.new(self.signing_key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        return f"{header}.{payload}.{sig}", exp

    def _verify_jwt(self, token: str) -> UserInfo | None:
        header, payload, sig = token.split(".")
        expected = _b64(hmac.new(self.signing_key, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, sig):
            return None
        try:
            claims = json.loads(_unb64(payload))
            info = claims["kubernetes.io"]
            namespace, name, uid = info["namespace"], info["serviceaccount"]["name"], info["serviceaccount"]["uid"]
            if int(claims["exp"]) < time.time():
                return None
        except (ValueError, KeyError, TypeError):
            return None
        sa = self.core.store.get("serviceaccounts", namespace, name)
        if sa is None or sa["metadata"].get("uid") != uid:
            return None
        return UserInfo(
            name=f"system:serviceaccount:{namespace}:{name}",
            groups=(SA_GROUP, f"system:serviceaccounts:{namespace}", AUTHENTICATED),
            uid=uid,
        )
