"""Local images from installed plugins: a broken one stops the node agent with an error naming it."""

from __future__ import annotations

import pytest
from sregym_core import hookimpl
from sregym_core.errors import PluginError, SregymError
from sregym_core.plugins import new_plugin_host
from sregym_core.types import AppSpec, LocalImage

from sregym_cluster_embedded.node.images import default_catalog
from sregym_cluster_embedded.plugin_images import PluginImageError, plugin_image_source


class GoodImages:
    @hookimpl
    def sregym_local_images(self):
        return [LocalImage(image="example/echo:*", argv=("python3", "-m", "http.server"), summary="echo")]


class BrokenImages:
    @hookimpl
    def sregym_local_images(self):
        return [LocalImage(image="example/broken:1.0", argv=("python3", "-m", "sregym_no_such_pkg.serve"))]


class BrokenApp:
    @hookimpl
    def sregym_apps(self):
        return [AppSpec(name="shop", summary="s", namespace="shop", description="d",
                        images=(LocalImage(image="example/shop:*", argv=("python", "-m", "sregym_no_such_shop.web")),))]


class FailingHook:
    @hookimpl
    def sregym_local_images(self):
        raise RuntimeError("registry unreachable")


@pytest.fixture
def host():
    """The host the cluster process hands over (no process-wide host is installed or read)."""
    return new_plugin_host(builtins=False, entry_points=False)


def test_a_working_image_becomes_a_recipe(host):
    host.register(GoodImages(), name="good-images")
    [(pattern, recipe)] = plugin_image_source(host)
    assert pattern == "example/echo:*"
    assert recipe.entrypoint == ("python3", "-m", "http.server") and recipe.description == "echo"
    assert default_catalog([lambda: plugin_image_source(host)]).resolve("example/echo:2") is not None


def test_a_broken_plugin_image_is_an_error_naming_the_plugin_and_the_image(host):
    host.register(GoodImages(), name="good-images")
    host.register(BrokenImages(), name="broken-images")
    with pytest.raises(PluginImageError) as info:
        default_catalog([lambda: plugin_image_source(host)])  # where the node agent uses it
    message = str(info.value)
    assert "'example/broken:1.0'" in message and "plugin 'broken-images'" in message
    assert "sregym_no_such_pkg" in message
    assert isinstance(info.value, PluginError) and isinstance(info.value, SregymError)
    assert any("install" in hint for hint in info.value.hints)


def test_a_broken_app_image_names_the_app(host):
    host.register(BrokenApp(), name="shop-app")
    with pytest.raises(PluginImageError, match=r"local image 'example/shop:\*' of app 'shop' cannot run"):
        plugin_image_source(host)


def test_a_plugin_whose_image_hook_fails_is_an_error_not_a_missing_image(host):
    host.register(FailingHook(), name="failing-images")
    with pytest.raises(PluginError, match=r"plugin 'failing-images' .*failed in sregym_local_images: RuntimeError"):
        plugin_image_source(host)


def test_the_cluster_process_reads_images_through_a_host_of_its_own(host, tmp_path, monkeypatch):
    """The cluster runs in a process of its own: it builds that process's host once, when the node
    agent first asks, and never reaches for the deprecated process-wide host."""
    import warnings

    import sregym_core.plugins

    from sregym_cluster_embedded import daemon
    from sregym_cluster_embedded.settings import ClusterSettings

    host.register(GoodImages(), name="good-images")
    built = []
    monkeypatch.setattr(sregym_core.plugins, "new_plugin_host", lambda: built.append(host) or host)
    settings = ClusterSettings(name="images", state_dir=tmp_path / "images", nodes=0, pod_cidr_prefix="127.250",
                               service_cidr_prefix="127.251")
    proc = daemon.ClusterProcess(settings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert [pattern for pattern, _ in proc._plugin_images()] == ["example/echo:*"]
        assert [pattern for pattern, _ in proc._plugin_images()] == ["example/echo:*"]
    assert built == [host]
