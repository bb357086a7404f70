"""Images that installed SREGym plugins register (``AppSpec.images`` and ``sregym_local_images``),
as an image source for the node agents' catalog."""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sregym_core.errors import PluginError, SregymError
from sregym_core.types import LocalImage

from .node.images import Recipe

if TYPE_CHECKING:
    from sregym_core.catalog import Catalog


class PluginImageError(PluginError):
    """A local image an installed plugin declares cannot be run (names the image and its owner)."""


def plugin_image_source(host: Catalog) -> Iterable[tuple[str, Recipe]]:
    """(pattern, recipe) for every local image the plugins of ``host`` declare (the cluster process
    hands its own host over: it is a process of its own).

    A plugin that fails to load or declares an image that cannot run stops the node agent with an
    error naming the plugin and the image, never a silently missing image."""
    _distributions_by_import_name.cache_clear()
    _import_names_by_distribution.cache_clear()
    _editable_dependencies.cache_clear()
    return [(image.image, image_recipe(owner, image)) for owner, image in host.get_local_image_owners()]


def image_recipe(owner: str, image: LocalImage) -> Recipe:
    """The node agent's recipe for ``image``; a broken image is a :class:`PluginImageError`."""
    try:
        return Recipe.make(entrypoint=image.argv, cmd=image.cmd, env=dict(image.env), workdir=image.workdir,
                           description=image.summary or image.image, packages=package_dirs(image.argv))
    except Exception as exc:
        hints = exc.hints if isinstance(exc, SregymError) else ()
        raise PluginImageError(f"local image {image.image!r} of {owner} cannot run: {exc}",
                               hints=(*hints, f"fix or uninstall {owner}; `sregym plugins` lists what is installed")) from exc


def package_dirs(argv) -> list[str]:
    """The source directories a ``python -m package.module`` image runs from: the package's own
    and those of its editable-installed dependencies (an editable install points into the
    checkout). What an isolated pod sees of the checkout, and nothing else."""
    argv = list(argv)
    if "-m" not in argv[:-1]:
        return []
    module = argv[argv.index("-m") + 1]
    top = module.split(".")[0]
    dirs = _package_dir(top)
    if not dirs:
        raise PluginError(f"a local image runs `python -m {module}`, but no package {top!r} is installed",
                          hints=("install the plugin that ships the image's package, or fix the image's argv",))
    for dep in _editable_dependencies(top):
        dirs += [d for d in _package_dir(dep) if d not in dirs]
    return dirs


def _package_dir(top: str) -> list[str]:
    """Where the top-level package ``top`` lives, found without importing it (empty if nowhere)."""
    spec = importlib.util.find_spec(top)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [str(Path(p).resolve()) for p in spec.submodule_search_locations]
    return [str(Path(spec.origin).resolve())] if spec.origin else []


@functools.lru_cache(maxsize=None)
def _distributions_by_import_name() -> Mapping[str, list[str]]:
    """Top-level import name -> the distributions that install it (scanning the environment costs
    most of a second, so once per catalog)."""
    return metadata.packages_distributions()


@functools.lru_cache(maxsize=None)
def _import_names_by_distribution() -> dict[str, list[str]]:
    """Distribution name -> the top-level import names it installs: the scan above, inverted.
    ``plugin_image_source`` clears these caches so each catalog sees what is installed now."""
    by_distribution: dict[str, list[str]] = {}
    for package, distributions in _distributions_by_import_name().items():
        for name in distributions:
            by_distribution.setdefault(name, []).append(package)
    return by_distribution


@functools.lru_cache(maxsize=None)
def _editable_dependencies(top: str) -> tuple[str, ...]:
    """Top-level import names of the editable installs the distribution of ``top`` requires."""
    packages = _import_names_by_distribution()
    out: list[str] = []
    for dist_name in _distributions_by_import_name().get(top, []):
        try:
            requires = metadata.distribution(dist_name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in requires:
            if "extra ==" in requirement:
                continue
            name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip()
            try:
                dep_name = metadata.distribution(name).metadata["Name"]  # parsed once per requirement
            except metadata.PackageNotFoundError:
                continue
            for pkg in packages.get(dep_name, []):
                if pkg.startswith("_") or pkg in out:
                    continue
                # installed into the environment (bound with it) or editable (a source directory)
                if any(not _inside_environment(d) for d in _package_dir(pkg)):
                    out.append(pkg)
    return tuple(out)


def _inside_environment(path: str) -> bool:
    import sys

    return any(path.startswith(str(Path(p).resolve()) + "/") for p in {sys.prefix, sys.base_prefix})
