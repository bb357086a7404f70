"""``silent-data-corruption``: reads of some blocks under a datastore's volume return altered bytes,
with no error (upstream's dm-flakey ``random_read_corrupt`` under the volume).

The node agent's FUSE layer (mechanism ``fuse-badblocks``, ``corrupt``) alters what reads of the
chosen blocks return: on PostgreSQL, blocks of the largest user table's file (the same map as
``disk-bad-blocks``: a fixed function of the file's inode, the block number and a seed, at least one
block and not all), each read back with the ASCII digits at ``flips`` fixed positions of its
second half changed into other digits. That half of a heap page holds its rows, and only digits
change (never a length, a row header or a pointer), so PostgreSQL notices nothing (no data
checksums here: the app's ``initdb`` runs without ``--data-checksums``), neither errs nor crashes,
and serves other values than were written: hotel ids (text) and numbers, which the workload's
content check catches. The datastores restart at inject (a cold start: no page read before stays
cached).

The corruption stays with the disk (the bound PersistentVolume); where PostgreSQL wrote a page it
read corrupted, the disk now holds the altered bytes too. The fix is a new volume and a rebuild
of the data (from the seed or a backup), as after any silent corruption. Only the layer can alter
what a read returns: there is no shim fallback, and the fault refuses where the layer is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sregym_fault_node import hooks

from sregym_core.faultkit import WORKLOADS, function_fault, schema
from sregym_core.types import TargetSelector

from . import badblocks

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

MECHANISMS = {"read": ("fuse-badblocks",)}


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    group, listed, claims = badblocks.survey(ctx, target)
    frac = round(params["fraction"], 4)
    mapped = badblocks._table_map(ctx, target, claims[0], frac, listed)
    if mapped is None:
        from sregym_core.errors import PermanentFaultError

        raise PermanentFaultError(f"{target.component.name}: no user table file to corrupt",
                                  hints=("silent-data-corruption needs a PostgreSQL datastore with a seeded table",))
    spec: dict[str, Any] = {"namespace": ctx.namespace, "labels": hooks.labels_of(ctx, target, listed),
                            "calls": ["read"], "errno": "EIO", "mode": "badblocks", "frac": frac,
                            "block": badblocks.BLOCK, "seed": mapped["seed"], "corrupt": True,
                            "flips": int(params["flips"]), "paths": mapped["paths"], "whole_volume": False,
                            "volumes": [{"namespace": ctx.namespace, "claim": c} for c in claims],
                            "mechanisms": list(MECHANISMS["read"]), "fuse_install": True}
    ctx.state.update(table=mapped["table"], file=mapped["file"], corrupt_blocks=mapped["bad"][:32])
    badblocks._arm(ctx, target, spec, claims, True, group, listed)


def _values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {**params, "volumes": state.get("volumes", []), "claims": state.get("claims", []),
            "table": state.get("table", "largest"),
            **{k: state[k] for k in ("file", "corrupt_blocks") if k in state}}


SILENT_DATA_CORRUPTION = function_fault(
    name="silent-data-corruption", layer="hardware",
    selector=TargetSelector(kinds=WORKLOADS, roles=("db:postgres",), requires=("pvcs",)),
    summary="The disk under the datastore's volume returns altered bytes for some blocks, with no error",
    params_schema=schema(fraction={"type": "number", "minimum": 0.01, "maximum": 0.9, "default": 0.5},
                         flips={"type": "integer", "minimum": 1, "maximum": 4096, "default": 1024}),
    inject=inject, recover=badblocks.recover, is_present=badblocks.is_present,
    reference_fix=badblocks.reference_fix,
    resource_kind="PersistentVolume",
    mechanism="silent data corruption on the volume's disk: reads of some blocks return altered bytes, no error",
    keywords=("silent data corruption", "corrupted data", "wrong data", "bit rot", "dm-flakey", "disk"),
    values=_values,
    prose="The disk under {component}'s volume ({volumes}) silently corrupts data: reads of some blocks of "
          "its {table} table return altered bytes without any error, so {component} serves wrong values "
          "(rows that differ from what was written) while every query succeeds. Fix: move {component} to a "
          "new volume (a new claim in its pod template) and rebuild its data.",
    capabilities=frozenset({"embedded"}), failure_mode="persistent", fault_mechanisms=MECHANISMS,
    symptoms=("wrong results with no error", "content checks fail", "values differ from what was written"),
)
