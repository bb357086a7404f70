"""TrainTicket's login tokens: issued by ts-auth-service, checked against each service's own clock,
carried on from service to service, and renewed by the workload when a service refuses one."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import jwt
import pytest
from sregym_app_train_ticket import data, runtime, services, tokens
from sregym_app_train_ticket.workload import Generator

KEY = "unit-test-key-of-thirty-two-bytes-at-least"


def test_a_fresh_token_is_accepted_and_names_the_user():
    token = tokens.issue("acct-1", "fdse_1", KEY)
    claims = tokens.check(f"Bearer {token}", KEY)
    assert claims["sub"] == "fdse_1" and claims["id"] == "acct-1"
    assert claims["exp"] - claims["iat"] == tokens.TOKEN_TTL_S and claims["nbf"] == claims["iat"]


def test_a_clock_ahead_of_the_issuer_sees_the_token_expired_and_says_both_times():
    issued = time.time()
    token = tokens.issue("acct-1", "fdse_1", KEY, now=issued)
    with pytest.raises(tokens.TokenRejected) as caught:
        tokens.check(f"Bearer {token}", KEY, now=issued + 30 * 86400)
    assert caught.value.status == 403
    assert caught.value.message.startswith("JWT expired at ") and "Current time: " in caught.value.message
    # an hour is the lifetime: one second before it ends the token still passes
    tokens.check(f"Bearer {token}", KEY, now=issued + tokens.TOKEN_TTL_S - 1)


def test_a_clock_behind_the_issuer_sees_the_token_not_yet_valid():
    issued = time.time()
    token = tokens.issue("acct-1", "fdse_1", KEY, now=issued)
    with pytest.raises(tokens.TokenRejected) as caught:
        tokens.check(f"Bearer {token}", KEY, now=issued - 30 * 86400)
    assert caught.value.status == 403 and caught.value.message.startswith("JWT must not be accepted before ")
    # and a token issued by a node 30 days behind is already expired where the clock is right
    stale = tokens.issue("acct-1", "fdse_1", KEY, now=issued - 30 * 86400)
    with pytest.raises(tokens.TokenRejected, match="JWT expired at"):
        tokens.check(f"Bearer {stale}", KEY, now=issued)


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer ", "Bearer not.a.jwt"])
def test_no_token_or_a_malformed_one_is_401(header):
    with pytest.raises(tokens.TokenRejected) as caught:
        tokens.check(header, KEY)
    assert caught.value.status == 401


def test_a_forged_token_is_401_whatever_its_claims():
    forged = jwt.encode({"sub": "fdse_1", "id": "acct-1", "iat": 0, "nbf": 0, "exp": 2**40}, "another-key-of-thirty-two-bytes-at-least",
                        algorithm="HS256")
    with pytest.raises(tokens.TokenRejected) as caught:
        tokens.check(f"Bearer {forged}", KEY)
    assert caught.value.status == 401 and "Signature verification failed" in caught.value.message
    unsigned = jwt.encode({"sub": "fdse_1", "iat": 0, "nbf": 0, "exp": 2**40}, None, algorithm="none")
    with pytest.raises(tokens.TokenRejected):
        tokens.check(f"Bearer {unsigned}", KEY)


def test_a_secured_route_refuses_without_a_valid_token(monkeypatch):
    monkeypatch.setenv("JWT_SECRET", KEY)
    route = services.secured(lambda request: "booked")
    with pytest.raises(runtime.HttpError) as caught:
        route({"path": "/api/v1/preserveservice/preserve", "authorization": None})
    assert caught.value.status == 401
    good = tokens.issue("acct-1", "fdse_1", KEY)
    assert route({"path": "/p", "authorization": f"Bearer {good}"}) == "booked"
    monkeypatch.delenv("JWT_SECRET")
    with pytest.raises(runtime.HttpError) as caught:  # a service without the key refuses, it does not pass
        route({"path": "/p", "authorization": f"Bearer {good}"})
    assert caught.value.status == 500


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_service_passes_the_callers_token_on_to_the_services_it_calls():
    """ts-ui-dashboard → ts-preserve-service → ts-order-service: the user's token reaches the last hop."""
    back_port, front_port = _free_port(), _free_port()
    back = runtime.HttpServer("back", back_port, [("GET", "/seen", lambda r: {"authorization": r["authorization"]})],
                              traced=False)
    peer = runtime.Peer("front", "back", f"127.0.0.1:{back_port}")
    front = runtime.HttpServer("front", front_port, [("GET", "/via", lambda r: peer.call("GET", "/seen"))],
                               traced=False)
    back.start(), front.start()
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{front_port}/via", headers={"Authorization": "Bearer t0k"})
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert json.loads(resp.read()) == {"authorization": "Bearer t0k"}
        with urllib.request.urlopen(f"http://127.0.0.1:{front_port}/via", timeout=5) as resp:
            assert json.loads(resp.read()) == {"authorization": None}  # nothing leaks from the last request
    finally:
        front.stop(), back.stop()


class _Service:
    """A stand-in for the gateway in front of the workload: logins hand out numbered tokens; the
    secured route refuses the tokens listed in ``refuse``."""

    def __init__(self) -> None:
        self.logins, self.refuse, self.seen = 0, set(), []
        self.accounts = {data.username(n): data.account_id(n) for n in range(1, data.ACCOUNTS + 1)}

    def __call__(self, method, path, body=None, token=None):
        if path == "/api/v1/verifycode/generate":
            return 200, {"data": {"id": "c", "code": "1"}}
        if path == "/api/v1/users/login":
            self.logins += 1
            return 200, {"status": 1, "data": {"userId": self.accounts[body["username"]], "token": f"tok{self.logins}"}}
        self.seen.append(token)
        return (403, None) if token in self.refuse else (200, {"status": 1, "data": []})


def test_the_workload_logs_in_once_then_again_after_a_refusal():
    gen = Generator("http://127.0.0.1:1", 0, 1)
    service = _Service()
    gen._http = service  # type: ignore[method-assign]
    account = data.account_id(3)
    assert gen._authed("POST", "/api/v1/orderservice/order/refresh", account, {"loginId": account})[0] == 200
    assert gen._authed("POST", "/api/v1/orderservice/order/refresh", account, {"loginId": account})[0] == 200
    assert service.logins == 1 and service.seen[0] == service.seen[1]
    service.refuse.add(service.seen[-1])  # a service whose clock is off refuses it
    assert gen._authed("POST", "/api/v1/orderservice/order/refresh", account, {"loginId": account})[0] == 403
    assert gen._authed("POST", "/api/v1/orderservice/order/refresh", account, {"loginId": account})[0] == 200
    assert service.logins == 2 and service.seen[-1] != service.seen[-2]
