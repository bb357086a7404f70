"""My App's own tests, fast (no cluster): the contract suites, the inventory against the manifests,
the shipped files against build(), and the workload generator's content checks against the real
frontend serving over HTTP.

Run from this folder: ``pytest -m "not slow"`` (after ``pip install -e .``).
"""

from __future__ import annotations

import asyncio
import random

import pytest

pytest.importorskip("sregym_app_myapp", reason="install the app first: pip install -e . (docs/adding-an-app.md)")

import sregym_app_myapp.plugin  # noqa: E402
from sregym_app_myapp import backend, data, frontend, manifests, workload  # noqa: E402
from sregym_app_myapp.app import app_spec  # noqa: E402
from sregym_app_myapp.topology import BACKEND, FRONTEND, NAMESPACE, WORKLOAD_NAMESPACE  # noqa: E402
from sregym_app_myapp.web import Peer, json_server  # noqa: E402
from sregym_appkit.objects import INFRASTRUCTURE_PRIORITY, REPLACE_IN_PLACE  # noqa: E402
from sregym_appkit.testing import assert_inventory_matches, assert_shipped_files_are_built  # noqa: E402

from sregym_core.testing.contracts import AppContract, ProblemContract  # noqa: E402

pytest_plugins = ["sregym_core.testing"]  # the harness fixtures the contract suites use


class TestApp(AppContract):
    plugin = sregym_app_myapp.plugin


class TestProblems(ProblemContract):
    plugin = sregym_app_myapp.plugin


def test_inventory_matches_the_manifests():
    assert_inventory_matches(app_spec(), manifests.render())


def test_shipped_manifests_are_the_built_ones(tmp_path):
    assert_shipped_files_are_built(manifests.SHIPPED, tmp_path)


def test_render_applies_the_parameters_and_refuses_unknown_ones():
    docs = manifests.render({"image_tag": "1.0.0", "workload_rate": 7})
    containers = [c for d in docs for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])]
    assert {c["image"] for c in containers if c["image"].startswith("sregym/")} == {"sregym/myapp:1.0.0"}
    generator = next(c for c in containers if c["name"] == "load-generator")
    assert {"name": "WORKLOAD_RATE", "value": "7"} in generator["env"]
    with pytest.raises(ValueError):
        manifests.render({"replica": 2})


def test_faults_can_show_and_the_generator_is_out_of_their_reach():
    docs = {(d["kind"], d["metadata"]["name"]): d for d in manifests.render()}
    for name in (FRONTEND, BACKEND):  # an image fault on a one-replica Deployment takes its only pod
        assert docs[("Deployment", name)]["spec"]["strategy"] == REPLACE_IN_PLACE
    generator = docs[("Deployment", "load-generator")]
    assert generator["metadata"]["namespace"] == WORKLOAD_NAMESPACE
    assert generator["spec"]["template"]["spec"]["priorityClassName"] == INFRASTRUCTURE_PRIORITY
    app = app_spec()
    assert app.hidden_namespaces == (WORKLOAD_NAMESPACE,) and app.namespace == NAMESPACE
    assert docs[("Namespace", WORKLOAD_NAMESPACE)]["metadata"]["labels"]["sregym.dev/hidden"] == "true"


class SeededRows:
    """The database as the backend reads it, from the seeded data (``price_shift`` corrupts prices)."""

    def __init__(self, price_shift: int = 0) -> None:
        self.rows = [(i["id"], i["name"], i["price_cents"] + price_shift) for i in data.items()]

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        return [r for r in self.rows if not args or r[0] == args[0]]


def _answers(backend_rows: SeededRows | None) -> dict[str, workload.Outcome]:
    """One request of every kind sent by the generator to the real frontend, whose backend serves
    ``backend_rows`` (None: no backend listens)."""
    servers = []
    backend_addr = "127.0.0.1:9"  # the discard port: nothing answers there
    if backend_rows is not None:
        servers.append(json_server(BACKEND, 0, backend.routes(backend_rows)))  # type: ignore[arg-type]
        backend_addr = f"127.0.0.1:{servers[-1].httpd.server_address[1]}"
    servers.append(json_server(FRONTEND, 0, frontend.routes(Peer(FRONTEND, BACKEND, backend_addr, 2.0))))
    for server in servers:
        server.start()
    target = f"http://127.0.0.1:{servers[-1].httpd.server_address[1]}"

    async def send_each() -> dict[str, workload.Outcome]:
        gen = workload.CatalogueGenerator(workload.parse_settings(["--target", target], description="test",
                                                              default_target=target))
        await gen.open()
        try:
            rng = random.Random(1)
            return {kind: await gen.send(kind, workload.request_for(kind, rng)) for kind in workload.ENDPOINTS}
        finally:
            await gen.close()

    try:
        return asyncio.run(send_each())
    finally:
        for server in servers:
            server.stop()


def test_the_generator_passes_right_answers_and_catches_wrong_content_and_failures():
    right = _answers(SeededRows())
    assert all(o.status == 200 and not o.wrong and not o.error for o in right.values()), right
    shifted = _answers(SeededRows(price_shift=1))  # a 200 with the wrong price is a content error
    assert shifted["item"].status == 200 and shifted["item"].wrong == "item_wrong_price"
    down = _answers(None)  # the backend gone: the frontend answers 502, naming it
    assert {o.status for o in down.values()} == {502}
