"""A container's own PYTHONPATH (its image's ENV or its pod spec's env) survives the node's additions."""

from __future__ import annotations

from sregym_cluster_embedded.node.images import Recipe
from sregym_cluster_embedded.node.launch import build_context


def _env(tmp_path, recipe_env, container_env, extra):
    pod = {"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {}}
    recipe = Recipe.make(entrypoint=["python3"], env=recipe_env)
    return build_context(pod=pod, container={"name": "web"}, recipe=recipe, env=container_env,
                         container_root=tmp_path / "c", mounts={}, extra_env=extra).env


def test_the_images_search_path_follows_the_nodes_hook(tmp_path):
    env = _env(tmp_path, {"PYTHONPATH": "/opt/site"}, {}, {"PYTHONPATH": "/hook"})
    assert env["PYTHONPATH"] == "/hook:/opt/site"
    # the pod spec's env replaces the image's, as on a real node; the node's entries are not repeated
    env = _env(tmp_path, {"PYTHONPATH": "/opt/site"}, {"PYTHONPATH": "/hook:/app"}, {"PYTHONPATH": "/hook"})
    assert env["PYTHONPATH"] == "/hook:/app"
    assert _env(tmp_path, {}, {}, {"PYTHONPATH": "/hook"})["PYTHONPATH"] == "/hook"
    assert _env(tmp_path, {"PYTHONPATH": "/opt/site"}, {}, {})["PYTHONPATH"] == "/opt/site"
