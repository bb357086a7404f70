"""Unit tests: Thrift RPC over real sockets, the service handlers' data flow, configuration, the seeded
graph, and the workload's content checks (which must catch stubs and wrong answers)."""

from __future__ import annotations

import json
import random
import socket
import struct
import time

import pytest
from sregym_app_social_network import config, idl, nginx, rpc, seed, services
from sregym_app_social_network.workload.content import PAGE, Ledger


class MemoryDocs:
    """A stand-in DocumentStore for handler tests (the real one is exercised live)."""

    name, addr = "mem-postgres", "mem:5432"

    def __init__(self) -> None:
        self.collections: dict[str, dict] = {}

    def find(self, collection, key):
        return self.collections.get(collection, {}).get(key)

    def insert(self, collection, key, doc):
        self.collections.setdefault(collection, {})[key] = json.loads(json.dumps(doc))


@pytest.fixture
def serve():
    servers = []

    def start(name: str, handler) -> str:
        topo = config.TOPOLOGY[name]
        server = rpc.ThriftServer("127.0.0.1", 0, rpc.Processor(name, topo.thrift, handler), workers=8)
        server.start()
        servers.append(server)
        return f"127.0.0.1:{server.sock.getsockname()[1]}"

    yield start
    for server in servers:
        server.stop()


def client(peer: str, addr: str, retries: int = 0, timeout_ms: int = 2000) -> rpc.Client:
    return rpc.Client("test", peer, config.TOPOLOGY[peer].thrift, addr, rpc.RpcPolicy(timeout_ms, retries, 1))


def cfg(service: str) -> config.Config:
    return config.Config(service=service, host="127.0.0.1", port=0, admin_port=0, peers={}, postgres=None, redis=None,
                         memcached=None, timeout_ms=2000, retries=0, backoff_ms=1, workers=4, source="test")


def test_thrift_round_trip_with_nested_structs(serve):
    addr = serve("media-service", services.MediaHandler(services.Context(cfg=cfg("media-service"))))
    media = client("media-service", addr).ComposeMedia(7, ["png", "jpg"], [11, 12])
    assert media == [idl.Media(media_id=11, media_type="png"), idl.Media(media_id=12, media_type="jpg")]


def test_service_exception_reaches_the_caller_with_its_code(serve):
    addr = serve("media-service", services.MediaHandler(services.Context(cfg=cfg("media-service"))))
    with pytest.raises(rpc.RpcError) as err:
        client("media-service", addr).ComposeMedia(1, ["png"], [1, 2])
    assert err.value.kind == "service" and err.value.code == idl.SE_THRIFT_HANDLER_ERROR
    assert "lengths" in err.value.message


def test_the_wire_format_is_thrift_binary_framed(serve):
    """A raw framed TBinaryProtocol call, byte by byte, as any Thrift client would send it."""
    addr = serve("unique-id-service", services.UniqueIdHandler(services.Context(cfg=cfg("unique-id-service"))))
    host, port = addr.rsplit(":", 1)
    name = b"ComposeUniqueId"
    body = struct.pack("!iI", -2147418112 | 1, len(name)) + name + struct.pack("!i", 5)  # VERSION_1 | CALL, seqid 5
    body += struct.pack("!bhq", 10, 1, 42) + struct.pack("!bhi", 8, 2, 0) + b"\x00"  # req_id i64, post_type i32, STOP
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack("!i", len(body)) + body)
        size = struct.unpack("!i", sock.recv(4))[0]
        reply = b""
        while len(reply) < size:
            reply += sock.recv(size - len(reply))
    version_type, name_len = struct.unpack("!iI", reply[:8])
    assert version_type & 0xFF == 2  # REPLY
    assert reply[8:8 + name_len] == name
    seqid, ftype, fid, value = struct.unpack("!ibhq", reply[8 + name_len:8 + name_len + 15])
    assert (seqid, ftype, fid) == (5, 10, 0) and value > 0  # field 0 = success, an i64 id


def test_unique_ids_are_unique_and_increasing():
    handler = services.UniqueIdHandler(services.Context(cfg=cfg("unique-id-service")))
    ids = [handler.ComposeUniqueId(i, 0, {}) for i in range(5000)]
    assert len(set(ids)) == 5000 and ids == sorted(ids)


def test_unreachable_peer_is_retried_then_named(serve):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(rpc.RpcError) as err:
        client("media-service", f"127.0.0.1:{port}", retries=2).ComposeMedia(1, [], [])
    assert err.value.kind == "unavailable" and err.value.peer == "media-service"
    failure = rpc.upstream_failure(err.value)
    assert failure.errorCode == idl.SE_THRIFT_CONN_ERROR and f"127.0.0.1:{port}" in failure.message


def test_text_fans_out_to_url_shorten_and_user_mention_over_thrift(serve):
    users = MemoryDocs()
    for uid in (3, 4):
        users.insert("users", seed.username(uid), seed.user_doc(uid))
    urls = MemoryDocs()
    url_addr = serve("url-shorten-service", services.UrlShortenHandler(
        services.Context(cfg=cfg("url-shorten-service"), db=urls)))
    mention_addr = serve("user-mention-service", services.UserMentionHandler(
        services.Context(cfg=cfg("user-mention-service"), db=users)))
    text_ctx = services.Context(cfg=cfg("text-service"), peers={
        "url-shorten-service": client("url-shorten-service", url_addr),
        "user-mention-service": client("user-mention-service", mention_addr)})
    text_addr = serve("text-service", services.TextHandler(text_ctx))
    out = client("text-service", text_addr).ComposeText(
        1, "hi @username_3 and @username_4 and @nobody see https://example.test/a")
    assert [(m.user_id, m.username) for m in out.user_mentions] == [(3, "username_3"), (4, "username_4")]
    assert len(out.urls) == 1 and out.urls[0].expanded_url == "https://example.test/a"
    short = out.urls[0].shortened_url
    assert short.startswith(services.SHORT_URL_PREFIX) and out.text.endswith(short)
    assert urls.find("urls", short)["expanded_url"] == "https://example.test/a"
    assert client("url-shorten-service", url_addr).GetExtendedUrls(2, [short]) == ["https://example.test/a"]


def test_database_failure_becomes_a_database_error_code(serve):
    class Down(MemoryDocs):
        def find(self, collection, key):
            from sregym_app_social_network.stores import StoreError
            raise StoreError("user-postgres", "user-postgres:5432", "permission denied for table users")

    addr = serve("user-mention-service", services.UserMentionHandler(
        services.Context(cfg=cfg("user-mention-service"), db=Down())))
    with pytest.raises(rpc.RpcError) as err:
        client("user-mention-service", addr).ComposeUserMentions(1, ["username_1"])
    assert err.value.code == idl.SE_MONGODB_ERROR and "permission denied" in err.value.message


def test_config_collects_every_problem():
    with pytest.raises(config.ConfigInvalid) as err:
        config.load("user-timeline-service", json.dumps({"peers": {}, "port": "x"}), {"RPC_RETRIES": "-1"})
    where = {w for w, _, _ in err.value.problems}
    assert {"peers.post-storage-service", "env.DB_USER/DB_PASSWORD", "postgres.addr", "redis.addr", "port",
            "env.RPC_RETRIES"} <= where
    good = config.load("user-timeline-service", json.dumps(config.file_config("user-timeline-service")),
                       {"DB_USER": "u", "DB_PASSWORD": "p", "POST_STORAGE_SERVICE_ADDR": "10.0.0.1:9090"})
    assert good.peers["post-storage-service"] == "10.0.0.1:9090"  # env overrides the file
    assert good.redis == "user-timeline-redis:6379" and good.postgres["database"] == "user_timeline_db"
    with pytest.raises(config.ConfigInvalid):
        config.load("text-service", None, {})


def test_seeded_graph_is_deterministic_and_consistent():
    followees, followers = seed.followees(), seed.followers()
    assert len(followees) == seed.USERS and all(len(f) == seed.FOLLOWS for f in followees.values())
    assert all(uid not in f for uid, f in followees.items())
    for uid, followed in followees.items():
        for other in followed:
            assert uid in followers[other]
    doc = seed.user_doc(5)
    assert doc["password"] == seed.hash_password("password_5", doc["salt"]) != seed.hash_password("x", doc["salt"])


def _stored(ledger: Ledger, rng: random.Random, *, user_id: int | None = None) -> tuple[dict, dict]:
    """A post as the generator writes it and as a correct system returns it."""
    post = ledger.make_post(rng)
    if user_id is not None:  # re-sign for a chosen author
        words = post["text"].split(" @")[0]
        post["user_id"], post["username"] = user_id, seed.username(user_id)
        sig = ledger.sign(user_id, post["nonce"], words)
        post["text"] = post["text"].rsplit("sig:", 1)[0] + "sig:" + sig
    short = "http://short-url.com/AbCdEfGhIj"
    stored = {"post_id": rng.getrandbits(60), "creator": {"user_id": post["user_id"], "username": post["username"]},
              "req_id": 1, "text": post["text"].replace(post["url"], short),
              "user_mentions": [{"user_id": post["mention"], "username": seed.username(post["mention"])}],
              "media": [], "urls": [{"shortened_url": short, "expanded_url": post["url"]}],
              "timestamp": 1000, "post_type": 0}
    return post, stored


def test_content_checks_accept_a_correct_timeline_and_catch_wrong_ones():
    ledger, rng = Ledger("k" * 24), random.Random(1)
    post, stored = _stored(ledger, rng, user_id=9)
    assert ledger.check_timeline("user", 9, [stored], started_at=0) is None
    assert ledger.check_timeline("user", 9, [], started_at=0) is None  # nothing composed yet: empty is right
    follower = next(iter(seed.followers()[9]))
    assert ledger.check_timeline("home", follower, [stored], started_at=0) is None

    # a stub or a wrong answer
    assert ledger.check_timeline("user", 9, {"posts": []}, 0) == "timeline_not_a_list"
    assert ledger.check_timeline("user", 10, [stored], 0) == "user_timeline_foreign_post"
    stranger = next(u for u in range(seed.USERS) if 9 not in seed.followees()[u] and u != post["mention"])
    assert ledger.check_timeline("home", stranger, [stored], 0) == "home_timeline_unrelated_post"
    forged = json.loads(json.dumps(stored))
    forged["text"] = forged["text"].replace("sig:", "sig:0")[:-1]
    assert ledger.check_timeline("user", 9, [forged], 0) == "post_signature_invalid"
    other_key = Ledger("z" * 24)
    assert other_key.check_timeline("user", 9, [stored], 0) == "post_signature_invalid"
    unshortened = json.loads(json.dumps(stored))
    unshortened["urls"] = []
    assert ledger.check_timeline("user", 9, [unshortened], 0) == "post_url_not_shortened"
    unresolved = json.loads(json.dumps(stored))
    unresolved["user_mentions"] = []
    assert ledger.check_timeline("user", 9, [unresolved], 0) == "post_mention_unresolved"
    older = json.loads(json.dumps(stored))
    older["timestamp"] = 2000
    assert ledger.check_timeline("user", 9, [stored, older], 0) == "timeline_not_newest_first"
    assert ledger.check_timeline("user", 9, [stored] * 11, 0) == "timeline_too_long"


def test_a_frozen_timeline_is_caught_once_a_new_post_settled():
    ledger, rng = Ledger("k" * 24), random.Random(2)
    old_post, old = _stored(ledger, rng, user_id=9)
    new_post, new = _stored(ledger, rng, user_id=9)
    ledger.composed(new_post, sent_at=time.time())
    settled = 1e12  # the read started long after the compose succeeded
    assert ledger.check_timeline("user", 9, [old], settled) == "timeline_missing_recent_post"
    assert ledger.check_timeline("user", 9, [new, old], settled) is None
    assert ledger.check_timeline("user", 9, [old], started_at=0) is None  # too recent to demand it
    reader = next(iter(seed.followers()[9]))
    assert ledger.check_timeline("home", reader, [old], settled) == "timeline_missing_recent_post"


def test_after_the_stores_were_put_back_the_ledger_expects_nothing_it_wrote_before():
    """A reset restores post-storage and the timelines as deployed: the posts composed before it are gone by design.
    The generator forgets them (``/control`` ``"forget": true``, sent by the reset), so the next attempt's timelines are
    not graded against them (red-team round 19 saw an honest fix fail on ``timeline_missing_recent_post``)."""
    ledger, rng = Ledger("k" * 24), random.Random(3)
    old_post, old = _stored(ledger, rng, user_id=9)
    ledger.sending(old_post)
    ledger.composed(old_post, sent_at=time.time())
    settled = 1e12
    assert ledger.check_timeline("user", 9, [], settled) == "timeline_missing_recent_post"
    ledger.forget()
    assert ledger.expected("user", 9) is None and ledger.unconfirmed_since("user", 9, 0) == 0
    assert ledger.check_timeline("user", 9, [], settled) is None
    new_post, new = _stored(ledger, rng, user_id=9)  # what is composed after the reset is demanded again
    ledger.composed(new_post, sent_at=time.time())
    assert ledger.check_timeline("user", 9, [], settled) == "timeline_missing_recent_post"
    assert ledger.check_timeline("user", 9, [new], settled) is None


def test_nginx_config_proxies_the_api_to_the_gateway():
    conf = nginx.render_conf("/tmp/p", 8080, "127.0.0.1:8082")
    assert "listen 8080;" in conf and "server 127.0.0.1:8082;" in conf
    assert "location /wrk2-api/" in conf and "daemon off;" in conf


def test_the_shipped_idl_is_what_the_tables_encode():
    from importlib import resources

    shipped = (resources.files("sregym_app_social_network") / "social_network.thrift").read_text()
    assert shipped == idl.render_thrift(), "regenerate social_network.thrift from idl.render_thrift()"
    assert "list<Post> ReadHomeTimeline(1: i64 req_id, 2: i64 user_id, 3: i32 start, 4: i32 stop, " \
           "5: map<string, string> carrier)" in shipped


def test_pooled_connections_are_reused_then_recycled(serve, monkeypatch):
    addr = serve("media-service", services.MediaHandler(services.Context(cfg=cfg("media-service"))))
    c = client("media-service", addr)
    c.ComposeMedia(1, [], [])
    first = c.pool.queue[0]
    c.ComposeMedia(2, [], [])
    assert c.pool.queue[0] is first  # reused while young
    monkeypatch.setattr(rpc, "MAX_CONN_AGE_S", 0.0)
    c.ComposeMedia(3, [], [])
    assert c.pool.queue[0] is not first  # re-resolved and reconnected once old


def _page(ledger: Ledger, rng: random.Random, author: int, timestamps_ms: list[int]) -> list[dict]:
    """Signed posts by ``author`` on a timeline page, newest first, stamped as given."""
    page = []
    for ts in sorted(timestamps_ms, reverse=True):
        _post, stored = _stored(ledger, rng, user_id=author)
        stored["timestamp"] = ts
        page.append(stored)
    return page


def test_posts_of_failed_composes_may_outrank_an_expected_post_but_a_lossy_fan_out_still_fails():
    """Issue 20: a compose that answered an error may still have written the followers' home timelines
    (the services write side by side, with no transaction), so a full page of posts at least as new as the
    expected one excuses its absence. A fan-out that drops the post is caught whatever fills the page."""
    ledger, rng = Ledger("k" * 24), random.Random(3)
    author = 9
    reader = next(iter(seed.followers()[author]))
    expected_post, _stored_expected = _stored(ledger, rng, user_id=author)
    sent = 1_700_000_000.0
    ledger.composed(expected_post, sent_at=sent)
    read_at = 1e12  # long after the compose settled
    newer = [int(sent * 1000) + 50 * i for i in range(PAGE)]  # failed composes' posts, stamped after it

    # a full page of newer (never confirmed) posts: the expected post may rightly be on the next page
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer), read_at) is None
    assert ledger.check_timeline("user", author, _page(ledger, rng, author, newer), read_at) is None
    # fan-out lost the post: the page still holds an older post it should have outranked
    older = newer[:-1] + [int(sent * 1000) - 60_000]
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, older), read_at) == \
        "timeline_missing_recent_post"
    # ... or the page is not even full
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer[:3]), read_at) == \
        "timeline_missing_recent_post"
    assert ledger.check_timeline("home", reader, [], read_at) == "timeline_missing_recent_post"
    # a frozen page from before the fault (every post older than the expected one)
    frozen = [int(sent * 1000) - 1000 * (i + 1) for i in range(PAGE)]
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, frozen), read_at) == \
        "timeline_missing_recent_post"
    # posts stamped by a clock a little behind the generator's still count as newer, a second behind do not
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, [t - 400 for t in newer]), read_at) is None
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, [t - 1000 for t in newer]), read_at) == \
        "timeline_missing_recent_post"


def test_posts_of_failed_composes_that_a_read_does_not_show_still_outrank_the_expected_one():
    """social-db-revoke-post-storage-postgres, 2026-11-27 re-run: a compose sent while post-storage refused
    writes answered an error but had put its post's id on the followers' home timelines; the read skips ids
    post-storage does not hold, so a reader's page came back with 9 posts, all newer than the expected one,
    which was 11th. The ledger counts such composes; a short page is excused by as many of them, no more."""
    ledger, rng = Ledger("k" * 24), random.Random(4)
    author = 9
    reader = next(iter(seed.followers()[author]))
    expected_post, _ = _stored(ledger, rng, user_id=author)
    sent = time.time() - 600
    ledger.composed(expected_post, sent_at=sent)
    read_at = time.time() + 60
    newer = [int(sent * 1000) + 50 * (i + 1) for i in range(PAGE - 1)]

    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer), read_at) == \
        "timeline_missing_recent_post"
    lost, _ = _stored(ledger, rng, user_id=author)  # its StorePost failed: listed, never shown
    ledger.sending(lost)
    # in flight: it may already have written the timelines
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer), read_at) is None
    ledger.failed(lost)
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer), read_at) is None
    assert ledger.check_timeline("user", author, _page(ledger, rng, author, newer), read_at) is None
    # one hidden post excuses one missing place, not two
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, newer[:-1]), read_at) == \
        "timeline_missing_recent_post"
    # nor does it excuse a page that holds a post older than the expected one
    older = newer[:-1] + [int(sent * 1000) - 60_000]
    assert ledger.check_timeline("home", reader, _page(ledger, rng, author, older), read_at) == \
        "timeline_missing_recent_post"
    # a reader the failed compose did not go to gets no excuse
    other = next(u for u in range(seed.USERS) if u not in seed.followers()[author] and u != lost["mention"]
                 and u != author)
    assert ledger.unconfirmed_since("home", other, sent) == 0
    # a failed compose that the page does show is not counted a second time
    assert ledger.unconfirmed_since("home", reader, sent, shown=[lost["nonce"]]) == 0
    # a compose that failed before the expected one was sent does not count
    ledger2 = Ledger("k" * 24)
    early, _ = _stored(ledger2, rng, user_id=author)
    ledger2.sending(early)
    ledger2.failed(early)
    expected2, _ = _stored(ledger2, rng, user_id=author)
    ledger2.composed(expected2, sent_at=time.time() + 5)
    assert ledger2.check_timeline("home", reader, _page(ledger2, rng, author, [
        int((time.time() + 5) * 1000) + 50 * (i + 1) for i in range(PAGE - 1)]), read_at) == \
        "timeline_missing_recent_post"
    # a compose that answered success afterwards is no longer unconfirmed
    retried, _ = _stored(ledger, rng, user_id=author)
    ledger.sending(retried)
    assert ledger.unconfirmed_since("home", reader, sent) == 2
    ledger.composed(retried, sent_at=time.time())
    assert ledger.unconfirmed_since("home", reader, sent) == 1


def test_the_ledger_keeps_only_the_latest_page_of_unconfirmed_composes_per_timeline():
    ledger, rng = Ledger("k" * 24), random.Random(5)
    for _ in range(3 * PAGE):
        post, _ = _stored(ledger, rng, user_id=9)
        ledger.sending(post)
        ledger.failed(post)
    assert len(ledger.unconfirmed[("user", 9)]) == PAGE
    assert ledger.unconfirmed_since("user", 9, 0.0) == PAGE
