"""user: checks a username and password against SHA-256 digests in PostgreSQL."""

from __future__ import annotations

import hmac
from typing import Any

from ..data import password_digest
from ..rpc import Handler
from . import Context


def handlers(ctx: Context) -> dict[str, Handler]:
    store = ctx.store
    assert store is not None

    def check_user(request: dict[str, Any]) -> dict[str, Any]:
        username, password = str(request.get("username", "")), str(request.get("password", ""))
        rows = store.query("SELECT password_sha256 FROM users WHERE username = %s", (username,))
        correct = bool(rows) and hmac.compare_digest(rows[0][0], password_digest(password))
        return {"correct": correct}

    return {"CheckUser": check_user}
