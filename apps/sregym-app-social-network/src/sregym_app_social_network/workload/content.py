"""What a correct answer looks like, and the posts the generator wrote.

Every post the generator composes carries an HMAC signature over its author, a nonce and its words,
keyed by a secret only the generator holds (``WORKLOAD_SECRET``, generated at deploy time and kept
in the hidden namespace). So a timeline answer is correct only when every post in it:

* was really written by the generator (valid signature: a stub cannot invent posts),
* belongs there: on a user timeline the author is that user; on a home timeline the author is
  someone the user follows in the seeded graph, or the post mentions the user,
* went through the whole compose path: its URL was shortened by url-shorten (the text carries the
  short link, ``urls`` maps it back to the original) and its ``@mention`` was resolved by
  user-mention to the seeded user id,
* is in newest-first order, and the newest post the generator saw succeed for that timeline more
  than ``SETTLE_S`` ago is present (a cached or frozen answer is caught) — unless the page is full
  of posts at least as new as it (see :meth:`Ledger.check_timeline`).

Only composes that answered success are expected anywhere. A compose that failed may still have
reached some timelines (the services write the post, the author's timeline and the followers' home
timelines side by side, with no transaction across them, as in the original), so the generator
never demands such a post, and never counts one against a timeline either: it may outrank a
post the generator does expect.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import re
import threading
import time
from typing import Any

from .. import seed

SETTLE_S = 2.0
#: how far the services' clocks may trail the generator's when a post is stamped
CLOCK_SLACK_S = 0.5
PAGE = 10
TEXT = re.compile(r"^(?P<words>[a-z ]+) @(?P<mention>username_\d+) (?P<url>\S+) nonce:(?P<nonce>[0-9a-f]{16}) "
                  r"sig:(?P<sig>[0-9a-f]{32})$")
WORDS = ("latency", "pager", "rollback", "canary", "deploy", "incident", "cache", "replica", "quorum", "timeout",
         "retry", "shard", "kernel", "packet", "budget", "on call", "postmortem", "runbook")


class Ledger:
    """The generator's memory: signing key and, per timeline, the newest post known to be stored."""

    def __init__(self, secret: str) -> None:
        self.key = secret.encode()
        self.lock = threading.Lock()
        # author / reader -> (nonce, compose sent at, compose succeeded at), both wall-clock seconds
        self.user_latest: dict[int, tuple[str, float, float]] = {}
        self.home_latest: dict[int, tuple[str, float, float]] = {}

    def sign(self, user_id: int, nonce: str, words: str) -> str:
        return hmac.new(self.key, f"{user_id}|{nonce}|{words}".encode(), hashlib.sha256).hexdigest()[:32]

    def make_post(self, rng: random.Random) -> dict[str, Any]:
        user_id = rng.randrange(seed.USERS)
        mention = rng.randrange(seed.USERS)
        nonce = "%016x" % rng.getrandbits(64)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
        url = f"https://sregym.test/p/{nonce}"
        sig = self.sign(user_id, nonce, words)
        text = f"{words} @{seed.username(mention)} {url} nonce:{nonce} sig:{sig}"
        return {"user_id": user_id, "username": seed.username(user_id), "text": text, "nonce": nonce,
                "mention": mention, "url": url}

    def composed(self, post: dict[str, Any], sent_at: float) -> None:
        """A compose sent at ``sent_at`` succeeded: the post must now show on its timelines."""
        entry = (post["nonce"], sent_at, time.time())
        with self.lock:
            self.user_latest[post["user_id"]] = entry
            for reader in set(seed.followers()[post["user_id"]]) | {post["mention"]}:
                self.home_latest[reader] = entry

    def expected(self, kind: str, user_id: int) -> tuple[str, float, float] | None:
        """(nonce, sent at, succeeded at) of the newest post expected on a ``kind`` timeline."""
        with self.lock:
            return (self.user_latest if kind == "user" else self.home_latest).get(user_id)

    def check_post(self, post: Any) -> tuple[str | None, int | None, str | None]:
        """(error, author id, nonce) of one post from a timeline."""
        if not isinstance(post, dict):
            return "post_not_an_object", None, None
        try:
            author = int(post["creator"]["user_id"])
            text = str(post["text"])
            urls = post.get("urls") or []
            mentions = post.get("user_mentions") or []
        except (KeyError, TypeError, ValueError):
            return "post_fields_missing", None, None
        match = TEXT.match(text)
        if not match:
            return "post_text_unrecognised", author, None
        nonce = match["nonce"]
        if not hmac.compare_digest(match["sig"], self.sign(author, nonce, match["words"])):
            return "post_signature_invalid", author, nonce
        if post["creator"].get("username") != seed.username(author):
            return "post_creator_wrong", author, nonce
        expanded = f"https://sregym.test/p/{nonce}"
        if (len(urls) != 1 or urls[0].get("expanded_url") != expanded or urls[0].get("shortened_url") != match["url"]
                or not str(match["url"]).startswith("http://short-url.com/")):
            return "post_url_not_shortened", author, nonce
        mentioned = int(match["mention"].split("_")[1])
        if [(int(m.get("user_id", -1)), m.get("username")) for m in mentions] != [(mentioned, match["mention"])]:
            return "post_mention_unresolved", author, nonce
        return None, author, nonce

    def check_timeline(self, kind: str, user_id: int, body: Any, started_at: float) -> str | None:
        if not isinstance(body, list):
            return "timeline_not_a_list"
        if len(body) > PAGE:
            return "timeline_too_long"
        nonces = []
        last_ts = None
        for post in body:
            error, author, nonce = self.check_post(post)
            if error:
                return error
            if kind == "user" and author != user_id:
                return "user_timeline_foreign_post"
            if kind == "home" and author not in seed.followees()[user_id] and not any(
                    int(m["user_id"]) == user_id for m in post["user_mentions"]):
                return "home_timeline_unrelated_post"
            ts = int(post.get("timestamp") or 0)
            if last_ts is not None and ts > last_ts:
                return "timeline_not_newest_first"
            last_ts = ts
            nonces.append(nonce)
        latest = self.expected(kind, user_id)
        if latest and latest[2] < started_at - SETTLE_S and latest[0] not in nonces and \
                not self._outranked(latest[1], len(body), last_ts):
            return "timeline_missing_recent_post"
        return None

    @staticmethod
    def _outranked(sent_at: float, page_size: int, oldest_ts_ms: int | None) -> bool:
        """Whether a post sent at ``sent_at`` may rightly be off this page: the page is full and even its
        oldest post is at least as new as the post can be (the service stamps a post after it was sent).

        Posts the generator does not expect (a compose that answered an error after writing some
        timelines) can fill the page that way. A timeline that misses the post while holding an older
        one, or holding fewer than a page of posts, is wrong.
        """
        return page_size >= PAGE and oldest_ts_ms is not None and oldest_ts_ms >= (sent_at - CLOCK_SLACK_S) * 1000
