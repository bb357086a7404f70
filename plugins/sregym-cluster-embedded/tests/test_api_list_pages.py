"""A paged list is one state: every page shows the objects at the first page's resourceVersion and
carries it, as a real API server serves a continue token from the first page's etcd revision.

kubectl relies on it: ``kubectl get --watch`` lists in pages of 500, and only when every page
reports the same resourceVersion does it watch from there; otherwise it watches "from now" once it
has printed the pages, and what was written meanwhile never shows (issue #33: the noise test's
``ConfigReloaded`` event, created and deleted while kubectl printed 1,280 events, was never seen).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sregym_cluster_embedded.apiserver.errors import ApiError
from sregym_cluster_embedded.apiserver.store import HISTORY
from sregym_cluster_embedded.client import LocalClient, new_local_cluster

NS = "default"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def event(name: str, reason: str = "Pulled") -> dict:
    return {"metadata": {"name": name}, "type": "Normal", "reason": reason, "message": f"{reason} {name}",
            "involvedObject": {"kind": "Pod", "name": name.split(".")[0], "namespace": NS}}


@pytest.fixture()
def c() -> LocalClient:
    client = new_local_cluster()
    for i in range(6):
        run(client.create("events", event(f"pod-{i}.0000000000000001"), NS))
    return client


def _pages(c: LocalClient, limit: int, between=lambda page: None) -> list[tuple[list[dict], str]]:
    rt = c.core.registry.by_key("events")
    pages, token = [], None
    while True:
        items, rv, token, _ = c.core.list(rt, NS, limit=limit, continue_token=token)
        pages.append((items, rv))
        if not token:
            return pages
        between(len(pages))


def _names(pages: list[tuple[list[dict], str]]) -> list[str]:
    return [o["metadata"]["name"] for items, _ in pages for o in items]


def test_every_page_shows_the_first_pages_state_and_version(c: LocalClient) -> None:
    def writes(page: int) -> None:
        if page == 1:  # between the first and second page: a create, a delete and an update after the key
            run(c.create("events", event("pod-9.0000000000000009", "ConfigReloaded"), NS))
            run(c.delete("events", "pod-4.0000000000000001", NS))
            run(c.patch("events", "pod-5.0000000000000001", {"message": "changed"}, NS))

    before = c.core.store.rv
    pages = _pages(c, 2, writes)
    assert {rv for _, rv in pages} == {str(before)}
    assert _names(pages) == [f"pod-{i}.0000000000000001" for i in range(6)]
    assert pages[-1][0][-1]["message"] == "Pulled pod-5.0000000000000001"
    # a new list shows the writes
    assert _names(_pages(c, 2)) == [*(f"pod-{i}.0000000000000001" for i in (0, 1, 2, 3, 5)), "pod-9.0000000000000009"]
    assert _pages(c, 10)[0][0][4]["message"] == "changed"


def test_a_watch_from_the_lists_version_sees_what_was_written_while_paging(c: LocalClient) -> None:
    def writes(page: int) -> None:
        if page == 2:
            run(c.create("events", event("user.00000000000000aa", "ConfigReloaded"), NS))
            run(c.delete("events", "user.00000000000000aa", NS))

    pages = _pages(c, 2, writes)
    assert len({rv for _, rv in pages}) == 1  # kubectl watches from it only when the pages agree
    assert "user.00000000000000aa" not in _names(pages)

    async def watch() -> list[tuple[str, str]]:
        seen = []
        async for event_type, obj in c.watch("events", NS, resource_version=pages[0][1]):
            seen.append((event_type, obj["metadata"]["name"]))
            if event_type == "DELETED":
                return seen
        return seen

    assert run(asyncio.wait_for(watch(), 30)) == [("ADDED", "user.00000000000000aa"), ("DELETED", "user.00000000000000aa")]


def test_a_page_past_the_history_is_gone(c: LocalClient) -> None:
    rt = c.core.registry.by_key("events")
    _, _, token, _ = c.core.list(rt, NS, limit=2)
    for i in range(HISTORY + 1):
        c.core.store.put("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "churn", "namespace": NS}, "data": {"i": str(i)}})
    with pytest.raises(ApiError) as err:
        c.core.list(rt, NS, limit=2, continue_token=token)
    assert err.value.code == 410 and err.value.reason == "Expired"
