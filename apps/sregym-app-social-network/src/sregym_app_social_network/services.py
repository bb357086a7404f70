"""The Thrift handlers: one class per service, with the DeathStarBench call graph and data flow.

ComposePost fans out to unique-id, user, text (which calls url-shorten and user-mention in
parallel) and media, then stores the post (post-storage), appends it to the author's timeline
(user-timeline) and pushes it onto every follower's and mentioned user's home timeline
(home-timeline, which asks social-graph for the followers). Reads go through user-timeline or
home-timeline, which fetch the posts from post-storage.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import itertools
import os
import random
import re
import string
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from . import idl, seed
from .config import Config
from .rpc import Client, RpcError, service_error, upstream_failure
from .stores import DocumentStore, Memcached, Redis, StoreError, cache_key

_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="fanout")
MENTION = re.compile(r"@([A-Za-z0-9_]+)")
URL = re.compile(r"https?://[^\s]+")
SHORT_URL_PREFIX = "http://short-url.com/"


@attrs.define
class Context:
    cfg: Config
    db: DocumentStore | None = None
    redis: Redis | None = None
    cache: Memcached | None = None
    peers: dict[str, Client] = attrs.Factory(dict)

    # the stores of a service that has them (only such a service has handlers that use them)
    @property
    def documents(self) -> DocumentStore:
        if self.db is None:
            raise RuntimeError(f"{self.cfg.service} has no document store")
        return self.db

    @property
    def redis_store(self) -> Redis:
        if self.redis is None:
            raise RuntimeError(f"{self.cfg.service} has no Redis")
        return self.redis


def parallel(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls concurrently in the current trace context; re-raise the first failure."""
    futures = [_POOL.submit(contextvars.copy_context().run, call) for call in calls]
    return [f.result() for f in futures]


def db_call(fn: Callable[..., Any]) -> Any:  # called with no arguments (a lambda may bind its values as defaults)
    try:
        return fn()
    except StoreError as exc:
        code = idl.SE_REDIS_ERROR if exc.store.endswith("-redis") else idl.SE_MONGODB_ERROR
        raise service_error(code, f"{exc.store} ({exc.addr}): {exc.error}") from exc


def peer_call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except RpcError as exc:
        raise upstream_failure(exc) from exc


class Handler:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def peer(self, name: str) -> Client:
        return self.ctx.peers[name]


class UniqueIdHandler(Handler):
    """64-bit ids: milliseconds since 2018-01-01 (41 bits), machine id (10 bits), counter (12 bits)."""

    EPOCH_MS = 1514764800000

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.machine = int(hashlib.md5(os.uname().nodename.encode() + str(os.getpid()).encode()).hexdigest(), 16) % 1024
        self.lock = threading.Lock()
        self.last_ms, self.counter = 0, 0

    def ComposeUniqueId(self, req_id: int, post_type: int, carrier: Any) -> int:  # noqa: N802 - Thrift name
        with self.lock:
            now = int(time.time() * 1000) - self.EPOCH_MS
            if now <= self.last_ms:
                now = self.last_ms
                self.counter = (self.counter + 1) % 4096
                if self.counter == 0:
                    now += 1
            else:
                self.counter = 0
            self.last_ms = now
            return (now << 22) | (self.machine << 12) | self.counter


class TextHandler(Handler):
    def ComposeText(self, req_id: int, text: str, carrier: Any) -> Any:  # noqa: N802
        text = text or ""
        urls = URL.findall(text)
        mentions = list(dict.fromkeys(MENTION.findall(text)))
        shortened, user_mentions = parallel(
            lambda: peer_call(lambda: self.peer("url-shorten-service").ComposeUrls(req_id, urls)) if urls else [],
            lambda: peer_call(lambda: self.peer("user-mention-service").ComposeUserMentions(req_id, mentions))
            if mentions else [])
        updated = text
        for url in shortened:
            updated = updated.replace(url.expanded_url, url.shortened_url, 1)
        return idl.TextServiceReturn(text=updated, user_mentions=list(user_mentions), urls=list(shortened))


class UserMentionHandler(Handler):
    def ComposeUserMentions(self, req_id: int, usernames: list[str], carrier: Any) -> list[Any]:  # noqa: N802
        out = []
        for name in usernames or []:
            user = self.ctx.cache.get(cache_key(f"{name}:user")) if self.ctx.cache else None
            if user is None:
                user = db_call(lambda n=name: self.ctx.documents.find("users", n))
                if user is not None and self.ctx.cache:
                    self.ctx.cache.set(cache_key(f"{name}:user"), user)
            if user is not None:  # an unknown @name is plain text, as in the original
                out.append(idl.UserMention(user_id=int(user["user_id"]), username=name))
        return out


class UrlShortenHandler(Handler):
    def ComposeUrls(self, req_id: int, urls: list[str], carrier: Any) -> list[Any]:  # noqa: N802
        out = []
        for url in urls or []:
            short = SHORT_URL_PREFIX + "".join(random.choices(string.ascii_letters + string.digits, k=10))
            db_call(lambda s=short, u=url: self.ctx.documents.insert("urls", s, {"shortened_url": s, "expanded_url": u}))
            if self.ctx.cache:
                self.ctx.cache.set(cache_key(short), url)
            out.append(idl.Url(shortened_url=short, expanded_url=url))
        return out

    def GetExtendedUrls(self, req_id: int, shortened_urls: list[str], carrier: Any) -> list[str]:  # noqa: N802
        out = []
        for short in shortened_urls or []:
            url = self.ctx.cache.get(cache_key(short)) if self.ctx.cache else None
            if url is None:
                doc = db_call(lambda s=short: self.ctx.documents.find("urls", s))
                if doc is None:
                    raise service_error(idl.SE_NOT_FOUND, f"shortened url {short} not found")
                url = doc["expanded_url"]
            out.append(url)
        return out


class MediaHandler(Handler):
    def ComposeMedia(self, req_id: int, media_types: list[str], media_ids: list[int], carrier: Any) -> list[Any]:  # noqa: N802
        if len(media_types or []) != len(media_ids or []):
            raise service_error(idl.SE_THRIFT_HANDLER_ERROR,
                                "The lengths of media_id list and media_type list are not equal")
        return [idl.Media(media_id=i, media_type=t) for i, t in zip(media_ids or [], media_types or [], strict=True)]


class UserHandler(Handler):
    def _user(self, username: str) -> dict[str, Any] | None:
        user = self.ctx.cache.get(cache_key(f"{username}:user")) if self.ctx.cache else None
        if user is None:
            user = db_call(lambda: self.ctx.documents.find("users", username))
            if user is not None and self.ctx.cache:
                self.ctx.cache.set(cache_key(f"{username}:user"), user)
        return user

    def RegisterUserWithId(self, req_id: int, first_name: str, last_name: str, username: str, password: str,  # noqa: N802
                           user_id: int, carrier: Any) -> None:
        if db_call(lambda: self.ctx.documents.find("users", username)) is not None:
            raise service_error(idl.SE_THRIFT_HANDLER_ERROR, f"User {username} already existed")
        salt = "".join(random.choices(string.ascii_letters, k=16))
        db_call(lambda: self.ctx.documents.insert("users", username, {
            "user_id": user_id, "first_name": first_name, "last_name": last_name, "username": username,
            "salt": salt, "password": seed.hash_password(password, salt)}))
        peer_call(lambda: self.peer("social-graph-service").InsertUser(req_id, user_id))

    def Login(self, req_id: int, username: str, password: str, carrier: Any) -> str:  # noqa: N802
        user = self._user(username)
        if user is None or not hmac.compare_digest(user["password"], seed.hash_password(password, user["salt"])):
            raise service_error(idl.SE_UNAUTHORIZED, "Incorrect username or password")
        return hashlib.sha256(f"{user['user_id']}:{user['salt']}:{int(time.time()) // 3600}".encode()).hexdigest()

    def ComposeCreatorWithUserId(self, req_id: int, user_id: int, username: str, carrier: Any) -> Any:  # noqa: N802
        return idl.Creator(user_id=user_id, username=username)

    def ComposeCreatorWithUsername(self, req_id: int, username: str, carrier: Any) -> Any:  # noqa: N802
        user = self._user(username)
        if user is None:
            raise service_error(idl.SE_THRIFT_HANDLER_ERROR, f"User: {username} doesn't exist")
        return idl.Creator(user_id=int(user["user_id"]), username=username)

    def GetUserId(self, req_id: int, username: str, carrier: Any) -> int:  # noqa: N802
        user = self._user(username)
        if user is None:
            raise service_error(idl.SE_THRIFT_HANDLER_ERROR, f"User: {username} doesn't exist")
        return int(user["user_id"])


class SocialGraphHandler(Handler):
    def _edges(self, user_id: int, kind: str) -> list[int]:
        key = f"{user_id}:{kind}"
        cached = db_call(lambda: self.ctx.redis_store.run("zrange", key, 0, -1))
        if cached:
            return [int(x) for x in cached]
        doc = db_call(lambda: self.ctx.documents.find("social_graph", user_id)) or {}
        edges = {int(e["user_id"]): int(e.get("timestamp", 0)) for e in doc.get(kind, [])}
        if edges:
            db_call(lambda: self.ctx.redis_store.run("zadd", key, {str(k): v for k, v in edges.items()}))
        return sorted(edges)

    def GetFollowers(self, req_id: int, user_id: int, carrier: Any) -> list[int]:  # noqa: N802
        return self._edges(user_id, "followers")

    def GetFollowees(self, req_id: int, user_id: int, carrier: Any) -> list[int]:  # noqa: N802
        return self._edges(user_id, "followees")

    def _change(self, user_id: int, followee_id: int, follow: bool) -> None:
        now = int(time.time() * 1000)
        for owner, kind, other in ((user_id, "followees", followee_id), (followee_id, "followers", user_id)):
            doc = db_call(lambda o=owner: self.ctx.documents.find("social_graph", o)) or {"user_id": owner}
            edges = [e for e in doc.get(kind, []) if int(e["user_id"]) != other]
            if follow:
                edges.append({"user_id": other, "timestamp": now})
            doc[kind] = edges
            db_call(lambda o=owner, d=doc: self.ctx.documents.insert("social_graph", o, d))
            db_call(lambda o=owner, k=kind: self.ctx.redis_store.run("delete", f"{o}:{k}"))

    def Follow(self, req_id: int, user_id: int, followee_id: int, carrier: Any) -> None:  # noqa: N802
        self._change(user_id, followee_id, True)

    def Unfollow(self, req_id: int, user_id: int, followee_id: int, carrier: Any) -> None:  # noqa: N802
        self._change(user_id, followee_id, False)

    def InsertUser(self, req_id: int, user_id: int, carrier: Any) -> None:  # noqa: N802
        if db_call(lambda: self.ctx.documents.find("social_graph", user_id)) is None:
            db_call(lambda: self.ctx.documents.insert("social_graph", user_id,
                                               {"user_id": user_id, "followers": [], "followees": []}))


def post_from_doc(doc: dict[str, Any]) -> Any:
    return idl.Post(
        post_id=int(doc["post_id"]), req_id=int(doc.get("req_id") or 0), text=doc["text"],
        timestamp=int(doc["timestamp"]), post_type=int(doc.get("post_type") or 0),
        creator=idl.Creator(user_id=int(doc["creator"]["user_id"]), username=doc["creator"]["username"]),
        user_mentions=[idl.UserMention(user_id=int(m["user_id"]), username=m["username"])
                       for m in doc.get("user_mentions") or []],
        media=[idl.Media(media_id=int(m["media_id"]), media_type=m["media_type"]) for m in doc.get("media") or []],
        urls=[idl.Url(shortened_url=u["shortened_url"], expanded_url=u["expanded_url"]) for u in doc.get("urls") or []])


class PostStorageHandler(Handler):
    def StorePost(self, req_id: int, post: Any, carrier: Any) -> None:  # noqa: N802
        doc = idl.to_dict(post)
        db_call(lambda: self.ctx.documents.insert("posts", int(post.post_id), doc))

    def ReadPost(self, req_id: int, post_id: int, carrier: Any) -> Any:  # noqa: N802
        posts = self.ReadPosts(req_id, [post_id], carrier)
        if not posts:
            raise service_error(idl.SE_NOT_FOUND, f"post_id: {post_id} doesn't exist in MongoDB")
        return posts[0]

    def ReadPosts(self, req_id: int, post_ids: list[int], carrier: Any) -> list[Any]:  # noqa: N802
        found: dict[int, dict[str, Any]] = {}
        for pid in post_ids or []:
            doc = self.ctx.cache.get(str(pid)) if self.ctx.cache else None
            if doc is not None:
                found[pid] = doc
        missing = [pid for pid in post_ids or [] if pid not in found]
        if missing:
            docs = db_call(lambda: self.ctx.documents.find_many("posts", missing))
            for pid, doc in docs.items():
                found[int(pid)] = doc
                if self.ctx.cache:
                    self.ctx.cache.set(str(pid), doc)
        return [post_from_doc(found[pid]) for pid in post_ids or [] if pid in found]


#: ZADD only to a timeline the cache already holds (atomically): -1 when the key is absent
ZADD_IF_CACHED = ("if redis.call('exists', KEYS[1]) == 1 then return redis.call('zadd', KEYS[1], ARGV[1], ARGV[2]) "
                  "end return -1")


class UserTimelineHandler(Handler):
    """A user's timeline lives in user-timeline-postgres; user-timeline-redis caches whole timelines.

    A key in the cache always holds the user's whole timeline: a write adds the post to a cached key,
    and fills a key the cache does not hold (a restarted or emptied cache) from the database, which by
    then has the post too. Adding the post alone to an absent key would make a key of the posts written
    since the cache restarted, and reads would stop showing every older post.
    """

    def _fill(self, user_id: int) -> dict[str, int]:
        doc = db_call(lambda: self.ctx.documents.find("user_timeline", user_id)) or {}
        entries = {str(p["post_id"]): int(p["timestamp"]) for p in doc.get("posts", [])}
        if entries:
            # a union: a concurrent write's post, added meanwhile, stays
            db_call(lambda: self.ctx.redis_store.run("zadd", str(user_id), entries))
        return entries

    def WriteUserTimeline(self, req_id: int, post_id: int, user_id: int, timestamp: int,  # noqa: N802
                          carrier: Any) -> None:
        db_call(lambda: self.ctx.documents.push("user_timeline", user_id, "posts",
                                         {"post_id": post_id, "timestamp": timestamp}))
        added = db_call(lambda: self.ctx.redis_store.run("eval", ZADD_IF_CACHED, 1, str(user_id), timestamp, str(post_id)))
        if added == -1:
            self._fill(user_id)

    def ReadUserTimeline(self, req_id: int, user_id: int, start: int, stop: int, carrier: Any) -> list[Any]:  # noqa: N802
        if stop <= start or start < 0:
            return []
        ids = db_call(lambda: self.ctx.redis_store.run("zrevrange", str(user_id), start, stop - 1))
        if not ids:
            entries = self._fill(user_id)
            ids = [p for p, _ in sorted(entries.items(), key=lambda kv: -kv[1])][start:stop]
        post_ids = [int(x) for x in ids]
        if not post_ids:
            return []
        return peer_call(lambda: self.peer("post-storage-service").ReadPosts(req_id, post_ids))


class HomeTimelineHandler(Handler):
    def WriteHomeTimeline(self, req_id: int, post_id: int, user_id: int, timestamp: int,  # noqa: N802
                          user_mentions_id: list[int], carrier: Any) -> None:
        followers = peer_call(lambda: self.peer("social-graph-service").GetFollowers(req_id, user_id))
        targets = set(followers) | set(user_mentions_id or [])
        if not targets:
            return
        db_call(lambda: self.ctx.redis_store.run("zadd_many", {str(t): {str(post_id): timestamp} for t in targets}))

    def ReadHomeTimeline(self, req_id: int, user_id: int, start: int, stop: int, carrier: Any) -> list[Any]:  # noqa: N802
        if stop <= start or start < 0:
            return []
        ids = [int(x) for x in db_call(lambda: self.ctx.redis_store.run("zrevrange", str(user_id), start, stop - 1))]
        if not ids:
            return []
        return peer_call(lambda: self.peer("post-storage-service").ReadPosts(req_id, ids))


class ComposePostHandler(Handler):
    def ComposePost(self, req_id: int, username: str, user_id: int, text: str, media_ids: list[int],  # noqa: N802
                    media_types: list[str], post_type: int, carrier: Any) -> None:
        text_result, media, post_id, creator = parallel(
            lambda: peer_call(lambda: self.peer("text-service").ComposeText(req_id, text)),
            lambda: peer_call(lambda: self.peer("media-service").ComposeMedia(req_id, media_types or [],
                                                                               media_ids or [])),
            lambda: peer_call(lambda: self.peer("unique-id-service").ComposeUniqueId(req_id, post_type or 0)),
            lambda: peer_call(lambda: self.peer("user-service").ComposeCreatorWithUserId(req_id, user_id, username)))
        timestamp = int(time.time() * 1000)
        post = idl.Post(post_id=post_id, creator=creator, req_id=req_id, text=text_result.text,
                        user_mentions=text_result.user_mentions, media=media, urls=text_result.urls,
                        timestamp=timestamp, post_type=post_type or 0)
        mention_ids = [m.user_id for m in text_result.user_mentions or []]
        parallel(
            lambda: peer_call(lambda: self.peer("post-storage-service").StorePost(req_id, post)),
            lambda: peer_call(lambda: self.peer("user-timeline-service").WriteUserTimeline(req_id, post_id, user_id,
                                                                                            timestamp)),
            lambda: peer_call(lambda: self.peer("home-timeline-service").WriteHomeTimeline(
                req_id, post_id, user_id, timestamp, mention_ids)))


HANDLERS: dict[str, type[Handler]] = {
    "compose-post-service": ComposePostHandler, "text-service": TextHandler,
    "user-mention-service": UserMentionHandler, "url-shorten-service": UrlShortenHandler,
    "media-service": MediaHandler, "unique-id-service": UniqueIdHandler, "user-service": UserHandler,
    "social-graph-service": SocialGraphHandler, "post-storage-service": PostStorageHandler,
    "user-timeline-service": UserTimelineHandler, "home-timeline-service": HomeTimelineHandler,
}

_REQ_IDS = itertools.count(random.randrange(1 << 40))


def next_req_id() -> int:
    return next(_REQ_IDS)
