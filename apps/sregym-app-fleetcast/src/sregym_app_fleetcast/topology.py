"""Names and ports every part of FleetCast agrees on (manifests, operator, faults, tests)."""

from __future__ import annotations

NAMESPACE = "fleetcast"
WORKLOAD_NAMESPACE = "fleetcast-workload"

GROUP = "fleetcast.sregym.io"
VERSION = "v1"
KIND = "DatastoreCluster"
PLURAL = "datastoreclusters"
CRD_NAME = f"{PLURAL}.{GROUP}"

#: the DatastoreCluster the app ships; the operator names its StatefulSet, Services and PDB after it
DATASTORE = "orbit-db"
DATASTORE_PORT = 6379
HEADLESS = f"{DATASTORE}-headless"

API = "fleetcast"
API_PORT = 8080
ADMIN_PORT = 9464

OPERATOR = "datastore-operator"
OPERATOR_HEALTH_PORT = 8081

LOAD_GENERATOR = "load-generator"
LOAD_GENERATOR_PORT = 8089

#: labels the operator puts on everything it makes for one DatastoreCluster
CLUSTER_LABEL = f"{GROUP}/cluster"
MANAGED_BY = {"app.kubernetes.io/managed-by": OPERATOR}
