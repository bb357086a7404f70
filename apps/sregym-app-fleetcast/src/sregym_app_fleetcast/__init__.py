"""FleetCast: satellite orbital data served from an operator-managed datastore.

Upstream's FleetCast runs an app on a TiDB cluster that the TiDB operator builds from a
``TidbCluster`` resource. Ours keeps that shape with parts the embedded cluster can run: a
``DatastoreCluster`` custom resource (group ``fleetcast.sregym.io``) that an operator written with
kopf (:mod:`operator`, running as a pod) reconciles into a replicated Redis StatefulSet, its
Services, volume claims and a PodDisruptionBudget; the ``fleetcast`` HTTP service (:mod:`api`)
keeps its satellite catalogue and observations there; a load generator (:mod:`workload`) checks
every answer against the seeded catalogue (:mod:`catalog`). One package, one image per role:
``python -m sregym_app_fleetcast.serve api|load-generator`` and ``python -m sregym_app_fleetcast.operator``.
"""

from __future__ import annotations

__version__ = "0.2.0"
IMAGE_REPO = "sregym/fleetcast"
IMAGE_TAG = "1.0"
OPERATOR_IMAGE_REPO = "sregym/fleetcast-operator"
