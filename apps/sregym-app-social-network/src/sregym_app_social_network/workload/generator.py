"""Social Network's workload generator (``python -m sregym_app_social_network.serve workload``).

The request mix is DeathStarBench's mixed workload: 60 % read a home timeline, 30 % read a user
timeline, 10 % compose a post, for users of the seeded social graph, through nginx-thrift. The
open-loop engine and its ``/stats`` + ``/control`` API are sregym_appkit.workload; every answer is
checked against the seeded graph and the signed posts (``content.py``): a success is the expected
status *with* the right content; an answer whose status looks fine but whose content is wrong is a
failure counted separately as a content error.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

from sregym_appkit import logs, workload
from sregym_appkit.workload import Outcome, parse_settings, validate_run

from .. import seed
from .content import CLOCK_SLACK_S, PAGE, Ledger

__all__ = ["ENDPOINTS", "MIX", "SocialGenerator", "choose", "main", "validate_run"]

#: (endpoint, share) of DeathStarBench's mixed workload
MIX = (("read_home_timeline", 0.6), ("read_user_timeline", 0.3), ("compose_post", 0.1))
ENDPOINTS = tuple(name for name, _ in MIX)


def choose(rng: random.Random) -> str:
    return workload.choose_weighted(MIX, rng)


class SocialGenerator(workload.Generator):
    """Composes signed posts and reads home and user timelines, checking each against the ledger."""

    endpoints = ENDPOINTS
    metrics_prefix = "sn_"

    def __init__(self, settings: workload.Settings, secret: str) -> None:
        super().__init__(settings)
        self.ledger = Ledger(secret)

    def choose(self, rng: random.Random) -> str:
        return choose(rng)

    def forget(self) -> None:
        # after a reset put post-storage and the timelines back, the posts composed before it are gone by
        # design: a timeline missing them is no content error (red-team round 19 saw the next attempt fail)
        self.ledger.forget()

    def prepare(self, endpoint: str, rng: random.Random) -> Any:
        if endpoint == "compose_post":
            return self.ledger.make_post(rng)
        return rng.randrange(seed.USERS)  # the reader

    async def send(self, endpoint: str, request: Any) -> Outcome:
        assert self.session is not None
        target = self.settings.target
        if endpoint == "compose_post":
            post = request
            form = {"username": post["username"], "user_id": str(post["user_id"]), "text": post["text"],
                    "media_ids": "[]", "media_types": "[]", "post_type": "0"}
            self.ledger.sending(post)
            sent_at = time.time()
            try:
                async with self.session.post(target + "/wrk2-api/post/compose", data=form) as resp:
                    body = await resp.read()
            except BaseException:  # no answer (a timeout, a reset): it may have written some timelines
                self.ledger.failed(post)
                raise
            if resp.status != 200:
                self.ledger.failed(post)
                return Outcome(resp.status, error=body[:80].decode(errors="replace"))
            if body.strip() != b"Successfully upload post":
                self.ledger.failed(post)
                return Outcome(resp.status, wrong="compose_unexpected_answer")
            self.ledger.composed(post, sent_at)
            return Outcome(resp.status)
        started_at = time.time()
        kind = "home" if endpoint == "read_home_timeline" else "user"
        user_id = request
        path = f"/wrk2-api/{kind}-timeline/read?user_id={user_id}&start=0&stop={PAGE}"
        async with self.session.get(target + path) as resp:
            body = await resp.read()
        if resp.status != 200:
            return Outcome(resp.status)
        try:
            parsed = json.loads(body)
        except ValueError:
            return Outcome(resp.status, wrong="timeline_not_json")
        wrong = self.ledger.check_timeline(kind, user_id, parsed, started_at) or ""
        if wrong == "timeline_missing_recent_post":
            # what an operator of the generator needs to tell a lost post from a late one
            nonce, sent, done = self.ledger.expected(kind, user_id) or ("", 0.0, 0.0)
            logs.warning("content_error", kind=wrong, timeline=kind, user_id=user_id, expected_nonce=nonce,
                         expected_age_s=round(started_at - done, 1), page=len(parsed),
                         unconfirmed_since=self.ledger.unconfirmed_since(kind, user_id, sent - CLOCK_SLACK_S),
                         oldest_on_page_age_s=round(started_at - int(parsed[-1].get("timestamp") or 0) / 1000, 1)
                         if parsed else None)
        return Outcome(resp.status, wrong=wrong)


def build(argv: list[str]) -> SocialGenerator:
    settings = parse_settings(argv, description="Social Network workload generator",
                              default_target="http://nginx-thrift.social-network.svc.cluster.local:8080")
    secret = os.environ.get("WORKLOAD_SECRET", "")
    if len(secret) < 16:
        raise ValueError("WORKLOAD_SECRET must hold at least 16 characters (the post-signing key)")
    return SocialGenerator(settings, secret)


main = workload.main(build)
