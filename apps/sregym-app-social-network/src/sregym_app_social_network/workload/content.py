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
  of posts at least as new as it, counting the posts of composes that did not answer success, which
  the page may not show (see :meth:`Ledger.check_timeline`).

Only composes that answered success are expected anywhere. A compose that failed may still have
reached some timelines (the services write the post, the author's timeline and the followers' home
timelines side by side, with no transaction across them, as in the original), so the generator
never demands such a post, and never counts one against a timeline either: it may outrank a
post the generator does expect. Such a post may also be listed in a timeline without being shown: a
compose whose post-storage write failed (a revoked grant, say) still put the post's id on its
timelines, and a read skips ids post-storage does not hold, so the page comes back short. The ledger
therefore remembers, per timeline, the composes that have not answered success (in flight or failed).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
import re
import threading
import time
from collections.abc import Iterable
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
        # (kind, user id) -> nonce -> when a compose that did not answer success ended (inf: in flight)
        self.unconfirmed: dict[tuple[str, int], dict[str, float]] = {}

    def forget(self) -> None:
        """Expect nothing of the timelines any more (the harness put the stores back as deployed)."""
        with self.lock:
            self.user_latest.clear()
            self.home_latest.clear()
            self.unconfirmed.clear()

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

    @staticmethod
    def timelines(post: dict[str, Any]) -> list[tuple[str, int]]:
        """The timelines a post goes to: its author's, and the home timelines of the author's followers
        and of the user it mentions."""
        return [("user", post["user_id"])] + [("home", r) for r in set(seed.followers()[post["user_id"]]) |
                                              {post["mention"]}]

    def sending(self, post: dict[str, Any]) -> None:
        """A compose is about to be sent: until it answers success, its post may be on its timelines."""
        with self.lock:
            for key in self.timelines(post):
                self.unconfirmed.setdefault(key, {})[post["nonce"]] = math.inf

    def failed(self, post: dict[str, Any]) -> None:
        """A compose did not answer success (an error, a wrong answer, no answer): it may still have
        written some of its timelines."""
        now = time.time()
        with self.lock:
            for key in self.timelines(post):
                pending = self.unconfirmed.setdefault(key, {})
                pending[post["nonce"]] = now
                if len(pending) > PAGE:  # only the latest PAGE can matter (see unconfirmed_since)
                    del pending[min(pending, key=pending.__getitem__)]

    def composed(self, post: dict[str, Any], sent_at: float) -> None:
        """A compose sent at ``sent_at`` succeeded: the post must now show on its timelines."""
        entry = (post["nonce"], sent_at, time.time())
        with self.lock:
            for key in self.timelines(post):
                self.unconfirmed.get(key, {}).pop(post["nonce"], None)
            self.user_latest[post["user_id"]] = entry
            for reader in set(seed.followers()[post["user_id"]]) | {post["mention"]}:
                self.home_latest[reader] = entry

    def unconfirmed_since(self, kind: str, user_id: int, since: float, shown: Iterable[str | None] = ()) -> int:
        """How many composes for a timeline that did not answer success ended after ``since`` (or have not
        ended), their posts not among ``shown``: each may have put on it a post newer than one sent at
        ``since`` that a read does not show."""
        shown = set(shown)
        with self.lock:
            return sum(1 for nonce, ended in self.unconfirmed.get((kind, user_id), {}).items()
                       if ended >= since and nonce not in shown)

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
                not self._outranked(latest[1], len(body), last_ts,
                                    self.unconfirmed_since(kind, user_id, latest[1] - CLOCK_SLACK_S, nonces)):
            return "timeline_missing_recent_post"
        return None

    @staticmethod
    def _outranked(sent_at: float, page_size: int, oldest_ts_ms: int | None, hidden: int = 0) -> bool:
        """Whether a post sent at ``sent_at`` may rightly be off this page: the page is full and even its
        oldest post is at least as new as the post can be (the service stamps a post after it was sent).

        Posts the generator does not expect (a compose that answered an error after writing some
        timelines) can fill the page that way; up to ``hidden`` of them (the composes for this timeline
        that did not answer success since the post was sent) may take a place on the page without being
        shown (post-storage does not hold them), so the page counts as full with that many fewer posts.
        A timeline that misses the post while holding an older one, or holding fewer posts than that, is
        wrong.
        """
        return page_size + hidden >= PAGE and (
            oldest_ts_ms is None if page_size == 0 else
            oldest_ts_ms is not None and oldest_ts_ms >= (sent_at - CLOCK_SLACK_S) * 1000)
