"""Differential test: random kubectl-style strategic merge patches, ours vs ``kubectl patch --local``.

Patches mix the directives kubectl emits (``$setElementOrder``, ``$patch: delete|replace``,
``$retainKeys``, nulls) over existing and new list elements. Content the object did not have is
compared after dropping directives, which apimachinery would store verbatim but the real server
then discards when it decodes into typed structs.
"""

from __future__ import annotations

import concurrent.futures
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _fixtures_patch import kubectl_local_patch, kubectl_path, prune_empty
from sregym_cluster_embedded.apiserver.patching import PatchError, apply_patch
from test_patch_smp import _deployment

CONTAINERS = ["web", "side", "x", "y"]
ENV = ["A", "B", "C", "D", "E"]
FINALIZERS = ["a/one", "b/two", "c/three", "d/four"]


def _env_patch(rnd: random.Random) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for name in rnd.sample(ENV, rnd.randint(0, 3)):
        roll = rnd.random()
        if roll < 0.2:
            items.append({"$patch": "delete", "name": name})
        elif roll < 0.3:
            items.append({"name": name, "value": None})
        else:
            items.append({"name": name, "value": str(rnd.randint(0, 9))})
    patch: dict[str, Any] = {"env": items}
    if rnd.random() < 0.5:
        patch["$setElementOrder/env"] = [{"name": n} for n in rnd.sample(ENV, rnd.randint(1, 5))]
    if rnd.random() < 0.1:
        patch["env"] = [*items, {"$patch": "replace"}]
    return patch


def _container_patch(rnd: random.Random, name: str) -> dict[str, Any]:
    if rnd.random() < 0.1:
        return {"$patch": "delete", "name": name}
    patch: dict[str, Any] = {"name": name}
    if rnd.random() < 0.3:
        patch["image"] = f"img:{rnd.randint(1, 9)}"
    if rnd.random() < 0.5:
        patch.update(_env_patch(rnd))
    if rnd.random() < 0.2:
        patch["ports"] = [{"containerPort": rnd.choice([80, 443, 8080])}]
    if rnd.random() < 0.1:
        patch["args"] = ["--z"]
    return patch


def random_patch(rnd: random.Random) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if rnd.random() < 0.8:
        spec["containers"] = [_container_patch(rnd, n) for n in rnd.sample(CONTAINERS, rnd.randint(1, 3))]
    if rnd.random() < 0.4:
        spec["$setElementOrder/containers"] = [{"name": n} for n in rnd.sample(CONTAINERS, rnd.randint(1, 4))]
    if rnd.random() < 0.2:
        source = rnd.choice(["emptyDir", "configMap"])
        spec["volumes"] = [
            {"name": rnd.choice(["data", "cfg", "new"]), source: {} if rnd.random() < 0.5 else {"name": "q"}}
        ]
        if rnd.random() < 0.5:
            spec["volumes"][0]["$retainKeys"] = ["name", source]
    if rnd.random() < 0.2:
        spec["initContainers"] = [_container_patch(rnd, "init")]
    patch: dict[str, Any] = {"spec": {"template": {"spec": spec}}}
    if rnd.random() < 0.2:
        meta: dict[str, Any] = {
            "$deleteFromPrimitiveList/finalizers": rnd.sample(["a/one", "b/two", "z"], rnd.randint(1, 2))
        }
        if rnd.random() < 0.6:
            meta["$setElementOrder/finalizers"] = rnd.sample(FINALIZERS[:3], rnd.randint(1, 3))
            # Without $setElementOrder (never sent by kubectl) apimachinery's result depends on Go's
            # random map iteration order, so a patch list only comes with one.
            if rnd.random() < 0.5:
                meta["finalizers"] = rnd.sample(["c/three", "b/two"], rnd.randint(1, 2))
        if rnd.random() < 0.3:
            meta["labels"] = {"$patch": "replace", "z": "1"}
        patch["metadata"] = meta
    elif rnd.random() < 0.3:
        patch["metadata"] = {"finalizers": rnd.sample(FINALIZERS[:3], rnd.randint(0, 3))}
        if rnd.random() < 0.5:
            patch["metadata"]["$setElementOrder/finalizers"] = rnd.sample(FINALIZERS, rnd.randint(1, 4))
    if rnd.random() < 0.2 and "labels" not in patch.get("metadata", {}):
        patch["metadata"] = {**patch.get("metadata", {}), "labels": {"tier": None, "new": "1"}}
    return patch


def _without_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_without_directives(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def _compare(seed: int) -> str | None:
    rnd = random.Random(seed)
    obj, patch = _deployment(), random_patch(rnd)
    with tempfile.TemporaryDirectory() as tmp:
        expected = kubectl_local_patch(obj, patch, "strategic", Path(tmp))
    try:
        ours: Any = apply_patch(
            obj,
            json.dumps(patch).encode(),
            "application/strategic-merge-patch+json",
            kind="Deployment",
            group="apps",
        )
    except PatchError as exc:
        ours = f"{exc.code}: {exc.message}"
    if isinstance(expected, str) and isinstance(ours, str):
        return None
    if (
        isinstance(expected, dict)
        and isinstance(ours, dict)
        and prune_empty(_without_directives(expected)) == prune_empty(ours)
    ):
        return None
    return f"seed {seed}: patch {json.dumps(patch)}\n kubectl: {json.dumps(expected)[:800]}\n ours: {json.dumps(ours)[:800]}"


@pytest.mark.slow
def test_random_strategic_patches_match_kubectl() -> None:
    if not kubectl_path():
        pytest.skip("kubectl not installed")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(_compare, range(80)) if f]
    assert not failures, "\n".join(failures[:3])
